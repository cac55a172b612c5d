"""Seconds per GRPO step by phase (generation, environment, scoring, training) and tokens/s, on CPU
with SmolLM2-135M and short prompts (each task offers only its domain tools).

    python benchmarks/train_bench.py --tasks ../shared/reference/workplace/example.jsonl [--steps 3] [--threads 2]

The model comes from the local cache (`officegym.agent.models`, ~/.cache/officegym/models/smollm2-135m).
The first step is a warm-up and is left out of the medians.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--world", type=Path, default=None, help="default: the reference world next to the tasks, else seed 0")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--generations", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32", help="bf16: autocast, fp32 master weights")
    ap.add_argument("--model", default="smollm2-135m", help="smollm2-135m or a model directory (e.g. an SFT run's model)")
    ap.add_argument("--skip-zero-advantage", action="store_true",
                    help="skip rows with advantage 0 (the default in training; off here so every step trains on all rows)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from officegym.train.config import GRPORunConfig, build_config
    from officegym.train.grpo import train_grpo

    world = args.world or (args.tasks.parent / "csv_data" if (args.tasks.parent / "csv_data").is_dir() else None)
    out = Path(tempfile.mkdtemp(prefix="train-bench-"))
    overrides = [f"out_dir={out}", f"data.tasks={args.tasks}", "data.tools=domain", "data.val_fraction=0",
                 "model.device=cpu", f"model.threads={args.threads}", "logging.tensorboard=false",
                 f"grpo.max_steps={args.steps}", f"grpo.num_prompts_per_step={args.prompts}",
                 f"grpo.num_generations_per_prompt={args.generations}", f"rollout.max_new_tokens_per_turn={args.max_new_tokens}",
                 f"rollout.max_new_tokens_per_episode={2 * args.max_new_tokens}", "rollout.max_steps=2",
                 "checkpoint.every=1000", "logging.write_rollouts=false", "grpo.micro_batch_size=2",
                 f"lora.enabled={'true' if args.lora else 'false'}", f"model.precision={args.precision}",
                 f"model.name={args.model}", f"grpo.skip_zero_advantage={'true' if args.skip_zero_advantage else 'false'}"]
    if world is not None:
        overrides.append(f"data.world={world}")
    cfg = build_config(GRPORunConfig, {}, overrides)
    t0 = time.perf_counter()
    hist = train_grpo(cfg).history
    wall = time.perf_counter() - t0
    timed = hist[1:] or hist
    table = Table(title=f"GRPO step on CPU, SmolLM2-135M ({args.threads} threads, {args.prompts}x{args.generations} rollouts, "
                        f"{'LoRA' if args.lora else 'full'}, {args.precision})")
    table.add_column("measure")
    table.add_column("median", justify="right")
    rows = [("step (s)", "time/step_s"), ("generation (s)", "time/generation_s"), ("environment (s)", "time/env_s"),
            ("scoring: verify + reward + advantages (s)", "time/scoring_s"), ("training: fwd+bwd+optimizer (s)", "time/training_s"),
            ("sampled tokens per step", "train/sampled_tokens"), ("generation tokens/s", "train/generation_tokens_per_s"),
            ("training tokens/s (prompt + completion)", "train/train_tokens_per_s"), ("reward (mean)", "train/reward_mean")]
    for label, key in rows:
        table.add_row(label, f"{statistics.median(h[key] for h in timed):.3f}")
    Console(width=140).print(table)
    print(f"{len(hist)} steps in {wall:.1f} s (model load and export included); Python {platform.python_version()}, "
          f"torch {torch.__version__}, {platform.machine()}, {time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
