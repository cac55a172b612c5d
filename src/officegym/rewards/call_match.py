"""Partial credit for the calls of the reference solution: a dense training signal beside the outcome.

    credit(g, c) = matching arguments of g / arguments of g      (c: a call to g's tool; 1 if g has none)
    matched      = sum over ground-truth calls g of credit(g, c_g) / number of ground-truth calls
    total        = max(0, matched - surplus_penalty * surplus writes)

Each ground-truth call g is paired with at most one model call c_g of the same tool, greedily in
ground-truth order, taking the unused call with the most matching arguments. An argument matches
when the model's value, as text, equals the reference's (so "60" and 60 match). `surplus writes`
are successful write calls left unpaired: a second plot or an extra forward changes the state the
verifier compares, so each one costs `surplus_penalty`. A task whose ground truth is empty scores
1 when no write was made, else 0.

Why: with a binary outcome a group whose rollouts all fail teaches nothing, and after SFT most
failures of a small model are one wrong argument (a status, a date, 4:30pm written as 04:30). This
reward ranks those failures by how close they came, so more groups have a reward spread. It is
computed from the task's ground truth alone, so it stays verifiable; combine it with the outcome
(`{binary: 1.0, call_match: 0.5}`) so that only a correct final state earns the full reward, and
evaluate with the outcome.
"""

from __future__ import annotations

from typing import Any

from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import ToolCall, Verdict
from officegym.rewards.base import RewardResult, WriteTools, write_predicate


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def argument_credit(reference: ToolCall, call: ToolCall) -> float:
    """Share of the reference call's arguments that `call` gives the same value (as text)."""
    want = reference.arguments if isinstance(reference.arguments, dict) else {}
    got = call.arguments if isinstance(call.arguments, dict) else {}
    if not want:
        return 1.0
    same = sum(1 for k, v in want.items() if k in got and _as_text(got[k]) == _as_text(v))
    return same / len(want)


class CallMatch:
    """Partial credit for reproducing the ground truth's calls (see the module docstring)."""

    name = "call_match"
    max_total = 1.0

    def __init__(self, writes: WriteTools = None, surplus_penalty: float = 0.25):
        if surplus_penalty < 0:
            raise ValueError("surplus_penalty must be >= 0")
        self.is_write = write_predicate(writes)
        self.surplus_penalty = float(surplus_penalty)

    def __call__(self, task: Task, trajectory: Trajectory, verdict: Verdict) -> RewardResult:
        executions = [e for t in trajectory.turns for e in t.executions]
        calls = [e.call for e in executions]
        succeeded = [e.status == "ok" for e in executions]
        writes = [self.is_write(c.name) if self.is_write else False for c in calls]
        reference = list(task.ground_truth)
        if not reference:
            made = sum(1 for w, ok in zip(writes, succeeded) if w and ok)
            total = 1.0 if made == 0 else 0.0
            return RewardResult(total, {"matched": total, "surplus_writes": float(made)})
        used: set[int] = set()
        credit = 0.0
        for g in reference:
            best, best_i = 0.0, None
            for i, c in enumerate(calls):
                if i in used or c.name != g.name:
                    continue
                score = argument_credit(g, c)
                if best_i is None or score > best:
                    best, best_i = score, i
            if best_i is not None:
                used.add(best_i)
                credit += best
        matched = credit / len(reference)
        surplus = sum(1 for i, (w, ok) in enumerate(zip(writes, succeeded)) if w and ok and i not in used)
        total = max(0.0, matched - self.surplus_penalty * surplus)
        return RewardResult(total, {"matched": matched, "surplus_writes": float(surplus)})

    def __repr__(self) -> str:
        return f"CallMatch(surplus_penalty={self.surplus_penalty})"

