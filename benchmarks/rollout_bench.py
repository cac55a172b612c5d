"""Rollout throughput: the agent loop plus the environment, with scripted policies (no model).

    python benchmarks/rollout_bench.py --world $OFFICEGYM_REFERENCE/csv_data --tasks T.jsonl [--n 2000]

Prints rollouts per second (oracle and noop), the time split between the environment (sessions,
tool calls, verify) and the loop, on one core. Model-backed numbers (SmolLM2 on CPU) come from
`--policy hf:smollm2-135m` with a small --n.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import make_policy
from officegym.core.policy import SamplingParams
from officegym.core.task import read_tasks
from officegym.envs.workplace.env import WorkplaceEnvironment


def bench(env, tasks, spec: str, n: int, concurrency: int, params: SamplingParams) -> dict:
    policy = make_policy(spec)
    jobs = [(tasks[i % len(tasks)], i // len(tasks)) for i in range(n)]
    t0 = time.perf_counter()
    trajs = asyncio.run(run_rollouts(env, jobs, policy, LoopConfig(params=params), concurrency=concurrency))
    wall = time.perf_counter() - t0
    env_s = sum(t.env_seconds for t in trajs)
    tokens = sum(sum(turn.completion_tokens for turn in t.turns) for t in trajs)
    return {
        "policy": spec,
        "rollouts": n,
        "wall_s": wall,
        "rollouts_per_s": n / wall,
        "env_share": env_s / wall,
        "accuracy": statistics.fmean(t.reward for t in trajs),
        "s_per_rollout": wall / n,
        "completion_tokens_per_s": tokens / wall,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=Path, required=True)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--policy", action="append", help="policies to time (default: oracle and noop)")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    args = ap.parse_args(argv)
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the target says
        cores = "1 core (pinned)"
    except (AttributeError, OSError):
        cores = "unpinned"
    env = WorkplaceEnvironment(args.world)
    tasks = read_tasks(args.tasks)
    params = SamplingParams(temperature=0.0, max_new_tokens=args.max_new_tokens)
    results = [bench(env, tasks, p, args.n, args.concurrency, params) for p in (args.policy or ["oracle", "noop"])]
    table = Table(title=f"rollout throughput ({cores}, {len(tasks)} tasks cycled)")
    for col in ("policy", "rollouts", "rollouts/s", "s/rollout", "env share of wall time", "completion tok/s", "accuracy"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(r["policy"], str(r["rollouts"]), f"{r['rollouts_per_s']:,.0f}", f"{r['s_per_rollout'] * 1e3:.2f} ms",
                      f"{100 * r['env_share']:.3f}%", f"{r['completion_tokens_per_s']:.1f}", f"{r['accuracy']:.3f}")
    Console(width=140).print(table)
    print(f"Python {platform.python_version()} | {platform.machine()} | {time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
