"""A run folder holds one run: resuming it with other settings would report old rows under new names."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


def foreign_run(out: Path, rows_file: str, expected: dict[str, str | None], defaults: dict[str, str] | None = None,
                what: str = "results") -> str | None:
    """Why `out` cannot be resumed with the `expected` run.json values (None where it can): the first
    key whose saved value differs. Keys expected as None are not compared; `defaults` stand in for
    keys an older run.json lacks. A folder without run.json or without `rows_file` is free."""
    try:
        before = json.loads((out / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(before, dict) or not (out / rows_file).exists():
        return None
    for key, now in expected.items():
        saved = before.get(key, (defaults or {}).get(key))
        if now is not None and isinstance(saved, str) and saved != now:
            # an environment is named bare ("rollouts of roles/cost"), other settings quoted with their key
            shown = (saved, now) if key == "env" else (f"{key.replace('_', ' ')} {saved!r}", repr(now))
            return f"{out} holds {what} of {shown[0]}, not {shown[1]}: use another --out (or --fresh to start over)"
    return None


def clear_run(out: Path, names: Iterable[str]) -> None:
    """--fresh: remove a run's own files (nothing else in the folder)."""
    for name in names:
        (out / name).unlink(missing_ok=True)


# What a run folder's run.json says it holds: its "kind", else the keys only that kind writes.
KIND_NAMES = {"eval": "an `officegym eval` run", "bfcl": "an `officegym bench bfcl` run",
              "council": "an `officegym council` run"}


def run_kind(info: dict) -> str | None:
    kind = info.get("kind")
    if isinstance(kind, str):
        return kind
    if "bfcl_eval_version" in info:
        return "bfcl"
    if "seats" in info or "max_rounds" in info:
        return "council"
    if "policy" in info and "env" in info:
        return "eval"
    return None


def foreign_folder(out: Path, kind: str, own: Iterable[str]) -> str | None:
    """Why `out` cannot take a `kind` run (None where it can): it holds a run of another kind, or
    files that no run of this kind writes (`own`: its file and folder names). Hidden entries
    (an interrupted atomic write's temporary file, .git) do not count."""
    try:
        names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not names:
        return None
    try:
        info = json.loads((out / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        info = None
    what = KIND_NAMES.get(kind, f"a {kind} run")
    if isinstance(info, dict):
        other = run_kind(info)
        if other == kind:
            return None
        held = KIND_NAMES.get(other, "another command's run") if other else "another command's run"
        return f"{out} holds {held} (see its run.json), not {what}: use another --out"
    strangers = [n for n in names if n not in set(own)]
    if strangers:
        shown = ", ".join(strangers[:4]) + (f" and {len(strangers) - 4} more" if len(strangers) > 4 else "")
        return f"{out} is not empty and is not {what} (it holds {shown}): use a new or empty folder for --out"
    return None
