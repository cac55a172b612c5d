"""A tiny verifiable environment for trainer tests and smoke runs: "call `pick` with the number in
the prompt". It implements the core Environment protocol, so the agent loop, the verifier-driven
rewards and the trainers run on it unchanged; an episode is a few dozen tokens.

Reward: 1 when the episode's calls are exactly one `pick` with the prompt's number, else 0.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.session import BaseSession
from officegym.core.task import Task
from officegym.core.types import InvalidCall, ToolCall, ToolSpec, Verdict

NAME = "toy_pick"
SYSTEM = "Answer with one tool call."
PICK = ToolSpec(
    "pick",
    "Pick a number.",
    {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]},
)


def prompt_for(number: int) -> str:
    return f"pick {number}"


def answer_text(number: int) -> str:
    """The completion that solves the task in the text tool-call format (without end-of-turn)."""
    return f'<tool_call>\n{{"name": "pick", "arguments": {{"number": {number}}}}}\n</tool_call>'


def make_tasks(n: int, seed: int = 0, numbers: Sequence[int] = range(10)) -> list[Task]:
    """`n` tasks, numbers drawn from `numbers` with a seeded generator."""
    rng = random.Random(seed)
    pool = list(numbers)
    tasks = []
    for i in range(n):
        k = rng.choice(pool)
        tasks.append(Task(
            id=f"pick-{i}",
            input=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt_for(k)}],
            tools=[PICK.to_schema()],
            ground_truth=[ToolCall("pick", {"number": k})],
            environment_name=NAME,
            category="toy_pick",
        ))
    return tasks


class PickSession(BaseSession):
    def __init__(self) -> None:
        self.picked: list[Any] = []

    def call(self, name: str, arguments: Any = None) -> str:
        if name != "pick":
            return f"unknown tool {name!r}"
        if not isinstance(arguments, dict) or "number" not in arguments:
            return "pick needs a number"
        self.picked.append(arguments["number"])
        return f"picked {arguments['number']}"


class PickEnvironment(BaseEnvironment):
    """The Environment protocol for the pick task."""

    name = NAME
    write_tools = frozenset({"pick"})

    def __init__(self, **_: Any) -> None:
        pass

    def tools(self, task: Task | None = None) -> list[ToolSpec]:
        return [PICK]

    def session(self, task: Task | None = None) -> PickSession:
        return PickSession()

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        want = task.ground_truth[0].arguments.get("number") if task.ground_truth else None
        invalid = [InvalidCall(i, c.name, c.parse_error or f"unknown tool {c.name!r}")
                   for i, c in enumerate(calls) if c.name != "pick" or c.parse_error is not None]
        got = [c.arguments.get("number") if isinstance(c.arguments, dict) else None for c in calls]
        matched = len(calls) == 1 and not invalid and got[0] == want and type(got[0]) is type(want)
        return Verdict(reward=1.0 if matched else 0.0, matched=matched, mode=mode or "outcome",
                       invalid_calls=invalid, details={"expected": want, "picked": got})
