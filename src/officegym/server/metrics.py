"""`/aggregate_metrics`: statistics of verify responses per task and overall, as NeMo Gym's
RewardProfiler computes them, plus rollout counts and pass@k.

Like RewardProfiler: every numeric top-level field of a row (booleans as 0/1) and every numeric
field of its `response.usage` (token counts) gets `mean/`, `max/`, `min/`, `median/` and `std/`
keys, std being the sample standard deviation (0 for a single rollout); rows are grouped by
`_ng_task_index` (sorted), which with `_ng_rollout_index` is not itself described; `key_metrics`
holds every `mean/` key. Rows with `mask_sample: true` are left out (the field says their reward
is no measurement). Differences are listed in docs/nemo-rl.md.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

from officegym.core.rollout_row import RolloutRow
from officegym.server.protocol import BadRequest, validation_error

NOT_DESCRIBED = frozenset({"_ng_task_index", "_ng_rollout_index", "mask_sample"})


class Overflow(ArithmeticError):
    """A statistic that a float cannot hold."""


def _finite(value: Any) -> float | None:
    """`value` as a float when it is a finite number (a bool counts as 0/1), else None."""
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond the float range
        return None
    return number if math.isfinite(number) else None


def _mean(values: list[float]) -> float:
    try:
        return math.fsum(values) / len(values)
    except OverflowError:  # the sum leaves the float range although the mean does not
        return math.fsum(v / len(values) for v in values)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else ordered[mid - 1] / 2 + ordered[mid] / 2


def _sample_std(values: list[float], mean: float) -> float:
    """Sample standard deviation (n - 1 in the denominator, as pandas' std)."""
    squares = math.fsum((v - mean) * (v - mean) for v in values)
    return math.sqrt(squares / (len(values) - 1))


def describe(columns: dict[str, list[float]], rows: int) -> dict[str, float]:
    """mean/max/min/median/std of each column of a group of `rows` rows; a column present in only
    one row of several gets no std (pandas gives NaN, which RewardProfiler drops)."""
    out: dict[str, float] = {}
    for stat in ("mean", "max", "min", "median", "std"):
        for name, values in columns.items():
            if stat == "mean":
                value = _mean(values)
            elif stat == "max":
                value = max(values)
            elif stat == "min":
                value = min(values)
            elif stat == "median":
                value = _median(values)
            elif len(values) > 1:
                value = _sample_std(values, out[f"mean/{name}"])
            elif rows == 1:
                value = 0.0
            else:
                continue
            if not math.isfinite(value):
                raise Overflow(name)
            out[f"{stat}/{name}"] = value
    return out


def _pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _fields(row: dict[str, Any]) -> dict[str, float]:
    merged = dict(row)
    usage = RolloutRow(row).response.get("usage")
    if isinstance(usage, dict):
        merged.update(usage)  # as RewardProfiler: usage counts join (and win over) the row's fields
    out = {}
    for key, value in merged.items():
        number = _finite(value)
        if number is not None and key not in NOT_DESCRIBED:
            out[key] = number
    return out


def _checked_rows(rows: list[Any]) -> list[dict[str, Any]]:
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise BadRequest(validation_error("dict_type", ["body", "verify_responses", i], "Input should be a valid dictionary", row))
        reward = row.get("reward")
        if isinstance(reward, bool) or _finite(reward) is None:
            # An integer beyond 64 bits is not echoed: orjson (NeMo Gym's reader) refuses to parse one.
            shown = f"an integer of {len(str(abs(reward)))} digits" if isinstance(reward, int) else reward
            raise BadRequest(validation_error("finite_number", ["body", "verify_responses", i, "reward"],
                                              "Input should be a finite number", shown))
    return rows


def aggregate_metrics(rows: list[Any]) -> dict[str, Any]:
    """Statistics of verify responses grouped by task (`_ng_task_index`, else `id`, else position),
    each group with its `num_rollouts`; overall the same plus `num_tasks`, `num_masked` and pass@k
    for k = 1, 2, 4, ... up to the fewest rollouts of any task (a rollout passes with reward >= 1)."""
    groups: dict[str, list[dict[str, float]]] = {}
    rewards: dict[str, list[float]] = {}
    masked = 0
    for i, row in enumerate(_checked_rows(rows)):
        if row.get("mask_sample") is True:
            masked += 1
            continue
        key = row.get("_ng_task_index", row.get("id", i))
        key = json.dumps(key, sort_keys=True, default=str)
        groups.setdefault(key, []).append(_fields(row))
        rewards.setdefault(key, []).append(float(row["reward"]))
    if not groups:
        return {"group_level_metrics": [], "agent_metrics": {"num_tasks": 0, "num_rollouts": 0, "num_masked": masked},
                "key_metrics": {}}
    keys = list(groups)
    parsed = [json.loads(k) for k in keys]
    if all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in parsed):
        keys = [k for _, k in sorted(zip(parsed, keys, strict=True))]  # NeMo Gym's groupby order
    try:
        per_task = [{"_ng_task_index": json.loads(key), "num_rollouts": len(groups[key]),
                     **describe(_columns(groups[key]), len(groups[key]))} for key in keys]
        everything = [fields for key in keys for fields in groups[key]]
        agent: dict[str, Any] = {"num_tasks": len(groups), "num_rollouts": len(everything), "num_masked": masked,
                                 **describe(_columns(everything), len(everything))}
    except Overflow as exc:
        raise BadRequest(validation_error("finite_number", ["body", "verify_responses"],
                                          f"Statistics of {exc.args[0]!r} leave the float range", None)) from None
    k_max = min(len(v) for v in rewards.values())
    k = 1
    while k <= k_max:
        agent[f"pass@{k}"] = statistics.fmean(_pass_at_k(len(v), sum(x >= 1.0 for x in v), k) for v in rewards.values())
        k *= 2
    top = max(int(key.split("@")[1]) for key in agent if key.startswith("pass@"))
    key_metrics = {k: v for k, v in agent.items() if k.startswith("mean/")}
    key_metrics[f"pass@{top}"] = agent[f"pass@{top}"]
    return {"group_level_metrics": per_task, "agent_metrics": agent, "key_metrics": key_metrics}


def _columns(rows: list[dict[str, float]]) -> dict[str, list[float]]:
    columns: dict[str, list[float]] = {}
    for fields in rows:
        for name, value in fields.items():
            columns.setdefault(name, []).append(value)
    return columns
