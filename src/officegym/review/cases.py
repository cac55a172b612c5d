"""Verifier regression cases: made from review decisions, replayed with the current verifier.

- accept: a "confirmed" case, the verdict the reviewer confirmed.
- correct: the corrected truth verifies against itself, and the reviewed rollout scores as it did
  against the corrected truth (when the correction was re-scored).
- reject verifier_too_strict / verifier_too_lenient: a "verifier_wrong" case expecting the
  opposite verdict; `open` while the current verifier still gets it wrong.
Councils' cases replay their acts (`council` in the case).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from officegym.core.task import Task, TaskFormatError, iter_jsonl
from officegym.core.toolcalls import parse_tool_call
from officegym.core.types import ToolCall
from officegym.review import council
from officegym.review.actions import item_mode, item_ref, item_task
from officegym.review.replay import with_ground_truth
from officegym.review.worlds import Environments

VERIFIER_REJECTIONS = {"verifier_too_strict": True, "verifier_too_lenient": False}  # reason -> expected matched


def _case(item: dict[str, Any], decision: dict[str, Any], kind: str, task: Task, calls: list[ToolCall],
          expected: bool, envs: Environments) -> dict[str, Any]:
    mode = item_mode(item)
    row = task.to_row()
    # The verifier never reads the tool schemas; leaving them out keeps case files small.
    (row.get("responses_create_params") or {}).pop("tools", None)
    case = {
        "case_id": f"{item['key']}#{decision['id']}:{kind}",
        "kind": "verifier_wrong" if kind.startswith("verifier") else "confirmed",
        "world": item.get("world"),
        "environment": task.environment_name,
        "mode": mode,
        "task": row,
        "calls": [c.to_nemo() for c in calls],
        "expected": {"matched": expected},
        "origin": {"item": item["key"], "decision": decision["action"], "reason": decision["reason"],
                   "reviewer": decision["reviewer"], "at": decision["at"], "note": decision["note"]},
    }
    block = council.council_block(item["row"])
    if block is not None and kind != "corrected_truth":  # the council itself: its acts are replayed
        case["council"] = {"acts": block["acts"], "rounds": block.get("rounds")}
    if case["kind"] == "verifier_wrong":
        got = run_case(case, envs)
        case["open"] = got != expected  # still wrong with the current verifier
    return case


def decision_cases(envs: Environments, item: dict[str, Any], d: dict[str, Any]) -> list[dict[str, Any]] | str:
    """The cases an item's latest decision makes, or why there are none."""
    try:
        task = item_task(item)
    except ValueError as exc:
        return str(exc)
    calls = item_ref(item).calls()
    ref = item_ref(item)
    try:
        if d["action"] == "accept":
            return [_case(item, d, "accepted", task, calls, ref.matched, envs)]
        if d["action"] == "correct" and d["payload"]:
            fixed = with_ground_truth(task, [parse_tool_call(c) for c in d["payload"]["calls"]])
            out = [_case(item, d, "corrected_truth", fixed, list(fixed.ground_truth), True, envs)]
            rescored = (d["payload"].get("rescored") or {}).get("matched")
            if isinstance(rescored, bool):
                out.append(_case(item, d, "rescored", fixed, calls, rescored, envs))
            return out
        if d["action"] == "reject" and d["reason"] in VERIFIER_REJECTIONS:
            return [_case(item, d, f"verifier:{d['reason']}", task, calls, VERIFIER_REJECTIONS[d["reason"]], envs)]
    except CaseError as exc:
        return str(exc)
    return []


class CaseError(RuntimeError):
    """A case that cannot be run (no world, unreadable task)."""


def run_case(case: dict[str, Any], envs: Environments | None = None) -> bool:
    """The current verifier's `matched` for a case."""
    envs = envs or Environments()
    try:
        task = Task.from_row(case["task"])
        calls = [parse_tool_call(c) for c in case["calls"]]
        env = envs.get(case.get("environment") or task.environment_name, case.get("world"), case.get("mode"))
    except (TaskFormatError, KeyError, ValueError, TypeError) as exc:
        raise CaseError(f"case {case.get('case_id')!r}: {exc}") from None
    if isinstance(case.get("council"), dict):
        try:
            return council.case_matched(case["council"], task, env)
        except ValueError as exc:  # not a council environment, or a task naming no scenario
            raise CaseError(f"case {case.get('case_id')!r}: {exc}") from None
    return bool(env.verify(task, calls, case.get("mode")).matched)


@dataclass
class CaseResult:
    case_id: str
    expected: bool
    got: bool | None
    open: bool
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.got == self.expected


def read_cases(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    return [row for _, row in iter_jsonl(path)]


def check_cases(path: str | os.PathLike[str], envs: Environments | None = None) -> list[CaseResult]:
    """Run every case of a regression-cases file with the current verifier."""
    envs = envs or Environments()
    out = []
    for case in read_cases(path):
        expected = bool(case["expected"]["matched"])
        try:
            got = run_case(case, envs)
        except CaseError as exc:
            out.append(CaseResult(str(case.get("case_id")), expected, None, bool(case.get("open")), str(exc)))
            continue
        out.append(CaseResult(str(case["case_id"]), expected, got, bool(case.get("open"))))
    return out
