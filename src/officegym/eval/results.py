"""An evaluation's environment and its results: which environment a run evaluates in (chosen from the
task rows, or read back from a run folder), and the metrics and report written from its rollouts."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from officegym.core import registry
from officegym.core.environment import BaseEnvironment, EnvironmentSetupError
from officegym.core.files import atomic_write
from officegym.core.rollout_row import RolloutRow
from officegym.core.task import Task, TaskFormatError
from officegym.eval.metrics import compute_metrics
from officegym.eval.report import write_report
from officegym.eval.run import ROLLOUTS, load_rollouts

METRICS = "metrics.json"


def _named(names: Any) -> set[str]:
    """The registered environments among `names` (aliases resolved)."""
    return {registry.canonical_name(n) for n in names if isinstance(n, str) and n} & set(registry.names())


def _the_one(named: set[str]) -> str:
    """The environment rows name when they name exactly one, else the default (NeMo Gym's rows)."""
    return next(iter(named)) if len(named) == 1 else registry.DEFAULT_ENVIRONMENT


def choose_environment(given: str | None, tasks: Sequence[Task]) -> str:
    """The environment to evaluate `tasks` in: `given`, else the single registered one the rows
    name, else the workplace. An unknown `given`, or rows naming another registered environment,
    raise EnvironmentSetupError saying so."""
    named = _named(t.environment_name for t in tasks)
    if given is None:
        return _the_one(named)
    name = registry.canonical_name(given)
    if name not in registry.names():
        raise registry.UnknownEnvironmentError(given)
    others = sorted(named - {name})
    if others:
        raise EnvironmentSetupError(f"the tasks are for {', '.join(others)}, not {name}: pass --env {others[0]} "
                                    "(or leave --env out)")
    return name


def open_environment(name: str, world: Path | None = None, mode: str | None = None,
                     default_world: Callable[[], Path] | None = None) -> tuple[BaseEnvironment, str]:
    """The environment `name` and the verification mode to use (the environment's default mode if
    none). An environment that takes a world and is given none gets `default_world()` (its own
    default without that). Raises EnvironmentSetupError."""
    if world is None and default_world is not None and registry.takes_world(name):
        world = default_world()
    made = registry.make(name, world=world, mode=mode)
    return made, mode or made.mode


def run_environment(run_dir: Path, rows: Sequence[Any]) -> str:
    """The environment of an eval run: run.json's `env`, else the one its rows name, else the workplace."""
    try:
        name = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("env")
    except (OSError, ValueError, AttributeError):
        name = None
    if isinstance(name, str) and registry.canonical_name(name) in registry.names():
        return registry.canonical_name(name)
    return _the_one(_named(r.get("environment_name") for r in rows if isinstance(r, dict)))


def run_title(label: str, env_name: str) -> str:
    """The report's title: "officegym eval: LABEL", and the environment unless it is the workplace."""
    return f"officegym eval: {label}" + ("" if env_name == registry.DEFAULT_ENVIRONMENT else f" on {env_name}")


def arguments_as_text(row: Any, where: str) -> None:
    """Calls whose `arguments` are a JSON object rather than its text, as `officegym verify` accepts
    them, get the text (the Responses API's form, which the report prints). A row the report cannot
    read raises ValueError naming it (`where`)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: not a JSON object")
    response = row.get("response") or {}
    output = response.get("output", []) if isinstance(response, dict) else None
    if not isinstance(output, list) or not all(isinstance(item, dict) for item in output):
        raise ValueError(f"{where}: response.output must be a list of objects")
    for item in output:
        if item.get("type") == "function_call" and not isinstance(item.get("arguments", ""), str):
            item["arguments"] = json.dumps(item["arguments"], ensure_ascii=False)


def load_run(run_dir: Path) -> tuple[list[dict[str, Any]], list[Task]]:
    """The rollouts of an eval run folder (call arguments as text) and the tasks they hold, one per
    task id. ValueError, naming the file and row, when there are none or a row cannot be read."""
    path = run_dir / ROLLOUTS
    rows = load_rollouts(path)
    if not rows:
        raise ValueError(f"no rollouts in {path}")
    for i, r in enumerate(rows, 1):
        arguments_as_text(r, f"{path}: row {i}")
    tasks: dict[str, Task] = {}
    for i, r in enumerate(rows, 1):
        try:
            t = RolloutRow(r).task()
        except TaskFormatError as exc:
            raise ValueError(f"{path}: row {i}: {exc}") from None
        tasks[str(t.id)] = t
    return rows, list(tasks.values())


def write_results(out: Path, rows: list[dict[str, Any]], tasks: list[Task], write_tools: frozenset[str] | None,
                  title: str) -> tuple[dict[str, Any], Path, Path]:
    """Compute the metrics of a run's rollouts, write them to out/metrics.json and the report beside
    them; returns the metrics and the report's HTML and Markdown paths."""
    metrics = compute_metrics(rows, tasks, write_tools)
    atomic_write(out / METRICS, json.dumps(metrics, indent=2, ensure_ascii=False, default=str) + "\n")
    html_path, md_path = write_report(out, metrics, rows, title=title)
    return metrics, html_path, md_path
