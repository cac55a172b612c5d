"""The repeat-level and completeness parts of NeMo Gym 0.7's `/aggregate_metrics`, re-implemented
from their definitions in nemo-gym 0.7.0 (`nemo_gym/reward_profile.py`, `metrics_config.py`).

A repeat is one `_ng_rollout_index`: the rollouts of every task with that index. With more than one
repeat, each gets a row of statistics over its tasks (`repeat_level_metrics`), and every point
estimate of those rows (`mean/<field>`) is summarised across repeats in the agent metrics as
`<stat>_across_repeats/mean/<field>`, with a 95% Student-t interval. `perf_summary` describes the
rollouts' `ng_perf` records (observability); `coverage/*` says how much masking left measured.

Quantiles interpolate linearly as numpy does (pandas' default); t quantiles are computed here
(Newton's method on the t distribution's tail, an incomplete beta function; Cornish-Fisher's
series past 1,000 degrees of freedom), equal to scipy's to 1e-12.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

TASK = "_ng_task_index"
ROLLOUT = "_ng_rollout_index"
ACROSS = "_across_repeats/"
# What NeMo Gym does not summarise across repeats (metrics_config.is_primary_metric).
_NOT_PRIMARY_NAMES = frozenset({TASK, ROLLOUT, "_ng_attempt_index", "sample_count", "missing_count", "num_repeats",
                                "token_usage_version"})
_NOT_PRIMARY_PREFIXES = tuple(f"{s}/" for s in ("max", "min", "median", "std", "sem", "se", "p25", "p75",
                                                 "ci_low_95", "ci_high_95", "histogram"))
_NOT_PRIMARY_SUFFIXES = ("/max", "/min", "/median", "/p5", "/p25", "/p75", "/p95", "/ci_low_95", "/ci_high_95",
                         "/ci_lower", "/ci_upper", "_ci_lower", "_ci_upper", "_ci95_lower", "_ci95_upper",
                         "/_ng_attempt_index", "/std_dev_across_runs", "/std_err_across_runs", "/avg_sample_std_dev")


def is_primary(name: str) -> bool:
    return (name not in _NOT_PRIMARY_NAMES and not name.startswith(_NOT_PRIMARY_PREFIXES)
            and not name.endswith(_NOT_PRIMARY_SUFFIXES) and ACROSS not in name)


# -- numbers as pandas, numpy and scipy give them

def mean(values: list[float]) -> float:
    try:
        return math.fsum(values) / len(values)
    except OverflowError:  # the sum leaves the float range although the mean does not
        return math.fsum(v / len(values) for v in values)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else ordered[mid - 1] / 2 + ordered[mid] / 2


def sample_std(values: list[float]) -> float:
    """Standard deviation with n - 1 in the denominator (pandas' default); 0 for one value."""
    if len(values) < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(math.fsum((v - m) * (v - m) for v in values) / (len(values) - 1))


def quantile(values: list[float], q: float) -> float:
    """`pandas.Series.quantile(q)`: numpy's linear interpolation, with pandas' percent round trip."""
    ordered = sorted(values)
    n = len(ordered)
    q = (q * 100.0) / 100.0
    virtual = n * q + (1 + q * (1 - 1 - 1)) - 1
    below = math.floor(virtual)
    gamma = virtual - below
    lo = ordered[min(max(below, 0), n - 1)]
    hi = ordered[min(max(below + 1, 0), n - 1)]
    diff = hi - lo
    return hi - diff * (1 - gamma) if gamma >= 0.5 else lo + diff * gamma


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _log_beta_inverse(a: float, b: float) -> float:
    """-log B(a, b). For b = 1/2 and a large, lgamma's difference would cancel to 1e-10: log Γ(a+½) -
    log Γ(a) comes from its asymptotic series instead (Stirling's, to a^-9)."""
    if b == 0.5 and a >= 30:
        inv = 1.0 / a
        inv2 = inv * inv
        series = inv * (-1 / 8 + inv2 * (1 / 192 + inv2 * (-1 / 640 + inv2 * (17 / 14336 - inv2 * 31 / 18432))))
        return 0.5 * math.log(a) + series - math.lgamma(0.5)
    return math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, given x and y = 1 - x (each exact)."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_x = math.log(x) if x < 0.5 else math.log1p(-y)
    log_y = math.log(y) if y < 0.5 else math.log1p(-x)
    front = math.exp(_log_beta_inverse(a, b) + a * log_x + b * log_y)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def _t_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0."""
    return 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t), t * t / (df + t * t))


def _t_density(t: float, df: float) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))


def t_ppf(p: float, df: float) -> float:
    """The Student-t quantile (scipy.stats.t.ppf) for 0 < p < 1."""
    if p == 0.5:
        return 0.0
    tail = min(p, 1.0 - p)
    z = statistics.NormalDist().inv_cdf(1.0 - tail)
    # Cornish-Fisher (Abramowitz & Stegun 26.7.5): exact to rounding for many degrees of freedom,
    # where the incomplete beta function loses digits; the start of Newton's method otherwise.
    z2 = z * z
    t = z * (1 + (z2 + 1) / (4 * df) + (5 * z2**2 + 16 * z2 + 3) / (96 * df**2)
             + (3 * z2**3 + 19 * z2**2 + 17 * z2 - 15) / (384 * df**3)
             + (79 * z2**4 + 776 * z2**3 + 1482 * z2**2 - 1920 * z2 - 945) / (92160 * df**4))
    if df == 1:
        t = 1.0 / math.tan(math.pi * tail)
    elif df < 1000:
        for _ in range(100):
            step = (_t_tail(t, df) - tail) / _t_density(t, df)
            t = max(t + step, t / 2)
            if abs(step) <= 1e-15 * abs(t):
                break
    return t if p > 0.5 else -t


def interval95(m: float, se: float, n: int) -> tuple[float, float] | None:
    """scipy's `stats.t.interval(0.95, n - 1, loc=m, scale=se)`; None for n <= 1; (m, m) when se is 0."""
    if n <= 1:
        return None
    if se == 0:
        return m, m
    low_p, high_p = (1.0 - 0.95) / 2, (1.0 + 0.95) / 2
    return t_ppf(low_p, n - 1) * se + m, t_ppf(high_p, n - 1) * se + m


# -- repeats

def repeat_level_metrics(rows: list[tuple[Any, Any, dict[str, float]]]) -> list[dict[str, Any]]:
    """One row of statistics per repeat when there is more than one: `rows` are the measured
    rollouts as (task, rollout index, numeric fields)."""
    repeats: dict[Any, list[tuple[Any, dict[str, float]]]] = {}
    for task, rollout, fields in rows:
        repeats.setdefault(rollout, []).append((task, fields))
    if len(repeats) < 2:
        return []
    all_tasks = len({_hashable(task) for task, _, _ in rows})
    columns = sorted({name for _, _, fields in rows for name in fields})
    out = []
    for rollout in sorted(repeats, key=order):
        group = repeats[rollout]
        present = len({_hashable(task) for task, _ in group})
        shown = int(rollout) if isinstance(rollout, float) and rollout.is_integer() else rollout  # pandas' int()
        entry: dict[str, Any] = {ROLLOUT: shown, "sample_count": present, "missing_count": all_tasks - present}
        for name in columns:
            values = [fields[name] for _, fields in group if name in fields]
            if not values:
                continue
            n, m = len(values), mean(values)
            std = sample_std(values)
            sem = std / n**0.5
            entry.update({f"mean/{name}": m, f"median/{name}": median(values), f"std/{name}": std,
                          f"sem/{name}": sem, f"min/{name}": min(values), f"max/{name}": max(values),
                          f"p25/{name}": quantile(values, 0.25), f"p75/{name}": quantile(values, 0.75)})
            ci = interval95(m, sem, n)
            if ci is not None:
                entry[f"ci_low_95/{name}"], entry[f"ci_high_95/{name}"] = ci
        out.append(entry)
    return out


def across_repeats(repeat_rows: list[dict[str, Any]]) -> dict[str, float]:
    """Each point estimate of the repeat rows summarised over the repeats."""
    names: dict[str, None] = {}
    for row in repeat_rows:
        for name, value in row.items():
            if is_primary(name) and _number(value):
                names.setdefault(name)
    out: dict[str, float] = {}
    for name in names:
        values = [row[name] for row in repeat_rows if _number(row.get(name))]
        n, m = len(values), mean(values)
        std = sample_std(values)
        se = std / n**0.5
        out.update({f"mean{ACROSS}{name}": m, f"median{ACROSS}{name}": median(values), f"std{ACROSS}{name}": std,
                    f"min{ACROSS}{name}": min(values), f"max{ACROSS}{name}": max(values), f"se{ACROSS}{name}": se})
        ci = interval95(m, se, n)
        if ci is not None:
            out[f"ci_low_95{ACROSS}{name}"], out[f"ci_high_95{ACROSS}{name}"] = ci
    return out


def coverage(rows: list[dict[str, Any]], scored: list[dict[str, Any]], masked: int) -> dict[str, int]:
    """How much of the run the statistics were computed from (empty when nothing was masked)."""
    if not masked:
        return {}
    every = {_hashable(r.get(TASK, 0)) for r in rows}
    measured = {_hashable(r.get(TASK, 0)) for r in scored}
    return {"coverage/measured_rollouts": len(scored), "coverage/masked_rollouts": masked,
            "coverage/measured_tasks": len(measured), "coverage/fully_masked_tasks": len(every - measured)}


def num_repeats(rows: Iterable[dict[str, Any]]) -> int:
    return len({_hashable(r.get(ROLLOUT, 0)) for r in rows})


# -- ng_perf

_TOKEN_FIELDS = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens")


def perf_summary(rows: list[dict[str, Any]]) -> dict[str, float] | None:
    """The rollouts' `ng_perf` records summarised (None when no rollout carried one). Values that
    are not finite numbers are left out (NeMo Gym would fail on them)."""
    records = [r["ng_perf"] for r in rows if isinstance(r.get("ng_perf"), dict)]
    if not rows or not records:
        return None
    total = len(rows)

    def values(key: str) -> list[float]:
        return [rec[key] for rec in records if _number(rec.get(key))]

    out: dict[str, float] = {
        "overall_observability_coverage": len(records) / total,
        "token_observability_coverage": sum(1 for rec in records if _number(rec.get("token_observability_coverage"))
                                            and rec["token_observability_coverage"] > 0) / total,
    }
    for field in _TOKEN_FIELDS:
        found = values(field)
        if found:
            out.update({f"mean_{field}": statistics.fmean(found), f"median_{field}": statistics.median(found),
                        f"total_{field}": sum(found)})
    turns = values("num_turns")
    if turns:
        out.update({"mean_num_turns": statistics.fmean(turns), "median_num_turns": statistics.median(turns),
                    "std_num_turns": statistics.pstdev(turns), "min_num_turns": min(turns),
                    "p90_num_turns": quantile(turns, 0.9), "max_num_turns": max(turns)})
    per_turn = [rec["completion_tokens"] / rec["num_turns"] for rec in records
                if _number(rec.get("completion_tokens")) and _number(rec.get("num_turns")) and rec["num_turns"] > 0]
    if per_turn:
        out["mean_tokens_per_turn"] = statistics.fmean(per_turn)
        out["median_tokens_per_turn"] = statistics.median(per_turn)
    latency = values("total_latency_ms")
    if latency:
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
            out[f"total_latency_{name}_ms"] = quantile(latency, q)
        out["total_latency_mean_ms"] = statistics.fmean(latency)
    return out


def _number(value: Any) -> bool:
    """A finite int or float (booleans count, as isinstance(True, int) does in NeMo Gym)."""
    if not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond the float range
        return False


def _hashable(value: Any) -> Any:
    return value if isinstance(value, int | float | str | bool | type(None)) else repr(value)


def order(value: Any) -> tuple:
    """Repeats in pandas' groupby order: numbers first, ascending; anything else after, by text."""
    return (0, value, "") if isinstance(value, int | float) and not isinstance(value, bool) else (1, 0, repr(value))
