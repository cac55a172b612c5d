"""The outcome reward: 1 when the verifier says the final state matches, else 0."""

from __future__ import annotations

from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import Verdict
from officegym.rewards.base import RewardResult


class BinaryOutcome:
    """1.0 if `verdict.matched` else 0.0; the one component is "outcome"."""

    name = "binary"
    max_total = 1.0

    def __call__(self, task: Task, trajectory: Trajectory, verdict: Verdict) -> RewardResult:
        outcome = 1.0 if verdict.matched else 0.0
        return RewardResult(outcome, {"outcome": outcome})

    def __repr__(self) -> str:
        return "BinaryOutcome()"
