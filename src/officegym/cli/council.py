"""`officegym council`: executive councils, each seat with its own policy (agent/council_run)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from officegym.agent.policies import preflight
from officegym.cli.common import console, fail, parse_difficulty, read_task_file
from officegym.core.inputs import output_dir


def council(
    seats: Annotated[str, typer.Option("--seats", help="SEAT=POLICY,... for cto, cost, risk and reconcile (the mediator): scripted | oracle | greedy | silent (members) | random | noop | openai:MODEL | hf:PATH | ...; seats left out are scripted.")] = "",
    n: Annotated[int, typer.Option("--n", min=1, help="Councils to run (generated tasks).")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Task seed.")] = 0,
    difficulty: Annotated[str, typer.Option("--difficulty", help="Levels LO-HI (or N), integers 1-10.")] = "1-10",
    tasks: Annotated[Path | None, typer.Option("--tasks", help="roles/council task rows instead of generating --n tasks.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Folder for councils.jsonl (every act and conversation; resumable) and summary.json.")] = None,
    max_rounds: Annotated[int, typer.Option("--max-rounds", min=1, max=50, help="Rounds of acts before a council without a commit ends.")] = 4,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature of model seats.")] = 1.0,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1, help="Tokens per model turn.")] = 512,
    sample_seed: Annotated[int | None, typer.Option("--sample-seed", help="Sampling seed for model seats.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server for openai: seats.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Councils played at once.")] = 8,
) -> None:
    """Run executive councils (CTO, Cost, Risk, ReconcileGPT), each seat with its own policy; report
    the mean team reward, the consensus rate and the valid objections left unresolved."""
    import tempfile

    from officegym.agent.council import CouncilConfig, parse_seats
    from officegym.agent.council_file import COUNCILS, SUMMARY, CouncilRunError, record_settings
    from officegym.agent.council_run import run_council_folder, seat_policies
    from officegym.agent.council_seats import COUNCIL
    from officegym.agent.policies import PolicySpecError, make_policy
    from officegym.core import registry
    from officegym.core.policy import SamplingParams
    from officegym.progress import progress

    try:
        specs = parse_seats(seats)
    except ValueError as exc:
        fail(f"--seats: {exc}")
    env = registry.make(COUNCIL)
    if tasks is not None:
        task_list = read_task_file(tasks)
        wrong = sorted({t.environment_name for t in task_list} - {env.name})
        if wrong:
            fail(f"{tasks} holds {', '.join(map(str, wrong))} tasks; councils need {env.name} tasks")
    else:
        task_list = env.generate_tasks(n, seed, difficulty=parse_difficulty(difficulty))

    def make_model(seat: str, spec: str):
        try:
            return make_policy(spec, base_url=base_url, seed=sample_seed)
        except (PolicySpecError, FileNotFoundError, OSError) as exc:
            fail(f"--seats {seat}={spec}: {exc}")

    try:
        policies = seat_policies(specs, max_rounds, make_model)
    except CouncilRunError as exc:
        fail(f"--seats: {exc}")
    for policy in {id(p): p for p in policies.values()}.values():
        problem = preflight(policy)
        if problem:
            fail(problem)
    config = CouncilConfig(max_rounds=max_rounds, params=SamplingParams(
        temperature=temperature, max_new_tokens=max_new_tokens, seed=sample_seed))
    if out is not None:
        output_dir(out, "--out")
        try:
            record_settings(out, {"specs": specs, "tasks": str(tasks) if tasks else None, "seed": None if tasks else seed,
                                  "difficulty": None if tasks else list(parse_difficulty(difficulty)),
                                  "max_rounds": max_rounds})
        except CouncilRunError as exc:
            fail(str(exc))
    with contextlib.ExitStack() as stack:
        folder = out if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        with progress(console, with_info=False) as bar:
            job = bar.add_task("councils", total=len(task_list))
            try:
                summary = run_council_folder(task_list, policies, folder, config, concurrency, specs=specs,
                                             progress=lambda k: bar.advance(job, k))
            except ValueError as exc:
                fail(str(exc))
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
        console.print(f"councils: {out / COUNCILS}; summary: {out / SUMMARY}", markup=False)
