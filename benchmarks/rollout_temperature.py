"""How much signal GRPO's groups carry at each rollout temperature (no training).

    python benchmarks/rollout_temperature.py --policy vllm:RUN/sft/model --tasks RUN/tasks/train.jsonl \
        --env roles/cto --out /tmp/temps [--temperatures 1.0,0.7,0.4] [--k 6] [--limit 8] [--max-steps 2]
        [--max-new-tokens 112] [--seed 0]

For each temperature, `officegym eval` samples K rollouts of each of the first LIMIT tasks (a GRPO
group per task; a rerun reuses finished evaluations). Prints per temperature: the mean reward, the
groups whose rewards differ (the only ones with a non-zero advantage), the mean within-group
standard deviation, and the verdict labels.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table


def groups(path: Path) -> tuple[list[list[float]], collections.Counter[str]]:
    by: dict[str, list[float]] = collections.defaultdict(list)
    labels: collections.Counter[str] = collections.Counter()
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        meta = row.get("officegym", {})
        by[meta.get("task_id", row.get("id"))].append(float(row["reward"]))
        labels[str(meta.get("verdict", {}).get("label", "?"))] += 1
    return list(by.values()), labels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policy", required=True)
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--env", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--temperatures", default="1.0,0.7,0.4")
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--max-steps", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=112)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    table = Table(title=f"{args.env}: {args.limit} tasks x {args.k} samples, {args.policy}")
    for col in ("temperature", "mean reward", "groups with signal", "mean group std", "labels"):
        table.add_column(col)
    for t in (float(x) for x in args.temperatures.split(",")):
        out = args.out / f"T{t}"
        rollouts = out / "rollouts.jsonl"
        if not (out / "metrics.json").exists():
            cmd = [sys.executable, "-c", "from officegym.cli import app; app()", "eval", "--policy", args.policy, "--tasks", args.tasks,
                   "--env", args.env, "--k", str(args.k), "--limit", str(args.limit), "--temperature", str(t),
                   "--seed", str(args.seed), "--max-steps", str(args.max_steps),
                   "--max-new-tokens", str(args.max_new_tokens), "--out", str(out)]
            subprocess.run(cmd, check=True)
        rewards, labels = groups(rollouts)
        flat = [r for g in rewards for r in g]
        signal = sum(1 for g in rewards if max(g) > min(g))
        std = statistics.fmean(statistics.pstdev(g) for g in rewards)
        table.add_row(f"{t:g}", f"{statistics.fmean(flat):.3f}", f"{signal} / {len(rewards)}", f"{std:.3f}",
                      ", ".join(f"{k} {v}" for k, v in labels.most_common()))
    Console(width=200).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
