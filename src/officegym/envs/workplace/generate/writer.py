"""Write a generated world as a folder in NeMo Gym's csv_data layout, atomically.

    <out>/processed/emails.csv, calendar_events.csv, analytics_data.csv, project_tasks.csv,
          customer_relationship_manager_data.csv   (header + rows, "\\n" line ends, minimal quoting)
    <out>/raw/email_addresses.csv                   (no header, one address per line)
    <out>/world.json                                (now, seed, size, company, domain, user, counts, ...)

Everything is written into a temporary folder beside <out> and renamed into place at the end, so
a reader never sees half a world. The bytes depend only on the world (same seed, same bytes).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

from officegym.core.files import replace_dir
from officegym.envs.workplace.world import DIRECTORY_FILE, FILES

# FILES uses "emails", "calendar", ... as GeneratedWorld.tables does.


def _csv_bytes(header, rows) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header is not None:
        writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")


def world_files(world) -> dict[str, bytes]:
    """Relative path -> file content of the world folder."""
    files = {}
    for name, (sub, fname, columns) in FILES.items():
        files[f"{sub}/{fname}"] = _csv_bytes(columns, world.tables[name])
    files["/".join(DIRECTORY_FILE)] = _csv_bytes(None, ([a] for a in world.directory))
    files["world.json"] = (json.dumps(world.metadata(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return files


def write_world(world, out_dir: str | os.PathLike[str], overwrite: bool = False) -> Path:
    """Write `world` to `out_dir` (created; an existing empty folder is fine; an existing non-empty
    one is replaced only with overwrite=True). Returns the folder's path."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} is not empty (overwrite it with overwrite=True, or --overwrite)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        for rel, data in world_files(world).items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; a world folder is ordinary data
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
