"""Multi-turn rollouts on the `hf:` backend with and without the conversation cache.

    python benchmarks/hf_turns.py --world runs/quickstart/world --tasks runs/quickstart/tasks/test.jsonl \
        --model runs/quickstart/sft/model [--n 16] [--reps 2] [--threads 1]

Greedy rollouts of the first --n tasks (all in one batch, as GRPO's rollout phase sends them), up to 4
turns each, with a fresh policy per run; the two settings alternate (off, on, off, on, ...) so a load
that comes and goes hits both. The table shows what ran through the model (prompt tokens prefilled,
tokens reused from the kept system prompt and tool list, tokens reused from the conversation's own
earlier turns), the wall time, and whether both settings produced the same rollouts.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.agent.hf import HFPolicy
from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.core.policy import SamplingParams
from officegym.core.task import read_tasks
from officegym.envs.workplace.env import WorkplaceEnvironment


def run(env, tasks, model: str, threads: int, cache_mb: float, max_new: int) -> dict:
    policy = HFPolicy(model, device="cpu", threads=threads, batch_size=len(tasks), conversation_cache_mb=cache_mb).load()
    config = LoopConfig(params=SamplingParams(temperature=0.0, max_new_tokens=max_new), max_steps=4)
    t0 = time.perf_counter()
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], policy, config, concurrency=len(tasks), max_batch=len(tasks)))
    wall = time.perf_counter() - t0
    s = policy.stats
    return {
        "wall": wall, "turns": sum(len(t.turns) for t in trajs), "prompt": s["prompt_tokens"], "prefill": s["prefill_tokens"],
        "prefix": s["prefix_reused_tokens"], "conversation": s["conversation_reused_tokens"],
        "completion": s["completion_tokens"], "reward": statistics.fmean(t.reward for t in trajs),
        "ids": [[turn.completion_ids for turn in t.turns] for t in trajs],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, required=True)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    env = WorkplaceEnvironment(args.world)
    tasks = read_tasks(args.tasks)[: args.n]
    results: dict[str, list[dict]] = {"off": [], "on": []}
    for _ in range(args.reps):
        for mode, mb in (("off", 0), ("on", 1024)):
            results[mode].append(run(env, tasks, args.model, args.threads, mb, args.max_new_tokens))
            r = results[mode][-1]
            print(f"{mode}: {r['wall']:.1f} s, prefill {r['prefill']:,}", file=sys.stderr)
    same = all(a["ids"] == b["ids"] for a, b in zip(results["off"], results["on"]))
    table = Table(title=f"hf: multi-turn rollouts, {len(tasks)} tasks greedy, {args.threads} thread(s), median of {args.reps}")
    for col in ("conversation cache", "turns", "prompt tokens", "prefilled", "from kept prefix", "from the conversation",
                "sampled", "wall s", "sampled tok/s", "accuracy"):
        table.add_column(col, justify="right")
    for mode, runs in results.items():
        r = runs[0]
        wall = statistics.median(x["wall"] for x in runs)
        table.add_row(mode, str(r["turns"]), f"{r['prompt']:,}", f"{r['prefill']:,}", f"{r['prefix']:,}", f"{r['conversation']:,}",
                      f"{r['completion']:,}", f"{wall:.1f}", f"{r['completion'] / wall:.1f}", f"{r['reward']:.3f}")
    Console(width=160).print(table)
    print(f"same rollouts in both settings: {same}")
    print(f"Python {platform.python_version()} | torch {torch.__version__} | {platform.machine()} | {time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
