"""`/aggregate_metrics`: statistics of verify responses per task and overall, as NeMo Gym 0.7's
`compute_aggregate_metrics` computes them, plus rollout counts and pass@k.

As there: every numeric top-level field of a row (booleans as 0/1; fields starting with "_" left
out) and every numeric field of its `response.usage` (token counts) gets `mean/`, `max/`, `min/`,
`median/` and `std/` keys, std being the sample standard deviation (0 for a single rollout); rows
are grouped by `_ng_task_index` (sorted); `key_metrics` holds every `mean/` key. Rows whose
`mask_sample` is true are left out (the field says their reward is no measurement). The repeat,
completeness and observability parts are in repeats.py. Differences are listed in docs/nemo-rl.md.
"""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

from officegym.core.pass_k import pass_at_k
from officegym.core.rollout_row import RolloutRow
from officegym.server import repeats
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
                value = repeats.mean(values)
            elif stat == "max":
                value = max(values)
            elif stat == "min":
                value = min(values)
            elif stat == "median":
                value = repeats.median(values)
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


def _fields(row: dict[str, Any]) -> dict[str, float]:
    merged = dict(row)
    usage = RolloutRow(row).response.get("usage")
    if isinstance(usage, dict):
        merged.update(usage)  # as RewardProfiler: usage counts join (and win over) the row's fields
    out = {}
    for key, value in merged.items():
        number = _finite(value)
        if number is not None and key not in NOT_DESCRIBED and not key.startswith("_"):
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
    for k = 1, 2, 4, ... up to the fewest rollouts of any task (a rollout passes with reward >= 1);
    and NeMo Gym 0.7's completeness, repeat and observability figures (repeats.py)."""
    checked = _checked_rows(rows)
    scored = [row for row in checked if not row.get("mask_sample")]  # truthy, as NeMo Gym reads it
    masked = len(checked) - len(scored)
    covered = repeats.coverage(checked, scored, masked)
    perf = repeats.perf_summary(checked)
    groups: dict[str, list[tuple[dict[str, Any], dict[str, float]]]] = {}
    for i, row in enumerate(checked):
        if row.get("mask_sample"):
            continue
        key = json.dumps(row.get("_ng_task_index", row.get("id", i)), sort_keys=True, default=str)
        groups.setdefault(key, []).append((row, _fields(row)))
    if not groups:
        return {"group_level_metrics": [], "agent_metrics": {"num_tasks": 0, "num_rollouts": 0, "num_masked": masked,
                                                             **covered},
                "key_metrics": dict(covered), "perf_summary": perf, "repeat_level_metrics": []}
    keys = list(groups)
    parsed = [json.loads(k) for k in keys]
    if all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in parsed):
        keys = [k for _, k in sorted(zip(parsed, keys, strict=True))]  # NeMo Gym's groupby order
    try:
        per_task = [_group(json.loads(key), groups[key]) for key in keys]
        everything = [fields for key in keys for _, fields in groups[key]]
        agent: dict[str, Any] = {"num_tasks": len(groups), "num_rollouts": len(everything), "num_masked": masked,
                                 **describe(_columns(everything), len(everything))}
        repeat_rows = repeats.repeat_level_metrics(
            [(row.get(repeats.TASK, 0), row.get(repeats.ROLLOUT, 0), fields) for key in keys for row, fields in groups[key]])
        agent.update(repeats.across_repeats(repeat_rows))
        for name, value in [*agent.items(), *(item for r in repeat_rows for item in r.items())]:
            if isinstance(value, float) and not math.isfinite(value):
                raise Overflow(name)
    except Overflow as exc:
        raise BadRequest(validation_error("finite_number", ["body", "verify_responses"],
                                          f"Statistics of {exc.args[0]!r} leave the float range", None)) from None
    agent.update(covered)
    agent["num_repeats"] = repeats.num_repeats(checked)
    rewards = [[float(row["reward"]) for row, _ in groups[key]] for key in keys]
    k_max = min(len(v) for v in rewards)
    k = 1
    while k <= k_max:
        agent[f"pass@{k}"] = statistics.fmean(pass_at_k(len(v), sum(x >= 1.0 for x in v), k) for v in rewards)
        k *= 2
    top = max(int(key.split("@")[1]) for key in agent if key.startswith("pass@"))
    key_metrics = {k: v for k, v in agent.items() if k.startswith("mean/")}
    key_metrics.update(covered)
    key_metrics[f"pass@{top}"] = agent[f"pass@{top}"]
    return {"group_level_metrics": per_task, "agent_metrics": agent, "key_metrics": key_metrics,
            "perf_summary": perf, "repeat_level_metrics": repeat_rows}


def _group(task: Any, members: list[tuple[dict[str, Any], dict[str, float]]]) -> dict[str, Any]:
    """One task's statistics, with NeMo Gym's completeness keys (every rollout a verify response
    names is there, so nothing is missing) and its rollouts' numbers (`rollout_infos`)."""
    n = len(members)
    infos = sorted((_rollout_info(row) for row, _ in members), key=lambda info: repeats.order(info[repeats.ROLLOUT]))
    return {"_ng_task_index": task, **describe(_columns([fields for _, fields in members]), n),
            "sample": {"agent_ref": {"name": "agent"}},  # NeMo Gym's stand-in for the task row it has not got
            "num_rollouts": n, "expected_num_rollouts": n, "missing_num_rollouts": 0,
            "reward_profile_completion_pct": 100.0, "rollout_infos": infos}


def _rollout_info(row: dict[str, Any]) -> dict[str, Any]:
    """A rollout's numbers as NeMo Gym lists them: its ids, reward, usage counts, then its other
    numeric fields (booleans as 0/1; fields starting with "_" left out)."""
    task, rollout = row.get(repeats.TASK, 0), row.get(repeats.ROLLOUT, 0)
    info: dict[str, Any] = {"rollout_id": f"{task}:{rollout}", repeats.TASK: task, repeats.ROLLOUT: rollout}
    if "reward" in row:
        info["reward"] = row["reward"]
    usage = RolloutRow(row).response.get("usage")
    for source in (usage if isinstance(usage, dict) else {}, row):
        for key, value in source.items():
            if source is row and (key.startswith("_") or key in ("reward", "response", "mask_sample")):
                continue
            if isinstance(value, bool):
                info[key] = int(value)
            elif _finite(value) is not None:
                info[key] = value
    return info


def _columns(rows: list[dict[str, float]]) -> dict[str, list[float]]:
    columns: dict[str, list[float]] = {}
    for fields in rows:
        for name, value in fields.items():
            columns.setdefault(name, []).append(value)
    return columns
