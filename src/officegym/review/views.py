"""What the item page shows, built from a stored item: turns, state diff, reward breakdown. The row's
readable parts (pretty arguments, turns, diff tables) live in core.rollout_view, where the eval
report reads them too; the pages use them from here."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from officegym.core.rollout_row import RolloutRow, officegym_of
from officegym.core.rollout_view import (  # noqa: F401
    diff_tables,
    failure_label,
    pretty_json,
    prompt_messages,
    trajectory_turns,
)
from officegym.core.task import TaskFormatError


def inline_code(text: Any):
    """A description with `code` spans, as HTML: the spans in <code>, everything escaped (an odd
    backtick leaves the text as it is)."""
    from markupsafe import Markup, escape

    parts = str(text).split("`")
    if len(parts) % 2 == 0:
        return escape(text)
    return Markup("").join(escape(p) if i % 2 == 0 else Markup("<code>%s</code>") % p for i, p in enumerate(parts))


def og_of(row: dict[str, Any]) -> dict[str, Any]:
    """The row's `officegym` block, or {} when it is missing or not an object."""
    return officegym_of(row)


def verdict_of(row: dict[str, Any]) -> dict[str, Any] | None:
    return RolloutRow(row).verdict


def reward_breakdown(row: dict[str, Any]) -> dict[str, Any]:
    og = og_of(row)
    verdict = verdict_of(row) or {}
    return {
        "reward": row.get("reward"),
        "components": og.get("reward_components") if isinstance(og.get("reward_components"), dict) else {},
        "matched": verdict.get("matched"),
        "mode": verdict.get("mode"),
        "other_mode": verdict.get("other_mode"),
        "other_mode_reward": verdict.get("other_mode_reward"),
        "side_effects": verdict.get("side_effects"),
        "invalid_calls": verdict.get("invalid_calls") or [],
        "stop_reason": og.get("stop_reason"),
        "error": og.get("error"),
        "failure": failure_label(row),
    }


def graded_view(row: dict[str, Any]) -> dict[str, Any] | None:
    """A grading verifier's verdict (the role environments), as the item page shows it: its label,
    the evidence sentences, the components; None for a verdict that does not grade."""
    verdict = verdict_of(row)
    if not (isinstance(verdict, dict) and verdict.get("graded") is True):
        return None
    components = verdict.get("components") if isinstance(verdict.get("components"), dict) else {}
    evidence = verdict.get("evidence") if isinstance(verdict.get("evidence"), list) else []
    return {
        "label": verdict.get("label"), "matched": verdict.get("matched"), "reward": verdict.get("reward"),
        "role": verdict.get("role"), "difficulty": verdict.get("difficulty"),
        "infeasible": verdict.get("infeasible_scenario"), "answer_tool": verdict.get("answer_tool"),
        "evidence": [str(e) for e in evidence], "components": components,
    }


def ground_truth_text(row: dict[str, Any]) -> str:
    """The ground truth as the correction form edits it: a JSON list with arguments as objects."""
    try:
        task = RolloutRow(row).task()
    except TaskFormatError:
        return "[]"
    return calls_text([c.to_nemo() for c in task.ground_truth])


def calls_text(calls: list[dict[str, Any]]) -> str:
    shown = []
    for c in calls:
        args = c.get("arguments")
        if isinstance(args, str):
            with contextlib.suppress(ValueError, RecursionError):
                args = json.loads(args)
        shown.append({"name": c.get("name"), "arguments": args})
    return json.dumps(shown, indent=1, ensure_ascii=False)


def histogram(rewards: list[float | None], bins: int = 5, top: float = 1.0) -> list[dict[str, Any]]:
    """Counts of rewards in equal bins over [0, top] (None counted apart)."""
    top = max([top] + [r for r in rewards if r is not None])
    counts = [0] * bins
    missing = 0
    for r in rewards:
        if r is None:
            missing += 1
            continue
        i = min(bins - 1, max(0, int(r / top * bins))) if top else 0
        counts[i] += 1
    out = [{"label": f"{top * i / bins:.2g}-{top * (i + 1) / bins:.2g}", "count": n} for i, n in enumerate(counts)]
    if missing:
        out.append({"label": "none", "count": missing})
    return out
