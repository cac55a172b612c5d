"""Scripted policies: `oracle` replays the ground truth, `noop` never calls a tool, `random` makes
schema-valid random calls. They need no model and bound what a learned policy can score."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.types import ToolCall


class OraclePolicy(Policy):
    """Replays the ground truth, then a final answer. By default every call goes in the first turn;
    a task whose metadata holds `oracle_turns` (how many calls go in each turn, e.g. [3, 1]: the
    lookups, then the answer that uses their outputs) is replayed turn by turn as planned."""

    name = "oracle"

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        out = []
        for r in requests:
            gt = r.task.ground_truth if r.task is not None else []
            turns = plan_turns(len(gt), r.task.metadata.get("oracle_turns") if r.task is not None else None)
            if r.turn < len(turns):
                start = sum(turns[: r.turn])
                calls = [
                    c.with_id(f"call_{r.turn}_{i}")
                    for i, c in enumerate(gt[start : start + turns[r.turn]])
                ]
                out.append(Completion(text="", tool_calls=calls))
            else:
                out.append(Completion(text="Done."))
        return out


def plan_turns(n_calls: int, planned: Any) -> list[int]:
    """Calls per turn for replaying `n_calls` ground-truth calls: `planned` when it is a list of
    positive integers adding up to `n_calls`, else all of them in one turn (none when there are none)."""
    if (
        isinstance(planned, list)
        and planned
        and all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in planned)
        and sum(planned) == n_calls
    ):
        return list(planned)
    return [n_calls] if n_calls else []


class NoopPolicy(Policy):
    """Answers without ever calling a tool: scores exactly the share of do-nothing tasks."""

    name = "noop"

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [Completion(text="I can't help with that.") for _ in requests]


_WORD = re.compile(r"[\w.@:-]+")


class RandomPolicy(Policy):
    """Up to `max_calls` schema-valid calls per turn for `turns` turns: a random offered tool, its
    required parameters filled with words seen in the conversation (so ids from earlier tool outputs
    can come back), integers for integer parameters. Seeded per request for reproducibility."""

    name = "random"

    def __init__(self, seed: int = 0, max_calls: int = 2, turns: int = 2):
        self.seed = seed
        self.max_calls = max_calls
        self.turns = turns

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [self._one(r) for r in requests]

    def _one(self, r: PolicyRequest) -> Completion:
        task_key = json.dumps(r.task.id if r.task is not None else None, default=str)
        rng = random.Random(f"{self.seed}:{task_key}:{r.turn}:{len(r.messages)}")
        if r.turn >= self.turns or not r.tools:
            return Completion(text="Done.")
        words = [w for m in r.messages for w in _WORD.findall(str(m.get("content") or ""))] or ["x"]
        calls = []
        for i in range(rng.randint(1, self.max_calls)):
            spec = rng.choice(r.tools)
            props = spec.parameters.get("properties", {})
            required = spec.parameters.get("required", [])
            optional = {p for p in props if rng.random() < 0.2}
            # required, then optional, in the schema's order: iterating a set of names would follow
            # the process's string hashing, and another process (a Ray worker) would fill in the
            # arguments in another order and with other words
            chosen = [*dict.fromkeys([*required, *(p for p in props if p in optional)])]
            args = {}
            for p in chosen:
                kind = props.get(p, {}).get("type", "string")
                args[p] = rng.randint(1, 5) if kind == "integer" else rng.choice(words)
            calls.append(ToolCall(spec.name, args, None, f"call_{r.turn}_{i}"))
        return Completion(text="", tool_calls=calls)
