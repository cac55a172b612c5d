"""BFCL runs of two or more models side by side, each against the first, paired per entry.

    python benchmarks/bfcl_compare.py BEFORE_RUN AFTER_RUN [MORE_RUNS ...]

Each RUN is an `officegym bench bfcl --out RUN` folder of the same categories, limit and seed. For
every later run the table gives, per category and over all entries both ran, the first run's and
this run's accuracy with 95% Wilson intervals, the change, and the exact McNemar p-value.
"""

from __future__ import annotations

import sys
from pathlib import Path

from officegym.bench.bfcl_pipeline import compare_runs, delta_rows

HEADER = ["category", "entries", "before [95%]", "after [95%]", "change", "McNemar p"]


def main(argv: list[str] | None = None) -> int:
    runs = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    if len(runs) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for run in runs[1:]:
        print(f"\n{runs[0].name} -> {run.name}")
        print("| " + " | ".join(HEADER) + " |")
        print("|" + "---|" * len(HEADER))
        for row in delta_rows(compare_runs(runs[0], run)):
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
