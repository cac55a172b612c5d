"""Build a policy from a spec string: oracle | noop | random[:SEED] | greedy | rule | role-random[:SEED] |
openai:MODEL | openai-responses:MODEL | hf:PATH_OR_ID | smollm2-135m | vllm:MODEL.

`PolicySpec` is the one parser of these strings: the part before the first ':' picks a backend of
`BACKENDS`, the rest is its argument (a model, a seed). A new backend is its Policy class and one
entry in that table. `greedy`, `rule` and `role-random` are the baselines of the role environments
(roles/*): they need no model and no options (`rule` reads only the conversation; the others read the
task's scenario)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from officegym.core.policy import Policy


class PolicySpecError(ValueError):
    pass


@dataclass(frozen=True)
class PolicySpec:
    """A policy spec string and the options its backend is built with; calling it builds the
    policy (a Ray worker builds its own from this picklable value). `options` go to the backend
    (base_url, api_key_env, device, dtype, threads, batch_size, ...); `environment` (a registered
    name), when given, is checked against what the policy can play."""

    spec: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """The backend's key in BACKENDS (aliases resolved): "hf" for hf:PATH and smollm2-135m."""
        return self._parts[0]

    @property
    def arg(self) -> str:
        """What follows the kind: a model, a seed, or ""."""
        return self._parts[1]

    @property
    def _parts(self) -> tuple[str, str]:
        kind, _, arg = ALIASES.get(self.spec, self.spec).partition(":")
        return kind, arg

    @property
    def backend(self) -> Backend | None:
        return BACKENDS.get(self.kind)

    @property
    def loads_model(self) -> bool:
        """Whether the policy loads a model in the process that builds it (hf:, vllm:, smollm2-135m)
        rather than calling an endpoint or following a script."""
        return self.backend is not None and self.backend.loads_model

    @property
    def scripted(self) -> bool:
        """Whether the spec names a policy without a model (oracle, random:3, greedy, ...)."""
        return self.backend is not None and not (self.backend.needs_model or self.backend.loads_model)

    def __call__(self) -> Policy:
        backend = self.backend
        if backend is None:
            raise PolicySpecError(f"unknown policy {self.spec!r}: use {usage()}")
        if backend.needs_model and not self.arg:
            raise PolicySpecError(f"{self.kind}:MODEL {backend.missing_model}")
        options = {k: v for k, v in self.options.items() if k != "environment"}
        if backend.options is not None:
            options = {k: v for k, v in options.items() if k in backend.options and v is not None}
        return backend.build(self, options)


@dataclass(frozen=True)
class Backend:
    """One entry of BACKENDS. `build(spec, options)` makes the policy from a parsed spec and the
    options it takes (`options`: their names; None passes all of them). `needs_model`: the spec must
    name a model after ':' (`missing_model` says what to give); `loads_model`: the policy runs that
    model in its own process."""

    build: Callable[[PolicySpec, dict[str, Any]], Policy]
    usage: str
    needs_model: bool = False
    loads_model: bool = False
    options: frozenset[str] | None = frozenset()
    missing_model: str = "needs a model name"


def make_policy(spec: str, **options: Any) -> Policy:
    """The policy `spec` names, built with `options` (see PolicySpec)."""
    return PolicySpec(spec, options)()


def _oracle(spec: PolicySpec, options: dict[str, Any]) -> Policy:
    from officegym.agent.scripted import OraclePolicy

    return OraclePolicy()


def _noop(spec: PolicySpec, options: dict[str, Any]) -> Policy:
    from officegym.agent.scripted import NoopPolicy

    return NoopPolicy()


def _random(spec: PolicySpec, options: dict[str, Any]) -> Policy:
    from officegym.agent.scripted import RandomPolicy

    try:
        seed = int(spec.arg) if spec.arg else int(options.get("seed") or 0)  # --seed may be None
    except ValueError:
        raise PolicySpecError(f"random:SEED needs an integer seed, got {spec.arg!r}") from None
    return RandomPolicy(seed=seed)


def _plays(environment: str, kind: str) -> bool:
    """Whether the registered `environment` plays the scripted baseline `kind` (asked of its class)."""
    from officegym.core import registry
    from officegym.core.environment import EnvironmentSetupError

    try:
        return kind in registry.environment_class(environment).baselines
    except EnvironmentSetupError:
        return False


def _role_baseline(spec: PolicySpec, options: dict[str, Any]) -> Policy:
    from officegym.agent.baseline_policy import make_baseline_policy
    from officegym.core import registry

    environment = spec.options.get("environment")
    if environment is not None and not _plays(environment, spec.kind):
        players = [name for name in registry.names() if _plays(name, spec.kind)]
        raise PolicySpecError(
            f"{spec.spec!r} is a baseline of the role environments ({', '.join(players)}), not of {environment!r}"
        )
    try:
        return make_baseline_policy(spec.spec)
    except ValueError as exc:
        raise PolicySpecError(str(exc)) from None


def _openai(spec: PolicySpec, options: dict[str, Any]) -> Policy:
    from officegym.agent.openai_compat import OpenAIPolicy

    return OpenAIPolicy(spec.arg, api="chat" if spec.kind == "openai" else "responses", **options)


def _hf(spec: PolicySpec, options: dict[str, Any]) -> Policy:
    try:
        from officegym.agent.hf import HFPolicy
    except ImportError as exc:
        raise PolicySpecError(f"the hf: backend needs torch and transformers ({exc}); pip install 'officegym[train]'") from None
    return HFPolicy(spec.arg, **options)


def _vllm(spec: PolicySpec, options: dict[str, Any]) -> Policy:
    try:
        from officegym.agent.vllm_backend import VLLMPolicy
    except ImportError as exc:
        raise PolicySpecError(f"the vllm: backend needs vllm installed ({exc}); pip install 'officegym[vllm]'") from None
    return VLLMPolicy(spec.arg, **options)


_OPENAI_OPTIONS = frozenset({"base_url", "api_key_env", "timeout", "max_retries", "backoff", "concurrency", "extra_body"})
_HF_OPTIONS = frozenset({"device", "dtype", "threads", "batch_size", "max_prompt_tokens", "conversation_cache_mb",
                         "cuda_graphs", "split_prefixes", "chat_template"})

# The backends by the kind a spec starts with, in the order the help lists them.
BACKENDS: dict[str, Backend] = {
    "oracle": Backend(_oracle, "oracle"),
    "noop": Backend(_noop, "noop"),
    "random": Backend(_random, "random[:SEED]", options=frozenset({"seed"})),
    "greedy": Backend(_role_baseline, "greedy"),
    "rule": Backend(_role_baseline, "rule"),
    "role-random": Backend(_role_baseline, "role-random[:SEED]"),
    "openai": Backend(_openai, "openai:MODEL", needs_model=True, options=_OPENAI_OPTIONS,
                      missing_model="needs a model name, e.g. openai:gpt-4.1-mini"),
    "openai-responses": Backend(_openai, "openai-responses:MODEL", needs_model=True, options=_OPENAI_OPTIONS,
                                missing_model="needs a model name, e.g. openai-responses:gpt-4.1-mini"),
    "hf": Backend(_hf, "hf:PATH_OR_ID", needs_model=True, loads_model=True, options=_HF_OPTIONS,
                  missing_model="needs a local path, a hub id or smollm2-135m"),
    "vllm": Backend(_vllm, "vllm:MODEL", loads_model=True, options=None),
}
# Whole specs that stand for another one.
ALIASES: dict[str, str] = {"smollm2-135m": "hf:smollm2-135m"}


def usage() -> str:
    """The specs the table takes, as the help and errors list them."""
    names: list[str] = []
    for kind, backend in BACKENDS.items():
        names.append(backend.usage)
        names += [alias for alias, target in ALIASES.items() if target.partition(":")[0] == kind]
    return ", ".join(names[:-1]) + " or " + names[-1]


def preflight(policy: Policy) -> str | None:
    """What keeps `policy` from running (its backend unreachable, ...), or None; its clients are
    closed afterwards, as they belong to this check's event loop."""
    import asyncio

    async def check() -> str | None:
        try:
            return await policy.preflight()
        finally:
            await policy.aclose()

    return asyncio.run(check())
