"""`officegym bench ...`: external benchmarks on their own data and checkers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

bench_app = typer.Typer(no_args_is_help=True, add_completion=False,
                        help="External benchmarks, scored by their own checkers (BFCL through bfcl-eval).")
console = Console(stderr=True)

RUN_FILES = ("results.jsonl", "scores.json", "run.json", "report.html", "report.md")
RUN_ENTRIES = (*RUN_FILES, "plots")


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def _check_run(out: Path, policy: str, version: str, fresh: bool) -> None:
    """A run folder holds one policy's results on one bfcl-eval version: resuming it with another is
    refused (old rows would be reported under the new name), unless `fresh` clears it first."""
    from officegym.core.run_folder import clear_run, foreign_run

    if fresh:
        clear_run(out, RUN_FILES)
        return
    problem = foreign_run(out, "results.jsonl", {"policy": policy, "bfcl_eval_version": version}, what="BFCL results")
    if problem:
        _fail(problem)


@bench_app.command("bfcl")
def bfcl_command(
    policy: Annotated[str, typer.Option("--policy", help="Any policy spec: oracle (replays BFCL's answers) | noop | random[:SEED] | openai:MODEL | hf:PATH | smollm2-135m | vllm:MODEL | a checkpoint folder via hf:/vllm:.")],
    out: Annotated[Path, typer.Option("--out", help="Run folder: results.jsonl, scores.json, report.html/.md.")],
    categories: Annotated[list[str] | None, typer.Option("--categories", help="BFCL categories, aliases (simple) or groups (ast, live, non_live, python, relevance, single_turn, multi_turn, all); repeat or comma-separate. Default: every category that runs offline (all).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N entries per category, a seeded sample (a larger N keeps the smaller one's entries).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seeds the --limit sample and the policy's sampling.")] = 0,
    temperature: Annotated[float, typer.Option("--temperature", help="0 = greedy (BFCL's own default is 0.001).")] = 0.0,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1, help="Tokens per model turn.")] = 512,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Entries (or episodes) played at once.")] = 32,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start over in --out, dropping its earlier results.")] = False,
) -> None:
    """Run a policy on BFCL's offline categories, single- and multi-turn (resumable), score with bfcl-eval, write a report."""
    from officegym.agent.policies import PolicySpecError, make_policy, preflight
    from officegym.bench import bfcl_lib
    from officegym.bench.bfcl_data import CategoryError, load_cases, parse_categories
    from officegym.bench.bfcl_report import category_rows, summary_rows, write_report
    from officegym.bench.bfcl_run import run_bfcl, summarise, write_scores
    from officegym.core.files import atomic_write
    from officegym.core.inputs import output_dir
    from officegym.core.policy import SamplingParams
    from officegym.progress import progress

    output_dir(out, "--out")
    from officegym.core.run_folder import foreign_folder

    problem = foreign_folder(out, "bfcl", RUN_ENTRIES)  # before a model loads: another run's folder stays whole
    if problem:
        _fail(problem)
    try:
        chosen = parse_categories(categories)
        version = bfcl_lib.version()
        cases = [case for c in chosen for case in load_cases(c, limit, seed)]
    except (CategoryError, bfcl_lib.BfclUnavailable) as exc:
        _fail(str(exc))
    if version != bfcl_lib.TESTED_VERSION:
        console.print(f"note: bfcl-eval {version} is installed; officegym was tested with {bfcl_lib.TESTED_VERSION}",
                      markup=False)
    try:
        pol = make_policy(policy, base_url=base_url, seed=seed)
    except (PolicySpecError, FileNotFoundError, OSError) as exc:
        _fail(str(exc))
    problem = preflight(pol)  # the backend's own check (an unreachable server, an unknown model) first
    if problem:
        _fail(problem)
    out.mkdir(parents=True, exist_ok=True)
    _check_run(out, policy, version, fresh)
    run_info = {"kind": "bfcl", "policy": policy, "bfcl_eval_version": version, "categories": chosen, "limit": limit, "seed": seed,
                "temperature": temperature, "max_new_tokens": max_new_tokens, "base_url": base_url}
    atomic_write(out / "run.json", json.dumps(run_info, indent=2) + "\n")
    params = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
    with progress(console, with_info=False) as bar:
        job = bar.add_task("BFCL entries", total=len(cases))
        result = run_bfcl(cases, pol, out, params, concurrency=concurrency, progress=lambda n: bar.advance(job, n))
    scores = summarise(result.rows, chosen)
    write_scores(out, scores)
    html_path, _ = write_report(out, scores, result.rows, run_info, title=f"BFCL (bfcl-eval {version}): {policy}")

    table = Table(title=f"{policy}: {result.new} new entries, {result.skipped} already done")
    for name in ("category", "entries", "correct", "accuracy", "95% interval"):
        table.add_column(name, justify="left" if name == "category" else "right")
    for row in category_rows(scores):
        table.add_row(*(escape(c) for c in row))
    console.print(table)
    for name, value in summary_rows(scores):
        console.print(f"{name}: {value}", markup=False, highlight=False)
    console.print(f"report: {html_path}", markup=False)
    if scores["backend_failures"]:
        first = next(r for r in result.rows if r.get("backend_error"))
        _fail(f"{scores['backend_failures']} of {len(result.rows)} entries failed in the model backend "
              f"(rerun to retry them): {first['backend_error']}")
