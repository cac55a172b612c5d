"""Build a policy from a spec string: oracle | noop | random[:SEED] | greedy | rule | role-random[:SEED] |
openai:MODEL | openai-responses:MODEL | hf:PATH_OR_ID | smollm2-135m | vllm:MODEL.

`greedy`, `rule` and `role-random` are the baselines of the role environments (roles/*): they need
no model and no options (`rule` reads only the conversation; the others read the task's scenario)."""

from __future__ import annotations

from typing import Any

from officegym.core.policy import Policy

SCRIPTED = ("oracle", "noop", "random")
ROLE_BASELINES = ("greedy", "rule", "role-random")


class PolicySpecError(ValueError):
    pass


def make_policy(spec: str, **options: Any) -> Policy:
    """`options` go to the backend (base_url, api_key_env, device, dtype, threads, batch_size, ...).
    `environment` (a registered name), when given, is checked against what the policy can play."""
    environment = options.pop("environment", None)
    kind, _, arg = spec.partition(":")
    if kind in ROLE_BASELINES:
        return _role_baseline(spec, environment)
    if spec == "smollm2-135m":
        kind, arg = "hf", "smollm2-135m"
    if kind == "oracle":
        from officegym.agent.scripted import OraclePolicy

        return OraclePolicy()
    if kind == "noop":
        from officegym.agent.scripted import NoopPolicy

        return NoopPolicy()
    if kind == "random":
        from officegym.agent.scripted import RandomPolicy

        try:
            seed = int(arg) if arg else int(options.get("seed") or 0)  # --seed may be None
        except ValueError:
            raise PolicySpecError(f"random:SEED needs an integer seed, got {arg!r}") from None
        return RandomPolicy(seed=seed)
    if kind in ("openai", "openai-responses"):
        if not arg:
            raise PolicySpecError(f"{kind}:MODEL needs a model name, e.g. {kind}:gpt-4.1-mini")
        from officegym.agent.openai_compat import OpenAIPolicy

        allowed = {"base_url", "api_key_env", "timeout", "max_retries", "backoff", "concurrency", "extra_body"}
        return OpenAIPolicy(arg, api="chat" if kind == "openai" else "responses",
                            **{k: v for k, v in options.items() if k in allowed and v is not None})
    if kind == "hf":
        if not arg:
            raise PolicySpecError("hf:MODEL needs a local path, a hub id or smollm2-135m")
        try:
            from officegym.agent.hf import HFPolicy
        except ImportError as exc:
            raise PolicySpecError(f"the hf: backend needs torch and transformers ({exc}); pip install 'officegym[train]'") from None
        allowed = {"device", "dtype", "threads", "batch_size", "max_prompt_tokens", "conversation_cache_mb", "cuda_graphs",
                   "split_prefixes", "chat_template"}
        return HFPolicy(arg, **{k: v for k, v in options.items() if k in allowed and v is not None})
    if kind == "vllm":
        try:
            from officegym.agent.vllm_backend import VLLMPolicy
        except ImportError as exc:
            raise PolicySpecError(f"the vllm: backend needs vllm installed ({exc}); pip install 'officegym[vllm]'") from None
        return VLLMPolicy(arg, **options)
    raise PolicySpecError(
        f"unknown policy {spec!r}: use oracle, noop, random[:SEED], greedy, rule, role-random[:SEED], openai:MODEL, "
        "openai-responses:MODEL, hf:PATH_OR_ID, smollm2-135m or vllm:MODEL"
    )


def _role_baseline(spec: str, environment: str | None) -> Policy:
    from officegym.agent.role_baselines import make_baseline_policy
    from officegym.core.registry import canonical_name
    from officegym.envs.roles import ENVIRONMENTS

    if environment is not None and canonical_name(environment) not in ENVIRONMENTS:
        raise PolicySpecError(
            f"{spec!r} is a baseline of the role environments ({', '.join(ENVIRONMENTS)}), not of {environment!r}"
        )
    try:
        return make_baseline_policy(spec)
    except ValueError as exc:
        raise PolicySpecError(str(exc)) from None


def preflight(policy) -> str | None:
    """What keeps `policy` from running (its backend unreachable, ...), or None (also for a policy
    with no check); its clients are closed afterwards, as they belong to this check's event loop."""
    import asyncio

    async def check() -> str | None:
        try:
            return await policy.preflight()
        finally:
            await policy.aclose()

    return asyncio.run(check())
