"""Task generation speed and coverage: N validated, unique tasks from one reference-size world.

    python benchmarks/sdg_bench.py [--n 10000] [--seeds 0 1 2] [--reference PATH]

Prints one row per world: seconds, tasks/s, duplicates among the kept tasks, do-nothing share,
categories and difficulties present, candidates rejected by reason. Pin one core with
`taskset -c 0` for the per-core figure.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections import Counter

from rich.console import Console
from rich.table import Table

from officegym.envs.workplace.generate import generate_world
from officegym.envs.workplace.tasks import TEMPLATES
from officegym.envs.workplace.world import load_world
from officegym.sdg.dedup import calls_key, normalise_query
from officegym.sdg.engine import generate
from officegym.sdg.workplace import WorkplaceSource


def run(source: WorkplaceSource, n: int, seed: int) -> dict:
    t0 = time.perf_counter()
    report = generate([source], n, seed)
    seconds = time.perf_counter() - t0
    kept = report.accepted
    queries = Counter(normalise_query(a.candidate.query) for a in kept)
    truths = Counter((a.candidate.template, calls_key(a.candidate.calls)) for a in kept)
    dups = sum(c - 1 for c in queries.values()) + sum(c - 1 for c in truths.values())
    return {
        "world": source.world_id, "tasks": len(kept), "seconds": seconds, "rate": len(kept) / seconds,
        "dup_share": dups / max(1, len(kept)),
        "do_nothing": sum(a.do_nothing for a in kept) / max(1, len(kept)),
        "categories": len({a.candidate.category for a in kept}),
        "difficulties": sorted({a.difficulty for a in kept}),
        "templates": len({a.candidate.template for a in kept}),
        "rejected": dict(report.rejected), "attempts": report.attempts,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0])
    ap.add_argument("--reference", help="also run on the reference world (csv_data folder)")
    args = ap.parse_args()
    console = Console(width=220)
    sources = [WorkplaceSource(generate_world(s, "reference").to_world(), f"seed{s}-reference") for s in args.seeds]
    if args.reference:
        sources.append(WorkplaceSource(load_world(args.reference), "reference"))
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    console.print(f"{len(TEMPLATES)} templates; python {platform.python_version()}; {cpus} usable core(s); n={args.n}")
    table = Table("world", "tasks", "seconds", "tasks/s", "dup share", "do-nothing", "categories", "difficulties",
                  "templates used", "attempts", "rejected (reason: n)")
    for src in sources:
        r = run(src, args.n, 0)
        table.add_row(r["world"], str(r["tasks"]), f"{r['seconds']:.2f}", f"{r['rate']:,.0f}", f"{r['dup_share']:.2%}",
                      f"{r['do_nothing']:.1%}", str(r["categories"]), ",".join(map(str, r["difficulties"])),
                      str(r["templates"]), str(r["attempts"]),
                      ", ".join(f"{k}: {v}" for k, v in sorted(r["rejected"].items())))
    console.print(table)


if __name__ == "__main__":
    main()
