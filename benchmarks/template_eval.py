"""Models on every task of some templates in a split, each paired with the first (exact McNemar).

    python benchmarks/template_eval.py RUN --templates email.send_to_person \
        --models sft=RUN/sft/model grpo=RUN/grpo/model control=OTHER/grpo/model [--split test] [--out DIR]

The pipeline's evaluation takes the split's first eval.max_tasks tasks (100 in the quickstart: ~15 a
template), too few to test a change on one template. This evaluates each model (a model folder or a
policy spec) as RUN's pipeline evaluates its models (RUN/config.yaml: greedy, the same turns, token
limits and backend) on all of the split's tasks of the templates named, into OUT/NAME (default
OUT = RUN/template_eval; an evaluation already there is kept, so a rerun continues). Prints each
model's accuracy with its 95% Wilson interval, and against the first model: the tasks only it and
only the first solved, and the exact McNemar p.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from officegym.eval.stats import paired_outcomes, wilson_interval


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


def evaluate(run: Path, templates: list[str], models: list[tuple[str, str]], split: str, out: Path) -> list[list[str]]:
    """Evaluate each (name, model) on the templates' tasks; the table's rows."""
    from rich.console import Console

    from officegym.pipeline.config import load_pipeline_config
    from officegym.pipeline.run import Pipeline

    pipeline = Pipeline(load_pipeline_config(str(run / "config.yaml"), []), Console(stderr=True))
    tasks = template_tasks(pipeline, split, templates)
    for name, model in models:
        if not (out / name / "metrics.json").is_file():
            pipeline.evaluate("eval_grpo", model, out=out / name, tasks=tasks)
    first = _rows(out / models[0][0] / "rollouts.jsonl")
    table = []
    for name, _ in models:
        cmp = paired_outcomes(first, _rows(out / name / "rollouts.jsonl"))
        lo, hi = wilson_interval(cmp.both + cmp.only_b, cmp.n)
        against = "" if name == models[0][0] else f"{cmp.only_b} / {cmp.only_a}"
        p = "" if name == models[0][0] else f"{cmp.p_value:.2g}"
        table.append([name, str(cmp.n), f"{100 * cmp.accuracy_b:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]", against, p])
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a pipeline folder: its config.yaml and tasks/")
    ap.add_argument("--templates", nargs="+", required=True)
    ap.add_argument("--models", nargs="+", required=True, help="NAME=MODEL (a model folder or a policy spec)")
    ap.add_argument("--split", default="test", choices=["train", "validation", "test"])
    ap.add_argument("--out", type=Path, default=None, help="default: RUN/template_eval")
    args = ap.parse_args()
    models = []
    for item in args.models:
        name, sep, model = item.partition("=")
        if not sep or not name or not model:
            ap.error(f"--models takes NAME=MODEL, got {item!r}")
        models.append((name, model))
    if len({n for n, _ in models}) != len(models):
        ap.error("--models: each NAME once")
    table = evaluate(args.run, args.templates, models, args.split, args.out or args.run / "template_eval")
    print(f"{', '.join(args.templates)}: every {args.split} task")
    print(f"\n| model | tasks | accuracy [95% Wilson] | only it / only {models[0][0]} solved | McNemar p |")
    print("|---|---:|---:|---:|---:|")
    for row in table:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
