"""Reviewer actions on items, shared by the web UI, the JSON API and review imports."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from officegym.core.task import Task, TaskFormatError
from officegym.core.types import ToolCall
from officegym.review.replay import CorrectionCheck, CorrectionError, check_correction, parse_calls_text
from officegym.review.rows import RolloutRef
from officegym.review.store import ACTIONS, REJECT_REASONS, Store
from officegym.review.worlds import Environments, WorldSpecError


class ActionError(ValueError):
    """An action that cannot be taken as asked; the message is for the reviewer."""


@dataclass
class ActionResult:
    decision_id: int | None
    check: CorrectionCheck | None = None


def item_ref(item: dict[str, Any]) -> RolloutRef:
    return RolloutRef(item["row"], item["source"], item.get("line") or 0)


def item_task(item: dict[str, Any]) -> Task:
    try:
        return item_ref(item).task()
    except TaskFormatError as exc:
        raise ActionError(f"the item's task row cannot be read: {exc}") from None


def item_mode(item: dict[str, Any]) -> str | None:
    mode = (item_ref(item).verdict or {}).get("mode")
    return mode if isinstance(mode, str) else None


def check_item_correction(envs: Environments, item: dict[str, Any], calls: list[ToolCall]) -> CorrectionCheck:
    """Replay and re-verify corrected ground-truth calls for an item (CorrectionError if refused)."""
    task = item_task(item)
    mode = item_mode(item)
    try:
        env = envs.get(task.environment_name, item.get("world"), mode)
    except (WorldSpecError, KeyError, TypeError, ValueError) as exc:
        raise CorrectionError(f"cannot replay the correction: no environment ({exc})") from None
    return check_correction(env, task, calls, item_ref(item).calls(), mode)


def apply_action(
    store: Store,
    envs: Environments,
    item_id: int,
    action: str,
    reviewer: str,
    reason: str | None = None,
    note: str | None = None,
    calls: str | list[Any] | None = None,
    save: bool = True,
    at: str | None = None,
) -> ActionResult:
    """Take `action` on an item. A correction is parsed, replayed and re-verified first; a refused
    correction is written to the audit log and raised as CorrectionError with the tool's error.
    `save=False` only checks a correction."""
    if action not in ACTIONS:
        raise ActionError(f"unknown action {action!r}; known: {', '.join(ACTIONS)}")
    reviewer = (reviewer or "").strip()
    if not reviewer:
        raise ActionError("say who you are: a decision needs a reviewer name")
    reason = reason or None
    if action == "reject" and reason not in REJECT_REASONS:
        raise ActionError(f"a rejection needs a reason, one of: {', '.join(REJECT_REASONS)}")
    if action != "reject" and reason is not None and reason not in REJECT_REASONS:
        raise ActionError(f"unknown reason {reason!r}")
    item = store.get(item_id)
    if action != "correct":
        return ActionResult(store.decide(item_id, action, reviewer, reason, note, None, at))
    if calls is None or (isinstance(calls, str) and not calls.strip()):
        raise ActionError("a correction needs the corrected ground-truth calls")
    try:
        try:
            text = calls if isinstance(calls, str) else json.dumps(calls)
        except (TypeError, ValueError, RecursionError) as exc:  # e.g. an int past the digit limit
            raise CorrectionError(f"the calls cannot be written as JSON: {str(exc)[:120]}") from None
        check = check_item_correction(envs, item, parse_calls_text(text))
    except CorrectionError as exc:
        store.log(reviewer, "correct_refused", {"error": str(exc)}, item_id)
        raise
    if not save:
        return ActionResult(None, check)
    previous = [c.to_nemo() for c in item_task(item).ground_truth]
    payload = {**check.to_dict(), "previous_ground_truth": previous}
    return ActionResult(store.decide(item_id, "correct", reviewer, reason, note, payload, at), check)
