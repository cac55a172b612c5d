"""A reward minus a fixed penalty for rollouts with an invalid call (rewards/calls.py).

The trainer builds its reward with this wrapper, so the reward it logs and writes to rollouts.jsonl
is the one its advantages were computed from.
"""

from __future__ import annotations

from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import Verdict
from officegym.rewards.base import RewardFunction, RewardResult
from officegym.rewards.calls import invalid_calls


class InvalidCallPenalty:
    """total = reward.total - penalty when the trajectory has an invalid call; components are the
    reward's, plus "invalid_call_penalty" (0 or -penalty)."""

    def __init__(self, reward: RewardFunction, penalty: float):
        if not penalty >= 0:
            raise ValueError(f"the invalid-call penalty must be >= 0, got {penalty!r}")
        self.reward = reward
        self.penalty = float(penalty)
        self.name = getattr(reward, "name", "reward")
        self.max_total = getattr(reward, "max_total", 1.0)

    def __call__(self, task: Task, trajectory: Trajectory, verdict: Verdict) -> RewardResult:
        base = self.reward(task, trajectory, verdict)
        cut = self.penalty if invalid_calls(trajectory) else 0.0
        return RewardResult(base.total - cut, {**base.components, "invalid_call_penalty": -cut})

    def __repr__(self) -> str:
        return f"InvalidCallPenalty({self.reward!r}, {self.penalty!r})"
