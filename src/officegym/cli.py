"""The `officegym` command. Each sub-command is a thin call into the layers."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(no_args_is_help=True, add_completion=False, help="officegym: environments, data and RL for tool-using agents.")
console = Console(stderr=True)

WorldOpt = Annotated[
    Path | None,
    typer.Option("--world", help="World folder in NeMo Gym's csv_data layout."),
]


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(2)


def _world(path: Path | None):
    from officegym.envs.workplace.world import WorldFormatError, load_world

    if path is None:
        _fail("--world DIR is required: a folder in NeMo Gym's csv_data layout (processed/*.csv, raw/email_addresses.csv)")
    try:
        return load_world(path)
    except WorldFormatError as exc:
        _fail(str(exc))


@app.command()
def tools(world: WorldOpt = None, as_json: Annotated[bool, typer.Option("--json", help="Print the tool schemas as JSON.")] = False) -> None:
    """List the workplace tools."""
    from officegym.envs.workplace.specs import TOOL_SPECS

    if world is not None:
        _world(world)  # validates the folder; the tool surface does not depend on the data
    if as_json:
        typer.echo(json.dumps([s.to_schema() for s in TOOL_SPECS], indent=2))
        return
    table = Table(title=f"{len(TOOL_SPECS)} workplace tools")
    table.add_column("tool")
    table.add_column("parameters (* required)")
    table.add_column("description")
    for s in TOOL_SPECS:
        req = set(s.parameters.get("required", []))
        params = ", ".join(p + ("*" if p in req else "") for p in s.parameters["properties"])
        table.add_row(s.name, params, s.description)
    Console().print(table)


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="Tool name, e.g. email_search_emails")],
    arguments: Annotated[str, typer.Argument(help="Arguments as a JSON object")] = "{}",
    world: WorldOpt = None,
) -> None:
    """Run one tool on a fresh session and print what the model would see."""
    w = _world(world)
    typer.echo(w.new_session().call(tool, arguments))


@app.command()
def verify(
    rollouts: Annotated[Path, typer.Option("--rollouts", help="NeMo Gym rollout rows (JSONL).")],
    tasks: Annotated[Path | None, typer.Option("--tasks", help="Task rows; optional when rollouts carry ground_truth.")] = None,
    world: WorldOpt = None,
    mode: Annotated[str, typer.Option("--mode", help="outcome (default) or nemo_gym.")] = "outcome",
    out: Annotated[Path | None, typer.Option("--out", help="Write one JSON verdict per rollout here.")] = None,
) -> None:
    """Verify rollouts: one verdict line per rollout, in input order, and a summary."""
    from officegym.core.task import TaskFormatError, iter_jsonl, read_tasks, write_jsonl
    from officegym.envs.workplace.rollouts import TaskIndex, verify_rollouts
    from officegym.envs.workplace.verify import MODES

    if mode not in MODES:
        _fail(f"--mode must be one of {', '.join(MODES)}")
    w = _world(world)
    try:
        index = TaskIndex(read_tasks(tasks)) if tasks else None
        rows = list(iter_jsonl(rollouts))
    except (OSError, TaskFormatError) as exc:
        _fail(str(exc))
    verdicts = list(verify_rollouts(w, rows, index, mode))
    lines = [v.to_row() for v in verdicts]
    if out is not None:
        write_jsonl(out, lines)
    else:
        for line in lines:
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
    scored = [v for v in verdicts if v.reward is not None]
    summary = Table(title=f"verify ({mode})")
    for col in ("rollouts", "verified", "errors", "mean reward", "side effects", "disagree with other mode", "time/verify"):
        summary.add_column(col)
    mean = statistics.fmean(v.reward for v in scored) if scored else float("nan")
    side = sum(bool(v.evidence.get("side_effects")) for v in scored)
    disagree = sum(bool(v.evidence.get("modes_disagree")) for v in scored)
    per = statistics.median(v.seconds for v in scored) * 1e3 if scored else float("nan")
    summary.add_row(
        str(len(verdicts)), str(len(scored)), str(len(verdicts) - len(scored)), f"{mean:.3f}",
        f"{side} ({side / max(1, len(scored)):.1%})", str(disagree), f"{per:.3f} ms",
    )
    console.print(summary)
    for v in verdicts:
        if v.error:
            console.print(f"[yellow]line {v.index}:[/] {v.error}")


@app.command()
def envs() -> None:
    """List the registered environments."""
    from officegym.core.registry import names

    for n in names():
        typer.echo(n)


if __name__ == "__main__":  # pragma: no cover
    app()
