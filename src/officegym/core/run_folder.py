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
