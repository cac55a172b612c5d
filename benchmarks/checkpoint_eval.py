"""Evaluate a pipeline run's kept GRPO checkpoints as the pipeline evaluates its models.

    python benchmarks/checkpoint_eval.py RUN --steps 5 10 30 [--splits validation test] [--out DIR]

RUN is a pipeline folder (RUN/config.yaml, RUN/grpo/checkpoints/step_NNNNNN). Each step's LoRA
adapter is merged onto the run's SFT model and exported to OUT/stepN_model, then evaluated greedily
with the run's own evaluation settings on each split: `validation` means the whole validation
split (GRPO validates on its first data.max_val_tasks), `test` the tasks the pipeline's evaluation
uses (eval.split, eval.max_tasks). `sft` as a step evaluates RUN/sft/model. Results already in OUT
are kept, so an interrupted run continues. Prints one accuracy table (95% Wilson intervals).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from officegym.eval.stats import wilson_interval


def export_step(run: Path, step: int, dest: Path) -> Path:
    """The run's SFT model with the adapter of GRPO step `step` merged in, as a model folder (the
    loading and export GRPO's own early stopping does)."""
    from officegym.train.config import GRPORunConfig, load_config
    from officegym.train.modeling import load_train_model

    if dest.exists():
        return dest
    cfg = load_config(GRPORunConfig, run / "grpo" / "config.yaml")
    tm = load_train_model(cfg.model.model_copy(update={"device": "cpu", "threads": 1}), cfg.lora, 0)
    tm.load_trainable(run / "grpo" / "checkpoints" / f"step_{step:06d}")
    return tm.export(dest)


def main() -> None:
    from rich.console import Console

    from officegym.core.task import read_tasks
    from officegym.pipeline.config import load_pipeline_config
    from officegym.pipeline.run import Pipeline

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path)
    ap.add_argument("--steps", nargs="+", required=True, help="GRPO steps with a kept checkpoint, or sft")
    ap.add_argument("--splits", nargs="+", default=["validation", "test"], choices=["validation", "test"])
    ap.add_argument("--out", type=Path, default=None, help="default: RUN/checkpoint_eval")
    args = ap.parse_args()
    out = args.out or args.run / "checkpoint_eval"
    pipeline = Pipeline(load_pipeline_config(str(args.run / "config.yaml"), []), Console(stderr=True))
    results = []
    for step in args.steps:
        model = args.run / "sft" / "model" if step == "sft" else export_step(args.run, int(step), out / f"step{step}_model")
        for split in args.splits:
            dest = out / f"{step}_{split}"
            if not (dest / "metrics.json").is_file():
                tasks = read_tasks(pipeline.tasks_dir / "validation.jsonl") if split == "validation" else None
                pipeline.evaluate("eval_grpo", str(model), out=dest, tasks=tasks)
            metrics = json.loads((dest / "metrics.json").read_text())
            results.append((step, split, metrics["accuracy"], int(metrics["tasks"])))
    print("| step | split | tasks | accuracy [95% Wilson] |")
    print("|---|---|---:|---:|")
    for step, split, acc, n in results:
        lo, hi = wilson_interval(round(acc * n), n)
        print(f"| {step} | {split} | {n} | {100 * acc:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] |")


if __name__ == "__main__":
    main()
