"""Models on every task of some templates in a split, each paired with the first (exact McNemar).

    python benchmarks/template_eval.py RUN --templates email.send_to_person \
        --models sft=RUN/sft/model grpo=RUN/grpo/model control=OTHER/grpo/model [--split test] [--out DIR]
        [--sample K [--temperature 1.0]]

The pipeline's evaluation takes the split's first eval.max_tasks tasks (100 in the quickstart: ~15 a
template), too few to test a change on one template. This evaluates each model (a model folder or a
policy spec) as RUN's pipeline evaluates its models (RUN/config.yaml: greedy, the same turns, token
limits and backend) on all of the split's tasks of the templates named, into OUT/NAME (default
OUT = RUN/template_eval; an evaluation already there is kept, so a rerun continues). Prints each
model's accuracy with its 95% Wilson interval, and against the first model: the tasks only it and
only the first solved, and the exact McNemar p.

--sample K samples K episodes a task at --temperature (default 1.0, GRPO's rollout temperature)
instead of one greedy episode, into OUT/NAME_T<temperature>_k<K>: how often the policy GRPO
samples solves held-out tasks, which can move long before the greedy answer does. It prints the
share of episodes solved (95% Wilson interval over episodes), and against the first model the
tasks whose pass rate is higher / lower, the mean difference in pass rate with its bootstrap 95%
interval over tasks, and the paired sign-flip test's p (eval/stats.py paired_rewards).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from officegym.eval.stats import paired_outcomes, paired_rewards, reward_interval, wilson_interval


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def template_tasks(pipeline: Any, split: str, templates: list[str]) -> list[Any]:
    """The split's tasks of the templates, in the split's order (a template without one: an error)."""
    from officegym.core.task import read_tasks
    from officegym.train.data import DataError, of_templates

    try:
        return of_templates(read_tasks(pipeline.tasks_dir / f"{split}.jsonl"), templates, f"the {split} split")
    except DataError as exc:
        raise SystemExit(str(exc)) from None


def evaluate(run: Path, templates: list[str], models: list[tuple[str, str]], split: str, out: Path,
             sample: int | None = None, temperature: float = 1.0) -> list[list[str]]:
    """Evaluate each (name, model) on the templates' tasks (greedy, or `sample` episodes a task at
    `temperature`); the table's rows."""
    from rich.console import Console

    from officegym.pipeline.config import load_pipeline_config
    from officegym.pipeline.run import Pipeline

    overrides = [] if sample is None else [f"eval.temperature={temperature}", f"eval.k={sample}"]
    pipeline = Pipeline(load_pipeline_config(str(run / "config.yaml"), overrides), Console(stderr=True))
    tasks = template_tasks(pipeline, split, templates)
    suffix = "" if sample is None else f"_T{temperature:g}_k{sample}"
    for name, model in models:
        if not (out / f"{name}{suffix}" / "metrics.json").is_file():
            pipeline.evaluate("eval_grpo", model, out=out / f"{name}{suffix}", tasks=tasks)
    rows = {name: _rows(out / f"{name}{suffix}" / "rollouts.jsonl") for name, _ in models}
    first = models[0][0]
    table = []
    for name, _ in models:
        if sample is None:
            cmp = paired_outcomes(rows[first], rows[name])
            lo, hi = wilson_interval(cmp.both + cmp.only_b, cmp.n)
            cells = [str(cmp.n), f"{100 * cmp.accuracy_b:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"]
            vs = ["", ""] if name == first else [f"{cmp.only_b} / {cmp.only_a}", f"{cmp.p_value:.2g}"]
        else:
            pr = paired_rewards(rows[first], rows[name])
            lo, hi = reward_interval(rows[name])
            cells = [f"{pr.n} x {sample}", f"{100 * pr.mean_b:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"]
            vs = ["", ""] if name == first else [
                f"{pr.higher} / {pr.lower}, {100 * pr.delta:+.1f} [{100 * pr.delta_ci95[0]:+.1f}, {100 * pr.delta_ci95[1]:+.1f}]",
                f"{pr.p_value:.2g}"]
        table.append([name, *cells, *vs])
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a pipeline folder: its config.yaml and tasks/")
    ap.add_argument("--templates", nargs="+", required=True)
    ap.add_argument("--models", nargs="+", required=True, help="NAME=MODEL (a model folder or a policy spec)")
    ap.add_argument("--split", default="test", choices=["train", "validation", "test"])
    ap.add_argument("--out", type=Path, default=None, help="default: RUN/template_eval")
    ap.add_argument("--sample", type=int, default=None, metavar="K", help="K episodes a task at --temperature, not greedy")
    ap.add_argument("--temperature", type=float, default=1.0)
    args = ap.parse_args()
    if args.sample is not None and args.sample < 1:
        ap.error("--sample takes K >= 1")
    models = []
    for item in args.models:
        name, sep, model = item.partition("=")
        if not sep or not name or not model:
            ap.error(f"--models takes NAME=MODEL, got {item!r}")
        models.append((name, model))
    if len({n for n, _ in models}) != len(models):
        ap.error("--models: each NAME once")
    table = evaluate(args.run, args.templates, models, args.split, args.out or args.run / "template_eval",
                     args.sample, args.temperature)
    first = models[0][0]
    if args.sample is None:
        print(f"{', '.join(args.templates)}: every {args.split} task, greedy")
        print(f"\n| model | tasks | accuracy [95% Wilson] | only it / only {first} solved | McNemar p |")
    else:
        print(f"{', '.join(args.templates)}: every {args.split} task, {args.sample} episodes each at T = {args.temperature:g}")
        print(f"\n| model | tasks x episodes | episodes solved [95% Wilson] | tasks with a higher / lower pass rate than "
              f"{first}, mean difference [95% bootstrap] | sign-flip p |")
    print("|---|---:|---:|---:|---:|")
    for row in table:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
