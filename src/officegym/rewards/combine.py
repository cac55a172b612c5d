"""Weighted sums of rewards, with every part's components kept under the part's name."""

from __future__ import annotations

import math
from collections.abc import Sequence

from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import Verdict
from officegym.rewards.base import RewardFunction, RewardResult


class WeightedSum:
    """total = sum(weight_i * reward_i.total).

    Components are `"<name>/<component>"` for every component of every part, plus
    `"<name>/total"` (the part's unweighted total). Parts are named by their `name` attribute;
    a repeated name gets a suffix (`shaped`, `shaped_2`). Weights must be finite and >= 0 so that
    the sum stays a non-negative reward with a known maximum.
    """

    name = "weighted"

    def __init__(self, parts: Sequence[tuple[float, RewardFunction]]):
        if not parts:
            raise ValueError("WeightedSum needs at least one (weight, reward) pair")
        self.parts: list[tuple[str, float, RewardFunction]] = []
        used: set[str] = set()
        for weight, reward in parts:
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight < 0:
                raise ValueError(f"reward weights must be finite numbers >= 0, got {weight!r}")
            base = getattr(reward, "name", None) or getattr(reward, "__name__", "reward")
            name, k = base, 1
            while name in used:
                k += 1
                name = f"{base}_{k}"
            used.add(name)
            self.parts.append((name, float(weight), reward))

    @property
    def max_total(self) -> float:
        return sum(w * getattr(r, "max_total", math.inf) if w else 0.0 for _, w, r in self.parts)

    def __call__(self, task: Task, trajectory: Trajectory, verdict: Verdict) -> RewardResult:
        total = 0.0
        components: dict[str, float] = {}
        for name, weight, reward in self.parts:
            result = reward(task, trajectory, verdict)
            total += weight * result.total
            components[f"{name}/total"] = result.total
            for key, value in result.components.items():
                components[f"{name}/{key}"] = value
        return RewardResult(total, components)

    def __repr__(self) -> str:
        return "WeightedSum([" + ", ".join(f"({w!r}, {r!r})" for _, w, r in self.parts) + "])"
