"""Intervals and paired tests for accuracies over a few dozen tasks.

- `wilson_interval(k, n)`: the 95% Wilson score interval of a proportion; unlike the normal
  approximation it stays inside [0, 1] and is sensible at 0/n and n/n.
- `mcnemar_exact(b, c)`: the exact (binomial) McNemar test for two models on the SAME tasks:
  b = tasks only the second got right, c = tasks only the first got right. Under "no
  difference" each discordant task is a fair coin, so p = P(min(B, C) <= min(b, c)) * 2 for
  B ~ Binomial(b + c, 1/2), capped at 1 (two-sided).
- `paired_outcomes(rows_a, rows_b)`: the per-task 0/1 outcomes two evaluations share, by task id.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from officegym.core.rollout_row import RolloutRow

Z95 = 1.959963984540054


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """(low, high) of the Wilson score interval for k successes in n trials ((0, 1) when n == 0)."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"k must lie in [0, n], got k={k}, n={n}")
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs (1.0 when there are none)."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be >= 0")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


@dataclass
class PairedComparison:
    """Two evaluations on the same tasks: counts, accuracies, the difference and its test."""

    n: int
    both: int
    only_a: int  # tasks the first got right and the second wrong
    only_b: int
    neither: int

    @property
    def accuracy_a(self) -> float:
        return (self.both + self.only_a) / self.n if self.n else 0.0

    @property
    def accuracy_b(self) -> float:
        return (self.both + self.only_b) / self.n if self.n else 0.0

    @property
    def delta(self) -> float:
        """accuracy_b - accuracy_a."""
        return self.accuracy_b - self.accuracy_a

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.only_b, self.only_a)

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "both": self.both, "only_a": self.only_a, "only_b": self.only_b, "neither": self.neither,
                "accuracy_a": self.accuracy_a, "accuracy_b": self.accuracy_b, "delta": self.delta,
                "p_value": self.p_value}


def task_outcomes(rows: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Task id -> mean 0/1 outcome (reward 1) over its rollouts, from rollouts.jsonl rows."""
    sums: dict[str, list[float]] = {}
    for row in rows:
        rollout = RolloutRow(row)
        reward = rollout.reward
        sums.setdefault(rollout.task_id, []).append(1.0 if reward is not None and reward >= 1.0 else 0.0)
    return {k: sum(v) / len(v) for k, v in sums.items()}


def paired_outcomes(rows_a: Iterable[dict[str, Any]], rows_b: Iterable[dict[str, Any]]) -> PairedComparison:
    """Compare two evaluations on the tasks both ran (a task counts as right when all its rollouts were)."""
    a, b = task_outcomes(rows_a), task_outcomes(rows_b)
    both = only_a = only_b = neither = 0
    for key in sorted(set(a) & set(b)):
        ra, rb = a[key] >= 1.0, b[key] >= 1.0
        if ra and rb:
            both += 1
        elif ra:
            only_a += 1
        elif rb:
            only_b += 1
        else:
            neither += 1
    return PairedComparison(both + only_a + only_b + neither, both, only_a, only_b, neither)


def paired_verdict(t: dict[str, Any]) -> str:
    """One plain sentence about a paired comparison: `t` is `PairedComparison.as_dict()` plus
    "from" and "to", the labels of the two evaluations."""
    change = f"{100 * t['accuracy_a']:.1f}% -> {100 * t['accuracy_b']:.1f}% ({100 * t['delta']:+.1f} points)"
    counts = f"{t['only_b']} tasks gained, {t['only_a']} lost, {t['n']} tasks, exact McNemar p = {t['p_value']:.3g}"
    if t["p_value"] < 0.05:
        word = "improved" if t["delta"] > 0 else "worsened"
        return f"{t['to']} vs {t['from']}: {word} accuracy significantly, {change}; {counts}."
    return f"{t['to']} vs {t['from']}: no significant change in accuracy, {change}; {counts}."
