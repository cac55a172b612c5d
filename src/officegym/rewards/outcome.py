"""Outcome rewards, straight from the verifier's verdict.

Each name has one meaning wherever it is used (trainer, evaluation, inside a weighted sum):
- `outcome`: the verifier's own score, `verdict.reward`: 1/0 on the workplace, graded in [0, 1]
  where the verifier grades (the role environments: e.g. the ratio to the optimum);
- `binary`: 1 when the verifier says the final state matches (`verdict.matched`), else 0, also
  where the verifier grades (a feasible but suboptimal role answer gets 0).
"""

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


class VerifierScore:
    """`verdict.reward` as it is (graded where the verifier grades); the one component is "outcome"."""

    name = "outcome"
    max_total = 1.0

    def __call__(self, task: Task, trajectory: Trajectory, verdict: Verdict) -> RewardResult:
        score = float(verdict.reward)
        return RewardResult(score, {"outcome": score})

    def __repr__(self) -> str:
        return "VerifierScore()"
