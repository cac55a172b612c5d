"""Role environments: scenario generation speed, verify cost, and baseline rewards.

    python benchmarks/roles_bench.py [--n 10000] [--verify 2000] [--baselines 300] [--roles cto,cost]

For each role: the time to generate `--n` tasks with `generate_tasks` (difficulty 1-10, every one
with its exact optimum or labels, distinct seeds so nothing is cached), scenarios per second,
microseconds per verify of the oracle's calls with the scenario cached (what a trainer pays per
rollout) and cold (the scenario rebuilt from its seed first), the share of infeasible scenarios,
and, with --baselines N, the mean reward of the oracle, greedy, role-random and the generic random
policy over N tasks through the agent loop (the same policies as `officegym eval --policy ...`; the
oracle replays its planned turns, `oracle_turns`). Timings are CPU time of this process on one core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time

from rich.console import Console
from rich.table import Table

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import make_policy
from officegym.core import registry
from officegym.envs.roles import coo, cost, council, cto, reconcile, risk

ROLES = {"cto": cto, "coo": coo, "reconcile": reconcile, "risk": risk, "cost": cost, "council": council}


def cpu() -> float:
    return time.process_time()


def bench_role(role: str, n: int, n_verify: int) -> dict:
    env = registry.make(f"roles/{role}")
    module = ROLES[role]
    env.generate_tasks(20, 999_999)  # imports and first-call costs out of the timing
    module.generate.cache_clear()
    t0 = cpu()
    tasks = env.generate_tasks(n, 1)
    gen_s = cpu() - t0
    sample = tasks[-n_verify:]  # the most recent scenarios are still in the generator's cache
    t0 = cpu()
    for t in sample:
        env.verify(t, t.ground_truth)
    warm_us = (cpu() - t0) / len(sample) * 1e6
    module.generate.cache_clear()
    t0 = cpu()
    for t in sample:
        env.verify(t, t.ground_truth)
    cold_us = (cpu() - t0) / len(sample) * 1e6
    calls = statistics.fmean(len(t.ground_truth) for t in sample)
    return {"role": role, "n": n, "gen_s": gen_s, "per_s": n / gen_s, "warm_us": warm_us, "cold_us": cold_us,
            "calls": calls, "infeasible": sum(t.metadata["infeasible"] for t in tasks) / n}


def baselines(role: str, n: int) -> dict:
    env = registry.make(f"roles/{role}")
    tasks = env.generate_tasks(n, 2)
    out = {}
    for spec in ("oracle", "greedy", "role-random", "random"):  # the --policy specs of `officegym eval`
        policy = make_policy(spec, environment=env.name)
        trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], policy, LoopConfig()))
        out[spec] = statistics.fmean(t.reward for t in trajs)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000, help="tasks generated per role")
    ap.add_argument("--verify", type=int, default=2000, help="verifies timed per role")
    ap.add_argument("--baselines", type=int, default=0, help="tasks per role for baseline rewards (0: skip)")
    ap.add_argument("--roles", default=",".join(ROLES), help="comma-separated subset of " + ",".join(ROLES))
    args = ap.parse_args(argv)
    roles = [r.strip() for r in args.roles.split(",") if r.strip()]
    unknown = [r for r in roles if r not in ROLES]
    if unknown or args.n < 1 or args.verify < 1:
        print(f"bad arguments: unknown roles {unknown}" if unknown else "--n and --verify must be >= 1", file=sys.stderr)
        return 2
    console = Console(width=120)
    console.print(f"[bold]machine:[/] {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                  f"Python {platform.python_version()}; CPU time of one process")
    table = Table(title=f"role environments: {args.n:,} scenarios each")
    for col in ("role", "generate (s)", "scenarios/s", "verify us (cached)", "verify us (cold)", "calls/task",
                "infeasible"):
        table.add_column(col, justify="left" if col == "role" else "right")
    rows = []
    for role in roles:
        r = bench_role(role, args.n, min(args.verify, args.n))
        rows.append(r)
        table.add_row(role, f"{r['gen_s']:.2f}", f"{r['per_s']:,.0f}", f"{r['warm_us']:.1f}", f"{r['cold_us']:.0f}",
                      f"{r['calls']:.1f}", f"{r['infeasible']:.1%}")
    console.print(table)
    if args.baselines:
        bt = Table(title=f"mean reward over {args.baselines} tasks per role (levels 1-10, agent loop)")
        for col in ("role", "oracle", "greedy", "role-random", "random"):
            bt.add_column(col, justify="left" if col == "role" else "right")
        for role in roles:
            b = baselines(role, args.baselines)
            bt.add_row(role, *(f"{b[k]:.3f}" for k in ("oracle", "greedy", "role-random", "random")))
        console.print(bt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
