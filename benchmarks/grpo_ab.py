"""A GRPO stage under two (or more) settings from the same phase A: where a step's time goes.

    python benchmarks/grpo_ab.py --phase-a RUN --out OUT --steps 8 \
        --variant off grpo.grpo.trunk_cache_mb=0 --variant on -- grpo.grpo.num_prompts_per_step=1

RUN is a pipeline folder with world/, tasks/, sft/model and config.yaml (a finished phase A). Each
variant gets a copy of it under OUT/NAME and runs `officegym pipeline --config RUN/config.yaml
stages=[grpo]` there from the SFT model (`model=OUT/NAME/sft/model`: without the sft stage in
`stages` GRPO starts from `model`), one variant after the other, with the same seed, no
validation, the overrides after `--` and its own; the same seed samples the same rollouts while the weights agree,
so the steps compare on the same work. A variant already finished in OUT is read, not rerun.
Prints a table per variant (each step: generation, update, sampled, update and SFT-term tokens, the
frozen trunk's reused and computed tokens, resident memory) and one of medians and sums.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

COLUMNS = [("generation s", "time/generation_s", 1), ("update s", "time/training_s", 1),
           ("sampled", "train/sampled_tokens", 0), ("update tok", "train/update_tokens", 0),
           ("SFT-term tok", "train/sft_tokens", 0), ("trunk reused", "train/trunk_reused_tokens", 0),
           ("trunk run", "train/trunk_computed_tokens", 0), ("reward", "train/reward_mean", 2),
           ("rss GB", "mem/rss_gb", 1)]


def copy_phase_a(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("world", "tasks"):
        if not (dst / name).exists():
            shutil.copytree(src / name, dst / name)
    if not (dst / "sft" / "model").exists():
        shutil.copytree(src / "sft" / "model", dst / "sft" / "model")
    for name in ("checkpoints.json", "config.yaml", "metrics.jsonl", "pipeline_inputs.json"):
        if (src / "sft" / name).exists():
            shutil.copy2(src / "sft" / name, dst / "sft" / name)


def run_variant(phase_a: Path, out: Path, steps: int, overrides: list[str], console: Console) -> float | None:
    """Runs the GRPO stage in `out` unless it has `steps` rows already; its wall seconds, or None."""
    metrics = out / "grpo" / "metrics.jsonl"
    if metrics.exists() and len(read_rows(metrics)) >= steps:
        return None
    shutil.rmtree(out / "grpo", ignore_errors=True)
    copy_phase_a(phase_a, out)
    cmd = [sys.executable, "-m", "officegym.cli", "pipeline", "--config", str(phase_a / "config.yaml"),
           f"out_dir={out}", "stages=[grpo]", f"model={out / 'sft' / 'model'}", "grpo.seed=0", f"grpo.grpo.max_steps={steps}",
           "grpo.validation.every=0", "grpo.validation.at_start=false", *overrides]
    console.print(f"[bold]{escape(out.name)}[/]: {escape(' '.join(cmd[3:]))}")
    start = time.perf_counter()
    with open(out / "grpo_ab.log", "w") as log:
        code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    if code != 0:
        raise SystemExit(f"{out.name} failed (exit {code}): see {out / 'grpo_ab.log'}")
    return time.perf_counter() - start


def read_rows(path: Path) -> list[dict]:
    return [r for r in (json.loads(line) for line in path.read_text().splitlines() if line.strip()) if "time/training_s" in r]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phase-a", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--variant", nargs="+", action="append", required=True, metavar="ITEM",
                    help="a name and its overrides (key=value ...); repeat for each variant")
    ap.add_argument("common", nargs="*", metavar="KEY=VALUE", help="after --: overrides every variant gets")
    args = ap.parse_args()
    common: list[str] = args.common
    console = Console()
    walls: dict[str, float | None] = {}
    for name, *overrides in args.variant:
        walls[name] = run_variant(args.phase_a.resolve(), (args.out / name).resolve(), args.steps, common + overrides, console)
    summary = Table(title=f"GRPO stage, {args.steps} steps: medians a step (sums)")
    summary.add_column("variant")
    for title, _, _ in COLUMNS[:2]:
        summary.add_column(title, justify="right")
    summary.add_column("stage wall s", justify="right")
    for name, *_ in args.variant:
        rows = read_rows(args.out / name / "grpo" / "metrics.jsonl")[: args.steps]
        table = Table(title=name)
        table.add_column("step", justify="right")
        for title, _, _ in COLUMNS:
            table.add_column(title, justify="right")
        for r in rows:
            table.add_row(str(r["step"]), *(f"{r.get(key, 0.0):.{digits}f}" for _, key, digits in COLUMNS))
        console.print(table)
        cells = []
        for _, key, _ in COLUMNS[:2]:
            vals = [r[key] for r in rows]
            cells.append(f"{statistics.median(vals):.1f} ({sum(vals):.1f})")
        wall = walls[name]
        summary.add_row(name, *cells, f"{wall:.0f}" if wall is not None else "(read)")
    console.print(summary)


if __name__ == "__main__":
    main()
