"""Progress for long work: a rich bar in a terminal, plain lines in a log.

A rich bar redraws itself several times a second; written to a file (CI, nohup, a notebook) every
redraw becomes text, thousands of lines a minute. `progress(console, ...)` gives the bar when the
console is a terminal and otherwise a `LineProgress` with the same calls (`add_task`, `update`,
`advance`) that prints one line per update, at most one every `every` seconds (0: every update, as
trainers want for one line per step) plus the last, and one whenever the `step` field changes (a
heartbeat's "loading the model", then "prefill of 4.5k tokens": each gets its line at once).
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
    last_step: str | None = None  # the `step` field of the last line printed


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
        step = job.fields.get("step")
        new_step = step is not None and step != job.last_step
        if finished or new_step or job.last_line is None or now - job.last_line >= self.every:
            job.last_line, job.last_step = now, step
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


HEARTBEAT_POLL = 1.0  # seconds between the heartbeat's looks: a terminal's elapsed time ticks with it


@dataclass(frozen=True)
class Activity:
    """What the work is doing, as the heartbeat shows it: `text` on the bar, and in a log one line
    whenever `step` changes (else at most one every interval)."""

    text: str
    step: str

    def __str__(self) -> str:
        return self.text


class Stage:
    """What a command is doing now and since when ("loading the model"), set by the command and read
    by the heartbeat's thread."""

    def __init__(self, text: str):
        self.set(text)

    def set(self, text: str) -> None:
        self.text, self.since = text, time.perf_counter()


def policy_activity(policy: Any, stage: Stage | None = None) -> Activity | None:
    """What a policy is doing: once it has answered, its counters ("37 model calls, 2.1k tokens")
    and the phase it is in; before that, its phase ("prefill of 4.5k tokens", from its `phase`:
    (text, since)) or else the command's `stage`, with the seconds spent in it. None: nothing known."""
    now = time.perf_counter()
    phase = policy.phase
    current = f"{phase[0]} ({now - phase[1]:.0f} s)" if isinstance(phase, tuple) and len(phase) == 2 else None
    stats = policy.stats
    if stats.get("calls"):
        tokens = float(stats.get("completion_tokens") or 0)
        shown = f"{tokens / 1000:.1f}k" if tokens >= 1000 else f"{tokens:.0f}"
        text = f"{stats['calls']:.0f} model calls, {shown} tokens"
        return Activity(text + (f"; {current}" if current else ""), "model calls")
    if current is not None:
        return Activity(current, phase[0])
    if stage is not None:
        return Activity(f"{stage.text} ({now - stage.since:.0f} s)", stage.text)
    return None


@contextlib.contextmanager
def heartbeat(bar: Any, job: Any, read: Callable[[], str | Activity | None],
              every: float = 10.0) -> Iterator[Callable[[], None]]:
    """Refresh the job's `info` field from `read()` from the start and then every HEARTBEAT_POLL
    seconds (or `every`, if shorter) while the block runs; the block gets the refresh, to call when
    it knows the work moved on.

    A model can take minutes to load and to answer its first call, and concurrent rollouts finish
    late and together (a hundred in flight, the first done after most of the time has passed), so a
    count of finished rollouts alone leaves the console silent for minutes; the command's stage and
    the policy's own counters show the work moving. A log (LineProgress) gets a line per new step."""
    stop = threading.Event()

    def refresh() -> None:
        try:
            info = read()
        except Exception:  # a heartbeat must never break the work it reports on
            return
        if info:
            bar.update(job, info=str(info), step=info.step if isinstance(info, Activity) else None)

    def beat() -> None:
        refresh()
        while not stop.wait(min(every, HEARTBEAT_POLL)):
            refresh()

    thread = threading.Thread(target=beat, name="officegym-heartbeat", daemon=True)
    thread.start()
    try:
        yield refresh
    finally:
        stop.set()
        thread.join(timeout=max(every, HEARTBEAT_POLL))
