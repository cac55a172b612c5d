"""The trainer's rollout phase on Ray (`rollout.backend: ray`): the episodes and the token ledger that
come back from engine and worker actors are the in-process ones, with the per-episode token budget
applied and pushed weights reaching the engine."""

from __future__ import annotations

import pytest

import officegym.train.data  # noqa: F401  (registers toy_pick, as in the trainer)
from officegym.core import registry
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.types import ToolCall
from officegym.train import toy
from officegym.train.config import GRPORunConfig
from officegym.train.config_files import build_config
from officegym.train.ray_generation import start_generation
from officegym.train.rollouts import collect, make_reward_fn


def encode(text: str) -> list[int]:
    return [ord(c) % 251 + 5 for c in text]


THINKING = "Let me think about which number the user asked for. "
# what an even prompt's episode samples (the call, then "Done."), with a little room to spare
BUDGET = len(encode(toy.answer_text(0))) + len(encode("Done.")) + 2


class FakeTokenPolicy(Policy):
    """A deterministic token-level policy: each prompt extends the previous turn's ids (so the
    ledger is well formed), the first turn picks the right number for even prompts and (after some
    thinking that runs past the episode's token budget) a wrong one for odd ones, and the log-probs follow the ids and the pushed weights' offset. It honours the
    per-request caps a token budget passes (a cut turn drops its call, as a real cut turn would)."""

    name = "fake-tokens"
    template_name = "fake-template"
    pad_id = 0
    takes_weights = True

    def __init__(self) -> None:
        self.offset = 0.0
        self.stats = {"calls": 0, "seconds": 0.0}

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return self.complete_sync(requests, params)

    def complete_sync(self, requests, params, max_new_tokens=None) -> list[Completion]:
        self.stats["calls"] += 1
        self.stats["seconds"] += 0.001
        caps = max_new_tokens or [r.max_new_tokens for r in requests]
        return [self._one(r, params, cap) for r, cap in zip(requests, caps)]

    def _one(self, r: PolicyRequest, params: SamplingParams, cap: int | None) -> Completion:
        last = str(r.messages[-1].get("content") or "")
        prev = r.previous
        prompt = encode(last) if prev is None else [*prev.prompt_ids, *prev.completion_ids, *encode(last)[:40]]
        if r.turn == 0:
            number = int(last.split()[-1])
            # an odd prompt gets a long-winded turn that picks the wrong number: past the budget
            text = toy.answer_text(number) if number % 2 == 0 else THINKING + toy.answer_text(number + 1)
            calls = [ToolCall("pick", {"number": number + number % 2}, None, "call_0_0")]
        else:
            text, calls = "Done.", []
        ids, finish = encode(text), "stop"
        limit = min(params.max_new_tokens, cap if cap is not None else params.max_new_tokens)
        if len(ids) > limit:
            ids, calls, finish = ids[:limit], [], "length"
        logprobs = [-(0.01 * ((i * 7 + x) % 13)) - self.offset for i, x in enumerate(ids)]
        return Completion(text=text, tool_calls=calls, finish_reason=finish, prompt_ids=prompt, completion_ids=ids,
                          logprobs=logprobs, prompt_tokens=len(prompt), completion_tokens=len(ids))

    def sync_weights(self, weights, version=None) -> bool:
        self.offset = float(dict(weights)["offset"])
        return True


def _cfg(cap: int) -> GRPORunConfig:
    return build_config(GRPORunConfig, {}, [
        "data.env=toy_pick", "rollout.backend=ray", "rollout.ray.workers=1", "rollout.ray.engines=1",
        "rollout.max_steps=3", f"rollout.max_new_tokens_per_episode={cap}", "rollout.max_new_tokens_per_turn=128",
        "validation.max_steps=1", "grpo.invalid_call_penalty=0.25"])


def _same(a, b) -> None:
    assert len(a.trajectories) == len(b.trajectories)
    for x, y in zip(a.trajectories, b.trajectories):
        assert x.token_ledger() == y.token_ledger()
        assert [(t.prompt_ids, t.completion_ids, t.logprobs, t.finish_reason) for t in x.turns] == \
               [(t.prompt_ids, t.completion_ids, t.logprobs, t.finish_reason) for t in y.turns]
        assert (x.task_id, x.sample_index, x.policy, x.stop_reason, x.reward, x.reward_components, x.verdict, x.messages) == \
               (y.task_id, y.sample_index, y.policy, y.stop_reason, y.reward, y.reward_components, y.verdict, y.messages)
    assert a.sampled_tokens == b.sampled_tokens


def test_the_rollout_phase_on_ray_returns_the_in_process_ledger(ray_cluster, by_value):
    cfg = _cfg(cap=BUDGET)
    env = registry.make(toy.NAME)  # a fresh worker knows it only from the spec
    reward_fn = make_reward_fn(cfg.grpo.reward, env, cfg.grpo.invalid_call_penalty)
    jobs = [(t, k) for t in toy.make_tasks(6, seed=1, numbers=range(10)) for k in range(2)]
    local_policy = FakeTokenPolicy()
    here = collect(env, jobs, local_policy, cfg, 1.0, reward_fn)
    generation = start_generation(cfg, FakeTokenPolicy)
    try:
        assert (generation.name, generation.template_name, generation.pad_id) == ("fake-tokens", "fake-template", 0)
        there = collect(env, jobs, generation, cfg, 1.0, reward_fn)
        _same(here, there)
        assert {t.stop_reason for t in there.trajectories} >= {"length", "answered"}  # the budget cut some
        assert len({t.reward for t in there.trajectories}) > 1
        assert there.generation_seconds > 0 and generation.stats["calls"] > 0

        # pushed weights reach the engine; validation takes its own limits there too
        local_policy.sync_weights([("offset", 0.5)])
        assert generation.sync_weights([("offset", 0.5)], version=1) and generation.synced_version == 1
        _same(collect(env, jobs, local_policy, cfg, 0.0, reward_fn, validation=True),
              collect(env, jobs, generation, cfg, 0.0, reward_fn, validation=True))
        assert all(len(t.turns) == 1 for t in collect(env, jobs, generation, cfg, 0.0, reward_fn, validation=True).trajectories)
    finally:
        generation.close()


def test_sft_refuses_ray_rollouts():
    from officegym.train.config import SFTRunConfig
    from officegym.train.config_files import ConfigError

    with pytest.raises(ConfigError, match="SFT has no rollout phase"):
        build_config(SFTRunConfig, {}, ["rollout.backend=ray"])
