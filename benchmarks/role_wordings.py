"""The roles whose brief is prose: the fixed rule, the oracle and random on trained and held-out wordings.

    python benchmarks/role_wordings.py [--n 1000] [--seed 7] [--difficulty 1-10] [--roles cto,coo,...]

For each role: `--n` tasks from `generate_tasks` (the held-out-wording tasks are those whose id hashes
into the test tail, prose.HELDOUT), each played through the agent loop (4 turns: documents, solver,
answer and one to spare) by the `--policy` specs of `officegym eval`: `rule` (regexes written from the
trained wordings feeding the role's solver tool: envs/roles/<role>_rule.py), `oracle` and
`role-random:0`. Prints the mean graded reward with its 95% bootstrap interval per subset.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import statistics

from rich.console import Console
from rich.table import Table

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import make_policy
from officegym.core import registry
from officegym.envs.roles.prose import HELDOUT, TRAINED
from officegym.eval.stats import bootstrap_mean_interval

ROLES = ("cto", "coo", "cost", "risk", "reconcile")
POLICIES = ("rule", "oracle", "role-random:0")


def cell(values: list[float]) -> str:
    if not values:
        return "-"
    low, high = bootstrap_mean_interval(values)
    return f"{statistics.fmean(values):.3f} [{low:.3f}, {high:.3f}] (n={len(values)})"


def measure(role: str, n: int, seed: int, difficulty: tuple[int, int]) -> dict[str, dict[str, list[float]]]:
    env = registry.make(f"roles/{role}")
    tasks = env.generate_tasks(n, seed, difficulty=difficulty)
    out: dict[str, dict[str, list[float]]] = {}
    for spec in POLICIES:
        trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], make_policy(spec, environment=env.name),
                                         LoopConfig(max_steps=4)))
        by: dict[str, list[float]] = {TRAINED: [], HELDOUT: []}
        for task, traj in zip(tasks, trajs, strict=True):
            by[task.metadata.get("subset", TRAINED)].append(float(traj.reward))
        out[spec] = by
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000, help="tasks per role")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--difficulty", default="1-10", help="levels LO-HI")
    ap.add_argument("--roles", default=",".join(ROLES))
    args = ap.parse_args(argv)
    lo, _, hi = args.difficulty.partition("-")
    difficulty = (int(lo), int(hi or lo))
    table = Table(title=f"Mean graded reward [95% bootstrap interval], {args.n} tasks a role, seed {args.seed}, "
                        f"levels {difficulty[0]}-{difficulty[1]}")
    for column in ("role", "policy", "trained wordings", "held-out wordings"):
        table.add_column(column, justify="left" if column in ("role", "policy") else "right")
    for role in [r.strip() for r in args.roles.split(",") if r.strip()]:
        for spec, by in measure(role, args.n, args.seed, difficulty).items():
            table.add_row(role, spec, cell(by[TRAINED]), cell(by[HELDOUT]))
    Console(width=140).print(table)
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, {datetime.date.today()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
