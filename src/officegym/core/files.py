"""Files written atomically, and JSONL logs that survive an interrupted append."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write `data` to `path` through a temp file in the same folder and a rename: a reader sees the
    old file or the new one, never half of one."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_appendable_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a JSONL file that is appended to as work finishes. An interrupted append can leave a
    torn last line: it is dropped and the file rewritten without it (atomically) so that appending
    continues on whole lines. A bad line before the last is damage, not an interruption: ValueError."""
    target = Path(path)
    if not target.exists():
        return []
    rows, torn = [], False
    lines = target.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                torn = True
                continue
            raise ValueError(f"{target}:{i + 1}: not valid JSON (the file is damaged before its last line)") from None
    if torn:
        atomic_write(target, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))
    return rows
