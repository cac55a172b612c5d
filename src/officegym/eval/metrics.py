"""Metrics over rollout rows: accuracy, pass@k / pass^k, buckets, breakdowns, error taxonomy, all
over the rollouts that ran; those that ended in an error (the model backend, a scripted policy or
the environment failed) are counted apart, with their causes."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from officegym.core.pass_k import pass_at_k, pass_hat_k
from officegym.core.rollout_row import RolloutRow, error_source, officegym_of
from officegym.core.task import Task
from officegym.eval.stats import reward_interval, wilson_interval
from officegym.rewards.calls import count_calls

ERROR_KINDS = ("missing write", "extra write", "wrong tool", "wrong argument value", "invalid call")


def _matched(row: dict[str, Any]) -> bool:
    return RolloutRow(row).matched


def _calls(row: dict[str, Any]) -> list[dict[str, Any]]:
    return RolloutRow(row).function_call_items


def write_calls(names: Iterable[str], write_tools: frozenset[str] | None) -> list[str]:
    return [n for n in names if write_tools is None or n in write_tools]


def classify_failure(row: dict[str, Any], gt_names: list[str], write_tools: frozenset[str] | None) -> str:
    """One primary kind per failed rollout (the first that applies, in ERROR_KINDS order)."""
    og = officegym_of(row)
    calls = _calls(row)
    status = og.get("call_status") or []
    if len(status) != len(calls):  # rows from elsewhere: count every call as executed
        status = ["ok"] * len(calls)
    pred_writes = write_calls([c.get("name", "") for c, s in zip(calls, status) if s == "ok"], write_tools)
    gt_writes = write_calls(gt_names, write_tools)
    if gt_writes and not pred_writes:
        return "missing write"
    if not gt_writes and pred_writes:
        return "extra write"
    if sorted(set(pred_writes)) != sorted(set(gt_writes)):
        return "wrong tool"
    if len(pred_writes) < len(gt_writes):
        return "missing write"
    if len(pred_writes) > len(gt_writes):
        return "extra write"
    if count_calls(status, og.get("invalid_fragments") or [])[0]:
        return "invalid call"
    return "wrong argument value"


def errored(row: dict[str, Any]) -> bool:
    """The rollout ended in an error (the model backend, a scripted policy or the environment
    failed), not in anything the model did: it has no score."""
    return error_source(row) is not None


def errored_causes(rows: Iterable[dict[str, Any]], width: int = 300) -> dict[str, int]:
    """The errors of `rows`, most frequent first: "who: message" (cut at `width`) -> rollouts."""
    causes = Counter(f"{error_source(r)}: {str(officegym_of(r).get('error'))[:width]}" for r in rows if errored(r))
    return dict(causes.most_common())


def compute_metrics(rows: list[dict[str, Any]], tasks: list[Task], write_tools: frozenset[str] | None = None) -> dict[str, Any]:
    """Metrics of the rollouts that ran; those that ended in an error are counted apart (`errored`,
    `errored_causes`): scored, a failed model call on a "change nothing" task would count as right."""
    ran = [r for r in rows if not errored(r)]
    return {**_scored(ran, tasks, write_tools), "errored": len(rows) - len(ran), "errored_causes": errored_causes(rows)}


def _scored(rows: list[dict[str, Any]], tasks: list[Task], write_tools: frozenset[str] | None) -> dict[str, Any]:
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_task[RolloutRow(r).task_id].append(r)
    task_by_id = {str(t.id): t for t in tasks}
    n_rows = len(rows)
    if not n_rows:
        return _nothing_scored()
    k = max(len(v) for v in by_task.values())
    accuracy = statistics.fmean(_matched(r) for r in rows)
    per_task = []
    buckets: dict[str, list[bool]] = defaultdict(list)
    groups: dict[str, dict[str, list[bool]]] = {"category": defaultdict(list), "difficulty": defaultdict(list), "template": defaultdict(list)}
    taxonomy: dict[str, int] = dict.fromkeys(ERROR_KINDS, 0)
    invalid_calls = total_calls = failed_with_invalid = n_with_invalid = 0
    for tid, trs in by_task.items():
        task = task_by_id.get(tid)
        gt_names = [c.name for c in task.ground_truth] if task else []
        n_gt_writes = len(write_calls(gt_names, write_tools))
        c = sum(_matched(r) for r in trs)
        per_task.append((len(trs), c))
        bucket = "empty ground truth" if n_gt_writes == 0 else (">= 2 writes" if n_gt_writes >= 2 else "1 write")
        meta = task.metadata if task else {}
        for r in trs:
            ok = _matched(r)
            buckets[bucket].append(ok)
            if n_gt_writes >= 1:
                buckets[">= 1 write"].append(ok)
            groups["category"][str(task.category if task else None)].append(ok)
            groups["difficulty"][str(meta.get("difficulty", "-"))].append(ok)
            groups["template"][str(meta.get("template", "-"))].append(ok)
            status = officegym_of(r).get("call_status") or []
            frags = officegym_of(r).get("invalid_fragments") or []
            bad, attempted = count_calls(status, frags)
            total_calls += attempted
            invalid_calls += bad
            n_with_invalid += bool(bad)
            if not ok:
                taxonomy[classify_failure(r, gt_names, write_tools)] += 1
                failed_with_invalid += bool(bad)
    empty_share = statistics.fmean(
        len(write_calls([c.name for c in task_by_id[t].ground_truth], write_tools)) == 0
        for t in by_task if t in task_by_id
    ) if any(t in task_by_id for t in by_task) else None
    og = [officegym_of(r) for r in rows]
    seconds = [o.get("seconds", 0.0) for o in og]
    env_seconds = [o.get("env_seconds", 0.0) for o in og]
    ks = sorted({1, k})
    return {
        "rollouts": n_rows,
        "tasks": len(by_task),
        "samples_per_task": k,
        "accuracy": accuracy,
        "accuracy_ci95": list(wilson_interval(sum(_matched(r) for r in rows), n_rows)),
        "mean_reward": statistics.fmean(RolloutRow(r).reward or 0.0 for r in rows),
        "mean_reward_ci95": list(reward_interval(rows)),
        "pass_at_k": {str(kk): statistics.fmean(pass_at_k(n, c, kk) for n, c in per_task) for kk in ks},
        "pass_hat_k": {str(kk): statistics.fmean(pass_hat_k(n, c, kk) for n, c in per_task) for kk in ks},
        "buckets": {b: _rate(v) for b, v in sorted(buckets.items())},
        "empty_ground_truth_share": empty_share,
        "by": {g: {key: _rate(v) for key, v in sorted(d.items())} for g, d in groups.items()},
        "side_effect_rate": statistics.fmean(bool((o.get("verdict") or {}).get("side_effects")) for o in og),
        "invalid_call_rate": invalid_calls / total_calls if total_calls else 0.0,
        "rollouts_with_invalid_call": n_with_invalid / n_rows,
        "calls_per_rollout": statistics.fmean(len(_calls(r)) for r in rows),
        "tokens_per_rollout": statistics.fmean(o.get("tokens", 0) for o in og),
        "seconds_per_rollout": {"median": statistics.median(seconds), "mean": statistics.fmean(seconds)},
        "env_share_of_time": (sum(env_seconds) / sum(seconds)) if sum(seconds) else 0.0,
        "errors": {kind: n for kind, n in taxonomy.items()},
        # not exclusive: a failed rollout counts here whatever its primary kind above
        "failures_with_invalid_call": failed_with_invalid,
        "stop_reasons": _count(o.get("stop_reason", "") for o in og),
        # an error the episode outlived (a multi-seat episode goes on without a failed seat's turn)
        "rollout_errors": sum(1 for o in og if o.get("error")),
        "reward_components": _mean_components(og),
    }


def _nothing_scored() -> dict[str, Any]:
    """The metrics' shape when no rollout ran: no number stands for a score nothing earned."""
    return {
        "rollouts": 0, "tasks": 0, "samples_per_task": 0, "accuracy": None, "accuracy_ci95": None,
        "mean_reward": None, "mean_reward_ci95": None, "pass_at_k": {}, "pass_hat_k": {}, "buckets": {},
        "empty_ground_truth_share": None, "by": {"category": {}, "difficulty": {}, "template": {}},
        "side_effect_rate": None, "invalid_call_rate": None, "rollouts_with_invalid_call": None,
        "calls_per_rollout": None, "tokens_per_rollout": None, "seconds_per_rollout": None,
        "env_share_of_time": None, "errors": dict.fromkeys(ERROR_KINDS, 0), "failures_with_invalid_call": 0,
        "stop_reasons": {}, "rollout_errors": 0, "reward_components": {},
    }


def _rate(values: list[bool]) -> dict[str, Any]:
    return {"n": len(values), "accuracy": statistics.fmean(values) if values else None,
            "ci95": list(wilson_interval(sum(values), len(values))) if values else None}


def _count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in values:
        out[v] += 1
    return dict(out)


def _mean_components(og: list[dict[str, Any]]) -> dict[str, float]:
    sums: dict[str, list[float]] = defaultdict(list)
    for o in og:
        for name, v in (o.get("reward_components") or {}).items():
            sums[name].append(float(v))
    return {name: statistics.fmean(v) for name, v in sums.items()}
