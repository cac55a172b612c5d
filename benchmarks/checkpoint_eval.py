"""Evaluate a pipeline run's kept checkpoints (SFT or GRPO) as the pipeline evaluates its models.

    python benchmarks/checkpoint_eval.py RUN --steps 5 10 30 [--stage grpo|sft] [--checkpoints DIR]
                                         [--splits validation test] [--out DIR]

RUN is a pipeline folder (RUN/config.yaml: the evaluation settings and the task split). The
checkpoints are those of RUN/<stage> unless --checkpoints names another training run folder (an SFT
run continued elsewhere, for a learning curve over more steps). Each step is exported with
`officegym train export` (a GRPO adapter merged onto the SFT model it trained from) to
OUT/stepN_model, then evaluated greedily with the run's own evaluation settings on each split:
`validation` means the whole validation split, `test` the tasks the pipeline's evaluation uses
(eval.split, eval.per_subset or eval.max_tasks). `sft` or `grpo` as a step evaluates the model the
run exported at the end of that stage. Results already in OUT are kept, so an interrupted run
continues. Prints one table: accuracy per test subset (new fills of trained templates, held-out
templates, held-out wordings, both held out, "change nothing" tasks) with 95% Wilson intervals,
accuracy on tasks that need a write, side-effect and invalid-call rates.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from officegym.eval.stats import wilson_interval

SUBSETS = [("trained", "trained fills"), ("heldout_template", "held-out templates"),
           ("heldout_wording", "held-out wordings"), ("heldout", "both held out"), ("do_nothing", "change nothing")]


def cell(block: dict, key: str = "accuracy") -> str:
    if not block or key not in block:
        return "-"
    n = int(block.get("tasks") or block.get("n") or 0)
    acc = float(block[key])
    lo, hi = wilson_interval(round(acc * n), n)
    return f"{100 * acc:.1f}% [{100 * lo:.0f}, {100 * hi:.0f}] (n={n})"


def row(step: str, split: str, m: dict) -> str:
    subsets = m.get("subsets", {})
    parts = [cell(m)] + [cell(subsets.get(key, {})) for key, _ in SUBSETS]
    parts.append(cell(m.get("buckets", {}).get(">= 1 write", {})))
    parts += [f"{100 * float(m.get('side_effect_rate', 0)):.1f}%", f"{100 * float(m.get('invalid_call_rate', 0)):.1f}%"]
    return f"| {step} | {split} | " + " | ".join(parts) + " |"


def main() -> None:
    from rich.console import Console

    from officegym.core.task import read_tasks
    from officegym.pipeline.config import load_pipeline_config
    from officegym.pipeline.run import Pipeline
    from officegym.train.export import export_checkpoint

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path)
    ap.add_argument("--steps", nargs="+", required=True, help="steps with a kept checkpoint, or sft / grpo")
    ap.add_argument("--stage", choices=["sft", "grpo"], default="grpo", help="whose checkpoints (default grpo)")
    ap.add_argument("--checkpoints", type=Path, default=None, help="training run folder; default RUN/<stage>")
    ap.add_argument("--splits", nargs="+", default=["validation", "test"], choices=["validation", "test"])
    ap.add_argument("--out", type=Path, default=None, help="default: RUN/checkpoint_eval")
    args = ap.parse_args()
    out = args.out or args.run / "checkpoint_eval"
    source = args.checkpoints or args.run / args.stage
    pipeline = Pipeline(load_pipeline_config(str(args.run / "config.yaml"), []), Console(stderr=True))
    lines = []
    for step in args.steps:
        if step in ("sft", "grpo"):
            model = args.run / step / "model"
        else:
            model = out / f"step{step}_model"
            if not model.exists():
                export_checkpoint(source, model, int(step))
        for split in args.splits:
            dest = out / f"{step}_{split}"
            if not (dest / "metrics.json").is_file():
                tasks = read_tasks(pipeline.tasks_dir / "validation.jsonl") if split == "validation" else None
                pipeline.evaluate("eval_grpo", str(model), out=dest, tasks=tasks)
            lines.append(row(step, split, json.loads((dest / "metrics.json").read_text())))
    print(f"checkpoints of {source}, evaluated as {args.run} evaluates")
    print("| step | split | all | " + " | ".join(label for _, label in SUBSETS) + " | >= 1 write | side effects | invalid calls |")
    print("|---|---|" + "---:|" * (len(SUBSETS) + 4))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
