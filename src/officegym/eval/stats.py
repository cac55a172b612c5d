"""Intervals and paired tests for accuracies over a few dozen tasks.

- `wilson_interval(k, n)`: the 95% Wilson score interval of a proportion; unlike the normal
  approximation it stays inside [0, 1] and is sensible at 0/n and n/n.
- `mcnemar_exact(b, c)`: the exact (binomial) McNemar test for two models on the SAME tasks:
  b = tasks only the second got right, c = tasks only the first got right. Under "no
  difference" each discordant task is a fair coin, so p = P(min(B, C) <= min(b, c)) * 2 for
  B ~ Binomial(b + c, 1/2), capped at 1 (two-sided).
- `paired_outcomes(rows_a, rows_b)`: the per-task 0/1 outcomes two evaluations share, by task id.

Graded rewards (the role environments score in [0, 1]):

- `reward_interval(rows)`: a 95% interval of the mean reward. Rewards that are all 0 or 1 get the
  Wilson interval of the rollouts (the accuracy's, so the workplace reads as before); graded rewards
  a percentile bootstrap over tasks (10,000 resamples, seeded, so a report rebuilds identically).
- `paired_rewards(rows_a, rows_b)`: two evaluations on the same tasks, compared by the paired
  sign-flip (permutation) test on the per-task reward differences, with a bootstrap interval of the
  mean difference. Why this test: rewards are bounded and bunched at 0 and 1, so the paired t-test's
  normality fails at a few dozen tasks; Wilcoxon's signed-rank test ranks many tied magnitudes and
  tests a location shift rather than the mean change the report shows. Flipping the sign of each
  task's difference is exact under "no difference" (the two rewards of a task are exchangeable),
  tests the mean difference itself, and on 0/1 rewards is the exact McNemar test (same p-value).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
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


# --- graded rewards

BOOTSTRAP_RESAMPLES = 10_000
PERMUTATION_RESAMPLES = 20_000
EXACT_SIGN_FLIPS = 16  # up to 2**16 sign vectors are enumerated; more nonzero differences are sampled


def task_rewards(rows: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Task id -> mean reward over its rollouts (a missing reward counts 0), from rollouts.jsonl rows."""
    sums: dict[str, list[float]] = {}
    for row in rows:
        rollout = RolloutRow(row)
        sums.setdefault(rollout.task_id, []).append(float(rollout.reward or 0.0))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def bootstrap_mean_interval(values: Sequence[float], seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES,
                            level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (resampled with replacement, seeded);
    (nan, nan) when there are none."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    rng = random.Random(f"bootstrap:{seed}")
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    low = means[min(resamples - 1, max(0, math.floor(tail * resamples)))]
    high = means[min(resamples - 1, max(0, math.ceil((1 - tail) * resamples) - 1))]
    return low, high


def reward_interval(rows: Sequence[dict[str, Any]], seed: int = 0) -> tuple[float, float]:
    """95% interval of the mean reward of `rows`: the Wilson interval of the rollouts when every
    reward is 0 or 1 (then the mean reward is a proportion, and the interval never collapses at 0/n
    or n/n), else the percentile bootstrap over tasks (each task's mean reward; a task's samples
    stay together)."""
    rewards = [float(RolloutRow(r).reward or 0.0) for r in rows]
    if all(x in (0.0, 1.0) for x in rewards):
        return wilson_interval(int(sum(rewards)), len(rewards))
    return bootstrap_mean_interval(list(task_rewards(rows).values()), seed)


def sign_flip_p_value(differences: Sequence[float], seed: int = 0, resamples: int = PERMUTATION_RESAMPLES) -> tuple[float, str]:
    """Two-sided p-value of the paired sign-flip test of "mean difference 0", and how it was got:
    "exact" (every sign vector of the nonzero differences, up to EXACT_SIGN_FLIPS of them) or
    "monte carlo" (`resamples` seeded sign vectors, p = (1 + hits) / (1 + resamples), which keeps
    the test valid). Zero differences carry no sign and are left out (as McNemar leaves out the
    tasks both runs got right or both got wrong)."""
    d = [float(x) for x in differences if x != 0]
    if not d:
        return 1.0, "exact"
    observed = abs(math.fsum(d))
    tol = 1e-9 * max(1.0, observed)
    if len(d) <= EXACT_SIGN_FLIPS:
        sums = [0.0]
        for x in d:
            sums = [s + x for s in sums] + [s - x for s in sums]
        return min(1.0, sum(abs(s) >= observed - tol for s in sums) / len(sums)), "exact"
    rng = random.Random(f"sign-flip:{seed}")
    n = len(d)
    hits = 0
    for _ in range(resamples):
        bits = rng.getrandbits(n)
        s = math.fsum(x if bits >> i & 1 else -x for i, x in enumerate(d))
        hits += abs(s) >= observed - tol
    return min(1.0, (1 + hits) / (1 + resamples)), "monte carlo"


@dataclass
class PairedRewards:
    """Two evaluations' rewards on the same tasks: means, the mean difference (b - a) with its
    bootstrap interval, per-task counts and the sign-flip test."""

    n: int
    mean_a: float
    mean_b: float
    delta_ci95: tuple[float, float]
    higher: int  # tasks where b scored more than a
    lower: int
    tied: int
    p_value: float
    method: str

    @property
    def delta(self) -> float:
        return self.mean_b - self.mean_a

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean_a": self.mean_a, "mean_b": self.mean_b, "delta": self.delta,
                "delta_ci95": list(self.delta_ci95), "higher": self.higher, "lower": self.lower, "tied": self.tied,
                "p_value": self.p_value, "test": f"paired sign-flip ({self.method})"}


def paired_rewards(rows_a: Iterable[dict[str, Any]], rows_b: Iterable[dict[str, Any]], seed: int = 0) -> PairedRewards:
    """Compare two evaluations' mean rewards on the tasks both ran (see the module docstring)."""
    a, b = task_rewards(rows_a), task_rewards(rows_b)
    keys = sorted(set(a) & set(b))
    diffs = [b[k] - a[k] for k in keys]
    p, method = sign_flip_p_value(diffs, seed)
    n = len(keys)
    ci = bootstrap_mean_interval(diffs, seed) if n else (math.nan, math.nan)
    return PairedRewards(
        n=n, mean_a=math.fsum(a[k] for k in keys) / n if n else math.nan,
        mean_b=math.fsum(b[k] for k in keys) / n if n else math.nan, delta_ci95=ci,
        higher=sum(x > 0 for x in diffs), lower=sum(x < 0 for x in diffs), tied=sum(x == 0 for x in diffs),
        p_value=p, method=method)


def paired_reward_verdict(t: dict[str, Any]) -> str:
    """One plain sentence about a paired reward comparison: `t` is `PairedRewards.as_dict()` plus
    "from" and "to", the labels of the two evaluations."""
    low, high = t["delta_ci95"]
    change = (f"mean reward {t['mean_a']:.3f} -> {t['mean_b']:.3f} ({t['delta']:+.3f}, 95% interval "
              f"[{low:+.3f}, {high:+.3f}])")
    counts = (f"{t['higher']} tasks scored higher, {t['lower']} lower, {t['tied']} the same, {t['n']} tasks, "
              f"{t['test']} p = {t['p_value']:.3g}")
    if t["p_value"] < 0.05:
        word = "raised" if t["delta"] > 0 else "lowered"
        return f"{t['to']} vs {t['from']}: {word} the reward significantly, {change}; {counts}."
    return f"{t['to']} vs {t['from']}: no significant change in reward, {change}; {counts}."
