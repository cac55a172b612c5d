"""Scripted policies: `oracle` replays the ground truth, `noop` never calls a tool, `random` makes
schema-valid random calls. They need no model and bound what a learned policy can score."""

from __future__ import annotations

import json
import random
import re

from officegym.core.policy import Completion, PolicyRequest, SamplingParams
from officegym.core.types import ToolCall


class OraclePolicy:
    """All ground-truth calls in the first turn, then a final answer."""

    name = "oracle"

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        out = []
        for r in requests:
            if r.turn == 0 and r.task is not None and r.task.ground_truth:
                calls = [
                    ToolCall(c.name, c.arguments, c.raw_arguments, f"call_0_{i}", c.parse_error)
                    for i, c in enumerate(r.task.ground_truth)
                ]
                out.append(Completion(text="", tool_calls=calls))
            else:
                out.append(Completion(text="Done."))
        return out


class NoopPolicy:
    """Answers without ever calling a tool: scores exactly the share of do-nothing tasks."""

    name = "noop"

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [Completion(text="I can't help with that.") for _ in requests]


_WORD = re.compile(r"[\w.@:-]+")


class RandomPolicy:
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
            chosen = set(required) | {p for p in props if rng.random() < 0.2}
            args = {}
            for p in chosen:
                kind = props.get(p, {}).get("type", "string")
                args[p] = rng.randint(1, 5) if kind == "integer" else rng.choice(words)
            calls.append(ToolCall(spec.name, args, None, f"call_{r.turn}_{i}"))
        return Completion(text="", tool_calls=calls)
