"""`/aggregate_metrics`: reward statistics of verify responses, per task and overall."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

from officegym.server.protocol import BadRequest, validation_error


def _stats(values: list[float], prefix: str = "") -> dict[str, float]:
    return {
        f"{prefix}mean/reward": statistics.fmean(values),
        f"{prefix}max/reward": max(values),
        f"{prefix}min/reward": min(values),
        f"{prefix}median/reward": statistics.median(values),
        f"{prefix}std/reward": statistics.pstdev(values),
    }


def _pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def aggregate_metrics(rows: list[Any]) -> dict[str, Any]:
    """Reward statistics of verify responses, grouped by task (`_ng_task_index`, else `id`, else
    position): per task mean/max/min/median/std, overall the same plus pass@k for k = 1, 2, 4, ...
    up to the fewest rollouts of any task (a rollout passes with reward >= 1)."""
    groups: dict[str, list[float]] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise BadRequest(validation_error("dict_type", ["body", "verify_responses", i], "Input should be a valid dictionary", row))
        reward = row.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
            raise BadRequest(validation_error("float_type", ["body", "verify_responses", i, "reward"],
                                              "Input should be a valid number", reward))
        key = row.get("_ng_task_index", row.get("id", i))
        groups.setdefault(json.dumps(key, sort_keys=True, default=str), []).append(float(reward))
    if not groups:
        return {"group_level_metrics": [], "agent_metrics": {"num_tasks": 0, "num_rollouts": 0}, "key_metrics": {}}
    per_task = []
    for key, values in groups.items():
        per_task.append({"_ng_task_index": json.loads(key), "num_rollouts": len(values), **_stats(values)})
    everything = [v for values in groups.values() for v in values]
    agent: dict[str, Any] = {"num_tasks": len(groups), "num_rollouts": len(everything), **_stats(everything)}
    k_max = min(len(v) for v in groups.values())
    k = 1
    while k <= k_max:
        agent[f"pass@{k}"] = statistics.fmean(_pass_at_k(len(v), sum(x >= 1.0 for x in v), k) for v in groups.values())
        k *= 2
    top = max(int(key.split("@")[1]) for key in agent if key.startswith("pass@"))
    key_metrics = {"mean/reward": agent["mean/reward"], f"pass@{top}": agent[f"pass@{top}"]}
    return {"group_level_metrics": per_task, "agent_metrics": agent, "key_metrics": key_metrics}
