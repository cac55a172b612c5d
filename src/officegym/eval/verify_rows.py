"""Verify rollout rows in NeMo Gym's format: match each to its task, replay its calls in the
environment, explain (`officegym verify`, any registered environment)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.rollout_row import RolloutRow, parse
from officegym.core.task import Task, TaskFormatError, ground_truth_of, task_parts
from officegym.core.toolcalls import ToolCallParseError
from officegym.core.types import ToolCall


class TaskIndex:
    """Finds a rollout's task: by id, then by `_ng_task_index`, then by the exact user prompt."""

    def __init__(self, tasks: Iterable[Task]):
        self.tasks = list(tasks)
        self.by_id = {_key(t.id): t for t in self.tasks if t.id is not None}
        self.by_prompt = {t.user_prompt: t for t in self.tasks if t.user_prompt}

    def find(self, row: dict[str, Any]) -> Task | None:
        if row.get("id") is not None and _key(row["id"]) in self.by_id:
            return self.by_id[_key(row["id"])]
        idx = row.get("_ng_task_index")
        if isinstance(idx, int) and 0 <= idx < len(self.tasks):
            return self.tasks[idx]
        try:
            prompt = RolloutRow(row).task().user_prompt
        except TaskFormatError:
            return None
        return self.by_prompt.get(prompt)


def _key(value: Any) -> str:
    return str(value)


@dataclass
class RolloutVerdict:
    """One output line of `officegym verify`."""

    index: int
    id: Any
    reward: float | None
    mode: str
    evidence: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    def to_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {"id": self.id, "reward": self.reward, "mode": self.mode}
        if self.error:
            row["error"] = self.error
        row.update(self.evidence)
        return row


def verify_rollouts(
    env: BaseEnvironment, rows: Iterable[tuple[int, Any]], tasks: TaskIndex | None, mode: str
) -> Iterator[RolloutVerdict]:
    """Verify (line number, row) pairs in order with `env.verify`; a bad row yields a verdict with
    `error`, never raises."""
    for lineno, row in rows:
        rid = row.get("id", lineno) if isinstance(row, dict) else lineno
        try:
            task, calls = _task_and_calls(env, row, tasks)
        except (TaskFormatError, ToolCallParseError, ValueError) as exc:  # RolloutRowError is a ValueError
            yield RolloutVerdict(lineno, rid, None, mode, error=str(exc))
            continue
        start = time.perf_counter()
        verdict = env.verify(task, calls, mode)
        elapsed = time.perf_counter() - start
        evidence = verdict.to_dict()
        for k in ("reward", "mode"):
            evidence.pop(k)
        yield RolloutVerdict(lineno, rid if rid is not None else task.id, verdict.reward, mode, evidence, seconds=elapsed)


def _task_and_calls(env: BaseEnvironment, row: Any, tasks: TaskIndex | None) -> tuple[Task, list[ToolCall]]:
    """The rollout's task (its own, else the one it matches in `tasks`) and its calls. For an
    environment whose verifier reads only the ground truth (`verifies_truth_only`), a row carrying
    its truth is checked, not read as a whole Task (half the time of building it)."""
    rollout = parse(row)
    calls = rollout.calls()
    if rollout.has_ground_truth:
        if env.verifies_truth_only:
            task_parts(row)  # a damaged task part is an error, as when the task is read whole
            return Task(row.get("id"), [], ground_truth=ground_truth_of(row)[0]), calls
        return rollout.task(), calls
    task = tasks.find(row) if tasks is not None else None
    if task is None:
        hint = "" if tasks is not None else " (pass --tasks with the task rows)"
        raise ValueError(f"no ground truth for this rollout: it carries none and matches no task{hint}")
    return task, calls
