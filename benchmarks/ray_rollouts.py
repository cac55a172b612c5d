"""Episodes per second in this process and on Ray with 1 and 2 rollout workers, one table.

    python benchmarks/ray_rollouts.py [--tasks 200] [--workers 1,2] [--cpu-ms 20] [--latency-ms 50] [--address ADDR]

The same generated workplace tasks (small world of seed 1), k=1, through the same agent loop, with
deterministic policies that replay the ground truth (the oracle), so every configuration plays the
same episodes and gets the same rewards:

- `oracle`: no model cost; what is measured is the environment (sessions, tool calls, verify) and,
  on Ray, the cost of shipping each episode to a worker and its trajectory back.
- `oracle + CPU`: every turn first spends `--cpu-ms` of pure-Python CPU (a stand-in for a policy
  client's or a small local model's work under the GIL): the case where more workers use more cores.
- `oracle + latency`: every turn first waits `--latency-ms` (a remote endpoint's answer time): I/O,
  which concurrency hides in one process as well as on many.

In-process runs use `run_rollouts` with concurrency 64; Ray runs use a local cluster bound to
127.0.0.1 (or --address) and `RolloutFleet` with the same concurrency over the workers. Start-up
(cluster, actors) is timed apart and not counted in episodes/s. Each cell is the median of
`--repeat` runs, the columns interleaved so that a busy moment of the machine hits all of them.
A local cluster gets 2 logical CPUs and each worker reserves half of one, so that the 1- and
2-worker fleets stand side by side (reservations are bookkeeping: a worker uses the core it gets).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.ray_rollouts import EnvSpec, RayOptions, RolloutFleet, RunSetup
from officegym.agent.scripted import OraclePolicy
from officegym.core import registry
from officegym.core.policy import Policy
from officegym.core.task import Task


class PacedOracle(Policy):
    """The oracle, with `cpu_ms` of CPU work and `latency_ms` of waiting before each turn's answer."""

    def __init__(self, cpu_ms: float = 0.0, latency_ms: float = 0.0):
        self.cpu_ms, self.latency_ms = cpu_ms, latency_ms
        self.inner = OraclePolicy()
        self.name = "oracle"

    async def complete(self, requests, params):
        if self.latency_ms:
            await asyncio.sleep(self.latency_ms / 1000)
        if self.cpu_ms:
            end = time.thread_time() + self.cpu_ms / 1000 * len(requests)
            x = 0
            while time.thread_time() < end:  # CPU time, not wall time: the same work on a busy machine
                x += 1
        return await self.inner.complete(requests, params)


class Paced:
    """A picklable factory of PacedOracle (built on each Ray worker)."""

    def __init__(self, cpu_ms: float, latency_ms: float):
        self.cpu_ms, self.latency_ms = cpu_ms, latency_ms

    def __call__(self) -> PacedOracle:
        return PacedOracle(self.cpu_ms, self.latency_ms)


def make_tasks(n: int, folder: Path) -> tuple[list[Task], Path]:
    from officegym.envs.workplace.generate import generate_world, write_world
    from officegym.sdg.dataset import build_dataset
    from officegym.sdg.workplace import WorkplaceSource

    world = folder / "world"
    write_world(generate_world(1, "small"), world, overwrite=True)
    ds = build_dataset([WorkplaceSource(world)], n, seed=0)
    return [Task.from_row(r) for split in ds.rows.values() for r in split], world


def in_process(tasks: list[Task], world: Path, policy: Paced, config: LoopConfig) -> tuple[float, list[float]]:
    env = registry.make("workplace", world=world)
    t0 = time.perf_counter()
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], policy(), config, concurrency=64))
    return time.perf_counter() - t0, [t.reward for t in trajs]


def on_ray(fleet: RolloutFleet, tasks: list[Task], world: Path, config: LoopConfig) -> tuple[float, list[float]]:
    setup = RunSetup(EnvSpec("workplace", str(world)), config)
    fleet.run([(t, 0) for t in tasks[:8]], setup)  # warm: the worker builds its environment
    t0 = time.perf_counter()
    trajs = fleet.run([(t, 0) for t in tasks], setup)
    return time.perf_counter() - t0, [t.reward for t in trajs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--cpu-ms", type=float, default=20.0)
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--repeat", type=int, default=3, help="runs per cell (the median is shown)")
    ap.add_argument("--address", default=None, help="a Ray cluster to join (default: a local one, 127.0.0.1)")
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    console = Console()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tasks, world = make_tasks(args.tasks, Path(tmp))
        config = LoopConfig(max_steps=4)
        policies = {"oracle": Paced(0, 0), f"oracle + {args.cpu_ms:g} ms CPU/turn": Paced(args.cpu_ms, 0),
                    f"oracle + {args.latency_ms:g} ms latency/turn": Paced(0, args.latency_ms)}
        results: dict[str, dict[str, list[float]]] = {}
        rewards: set[tuple[float, ...]] = set()  # every run's rewards, in task order
        starts: list[str] = []
        from officegym.agent.ray_cluster import connect

        t0 = time.perf_counter()
        cluster = connect(args.address, num_cpus=None if args.address else 2)
        starts.append(f"cluster {time.perf_counter() - t0:.1f} s")
        try:
            for label, policy in policies.items():
                fleets = {}
                try:
                    for n in workers:  # half a CPU reserved per worker: all fleets stand side by side
                        t0 = time.perf_counter()
                        fleets[n] = RolloutFleet.start(policy, RayOptions(address=args.address, workers=n, worker_cpus=0.5,
                                                                          concurrency=64))
                        starts.append(f"{n} worker{'s' if n > 1 else ''} {time.perf_counter() - t0:.1f} s")
                    for _ in range(args.repeat):  # interleaved, so that a busy moment hits every column
                        seconds, got = in_process(tasks, world, policy, config)
                        results.setdefault(label, {}).setdefault("in-process", []).append(len(tasks) / seconds)
                        rewards.add(tuple(got))
                        for n, fleet in fleets.items():
                            seconds, got = on_ray(fleet, tasks, world, config)
                            results[label].setdefault(f"Ray {n}", []).append(len(tasks) / seconds)
                            rewards.add(tuple(got))
                finally:
                    for fleet in fleets.values():
                        fleet.close()
        finally:
            cluster.close()
    same = len(rewards) == 1
    table = Table(title=f"episodes/s (median of {args.repeat}), {len(tasks)} workplace tasks (k=1, oracle replays; "
                        f"rewards identical in every run: {same}, mean {sum(next(iter(rewards))) / len(tasks):.2f})")
    columns = ["in-process", *[f"Ray {n}" for n in workers]]
    table.add_column("policy")
    table.add_column("in-process", justify="right")
    for n in workers:
        table.add_column(f"Ray, {n} worker{'s' if n > 1 else ''}", justify="right")
    for label, runs in results.items():
        row = {c: statistics.median(v) for c, v in runs.items()}
        base = row["in-process"]
        table.add_row(label, *[f"{row[c]:.1f}" + ("" if c == "in-process" else f" ({row[c] / base:.2f}x)") for c in columns])
    console.print(table)
    console.print(f"start-up: {', '.join(starts)}; machine: {platform.processor() or platform.machine()}, "
                  f"{os.cpu_count()} CPUs, load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after; "
                  f"Ray {__import__('ray').__version__}, Python {platform.python_version()}")


if __name__ == "__main__":
    main()
