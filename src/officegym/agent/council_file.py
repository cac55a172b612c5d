"""The council run folder's format, written and read here alone: councils.jsonl (a row per finished
council: task id, team reward, label, components, evidence, every act, rounds, seconds, the seats'
policy names and every seat's conversation), run.json (what the folder is run with) and
summary.json (the seats, the settings and the team figures). `officegym council` and
agent/council_run.py write it; the review queue (review/council.py) reads it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from officegym.core.files import atomic_write
from officegym.core.policy import Policy

if TYPE_CHECKING:
    from officegym.agent.council import CouncilOutcome

COUNCILS = "councils.jsonl"
SUMMARY = "summary.json"
SETTINGS = "run.json"


class CouncilRunError(ValueError):
    """A council run that cannot start as asked (a policy that cannot sit at its seat, a folder of
    councils run with other settings); the message says which."""


# -- councils.jsonl


def outcome_row(outcome: CouncilOutcome, seats: Mapping[str, Policy]) -> dict[str, Any]:
    """A JSON row for a finished council: reward, label, components, evidence, every act, every seat's
    conversation."""
    return {
        "task_id": outcome.task_id, "reward": outcome.reward, "label": outcome.grade.label,
        "components": outcome.grade.components, "evidence": outcome.grade.evidence, "acts": outcome.state.events,
        "rounds": outcome.state.rounds, "seconds": outcome.seconds,
        "seats": {s: p.name for s, p in seats.items()},
        "trajectories": {s: t.to_dict() for s, t in outcome.trajectories.items()},
    }


def task_key(task_id: Any) -> str:
    """How rows and tasks are matched by id (a resumed run skips the tasks whose key it holds)."""
    return json.dumps(task_id, default=str)


def is_council_row(row: Any) -> bool:
    """A row of councils.jsonl (not yet a review item row)."""
    return (isinstance(row, dict) and "task_id" in row and isinstance(row.get("acts"), list)
            and isinstance(row.get("trajectories"), dict))


def summarize_councils(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Team figures of finished councils: mean reward, consensus rate (a commit every member
    accepted), valid objections left unresolved (total and per council), commits, escalations,
    mean rounds and the count of each verdict label."""
    n = len(rows)
    if not n:
        return {"councils": 0}
    comps = [r.get("components") or {} for r in rows]
    labels: dict[str, int] = {}
    for r in rows:
        labels[str(r.get("label"))] = labels.get(str(r.get("label")), 0) + 1
    commits = sum(1 for r in rows if any(a.get("act") == "commit" for a in r.get("acts") or []))
    escalations = sum(1 for r in rows if any(a.get("act") == "escalate" for a in r.get("acts") or []))
    unresolved = sum(float(c.get("unresolved_objections", 0.0)) for c in comps)
    return {
        "councils": n,
        "mean_reward": sum(float(r.get("reward") or 0.0) for r in rows) / n,
        "consensus_rate": sum(float(c.get("consensus", 0.0)) for c in comps) / n,
        "unresolved_objections": unresolved,
        "unresolved_per_council": unresolved / n,
        "commit_rate": commits / n,
        "escalation_rate": escalations / n,
        "mean_rounds": sum(float(r.get("rounds") or 0) for r in rows) / n,
        "labels": dict(sorted(labels.items())),
    }


# -- run.json and summary.json


def _write_json(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def read_settings(folder: Path) -> dict[str, Any]:
    """What folder/run.json says the councils were run with ({} when it says nothing readable)."""
    try:
        data = json.loads((folder / SETTINGS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_settings(out: Path, settings: dict[str, Any]) -> None:
    """Record in out/run.json what a council folder is run with. A folder holding councils run with
    other settings raises CouncilRunError (their task ids would name other councils)."""
    path = out / SETTINGS
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        before = None
    if isinstance(before, dict) and (out / COUNCILS).exists():
        changed = [k for k, v in settings.items() if before.get(k) != v]
        if changed:
            raise CouncilRunError(f"{out} holds councils run with other {', '.join(changed)}: use another --out")
    out.mkdir(parents=True, exist_ok=True)
    _write_json(path, settings)


def write_summary(folder: Path, summary: dict[str, Any]) -> None:
    _write_json(folder / SUMMARY, summary)


__all__ = ["COUNCILS", "SETTINGS", "SUMMARY", "CouncilRunError", "is_council_row", "outcome_row",
           "read_settings", "record_settings", "summarize_councils", "task_key", "write_summary"]
