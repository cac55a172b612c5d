"""`officegym eval|report|compare`: evaluating a policy and reading eval runs (`tools`, `call` and
`verify`: cli/tools.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from officegym.agent.policies import preflight
from officegym.cli.common import (
    console,
    fail,
    print_metrics,
    read_task_file,
    write_json,
)
from officegym.cli.ray_options import (
    RayAddressOpt,
    RayEngineGpusOpt,
    RayEnginesOpt,
    RayOpt,
    RayWorkerCpusOpt,
    RayWorkersOpt,
    ray_options,
)
from officegym.cli.worlds import AllowMismatchOpt, environment_for_tasks
from officegym.core import registry
from officegym.core.inputs import InputError, input_dir, input_file, output_dir, read_text
from officegym.eval.defaults import EVAL_DEFAULTS


def eval_cmd(
    policy: Annotated[str, typer.Option("--policy", help="oracle | noop | random[:SEED] | greedy | role-random[:SEED] (role environments) | openai:MODEL | openai-responses:MODEL | hf:PATH | smollm2-135m | vllm:MODEL")],
    tasks: Annotated[Path, typer.Option("--tasks", help="Task rows (NeMo Gym JSONL).")],
    out: Annotated[Path, typer.Option("--out", help="Run folder: rollouts.jsonl, metrics.json, report.html/.md.")],
    world: Annotated[Path | None, typer.Option("--world", help="World folder in NeMo Gym's csv_data layout (default: the "
                                               "world the task rows were made in, else the generated world of seed 0).")] = None,
    env: Annotated[str | None, typer.Option("--env", help="Environment (see `officegym envs`; workplace is short for workplace_assistant); default: the one the task rows name, else workplace_assistant.")] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Samples per task.")] = 1,
    mode: Annotated[str | None, typer.Option("--mode", help="Verification mode: workplace outcome (default) or nemo_gym; roles exact.")] = None,
    reward: Annotated[str, typer.Option("--reward", help="outcome (the verifier's score), binary, shaped, or a JSON mix such as '{\"shaped\": 0.5, \"binary\": 0.5}'.")] = "outcome",
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Model turns per episode; the default is the pipeline's.")] = EVAL_DEFAULTS.max_steps,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature; the default is the pipeline's (greedy).")] = EVAL_DEFAULTS.temperature,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1, help="Tokens per model turn; the default is the pipeline's.")] = EVAL_DEFAULTS.max_new_tokens,
    max_tool_output_chars: Annotated[int, typer.Option("--max-tool-output-chars", min=0, help="Cut the tool outputs the model sees at this many characters (0: never); the default is the pipeline's.")] = EVAL_DEFAULTS.max_tool_output_chars or 0,
    seed: Annotated[int | None, typer.Option("--seed", min=0, max=2**32 - 1, help="Sampling seed; the default is the pipeline's.")] = EVAL_DEFAULTS.seed,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Rollouts played at once (requests in flight to a model server).")] = 32,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N tasks.")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start over in --out, dropping its earlier rollouts.")] = False,
    chat_template: Annotated[str | None, typer.Option("--chat-template", help="hf: and vllm: policies: auto (default: the model's own when it renders tools, else officegym's) | officegym | officegym-signatures (tools as compact signatures) | model.")] = None,
    allow_world_mismatch: AllowMismatchOpt = False,
    ray: RayOpt = False,
    ray_address: RayAddressOpt = None,
    ray_workers: RayWorkersOpt = 2,
    ray_worker_cpus: RayWorkerCpusOpt = 1.0,
    ray_engines: RayEnginesOpt = None,
    ray_engine_gpus: RayEngineGpusOpt = None,
) -> None:
    """Roll out a policy over tasks (resumable), then write metrics and a report; rollouts whose model
    backend failed are not scored, and make the command exit non-zero. With --ray the episodes run
    on Ray actors and stream into the same rollouts.jsonl."""
    from officegym.agent.policies import PolicySpecError, make_policy
    from officegym.core.policy import PolicyUnusable
    from officegym.eval.evaluate import EvalSettings, evaluate
    from officegym.eval.results import run_title, write_results
    from officegym.progress import Stage

    output_dir(out, "--out")
    _check_run_folder(out)
    task_list = read_task_file(tasks)[:limit]
    cap = max_tool_output_chars or None
    env_name, environment, mode = environment_for_tasks(env, world, mode, task_list, allow_world_mismatch)
    reward_fn = _reward(reward, environment.write_tools)
    options = {"base_url": base_url, "seed": seed, "environment": env_name}
    if chat_template is not None:
        options["chat_template"] = chat_template
    try:
        pol = make_policy(policy, **options)
    except (PolicySpecError, FileNotFoundError, OSError, ValueError) as exc:
        fail(str(exc))
    on_ray = ray_options(ray, ray_address, ray_workers, ray_worker_cpus, ray_engines, ray_engine_gpus, policy, concurrency)
    settings = EvalSettings(k=k, max_steps=max_steps, temperature=temperature, max_new_tokens=max_new_tokens,
                            max_tool_output_chars=cap, seed=seed, mode=mode, concurrency=concurrency)
    run_info = {"kind": "eval", "policy": policy, "env": env_name, "tasks": str(tasks),
                "world": environment.world_path, "k": k, "mode": mode, "reward": reward,
                "max_steps": max_steps, "temperature": temperature, "max_new_tokens": max_new_tokens,
                "max_tool_output_chars": cap, "seed": seed, "base_url": base_url, "limit": limit}
    if on_ray is not None:
        run_info["ray"] = {"address": on_ray.address, "workers": on_ray.workers, "engines": on_ray.engines}
    console.print(settings.line() + (f", world {environment.world_path}" if environment.world_path else ""),
                  markup=False, soft_wrap=True)
    stage = Stage(f"starting {policy}" if on_ray is None else "starting the Ray workers")

    def start(refresh):
        problem = preflight(pol) if on_ray is None else None  # on Ray, where the policy runs checks it
        if problem:
            fail(problem)
        out.mkdir(parents=True, exist_ok=True)
        _check_run_env(out, env_name, policy, fresh)
        write_json(out / "run.json", run_info)
        fleet = _start_fleet(on_ray, policy, options) if on_ray is not None else None
        stage.set("waiting for the first model answer" if fleet is None else "rolling out on the Ray workers")
        refresh()
        return fleet

    try:
        result = evaluate(environment, task_list, pol, out, settings, console=console, label="rollouts",
                          reward_fn=reward_fn, stage=stage, start=start, env_spec=_env_spec(env_name, environment, mode))
    except (ValueError, PolicyUnusable) as exc:
        fail(str(exc))
    metrics, html_path, _ = write_results(out, result.rows, task_list, environment.write_tools, run_title(policy, env_name))
    print_metrics(metrics, f"{policy}: {result.new} new rollouts, {result.skipped} already done")
    console.print(f"report: {html_path}", markup=False)
    failed = len(result.failed)
    if failed:
        fail(f"{failed} of {len(result.rows)} rollouts failed in the model backend and are not scored "
             "(rerun to retry them; causes above)")


def _start_fleet(on_ray, policy: str, options: dict):
    """Ray actors playing `policy` (built where it runs from its spec); a setup problem ends the command."""
    from officegym.agent.policies import PolicySpec
    from officegym.agent.ray_rollouts import FleetSetupError, RayUnavailableError, RolloutFleet

    where = f"the Ray cluster at {on_ray.address}" if on_ray.address else "a local Ray cluster (127.0.0.1)"
    console.print(f"ray: {on_ray.workers} rollout workers, {on_ray.engines} policy engines on {where}", markup=False)
    try:
        return RolloutFleet.start(PolicySpec(policy, options), on_ray)
    except (FleetSetupError, RayUnavailableError) as exc:
        fail(str(exc))


def _env_spec(env_name: str, environment, mode: str | None):
    """How a Ray worker builds the environment: the same name, world folder and mode."""
    from officegym.agent.ray_workers import EnvSpec

    return EnvSpec(env_name, world=environment.world_path, mode=mode)


# What `officegym eval` writes into its --out folder.
RUN_ENTRIES = ("rollouts.jsonl", "metrics.json", "run.json", "report.html", "report.md", "plots")


def _check_run_folder(out: Path) -> None:
    """--out holds an eval run or nothing else: another command's run (`bench bfcl`'s run.json and
    report would be replaced) or a folder of other files is refused, --fresh or not."""
    from officegym.core.run_folder import foreign_folder

    problem = foreign_folder(out, "eval", RUN_ENTRIES)
    if problem:
        fail(problem)


def _check_run_env(out: Path, env_name: str, policy: str | None = None, fresh: bool = False) -> None:
    """A run folder holds one environment's and one policy's rollouts: resuming it with another is
    refused (the old rows would be reported under the new name), unless `fresh` clears it first."""
    from officegym.core.run_folder import clear_run, foreign_run

    if fresh:
        clear_run(out, ("rollouts.jsonl", "metrics.json", "run.json"))
        return
    problem = foreign_run(out, "rollouts.jsonl", {"env": env_name, "policy": policy}, {"env": registry.DEFAULT_ENVIRONMENT}, "rollouts")
    if problem:
        fail(problem)


def _reward(spec: str, writes):
    """--reward: a reward name, or a JSON object mixing them."""
    from officegym.rewards import training_reward

    try:
        return training_reward(json.loads(spec) if spec.lstrip().startswith("{") else spec, writes=writes)
    except (ValueError, KeyError, TypeError) as exc:
        fail(f"--reward: {exc}")


def report(run_dir: Annotated[Path, typer.Argument(help="A folder written by `officegym eval`.")]) -> None:
    """Rebuild metrics.json and the report of an eval run from its rollouts."""
    from officegym.eval.results import load_run, run_environment, run_title, write_results
    from officegym.eval.run import ROLLOUTS

    input_dir(run_dir, "run folder")
    if (run_dir / ROLLOUTS).exists():
        input_file(run_dir / ROLLOUTS, "rollouts file")
    try:
        rows, tasks = load_run(run_dir)
    except ValueError as exc:
        fail(str(exc))
    env_name = run_environment(run_dir, rows)
    metrics, html_path, md_path = write_results(run_dir, rows, tasks, registry.write_tools(env_name),
                                                run_title(run_dir.name, env_name))
    print_metrics(metrics, str(run_dir))
    console.print(f"report: {html_path}, {md_path}", markup=False)


def compare(run_dirs: Annotated[list[Path], typer.Argument(help="Eval run folders to put side by side.")]) -> None:
    """Key metrics of several eval runs side by side (from their metrics.json), and each run against
    the first on the tasks both ran (exact McNemar, from their rollouts.jsonl)."""
    from officegym.eval.report import compare_table

    runs = {}
    for d in run_dirs:
        try:
            runs[d.name if d.name not in runs else str(d)] = json.loads(read_text(d / "metrics.json", "metrics file"))
        except InputError as exc:
            fail(f"{exc}: run `officegym report {d}` first")
        except ValueError as exc:
            fail(f"{d / 'metrics.json'} is not valid JSON ({exc}): run `officegym report {d}` first")
    headers, rows = compare_table(runs)
    table = Table(title="runs compared")
    for h in headers:
        table.add_column(h, justify="left" if h == "metric" else "right")
    for r in rows:
        table.add_row(*r)
    Console().print(table)
    for line in paired_lines(run_dirs):
        Console().print(line, markup=False, highlight=False)


def paired_lines(run_dirs: list[Path]) -> list[str]:
    """Each run against the first, paired on the tasks both ran (runs without rollouts are left out)."""
    from officegym.core.files import load_appendable_jsonl
    from officegym.eval.metrics import errored
    from officegym.eval.stats import paired_outcomes, paired_verdict

    def rows(d: Path) -> list | None:
        """The run's scored rollouts (an errored one never ran: it is no outcome to pair)."""
        try:
            found = load_appendable_jsonl(d / "rollouts.jsonl") if (d / "rollouts.jsonl").is_file() else None
        except (OSError, ValueError):
            return None
        return None if found is None else [r for r in found if not errored(r)]

    first = rows(run_dirs[0]) if run_dirs else None
    out = []
    for d in run_dirs[1:]:
        other = rows(d)
        if first is None or other is None:
            continue
        try:
            cmp = paired_outcomes(first, other)
        except ValueError:
            continue
        if cmp.n:
            out.append(paired_verdict({"from": run_dirs[0].name, "to": d.name, **cmp.as_dict()}))
    return out
