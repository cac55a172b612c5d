"""What the commands share: the console, the one way a command fails, the --world option and the
default world, task files, JSON files and the metrics table."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from officegym.core import registry
from officegym.core.inputs import input_file

console = Console(stderr=True)

WorldOpt = Annotated[
    Path | None,
    typer.Option("--world", help="World folder in NeMo Gym's csv_data layout (default: the generated world of seed 0)."),
]


def fail(message: str) -> NoReturn:
    """Print `message` as the command's one-line error and end it with exit code 2."""
    # escaped: a path such as runs[v2]/ or [/x] is text, not markup to drop or to choke on
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def default_world(env: str = registry.DEFAULT_ENVIRONMENT) -> Path:
    """Without --world: the default world of environment `env` (the workplace's: the generated world
    of seed 0, reference size), made once into the cache."""
    path = registry.environment_class(env).default_world(announce=say)
    if path is None:
        fail(f"{env} has no default world: pass --world")
    return path


def say(text: str) -> None:
    """Print plain text (no markup) on the console."""
    console.print(text, markup=False)


def load_world(path: Path | None, env: str = registry.DEFAULT_ENVIRONMENT):
    """The world of environment `env` at `path` (its default world without one); a folder that is
    no world ends the command."""
    if path is None:
        path = default_world(env)
    try:
        return registry.environment_class(env).load_world(path)
    except ValueError as exc:
        fail(str(exc))


def read_task_file(path: Path):
    """The tasks of a --tasks file; an unreadable or empty file ends the command."""
    from officegym.core.task import TaskFormatError, read_tasks

    input_file(path, "task file")
    try:
        tasks = read_tasks(path)
    except TaskFormatError as exc:
        fail(str(exc))
    if not tasks:
        fail(f"{path} holds no tasks")
    return tasks


def parse_difficulty(text: str) -> tuple[int, int]:
    """"LO-HI" or "N" as a range of levels within 1..10 (a clear error otherwise)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    lo, hi = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, 0)
    if not m or not 1 <= lo <= hi <= 10:
        fail(f"--difficulty must be LO-HI (or N) with integers 1 <= LO <= HI <= 10, got {text!r}")
    return lo, hi


def write_json(path: Path, data) -> None:
    """`data` as indented JSON, written atomically."""
    from officegym.core.files import atomic_write

    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def print_metrics(m: dict, title: str) -> None:
    """The summary of an eval run's metrics as a table on the console, and below it, in red, the
    rollouts that errored (not scored) and their main causes."""
    from officegym.eval.report import errored_lines, summary_rows

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in summary_rows(m):
        table.add_row(name, value)
    for bucket, v in m["buckets"].items():
        table.add_row(f"accuracy, {bucket}", "-" if v["accuracy"] is None else f"{100 * v['accuracy']:.1f}% (n={v['n']})")
    console.print(table)
    for i, line in enumerate(errored_lines(m)):
        console.print(f"[bold red]{escape(line)}[/]" if i == 0 else f"[red]  {escape(line)}[/]", soft_wrap=True, highlight=False)
