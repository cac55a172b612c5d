"""Read rollout rows from a run folder and group them by task (and training step).

A run folder is an eval run (`rollouts.jsonl`), a council run (`councils.jsonl`: each council
becomes one item row, review/council.py) or any folder of rows files in the same formats, such as
a GRPO run whose trainer writes each step's rollouts while we read. So every `*.jsonl` below the
folder is read, but not hidden files and folders (they hold temp files) nor the review's own files:
the folder holding a `review.sqlite` below the run folder, the `export` folder beside any, and any
file of gold rows an export wrote (their `officegym` record has a `review` block), so that flagging
a run again never queues the training data its reviews made. Files whose rows are neither rollouts
nor councils (task files, verdict files) are ignored; a torn last line (a writer still appending)
is skipped, never rewritten.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.core.rollout_row import RolloutRow, is_rollout_row
from officegym.review.council import is_council_row, read_council_rows

STORE_NAME = "review.sqlite"


@dataclass(frozen=True)
class RolloutRef(RolloutRow):
    """One rollout row (read through core's RolloutRow) and where it came from: the file relative
    to the run folder and the line number."""

    source: str
    line: int

    @property
    def og(self) -> dict[str, Any]:
        return self.officegym


@dataclass
class Group:
    """The K samples of one task (at one training step)."""

    key: str
    task_id: str
    step: Any
    samples: list[tuple[int, RolloutRef]] = field(default_factory=list)  # (sample index, row)


@dataclass
class RunRows:
    rows: list[RolloutRef]
    files: list[str]
    problems: list[str]


def rows_files(run_dir: Path) -> list[Path]:
    """Every `*.jsonl` below run_dir, in path order, skipping hidden files and folders and the
    review's own folders (see the module docstring)."""
    if run_dir.is_file():
        return [run_dir]
    reviews = []
    for store in run_dir.rglob(STORE_NAME):
        where = store.parent.relative_to(run_dir).parts
        reviews += [where, (*where, "export")] if where else [("export",)]
    out = []
    for path in sorted(run_dir.rglob("*.jsonl")):
        rel = path.relative_to(run_dir)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if any(rel.parts[: len(r)] == r for r in reviews):
            continue
        out.append(path)
    return out


def _read_file(path: Path, rel: str, problems: list[str], tasks_file: str | Path | None = None) -> Iterator[RolloutRef]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        problems.append(f"{rel}: cannot read ({exc})")
        return
    lines = text.split("\n")
    # A line without its newline is still being written (or was torn by a crash): skip it.
    complete = lines[:-1] if not text.endswith("\n") else lines
    first = True
    councils: list[tuple[int, object]] | None = None
    for lineno, line in enumerate(complete, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{rel}:{lineno}: not valid JSON ({exc.msg}); line skipped")
            continue
        if first and councils is None and is_council_row(row):
            councils = []
        if councils is not None:  # a councils file: converted once its tasks are known
            councils.append((lineno, row))
            continue
        if not is_rollout_row(row):
            if first:  # a file of something else (tasks, verdicts): not ours to read
                return
            problems.append(f"{rel}:{lineno}: not a rollout row (no response); line skipped")
            continue
        if first and isinstance(RolloutRow(row).officegym.get("review"), dict):
            return  # gold rows a review export wrote: training data, not rollouts to review
        first = False
        yield RolloutRef(row, rel, lineno)
    if councils:
        for lineno, row in read_council_rows(councils, rel, path.parent, tasks_file, problems):
            yield RolloutRef(row, rel, lineno)


def read_run(run_dir: Path, tasks_file: str | Path | None = None) -> RunRows:
    """All rollout rows below run_dir (councils as item rows), with a list of what was skipped and
    why. `tasks_file` names the task rows councils were played from (default: their run.json's)."""
    run_dir = Path(run_dir)
    problems: list[str] = []
    if not run_dir.exists():
        raise FileNotFoundError(f"no such run folder: {run_dir}")
    rows: list[RolloutRef] = []
    used: list[str] = []
    for path in rows_files(run_dir):
        rel = path.name if run_dir.is_file() else path.relative_to(run_dir).as_posix()
        got = list(_read_file(path, rel, problems, tasks_file))
        if got:
            used.append(rel)
            rows.extend(got)
    return RunRows(rows, used, problems)


def group_rows(rows: list[RolloutRef]) -> list[Group]:
    """Group rows by (step, task) when rows carry a training step, else by (file, task).

    Sample indices come from the rows (`officegym.sample_index`); rows without one are numbered
    in file order within their group.
    """
    groups: dict[str, Group] = {}
    for ref in rows:
        step = ref.step
        where = f"step {step}" if step is not None else ref.source
        key = f"{where}|{ref.task_id}"
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(key, ref.task_id, step)
        idx = ref.sample_index
        if idx is None:
            idx = len(g.samples)
        g.samples.append((idx, ref))
    for g in groups.values():
        g.samples.sort(key=lambda s: s[0])
    return list(groups.values())
