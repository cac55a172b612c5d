"""`officegym verify` per rollout vs the verifier it calls.

    python benchmarks/verify_bench.py [--n 5000] [--tasks 1000] [--mode outcome] [--repeat 3]

In a temporary folder: generates the world of seed 0 (reference size) and --tasks validated tasks
offering all 27 tools, as NeMo Gym's dataset does, rolls out --n episodes with scripted policies
(oracle and random, half each, so rewards and verdicts vary) and writes them as rollout rows (~19 KB
each, ~15 KB of it the tool schemas). Then times, per rollout:

* core verifier: `verify_calls(world, calls, ground_truth, mode)` on tasks and calls parsed
  beforehand (what `officegym verify` reports as time/verify);
* verify_rollouts: the rows already in memory, parsed (task and calls) and verified;
* officegym verify: the CLI command's own function, in process: read the JSONL file, parse,
  verify, write the verdict file, print the summary (the world's load, measured apart, is
  subtracted: it is paid once per command, not per rollout).

It also prints the verifier's own time inside the command's loop (what the command reports as
time/verify): between reads of 19 KB lines the verifier runs slower than in a tight loop.

Best of --repeat runs each, the paths taken in turn. The target (issue 16): the CLI within 1.5x of the core verifier.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import make_policy
from officegym.cli.tools import verify as verify_command
from officegym.core.files import read_jsonl_text, write_jsonl_rows
from officegym.core.rollout_row import parse, rollout_row
from officegym.core.task import Task, iter_jsonl
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.generate import generate_world, write_world
from officegym.envs.workplace.verify import verify_calls
from officegym.envs.workplace.world import load_world
from officegym.eval.verify_rows import verify_rollouts
from officegym.sdg.dataset import build_dataset


def make_rollouts(folder: Path, n_tasks: int, n: int, policies: list[str]) -> tuple[Path, Path, int]:
    """The world folder, a rollouts JSONL of n rows, and the rows' mean size in bytes."""
    world_dir = write_world(generate_world(0, "reference"), folder / "world")
    ds = build_dataset([world_dir], n_tasks, seed=0, tools="all")
    tasks = [Task.from_row(r) for split in ds.rows.values() for r in split]
    env = WorkplaceEnvironment(world_dir)
    rows = []
    share = -(-n // len(policies))
    for p, spec in enumerate(policies):
        count = min(share, n - p * share)
        jobs = [(tasks[i % len(tasks)], i // len(tasks)) for i in range(p * share, p * share + count)]
        trajs = asyncio.run(run_rollouts(env, jobs, make_policy(spec), LoopConfig()))
        rows += [rollout_row(task, traj) for (task, _), traj in zip(jobs, trajs)]
    path = folder / "rollouts.jsonl"
    write_jsonl_rows(path, rows)
    return world_dir, path, path.stat().st_size // max(1, len(rows))


def best_times(repeat: int, paths: dict) -> dict[str, float]:
    """The best of `repeat` timings of each path, the paths taken in turn so that a slower spell of
    a shared machine falls on all of them."""
    best = dict.fromkeys(paths, float("inf"))
    for _ in range(repeat):
        for name, fn in paths.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000, help="rollouts (at least 5,000 for the target)")
    ap.add_argument("--tasks", type=int, default=1000, help="distinct tasks, cycled over the rollouts")
    ap.add_argument("--mode", default="outcome", choices=("outcome", "nemo_gym"))
    ap.add_argument("--policies", default="oracle,random:0", help="comma-separated scripted policies, equal shares")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="verify_bench-") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        world_dir, rollouts, row_bytes = make_rollouts(folder, args.tasks, args.n, args.policies.split(","))
        setup_s = time.perf_counter() - t0
        world = load_world(world_dir)
        world_env = WorkplaceEnvironment(world)
        lines = list(iter_jsonl(rollouts))
        n = len(lines)
        parsed = [parse(row) for _, row in lines]
        pairs = [(r.task().ground_truth, r.calls()) for r in parsed]

        def core() -> None:
            for truth, calls in pairs:
                verify_calls(world, calls, truth, args.mode)

        def in_memory() -> None:
            for _ in verify_rollouts(world_env, lines, None, args.mode):
                pass

        def command() -> None:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                verify_command(rollouts=rollouts, tasks=None, world=world_dir, mode=args.mode, out=folder / "verdicts.jsonl")

        in_loop: list[float] = []

        def streamed() -> None:  # the command's loop, keeping the verifier's own time (the CLI prints its median)
            in_loop.append(sum(v.seconds for v in verify_rollouts(world_env, iter_jsonl(rollouts), None, args.mode)))

        best = best_times(args.repeat, {"load": lambda: load_world(world_dir), "core": core, "memory": in_memory,
                                        "cli": command, "streamed": streamed})
        load_s, core_s, memory_s = best["load"], best["core"], best["memory"]
        cli_s = best["cli"] - load_s
        in_loop_s = min(in_loop)
        verdicts = len(read_jsonl_text(folder / "verdicts.jsonl"))
        rewards = [v.reward for v in verify_rollouts(world, lines, None, args.mode)]

    table = Table(title=f"officegym verify vs the core verifier ({n:,} rollouts, mode {args.mode}, best of {args.repeat})")
    for col in ("path", "total", "per rollout", "x core verifier"):
        table.add_column(col, justify="right")
    for name, seconds in (("core verifier (verify_calls)", core_s), ("verify_rollouts (rows in memory)", memory_s),
                          ("officegym verify (file in, verdicts out)", cli_s)):
        table.add_row(name, f"{seconds:.2f} s", f"{seconds / n * 1e3:.3f} ms", f"{seconds / core_s:.2f}x")
    console = Console(width=140)
    console.print(table)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"rows: {n:,} ({row_bytes:,} bytes each on average; {args.tasks} tasks, policies {args.policies}), "
          f"verdicts written: {verdicts:,}, mean reward {statistics.fmean(r for r in rewards if r is not None):.3f}; "
          f"world load {load_s * 1e3:.0f} ms (subtracted from the CLI); setup {setup_s:.1f} s")
    print(f"{time.strftime('%Y-%m-%d')} | Python {platform.python_version()} | {platform.machine()} | {cpus} usable core(s)")
    print(f"the verifier's own time inside the command's loop (officegym verify's time/verify, as a mean): "
          f"{in_loop_s / n * 1e3:.3f} ms per rollout; the command takes {cli_s / in_loop_s:.2f}x that")
    target = cli_s / core_s <= 1.5
    print(f"target (CLI within 1.5x of the core verifier): {'met' if target else 'NOT met'} ({cli_s / core_s:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
