"""Progress for long work: a rich bar in a terminal, plain lines in a log.

A rich bar redraws itself several times a second; written to a file (CI, nohup, a notebook) every
redraw becomes text, thousands of lines a minute. `progress(console, ...)` gives the bar when the
console is a terminal and otherwise a `LineProgress` with the same calls (`add_task`, `update`,
`advance`) that prints one line per update, at most one every `every` seconds (0: every update, as
trainers want for one line per step) plus the last.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Job:
    description: str
    total: float | None
    completed: float = 0
    fields: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    last_line: float | None = None  # None: no line yet (perf_counter's zero is arbitrary, e.g. boot)


class LineProgress:
    """rich.progress.Progress's add_task / update / advance, as one printed line per update."""

    def __init__(self, console: Any, every: float = 10.0):
        self.console = console
        self.every = every
        self.jobs: dict[int, _Job] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **fields: Any) -> int:
        job_id = len(self.jobs)
        self.jobs[job_id] = _Job(description, total, completed, dict(fields))
        return job_id

    def advance(self, job_id: int, advance: float = 1) -> None:
        self.update(job_id, advance=advance)

    def update(self, job_id: int, *, completed: float | None = None, advance: float | None = None, total: float | None = None,
               **fields: Any) -> None:
        job = self.jobs[job_id]
        if total is not None:
            job.total = total
        if completed is not None:
            job.completed = completed
        if advance:
            job.completed += advance
        job.fields.update(fields)
        now = time.perf_counter()
        finished = job.total is not None and job.completed >= job.total
        if finished or job.last_line is None or now - job.last_line >= self.every:
            job.last_line = now
            self._line(job, now)

    def _line(self, job: _Job, now: float) -> None:
        done = f"{job.completed:g}/{job.total:g}" if job.total is not None else f"{job.completed:g}"
        info = job.fields.get("info")
        text = f"{job.description}: {done} ({now - job.started:.0f} s)" + (f", {info}" if info else "")
        if self.console is not None:
            self.console.print(text, markup=False, highlight=False)
        else:
            print(text, flush=True)


def progress(console: Any, every: float = 10.0, with_info: bool = True) -> Any:
    """A rich Progress (bar, count, elapsed and remaining time, the task's `info` field) on a
    terminal, else a LineProgress printing at most one line every `every` seconds."""
    if console is None or not getattr(console, "is_terminal", False):
        return LineProgress(console, every)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn()]
    if with_info:
        columns.append(TextColumn("{task.fields[info]}"))
    return Progress(*columns, TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=False)


def policy_activity(policy: Any) -> str | None:
    """What a policy has done so far ("37 model calls, 2.1k tokens"), from its `stats`, or None."""
    stats = getattr(policy, "stats", None)
    if not isinstance(stats, dict) or not stats.get("calls"):
        return None
    tokens = float(stats.get("completion_tokens") or 0)
    shown = f"{tokens / 1000:.1f}k" if tokens >= 1000 else f"{tokens:.0f}"
    return f"{stats['calls']:.0f} model calls, {shown} tokens"


@contextlib.contextmanager
def heartbeat(bar: Any, job: Any, read: Callable[[], str | None], every: float = 10.0) -> Iterator[None]:
    """Refresh the job's `info` field from `read()` every `every` seconds while the block runs.

    Concurrent rollouts finish late and together (a hundred in flight, the first done after most of
    the time has passed), so a count of finished rollouts alone leaves the console silent for
    minutes; the policy's own counters show the work moving."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(every):
            try:
                info = read()
            except Exception:  # a heartbeat must never break the work it reports on
                continue
            if info:
                bar.update(job, info=info)

    thread = threading.Thread(target=beat, name="officegym-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every)
