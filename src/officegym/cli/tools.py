"""`officegym tools|call|verify`: an environment's tools, one call of one, and verifying rollouts
in it (any registered environment, through the registry)."""

from __future__ import annotations

import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from officegym.cli.common import WorldOpt, console, default_world, fail
from officegym.cli.worlds import AllowMismatchOpt, environment_for_tasks
from officegym.core import registry
from officegym.core.files import jsonl_line
from officegym.core.inputs import input_file, output_file

EnvOpt = Annotated[str, typer.Option("--env", help="Environment (see `officegym envs`; workplace is short for workplace_assistant).")]


def _open(env: str, world: Path | None):
    """The environment `env`, in `world` (its default world if it takes one and none is given)."""
    from officegym.core.environment import EnvironmentSetupError
    from officegym.eval.results import open_environment

    try:
        name = registry.canonical_name(env)
        return open_environment(name, world, default_world=lambda: default_world(name))[0]
    except EnvironmentSetupError as exc:
        fail(str(exc))


def tools(world: WorldOpt = None, env: EnvOpt = registry.DEFAULT_ENVIRONMENT,
          as_json: Annotated[bool, typer.Option("--json", help="Print the tool schemas as JSON.")] = False) -> None:
    """List an environment's tools (the workplace's 27 by default)."""
    environment = _open(env, world)  # a world is loaded, so a bad folder is reported
    specs = environment.tools()
    if as_json:
        typer.echo(json.dumps([s.to_schema() for s in specs], indent=2))
        return
    table = Table(title=f"{len(specs)} {environment.name} tools")
    table.add_column("tool")
    table.add_column("parameters (* required)")
    table.add_column("description")
    for s in specs:
        req = set(s.parameters.get("required", []))
        params = ", ".join(p + ("*" if p in req else "") for p in s.parameters.get("properties", {}))
        table.add_row(s.name, params, s.description)
    Console().print(table)


def call(
    tool: Annotated[str, typer.Argument(help="Tool name, e.g. email_search_emails")],
    arguments: Annotated[str, typer.Argument(help="Arguments as a JSON object")] = "{}",
    world: WorldOpt = None,
    env: EnvOpt = registry.DEFAULT_ENVIRONMENT,
) -> None:
    """Run one tool on a fresh session and print what the model would see; a call that did not run
    (unknown tool, bad arguments) exits non-zero."""
    environment = _open(env, world)
    if environment.session_from_row:
        fail(f"{environment.name}'s sessions start from a task row, not a world: `officegym eval` plays its tasks")
    names = {s.name for s in environment.tools()}
    result = environment.session().execute(tool, arguments)
    typer.echo(result.text)
    if tool not in names:
        fail(f"no tool named {tool!r}; `officegym tools --env {environment.name}` lists its {len(names)} tools")
    if result.status == "error":
        fail(f"the call of {tool} failed (its text above is what the model would see)")


_SHOWN_ERRORS = 20  # verify: a file of thousands of rows without ground truth would bury the summary


def verify(
    rollouts: Annotated[Path, typer.Option("--rollouts", help="NeMo Gym rollout rows (JSONL).")],
    tasks: Annotated[Path | None, typer.Option("--tasks", help="Task rows; optional when rollouts carry their task (ground_truth).")] = None,
    world: Annotated[Path | None, typer.Option("--world", help="For an environment that takes a world: its folder (default: the "
                                               "world the rows were made in, else the environment's default world).")] = None,
    env: Annotated[str | None, typer.Option("--env", help="Environment (see `officegym envs`); default: the one the rows name, "
                                            "else workplace_assistant.")] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="Verification mode (default: the environment's first; the "
                                             "workplace's are outcome and nemo_gym).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write one JSON verdict per rollout here ('-': print them on stdout); without it, only the summary.")] = None,
    allow_world_mismatch: AllowMismatchOpt = False,
) -> None:
    """Verify rollouts in any environment: a summary, and with --out one verdict line per rollout, in input order."""
    from officegym.cli.worlds import checked_rows
    from officegym.core.task import TaskFormatError, iter_jsonl, read_tasks, write_jsonl
    from officegym.eval.verify_rows import TaskIndex, verify_rollouts

    if env is not None and mode is not None:  # a wrong mode ends the command before any row is read
        try:
            modes = registry.environment_class(registry.canonical_name(env)).modes
        except registry.UnknownEnvironmentError as exc:
            fail(str(exc))
        if mode not in modes:
            fail(f"--mode must be one of {', '.join(modes)}")
    input_file(rollouts, "rollouts file", utf8=False)  # read once, below, and checked there
    if tasks is not None:
        input_file(tasks, "task file")
    to_stdout = out is not None and str(out) == "-"
    if out is not None and not to_stdout:
        output_file(out, "--out")
    try:
        index = TaskIndex(read_tasks(tasks)) if tasks else None
        rows = iter_jsonl(rollouts)
        named = index.tasks if index else []
        if not named:  # the first rollout says which environment (and world) it was played in
            first = next(rows, None)
            named = _row_task(first[1]) if first is not None else []
            rows = itertools.chain([first] if first is not None else [], rows)
        if not index and world is not None:  # each row's world is checked against it as it is read
            env = _environment_named(env, named)
            named = []
        _, environment, mode = environment_for_tasks(env, world, mode, named, allow_world_mismatch)
        if environment.takes_world and environment.world_path:
            rows = checked_rows(rows, environment, allow_world_mismatch)
        elif world is not None:
            fail(f"{environment.name} takes no world: leave --world out")
        # Each row is verified as it is read and then dropped; a line that is not JSON still ends
        # the command before anything is written.
        verdicts = list(verify_rollouts(environment, rows, index, mode))
    except UnicodeDecodeError:
        input_file(rollouts, "rollouts file")  # InputError: the line where the text stops being UTF-8
        raise
    except (OSError, TaskFormatError) as exc:
        fail(str(exc))
    lines = [v.to_row() for v in verdicts]
    if to_stdout:
        for line in lines:
            sys.stdout.write(jsonl_line(line))
    elif out is not None:
        write_jsonl(out, lines)
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
    errors = [v for v in verdicts if v.error]
    for v in errors[:_SHOWN_ERRORS]:
        console.print(f"[yellow]line {v.index}:[/] {escape(v.error)}")
    if len(errors) > _SHOWN_ERRORS:
        console.print(f"[yellow]... and {len(errors) - _SHOWN_ERRORS} more rows that could not be verified "
                      "(each verdict line says why)[/]")
    if out is None:
        console.print("one verdict a rollout: --out FILE writes them, --out - prints them", markup=False)


def _environment_named(env: str | None, tasks: list) -> str:
    from officegym.core.environment import EnvironmentSetupError
    from officegym.eval.results import choose_environment

    try:
        return choose_environment(env, tasks)
    except EnvironmentSetupError as exc:
        fail(str(exc))


def _row_task(row):
    """The task a rollout row carries, in a list (empty when it carries none that reads: the row's
    own verdict says why later)."""
    from officegym.core.rollout_row import RolloutRow
    from officegym.core.task import TaskFormatError

    if not isinstance(row, dict):
        return []
    try:
        return [RolloutRow(row).task()]
    except (TaskFormatError, ValueError):
        return []
