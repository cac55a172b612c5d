"""Reviewer actions on items, shared by the web UI, the JSON API and review imports."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.task import Task, TaskFormatError
from officegym.core.types import ToolCall
from officegym.review import council, council_view, roles, views
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


def item_env(envs: Environments, item: dict[str, Any]) -> BaseEnvironment:
    """The environment an item's rollout ran in (CorrectionError when it cannot be built)."""
    task = item_task(item)
    try:
        return envs.get(task.environment_name, item.get("world"), item_mode(item))
    except (WorldSpecError, KeyError, TypeError, ValueError) as exc:
        raise CorrectionError(f"cannot replay the correction: no environment ({exc})") from None


def check_item_correction(envs: Environments, item: dict[str, Any], calls: list[ToolCall]) -> CorrectionCheck:
    """Replay and re-verify a correction for an item (CorrectionError if refused): the corrected
    ground-truth calls of a workplace task, the final answer of a role rollout (review/roles.py),
    the mediator's decision of a council (review/council.py)."""
    task = item_task(item)
    mode = item_mode(item)
    env = item_env(envs, item)
    if council.is_council_env(env):
        return council.check_council_correction(env, task, item["row"], calls, mode)
    if roles.is_role_env(env):
        return roles.check_role_correction(env, task, item["row"], calls, mode)
    return check_correction(env, task, calls, item_ref(item).calls(), mode)


def correction_text(envs: Environments, item: dict[str, Any]) -> str:
    """What the correction form starts from: the workplace task's ground truth, a role rollout's
    answer, a council's decision."""
    try:
        task = item_task(item)
        env = item_env(envs, item)
    except (ActionError, CorrectionError):
        return views.ground_truth_text(item["row"])
    if council.is_council_env(env):
        return council_view.decision_text(item["row"], task, env)
    if roles.is_role_env(env):
        return roles.answer_text(item["row"], task, frozenset(env.write_tools or ()))
    return views.ground_truth_text(item["row"])


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
        typed = parse_calls_text(text)
        check = check_item_correction(envs, item, typed)
    except CorrectionError as exc:
        store.log(reviewer, "correct_refused", {"error": str(exc)}, item_id)
        raise
    if not save:
        return ActionResult(None, check)
    previous = [c.to_nemo() for c in item_task(item).ground_truth]
    # `calls` is what was replayed and verified (a role's reads and answer, a council's decision in
    # its single-agent form); `typed` is what the reviewer wrote.
    payload = {**check.to_dict(), "previous_ground_truth": previous, "typed": [c.to_nemo() for c in typed]}
    return ActionResult(store.decide(item_id, "correct", reviewer, reason, note, payload, at), check)
