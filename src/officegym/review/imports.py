"""Import review decisions made elsewhere: officegym's own decisions.jsonl (from another store),
a Label Studio export of the tasks file, or Argilla records with responses.

Every decision goes through the same path as the web UI (corrections are replayed and re-verified;
a refused one is reported, not saved). Importing the same file twice adds nothing the second time.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.core.task import TaskFormatError, iter_jsonl
from officegym.review.actions import ActionError, apply_action
from officegym.review.replay import CorrectionError
from officegym.review.store import REJECT_REASONS, Store
from officegym.review.worlds import Environments


@dataclass
class ImportResult:
    imported: int = 0
    already: int = 0
    unknown_items: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


@dataclass
class Incoming:
    item_key: str
    action: str
    reviewer: str
    at: str | None = None
    reason: str | None = None
    note: str | None = None
    calls: Any = None


def _label_to_action(label: str) -> tuple[str, str | None]:
    if label == "accept":
        return "accept", None
    if label in REJECT_REASONS:
        return "reject", label
    raise ValueError(f"unknown decision label {label!r}")


def _from_labels(key: str, reviewer: str, at: str | None, label: str | None, calls: str | None, note: str | None) -> Incoming | None:
    if calls and calls.strip():
        return Incoming(key, "correct", reviewer, at, None, note, calls)
    if label is None:
        return Incoming(key, "note", reviewer, at, None, note) if note else None
    action, reason = _label_to_action(label)
    return Incoming(key, action, reviewer, at, reason, note)


def read_decisions_jsonl(path: Path) -> list[Incoming]:
    out = []
    for lineno, row in iter_jsonl(path):
        if not isinstance(row, dict) or "item_key" not in row or "action" not in row:
            raise ValueError(f"{path}:{lineno}: not a decision row (needs item_key and action)")
        out.append(Incoming(str(row["item_key"]), str(row["action"]), str(row.get("reviewer") or "import"),
                            row.get("at"), row.get("reason"), row.get("note"), row.get("calls")))
    return out


def read_label_studio(tasks: list[dict[str, Any]]) -> list[Incoming]:
    out = []
    for task in tasks:
        key = (task.get("data") or {}).get("item_key")
        if not key:
            continue
        for ann in task.get("annotations") or []:
            if ann.get("was_cancelled"):
                continue
            values: dict[str, Any] = {}
            for r in ann.get("result") or []:
                value = r.get("value") or {}
                if r.get("type") == "choices" and value.get("choices"):
                    values[r.get("from_name")] = value["choices"][0]
                elif r.get("type") == "textarea" and value.get("text"):
                    values[r.get("from_name")] = "\n".join(value["text"])
            reviewer = str((ann.get("meta") or {}).get("reviewer") or ann.get("completed_by") or "label-studio")
            at = ann.get("updated_at") or ann.get("created_at")
            inc = _from_labels(key, reviewer, at, values.get("decision"), values.get("corrected_calls"), values.get("note"))
            if inc is not None:
                out.append(inc)
    return out


def read_argilla(records: list[dict[str, Any]]) -> list[Incoming]:
    out = []
    for rec in records:
        key = (rec.get("metadata") or {}).get("item_key") or rec.get("id")
        responses = rec.get("responses") or {}
        by_user: dict[str, dict[str, Any]] = {}
        for question, answers in responses.items():
            for a in answers or []:
                if a.get("status") not in (None, "submitted"):
                    continue  # drafts and discarded answers are not decisions
                by_user.setdefault(str(a.get("user_id")), {})[question] = a.get("value")
        for user, values in sorted(by_user.items()):
            inc = _from_labels(str(key), f"argilla:{user}", None, values.get("decision"),
                               values.get("corrected_calls"), values.get("note"))
            if inc is not None:
                out.append(inc)
    return out


def read_reviews(path: str | os.PathLike[str]) -> list[Incoming]:
    """Decisions from a file in any of the three formats (told apart by their shape)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return read_decisions_jsonl(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of Label Studio tasks or Argilla records")
    if any(isinstance(x, dict) and "data" in x for x in data):
        return read_label_studio(data)
    if any(isinstance(x, dict) and "fields" in x for x in data):
        return read_argilla(data)
    return []


def import_reviews(store: Store, path: str | os.PathLike[str], envs: Environments | None = None) -> ImportResult:
    """Apply the decisions in `path` to the store (see the module docstring)."""
    envs = envs or Environments()
    try:
        incoming = read_reviews(path)
    except (OSError, TaskFormatError) as exc:
        raise ValueError(str(exc)) from None
    result = ImportResult()
    ids = store.ids_by_keys([i.item_key for i in incoming])
    for inc in incoming:
        item_id = ids.get(inc.item_key)
        if item_id is None:
            result.unknown_items.append(inc.item_key)
            continue
        if store.has_decision(item_id, inc.action, inc.reviewer, inc.at, inc.reason, inc.note):
            result.already += 1
            continue
        try:
            apply_action(store, envs, item_id, inc.action, inc.reviewer, inc.reason, inc.note, inc.calls, at=inc.at)
        except (CorrectionError, ActionError, ValueError) as exc:
            result.refused.append(f"{inc.item_key} ({inc.action} by {inc.reviewer}): {exc}")
            continue
        result.imported += 1
    if incoming:
        store.log("import", "import_reviews", {"file": str(path), "imported": result.imported, "already": result.already,
                                                "refused": len(result.refused), "unknown": len(result.unknown_items)})
    return result
