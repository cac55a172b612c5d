"""The `officegym` command. Each sub-command is a thin call into the layers."""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from officegym.core import registry
from officegym.core.inputs import InputError, input_dir, input_file, output_dir, output_file, read_text

console = Console(stderr=True)


class _Root(TyperGroup):
    """The root of the command tree: a path or setting any layer finds unusable (InputError) ends
    the command with its one-line message, and the help shows flags without a type."""

    def parse_args(self, ctx, args):
        _plain_flags(self, ctx)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InputError as exc:
            _fail(str(exc))


def _plain_flags(command, ctx) -> None:
    """Rich help prints every flag's type ("<bool>") where only values have one; an empty metavar
    prints nothing. Done on the whole tree because subcommands build their --help option lazily."""
    for param in [*command.params, command.get_help_option(ctx)]:
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _plain_flags(sub, ctx)


app = typer.Typer(cls=_Root, no_args_is_help=True, add_completion=False,
                  help="officegym: environments, data and RL for tool-using agents.")

WorldOpt = Annotated[
    Path | None,
    typer.Option("--world", help="World folder in NeMo Gym's csv_data layout (default: the generated world of seed 0)."),
]


def _fail(message: str) -> None:
    # escaped: a path such as runs[v2]/ or [/x] is text, not markup to drop or to choke on
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def _default_world() -> Path:
    """Without --world: the generated world of seed 0 (reference size), made once into the cache."""
    from officegym.envs.workplace.generate import default_world

    return default_world(announce=lambda text: console.print(text, markup=False))


def _world(path: Path | None):
    from officegym.envs.workplace.world import WorldFormatError, load_world

    if path is None:
        path = _default_world()
    try:
        return load_world(path)
    except WorldFormatError as exc:
        _fail(str(exc))


generate_app = typer.Typer(no_args_is_help=True, help="Generate synthetic data: worlds and verified tasks.")
app.add_typer(generate_app, name="generate")


def _mount_subcommands() -> None:
    from officegym.bench.cli import bench_app
    from officegym.review.cli import review_app
    from officegym.train.cli import plot_command, train_app

    app.add_typer(review_app, name="review")
    app.add_typer(bench_app, name="bench")
    app.add_typer(train_app, name="train")
    app.command("plot")(plot_command)


_mount_subcommands()


@generate_app.command("world")
def generate_world_command(
    seed: Annotated[int, typer.Option("--seed", help="Seed; the same seed writes byte-identical files.")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write: processed/*.csv, raw/email_addresses.csv, world.json.")],
    size: Annotated[str, typer.Option("--size", help="small | reference | large (x0.1, x1, x10 the reference's rows).")] = "reference",
    now: Annotated[str | None, typer.Option("--now", help="The world's clock 'YYYY-MM-DD[ HH:MM:SS]'; default: a seed-dependent weekday at 23:59:00.")] = None,
    company: Annotated[str | None, typer.Option("--company", help="Company name (the domain is derived from it); default: seed-dependent.")] = None,
    user: Annotated[str | None, typer.Option("--user", help="First name of the mailbox owner; default: seed-dependent.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace --out if it is not empty.")] = False,
) -> None:
    """Generate a company world from a seed and write it in NeMo Gym's csv_data layout."""
    from officegym.envs.workplace.generate import SIZES, generate_world, write_world

    if size not in SIZES:
        _fail(f"--size must be one of {', '.join(SIZES)}, got {size!r}")
    try:
        world = generate_world(seed, size, now=now, company=company, user=user)
        path = write_world(world, out, overwrite=overwrite)
    except (ValueError, FileExistsError) as exc:  # WorldCheckError is a ValueError
        _fail(str(exc))
    counts = ", ".join(f"{name} {n}" for name, n in world.counts.items())
    console.print(f"{world.company.name} ({world.company.domain}), user {world.user}, now {world.now}: {counts}", markup=False)
    typer.echo(str(path))


@generate_app.command("tasks")
def generate_tasks_command(
    out: Annotated[Path, typer.Option("--out", help="Folder for train/validation/test JSONL, README.md (card), generation.json.")],
    n: Annotated[int, typer.Option("--n", help="How many validated, unique tasks to generate.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed; the same seed and worlds give the same tasks.")] = 0,
    world: Annotated[list[Path] | None, typer.Option("--world", help="World folder (repeat for several; default: the generated world of seed 0).")] = None,
    holdout_templates: Annotated[int, typer.Option("--holdout-templates", help="Put all tasks of K randomly chosen templates in test only.")] = 0,
    holdout_worlds: Annotated[int, typer.Option("--holdout-worlds", help="Put all tasks of K of the worlds in test only.")] = 0,
    tools: Annotated[str, typer.Option("--tools", help="Tools offered per task: all (the 27) or domain (the task's domains plus the directory).")] = "all",
    env: Annotated[str, typer.Option("--env", help="Environment: workplace, or another registered generator such as roles/cost.")] = "workplace",
    teacher: Annotated[str | None, typer.Option("--teacher", help="OpenAI-compatible base URL of an LLM that paraphrases queries and writes reasoning trajectories (kept only if they replay to the computed state).")] = None,
    teacher_model: Annotated[str, typer.Option("--teacher-model", help="Model name to ask the teacher for.")] = "teacher",
    teacher_key: Annotated[str | None, typer.Option("--teacher-key", envvar="OFFICEGYM_TEACHER_KEY", help="API key for the teacher.")] = None,
    difficulty: Annotated[str | None, typer.Option("--difficulty", help="Role environments: levels LO-HI (or one level N), integers 1-10; default 1-10.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Write into --out even if it is not empty (files of the same name are replaced).")] = False,
) -> None:
    """Generate verified tasks (ground truth computed and replayed) and write them as NeMo Gym JSONL with a card."""
    from officegym.progress import progress

    levels = _difficulty(difficulty) if difficulty is not None else None
    output_dir(out, "--out", overwrite=overwrite)
    try:
        own_generator, sdg_worlds = registry.has_task_generator(env), registry.takes_world(env)
    except registry.UnknownEnvironmentError as exc:
        _fail(str(exc))
    if own_generator:
        _generate_env_tasks(env, out, n, seed, levels)
        return
    if not sdg_worlds:
        _fail(f"environment {env!r} has no task generator")
    if levels is not None:
        _fail("--difficulty applies to the role environments (roles/*); workplace tasks get their level from the template")
    from officegym.envs.workplace.world import WorldFormatError
    from officegym.sdg.dataset import build_dataset, write_dataset

    worlds = [input_dir(w, "world folder") for w in world] if world else [_default_world()]
    with progress(console, with_info=False) as bar:
        job = bar.add_task("generating tasks", total=n)
        try:
            ds = build_dataset(worlds, n, seed, holdout_templates, holdout_worlds, tools,
                               on_accept=lambda _a: bar.advance(job))
        except (ValueError, WorldFormatError, OSError) as exc:
            _fail(str(exc))
    if ds.total < n:
        console.print(f"[yellow]only {ds.total} unique tasks exist in these worlds for the templates (asked for {n}); "
                      "add worlds (--world) for more[/]")
    if teacher:
        from officegym.sdg.teacher import TeacherError, apply_teacher

        try:
            stats = apply_teacher(ds, teacher, model=teacher_model, api_key=teacher_key, out=out, console=console)
        except TeacherError as exc:
            _fail(str(exc))
        console.print(f"teacher: {stats}", markup=False)
    paths = write_dataset(ds, out)
    counts = ", ".join(f"{k} {len(v)}" for k, v in ds.rows.items())
    rejected = ", ".join(f"{r} {c}" for r, c in ds.report.rejected.most_common()) or "none"
    console.print(f"{ds.total} tasks ({counts}) in {ds.report.seconds:.1f} s; rejected: {rejected}", markup=False)
    typer.echo(str(paths["card"].parent))


def _difficulty(text: str) -> tuple[int, int]:
    """"LO-HI" or "N" as a range of levels within 1..10 (a clear error otherwise)."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    lo, hi = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, 0)
    if not m or not 1 <= lo <= hi <= 10:
        _fail(f"--difficulty must be LO-HI (or N) with integers 1 <= LO <= HI <= 10, got {text!r}")
    return lo, hi


def _generate_env_tasks(env: str, out: Path, n: int, seed: int, difficulty: tuple[int, int] | None = None) -> None:
    """Generators of other environments (`env.generate_tasks(n, seed, difficulty=...)`), split by task id."""
    import time

    from officegym.core.task import write_jsonl
    from officegym.sdg.splits import SPLITS, SplitPlan

    if n < 1:
        _fail("--n must be at least 1")
    try:
        made = registry.make(env)
    except registry.UnknownEnvironmentError as exc:
        _fail(str(exc))
    if not hasattr(made, "generate_tasks"):
        _fail(f"environment {env!r} has no task generator")
    start = time.perf_counter()
    try:
        tasks = made.generate_tasks(n, seed, **({"difficulty": difficulty} if difficulty is not None else {}))
    except (ValueError, TypeError) as exc:
        _fail(f"{env}: {exc}")
    seconds = time.perf_counter() - start
    plan = SplitPlan()
    rows: dict[str, list] = {k: [] for k in SPLITS}
    for t in tasks:
        split = plan.assign(str(t.id), "", "")
        row = t.to_row()
        row["split"] = split
        rows[split].append(row)
    out.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        write_jsonl(out / f"{split}.jsonl", rows[split])
    _write_json(out / "generation.json", {
        "env": registry.canonical_name(env), "n": len(tasks), "seed": seed,
        "difficulty": list(difficulty) if difficulty is not None else [1, 10],
        "splits": {k: len(v) for k, v in rows.items()}, "seconds": round(seconds, 3)})
    console.print(f"{len(tasks)} {env} tasks in {seconds:.2f} s: " + ", ".join(f"{k} {len(v)}" for k, v in rows.items()))
    typer.echo(str(out))


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
    """Run one tool on a fresh session and print what the model would see; a call that did not run
    (unknown tool, bad arguments) exits non-zero."""
    from officegym.envs.workplace.specs import TOOL_SPECS

    w = _world(world)
    result = w.new_session().execute(tool, arguments)
    typer.echo(result.text)
    if tool not in {s.name for s in TOOL_SPECS}:
        _fail(f"no tool named {tool!r}; `officegym tools` lists the {len(TOOL_SPECS)} tools")
    if result.status == "error":
        _fail(f"the call of {tool} failed (its text above is what the model would see)")


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
    input_file(rollouts, "rollouts file", utf8=False)  # read once, below, and checked there
    if tasks is not None:
        input_file(tasks, "task file")
    if out is not None:
        output_file(out, "--out")
    w = _world(world)
    try:
        index = TaskIndex(read_tasks(tasks)) if tasks else None
        # Each row is verified as it is read and then dropped; a line that is not JSON still ends
        # the command before anything is written.
        verdicts = list(verify_rollouts(w, iter_jsonl(rollouts), index, mode))
    except UnicodeDecodeError:
        input_file(rollouts, "rollouts file")  # InputError: the line where the text stops being UTF-8
        raise
    except (OSError, TaskFormatError) as exc:
        _fail(str(exc))
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
            console.print(f"[yellow]line {v.index}:[/] {escape(v.error)}")


def _tasks(path: Path):
    from officegym.core.task import TaskFormatError, read_tasks

    input_file(path, "task file")
    try:
        tasks = read_tasks(path)
    except TaskFormatError as exc:
        _fail(str(exc))
    if not tasks:
        _fail(f"{path} holds no tasks")
    return tasks


@app.command("eval")
def eval_cmd(
    policy: Annotated[str, typer.Option("--policy", help="oracle | noop | random[:SEED] | greedy | role-random[:SEED] (role environments) | openai:MODEL | openai-responses:MODEL | hf:PATH | smollm2-135m | vllm:MODEL")],
    tasks: Annotated[Path, typer.Option("--tasks", help="Task rows (NeMo Gym JSONL).")],
    out: Annotated[Path, typer.Option("--out", help="Run folder: rollouts.jsonl, metrics.json, report.html/.md.")],
    world: WorldOpt = None,
    env: Annotated[str | None, typer.Option("--env", help="Environment (see `officegym envs`); default: the one the task rows name, else workplace.")] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Samples per task.")] = 1,
    mode: Annotated[str | None, typer.Option("--mode", help="Verification mode: workplace outcome (default) or nemo_gym; roles exact.")] = None,
    reward: Annotated[str, typer.Option("--reward", help="outcome (the verifier's score), binary, shaped, or a JSON mix such as '{\"shaped\": 0.5, \"binary\": 0.5}'.")] = "outcome",
    max_steps: Annotated[int, typer.Option("--max-steps", min=1)] = 6,
    temperature: Annotated[float, typer.Option("--temperature")] = 1.0,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1)] = 512,
    seed: Annotated[int | None, typer.Option("--seed")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1)] = 32,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N tasks.")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start over in --out, dropping its earlier rollouts.")] = False,
) -> None:
    """Roll out a policy over tasks (resumable), then write metrics and a report."""
    import asyncio

    from officegym.agent.loop import LoopConfig
    from officegym.agent.policies import PolicySpecError, make_policy
    from officegym.core.policy import SamplingParams
    from officegym.eval.metrics import compute_metrics
    from officegym.eval.report import write_report
    from officegym.eval.run import run_eval

    output_dir(out, "--out")
    task_list = _tasks(tasks)[:limit]
    env_name = _eval_env_name(env, task_list)
    environment, mode = _eval_environment(env_name, world, mode)
    reward_fn = _reward(reward, environment.write_tools)
    try:
        pol = make_policy(policy, base_url=base_url, seed=seed, environment=env_name)
    except (PolicySpecError, FileNotFoundError, OSError) as exc:
        _fail(str(exc))
    preflight = getattr(pol, "preflight", None)
    if preflight is not None:
        problem = asyncio.run(_preflight(pol))
        if problem:
            _fail(problem)
    config = LoopConfig(max_steps=max_steps, mode=mode,
                        params=SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed))
    run_info = {"policy": policy, "env": env_name, "tasks": str(tasks),
                "world": environment.world_path, "k": k, "mode": mode, "reward": reward,
                "max_steps": max_steps, "temperature": temperature, "max_new_tokens": max_new_tokens, "seed": seed,
                "base_url": base_url, "limit": limit}
    out.mkdir(parents=True, exist_ok=True)
    _check_run_env(out, env_name, policy, fresh)
    _write_json(out / "run.json", run_info)
    from officegym.progress import heartbeat, policy_activity, progress

    with progress(console) as bar:
        job = bar.add_task("rollouts", total=len(task_list) * k, info="")
        try:
            with heartbeat(bar, job, lambda: policy_activity(pol)):
                result = run_eval(environment, task_list, pol, out, k=k, config=config, reward_fn=reward_fn,
                                  concurrency=concurrency, progress=lambda n: bar.advance(job, n))
        except ValueError as exc:
            _fail(str(exc))
    metrics = compute_metrics(result.rows, task_list, environment.write_tools)
    _write_json(out / "metrics.json", metrics)
    title = f"officegym eval: {policy}" + ("" if env_name == registry.DEFAULT_ENVIRONMENT else f" on {env_name}")
    html_path, _ = write_report(out, metrics, result.rows, title=title)
    _print_metrics(metrics, f"{policy}: {result.new} new rollouts, {result.skipped} already done")
    console.print(f"report: {html_path}", markup=False)
    from officegym.eval.run import backend_failed

    failed = sum(backend_failed(r) for r in result.rows)
    if failed:
        first = next(r for r in result.rows if backend_failed(r))
        _fail(f"{failed} of {len(result.rows)} rollouts failed in the model backend (rerun to retry them): "
              f"{(first.get('officegym') or {}).get('error')}")


def _eval_env_name(given: str | None, task_list) -> str:
    """The environment to evaluate in: `given`, else the single registered one the rows name, else
    the workplace. Rows naming another registered environment are a clear error."""

    known = set(registry.names())
    named = {registry.canonical_name(t.environment_name) for t in task_list if t.environment_name}
    named &= known
    if given is None:
        return named.pop() if len(named) == 1 else registry.DEFAULT_ENVIRONMENT
    name = registry.canonical_name(given)
    if name not in known:
        _fail(str(registry.UnknownEnvironmentError(given)))
    others = sorted(named - {name})
    if others:
        _fail(f"the tasks are for {', '.join(others)}, not {name}: pass --env {others[0]} (or leave --env out)")
    return name


def _eval_environment(name: str, world: Path | None, mode: str | None):
    """The environment and the verification mode to use (the environment's default mode if none)."""
    from officegym.core.environment import EnvironmentSetupError

    try:
        if world is None and registry.takes_world(name):
            world = _default_world()
        made = registry.make(name, world=world, mode=mode)
    except EnvironmentSetupError as exc:
        _fail(str(exc))
    return made, mode or made.mode


def _check_run_env(out: Path, env_name: str, policy: str | None = None, fresh: bool = False) -> None:
    """A run folder holds one environment's and one policy's rollouts: resuming it with another is
    refused (the old rows would be reported under the new name), unless `fresh` clears it first."""
    from officegym.core.run_folder import clear_run, foreign_run

    if fresh:
        clear_run(out, ("rollouts.jsonl", "metrics.json", "run.json"))
        return
    problem = foreign_run(out, "rollouts.jsonl", {"env": env_name, "policy": policy}, {"env": registry.DEFAULT_ENVIRONMENT}, "rollouts")
    if problem:
        _fail(problem)


def _run_env_name(run_dir: Path, rows: list) -> str:
    """The environment of an eval run: run.json's `env`, else the one its rows name, else the workplace."""

    try:
        name = json.loads((run_dir / "run.json").read_text(encoding="utf-8")).get("env")
    except (OSError, ValueError, AttributeError):
        name = None
    if isinstance(name, str) and registry.canonical_name(name) in registry.names():
        return registry.canonical_name(name)
    named = {registry.canonical_name(r.get("environment_name")) for r in rows
             if isinstance(r, dict) and isinstance(r.get("environment_name"), str)}
    named &= set(registry.names())
    return named.pop() if len(named) == 1 else registry.DEFAULT_ENVIRONMENT


def _write_tools_of(name: str):
    """Which tools change the outcome in environment `name` (for metrics)."""

    return registry.write_tools(name)


async def _preflight(pol) -> str | None:
    try:
        return await pol.preflight()
    finally:
        close = getattr(pol, "aclose", None)
        if close is not None:
            await close()


def _reward(spec: str, writes):
    from officegym.rewards import training_reward

    try:
        return training_reward(json.loads(spec) if spec.lstrip().startswith("{") else spec, writes=writes)
    except (ValueError, KeyError, TypeError) as exc:
        _fail(f"--reward: {exc}")


def _write_json(path: Path, data) -> None:
    from officegym.core.files import atomic_write

    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _print_metrics(m: dict, title: str) -> None:
    from officegym.eval.report import _summary_rows

    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in _summary_rows(m):
        table.add_row(name, value)
    for bucket, v in m["buckets"].items():
        table.add_row(f"accuracy, {bucket}", "-" if v["accuracy"] is None else f"{100 * v['accuracy']:.1f}% (n={v['n']})")
    console.print(table)


@app.command()
def report(run_dir: Annotated[Path, typer.Argument(help="A folder written by `officegym eval`.")]) -> None:
    """Rebuild metrics.json and the report of an eval run from its rollouts."""
    from officegym.core.rollout_row import RolloutRow
    from officegym.core.task import TaskFormatError
    from officegym.eval.metrics import compute_metrics
    from officegym.eval.report import write_report
    from officegym.eval.run import ROLLOUTS, load_rollouts

    input_dir(run_dir, "run folder")
    if (run_dir / ROLLOUTS).exists():
        input_file(run_dir / ROLLOUTS, "rollouts file")
    try:
        rows = load_rollouts(run_dir / ROLLOUTS)
    except ValueError as exc:
        _fail(str(exc))
    if not rows:
        _fail(f"no rollouts in {run_dir / ROLLOUTS}")
    for i, r in enumerate(rows, 1):
        _arguments_as_text(r, f"{run_dir / ROLLOUTS}: row {i}")
    tasks = {}
    for i, r in enumerate(rows, 1):
        try:
            t = RolloutRow(r).task()
        except TaskFormatError as exc:
            _fail(f"{run_dir / ROLLOUTS}: row {i}: {exc}")
        tasks[str(t.id)] = t
    env_name = _run_env_name(run_dir, rows)
    metrics = compute_metrics(rows, list(tasks.values()), _write_tools_of(env_name))
    _write_json(run_dir / "metrics.json", metrics)
    title = f"officegym eval: {run_dir.name}" + ("" if env_name == registry.DEFAULT_ENVIRONMENT else f" on {env_name}")
    html_path, md_path = write_report(run_dir, metrics, rows, title=title)
    _print_metrics(metrics, str(run_dir))
    console.print(f"report: {html_path}, {md_path}", markup=False)


def _arguments_as_text(row, where: str) -> None:
    """Calls whose `arguments` are a JSON object rather than its text, as `verify` accepts them, get
    the text (the Responses API's form, which the report prints); a row the report cannot read is
    refused here, naming the row."""
    if not isinstance(row, dict):
        _fail(f"{where}: not a JSON object")
    response = row.get("response") or {}
    output = response.get("output", []) if isinstance(response, dict) else None
    if not isinstance(output, list) or not all(isinstance(item, dict) for item in output):
        _fail(f"{where}: response.output must be a list of objects")
    for item in output:
        if item.get("type") == "function_call" and not isinstance(item.get("arguments", ""), str):
            item["arguments"] = json.dumps(item["arguments"], ensure_ascii=False)


@app.command()
def compare(run_dirs: Annotated[list[Path], typer.Argument(help="Eval run folders to put side by side.")]) -> None:
    """Key metrics of several eval runs side by side (from their metrics.json)."""
    from officegym.eval.report import compare_table

    runs = {}
    for d in run_dirs:
        try:
            runs[d.name if d.name not in runs else str(d)] = json.loads(read_text(d / "metrics.json", "metrics file"))
        except InputError as exc:
            _fail(f"{exc}: run `officegym report {d}` first")
        except ValueError as exc:
            _fail(f"{d / 'metrics.json'} is not valid JSON ({exc}): run `officegym report {d}` first")
    headers, rows = compare_table(runs)
    table = Table(title="runs compared")
    for h in headers:
        table.add_column(h, justify="left" if h == "metric" else "right")
    for r in rows:
        table.add_row(*r)
    Console().print(table)


@app.command()
def serve(
    world: WorldOpt = None,
    env: Annotated[str, typer.Option("--env", help="Environment to serve (see `officegym envs`).")] = "workplace",
    host: Annotated[str, typer.Option("--host", help="Interface to listen on; 127.0.0.1 keeps it on this machine.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8000,
    mode: Annotated[str | None, typer.Option("--mode", help="Verification mode: outcome (default) or nemo_gym.")] = None,
    max_sessions: Annotated[int, typer.Option("--max-sessions", min=1, help="Live sessions kept; at the cap a new session gets 503 with Retry-After.")] = 10_000,
    idle_ttl: Annotated[float, typer.Option("--idle-ttl", min=0, help="Seconds an unused session is kept (0: until closed).")] = 3600.0,
    max_body_bytes: Annotated[int, typer.Option("--max-body-bytes", min=1024, help="Larger bodies: /verify scores 0, other routes get 413.")] = 64 * 1024 * 1024,
    max_session_writes: Annotated[int, typer.Option("--max-session-writes", min=1, help="Successful write calls per session; later ones fail as tool errors.")] = 128,
    max_session_write_bytes: Annotated[int, typer.Option("--max-session-write-bytes", min=1024, help="Bytes of write-call arguments per session.")] = 64 * 1024,
    max_verify_calls: Annotated[int, typer.Option("--max-verify-calls", min=1, help="Predicted calls one /verify scores; more score 0.")] = 1000,
    secret: Annotated[str | None, typer.Option("--secret", envvar="OFFICEGYM_SERVER_SECRET", help="Cookie signing secret (default: the reference's public one).")] = None,
    model_base_url: Annotated[str | None, typer.Option("--model-base-url", help="Default OpenAI-compatible server for POST /run, e.g. http://127.0.0.1:9000/v1")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Default model name for POST /run.")] = None,
    model_api: Annotated[str, typer.Option("--model-api", help="POST /run talks chat (Chat Completions) or responses (Responses API).")] = "chat",
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, max=100, help="Model turns per POST /run episode.")] = 6,
    log_level: Annotated[str, typer.Option("--log-level")] = "warning",
) -> None:
    """Serve an environment over HTTP with NeMo Gym's resources-server protocol (docs/nemo-rl.md)."""
    try:
        from officegym.server.serve import ServeError, run_server
    except ImportError as exc:
        _fail(f"serving needs the server extra ({exc}): pip install 'officegym[server]'")

    try:
        with_world = registry.takes_world(env)
    except registry.UnknownEnvironmentError as exc:
        _fail(str(exc))
    if with_world:
        w = _world(world)  # without --world: the default generated world, as for the other commands
        where = f" ({w.path})"
    elif world is not None:
        _fail(f"{env} takes no world: its sessions are seeded from the task rows")
    else:
        w, where = None, ""
    console.print(f"officegym: serving {env}{where} on http://{host}:{port}; Ctrl-C stops", markup=False)
    try:
        run_server(env, w, host, port, mode=mode, max_sessions=max_sessions, idle_ttl_s=idle_ttl or None,
                   max_body_bytes=max_body_bytes, max_session_writes=max_session_writes,
                   max_session_write_bytes=max_session_write_bytes, max_verify_calls=max_verify_calls,
                   secret_key=secret, max_steps=max_steps, model_server_url=model_base_url,
                   model=model, model_api=model_api, log_level=log_level)
    except ServeError as exc:
        _fail(str(exc))


@app.command()
def council(
    seats: Annotated[str, typer.Option("--seats", help="SEAT=POLICY,... for cto, cost, risk and reconcile (the mediator): scripted | oracle | greedy | silent (members) | random | noop | openai:MODEL | hf:PATH | ...; seats left out are scripted.")] = "",
    n: Annotated[int, typer.Option("--n", min=1, help="Councils to run (generated tasks).")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Task seed.")] = 0,
    difficulty: Annotated[str, typer.Option("--difficulty", help="Levels LO-HI (or N), integers 1-10.")] = "1-10",
    tasks: Annotated[Path | None, typer.Option("--tasks", help="roles/council task rows instead of generating --n tasks.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Folder for councils.jsonl (every act and conversation; resumable) and summary.json.")] = None,
    max_rounds: Annotated[int, typer.Option("--max-rounds", min=1, max=50)] = 4,
    temperature: Annotated[float, typer.Option("--temperature")] = 1.0,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1)] = 512,
    sample_seed: Annotated[int | None, typer.Option("--sample-seed", help="Sampling seed for model seats.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server for openai: seats.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1)] = 8,
) -> None:
    """Run executive councils (CTO, Cost, Risk, ReconcileGPT), each seat with its own policy; report
    the mean team reward, the consensus rate and the valid objections left unresolved."""
    import asyncio
    import tempfile

    from officegym.core.policy import SamplingParams
    from officegym.envs.roles.council import CouncilEnvironment
    from officegym.envs.roles.council_loop import (
        CouncilConfig,
        parse_seats,
        run_council_file,
        summarize_councils,
    )
    from officegym.progress import progress

    try:
        specs = parse_seats(seats)
    except ValueError as exc:
        _fail(f"--seats: {exc}")
    env = CouncilEnvironment()
    if tasks is not None:
        task_list = _tasks(tasks)
        wrong = sorted({t.environment_name for t in task_list} - {env.name})
        if wrong:
            _fail(f"{tasks} holds {', '.join(map(str, wrong))} tasks; councils need {env.name} tasks")
    else:
        task_list = env.generate_tasks(n, seed, difficulty=_difficulty(difficulty))
    policies = _seat_policies(specs, max_rounds, base_url, sample_seed)
    for policy in {id(p): p for p in policies.values()}.values():
        if getattr(policy, "preflight", None) is not None:
            problem = asyncio.run(_preflight(policy))
            if problem:
                _fail(problem)
    config = CouncilConfig(max_rounds=max_rounds, params=SamplingParams(
        temperature=temperature, max_new_tokens=max_new_tokens, seed=sample_seed))
    if out is not None:
        output_dir(out, "--out")
        _check_council_run(out, {"specs": specs, "tasks": str(tasks) if tasks else None, "seed": None if tasks else seed,
                                 "difficulty": None if tasks else list(_difficulty(difficulty)), "max_rounds": max_rounds})
    with contextlib.ExitStack() as stack:
        folder = out if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        with progress(console, with_info=False) as bar:
            job = bar.add_task("councils", total=len(task_list))
            try:
                rows = run_council_file(task_list, policies, folder / "councils.jsonl", config, concurrency,
                                        progress=lambda k: bar.advance(job, k))
            except ValueError as exc:
                _fail(str(exc))
        wanted = {json.dumps(t.id, default=str) for t in task_list}
        rows = [r for r in rows if json.dumps(r.get("task_id"), default=str) in wanted]
        summary = {"seats": {s: getattr(p, "name", type(p).__name__) for s, p in policies.items()},
                   "specs": specs, "max_rounds": max_rounds, **summarize_councils(rows)}
        if out is not None:
            _write_json(out / "summary.json", summary)
    table = Table(title="council: " + ", ".join(f"{s}={name}" for s, name in summary["seats"].items()))
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, label, fmt in (("councils", "councils", "{:.0f}"), ("mean_reward", "mean team reward", "{:.3f}"),
                            ("consensus_rate", "consensus rate", "{:.1%}"),
                            ("unresolved_objections", "objections left unresolved", "{:.0f}"),
                            ("unresolved_per_council", "unresolved per council", "{:.2f}"),
                            ("commit_rate", "commit rate", "{:.1%}"), ("escalation_rate", "escalation rate", "{:.1%}"),
                            ("mean_rounds", "rounds per council", "{:.2f}")):
        if key in summary:
            table.add_row(label, fmt.format(summary[key]))
    for label, count in summary.get("labels", {}).items():
        table.add_row(f"label {label}", str(count))
    Console().print(table)
    if out is not None:
        console.print(f"councils: {out / 'councils.jsonl'}; summary: {out / 'summary.json'}", markup=False)


def _check_council_run(out: Path, settings: dict) -> None:
    """Record what a council folder was run with; resuming it with other settings is refused (its
    task ids would name other councils)."""
    path = out / "run.json"
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        before = None
    if isinstance(before, dict) and (out / "councils.jsonl").exists():
        changed = [k for k, v in settings.items() if before.get(k) != v]
        if changed:
            _fail(f"{out} holds councils run with other {', '.join(changed)}: use another --out")
    out.mkdir(parents=True, exist_ok=True)
    _write_json(path, settings)


def _seat_policies(specs: dict[str, str], max_rounds: int, base_url: str | None, seed: int | None) -> dict:
    """A policy per seat: scripted ones built for their seat, model ones shared by seats naming the
    same spec (so their requests are batched together)."""
    from officegym.agent.policies import PolicySpecError, make_policy
    from officegym.envs.roles.council_loop import SEATS, scripted_seat

    models: dict[str, object] = {}
    out = {}
    for seat in SEATS:
        spec = specs.get(seat, "scripted")
        made = scripted_seat(seat, spec, max_rounds)
        if made is None:
            if spec.partition(":")[0] in ("role-random", "silent"):
                _fail(f"--seats: {spec!r} cannot sit at {seat}; use scripted, oracle, greedy, silent (members), random, "
                      "noop or a model (openai:MODEL, hf:PATH, ...)")
            if spec not in models:
                try:
                    models[spec] = make_policy(spec, base_url=base_url, seed=seed)
                except (PolicySpecError, FileNotFoundError, OSError) as exc:
                    _fail(f"--seats {seat}={spec}: {exc}")
            made = models[spec]
        out[seat] = made
    return out


@app.command()
def pipeline(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Pipeline YAML (configs/quickstart.yaml, ...).")] = None,
    overrides: Annotated[list[str] | None, typer.Argument(help="dotted.key=value overrides, e.g. tasks.n=500")] = None,
) -> None:
    """World -> tasks -> baseline eval -> SFT -> eval -> GRPO -> eval -> report, resumable: rerun to continue."""
    from officegym.pipeline import Pipeline, PipelineError, load_pipeline_config
    from officegym.train.config import ConfigError

    try:
        cfg = load_pipeline_config(str(config) if config else None, overrides or [])
    except ConfigError as exc:
        _fail(str(exc))
    from officegym.train.data import DataError
    from officegym.train.grpo import TrainingSetupError
    from officegym.train.modeling import ModelSetupError

    runner = Pipeline(cfg, console)
    try:
        runner.run()
    except (PipelineError, DataError, TrainingSetupError, ModelSetupError, ValueError, OSError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: rerun the same command to continue from the last finished stage or checkpoint[/]")
        raise typer.Exit(130) from None
    from officegym.pipeline_report import headline

    for line in headline(Path(cfg.out_dir)):
        console.print(line)
    typer.echo(str(Path(cfg.out_dir) / "report.html"))


@app.command()
def doctor() -> None:
    """Check Python, torch, the GPU, optional extras and the model cache, and say what to install."""
    from officegym.doctor import render, run_checks

    checks = run_checks()
    Console().print(render(checks))
    if any(c.required and c.status == "missing" for c in checks):
        raise typer.Exit(1)


@app.command()
def envs() -> None:
    """List the registered environments."""
    from officegym.core.registry import names

    for n in names():
        typer.echo(n)


if __name__ == "__main__":  # pragma: no cover
    app()
