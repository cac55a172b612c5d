"""World generator benchmark: time per size, one table.

    python benchmarks/world_gen_bench.py [--seeds 5] [--json out.json]

For each size (small, reference, large) and several seeds: generate_world (which includes the
consistency checks), the checks alone, write_world (CSV + world.json, atomic rename) and load_world
of the written folder. Prints the median and the worst over the seeds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.envs.workplace.generate import SIZES, generate_world, write_world
from officegym.envs.workplace.world import load_world


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5, help="seeds per size (0..N-1)")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args()

    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            times: dict[str, list[float]] = {"generate": [], "checks": [], "write": [], "load": []}
            for seed in range(args.seeds):
                t, world = _timed(lambda seed=seed, size=size: generate_world(seed, size))
                times["generate"].append(t)
                times["checks"].append(_timed(world.problems)[0])
                out = Path(tmp) / f"{size}-{seed}"
                times["write"].append(_timed(lambda world=world, out=out: write_world(world, out))[0])
                times["load"].append(_timed(lambda out=out: load_world(out))[0])
            results[size] = times

    table = Table(title=f"world generation: time per world (median / worst of {args.seeds} seeds)")
    for column in ("size", "rows", "generate (incl. checks)", "checks alone", "write", "load_world"):
        table.add_column(column, justify="right" if column != "size" else "left")
    for size, times in results.items():
        spec = SIZES[size]
        rows = spec.emails + spec.events + spec.visits + spec.tasks + spec.customers
        cells = [f"{_fmt(statistics.median(v))} / {_fmt(max(v))}" for v in times.values()]
        table.add_row(size, f"{rows:,}", *cells)
    console = Console(width=130)
    console.print(table)
    console.print(f"{dt.date.today()} | Python {platform.python_version()} | {platform.machine()} | "
                  f"{platform.processor() or platform.platform()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
