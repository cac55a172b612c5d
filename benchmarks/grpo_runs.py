"""GRPO runs side by side, from their folders: what validation and the sampled rollouts did.

    python benchmarks/grpo_runs.py RUN [RUN ...] [--every 5]

For each run (a `officegym train grpo` folder, or a pipeline's grpo/ stage) it prints:
- validation at each validation step: accuracy with a 95% Wilson interval (n = validation tasks),
  the share of validation rollouts with an invalid call, turns per rollout;
- the training rollouts per block of `--every` steps, read from rollouts.jsonl: accuracy, the share
  of successful rollouts that also made an invalid call (a tool refused it, it named no tool, its
  arguments were bad: rewards/calls.py), calls per rollout, zero-variance groups, the mean policy
  entropy and the reward spread the trainer logged, the median step time and the largest resident
  memory of the trainer and of its children (the vLLM engine) where the run logged it.
- validation per template and step, from val_rollouts.jsonl (runs from 2026-11-27 on keep it):
  tasks solved of the template's tasks.
The invalid-call definition is applied to the training rows here, so runs logged under the older
metric names compare like for like; a validation figure logged before the one definition (tool
refusals not counted) is marked "*".
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from officegym.rewards.calls import count_calls


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def validation_table(run: Path, n_val: int) -> list[list[str]]:
    rows = []
    seen = set()
    for m in read_jsonl(run / "metrics.jsonl"):
        if "val/accuracy" not in m or m["step"] in seen:  # a resumed run repeats step 0's validation
            continue
        seen.add(m["step"])
        acc = m["val/accuracy"]
        lo, hi = wilson(round(acc * n_val), n_val)
        if "val/rollouts_with_invalid_call" in m:
            with_invalid = f"{100 * m['val/rollouts_with_invalid_call']:.1f}%"
        else:  # logged before the one definition: tool refusals were not counted ("*")
            with_invalid = f"{100 * m.get('val/invalid_call_rate', float('nan')):.1f}%*"
        rows.append([str(m["step"]), f"{100 * acc:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]",
                     with_invalid, f"{m.get('val/turns_per_rollout', float('nan')):.2f}"])
    return rows


def _mean(records: list[dict], key: str) -> float:
    vals = [m[key] for m in records if key in m]
    return statistics.fmean(vals) if vals else float("nan")


def training_table(run: Path, every: int) -> list[list[str]]:
    blocks: dict[int, list[dict]] = defaultdict(list)
    for row in read_jsonl(run / "rollouts.jsonl"):
        step = int(row["officegym"].get("step", 0))
        blocks[(step - 1) // every].append(row)
    logged: dict[int, list[dict]] = defaultdict(list)
    for m in read_jsonl(run / "metrics.jsonl"):
        if "train/reward_mean" in m:
            logged[(m["step"] - 1) // every].append(m)
    out = []
    for b in sorted(blocks):
        rows = blocks[b]
        og = [r["officegym"] for r in rows]
        matched = [bool((o.get("verdict") or {}).get("matched")) for o in og]
        invalid = [count_calls(o.get("call_status") or [], o.get("invalid_fragments") or [])[0] > 0 for o in og]
        calls = [len(o.get("call_status") or []) for o in og]
        wins = sum(matched)
        junk = sum(1 for m, i in zip(matched, invalid) if m and i)
        ms = logged.get(b, [])

        steps = sorted({int(o.get("step", 0)) for o in og})
        out.append([f"{steps[0]}-{steps[-1]}", str(len(rows)), f"{100 * wins / len(rows):.1f}%",
                     f"{100 * junk / wins:.0f}%" if wins else "-", f"{statistics.fmean(calls):.2f}",
                     f"{100 * _mean(ms, 'train/zero_variance_groups'):.0f}%", f"{_mean(ms, 'train/reward_std'):.3f}",
                     f"{_mean(ms, 'train/entropy'):.3f}", _split(ms), _median(ms, "time/step_s", "{:.1f}"), _rss(ms)])
    return out


def _split(records: list[dict]) -> str:
    """The policy gradient's norm against the SFT term's (mean over the block), and their cosine."""
    ms = [m for m in records if "train/pg_grad_norm" in m]
    if not ms:
        return "-"
    return (f"{_mean(ms, 'train/pg_grad_norm'):.3f} / {_mean(ms, 'train/sft_grad_norm'):.3f}, "
            f"cos {_mean(ms, 'train/pg_sft_grad_cos'):+.2f}")


def _median(records: list[dict], key: str, fmt: str) -> str:
    vals = [m[key] for m in records if key in m]
    return fmt.format(statistics.median(vals)) if vals else "-"


def _rss(records: list[dict]) -> str:
    """The block's largest resident memory of the trainer (and of its children: the engine), GB."""
    own = [m["mem/rss_gb"] for m in records if "mem/rss_gb" in m]
    kids = [m["mem/children_rss_gb"] for m in records if "mem/children_rss_gb" in m]
    if not own:
        return "-"
    return f"{max(own):.1f}" + (f" ({max(kids):.1f})" if kids else "")


def validation_by_template(run: Path) -> tuple[list[str], list[list[str]]]:
    """Header and rows: per template, tasks solved at each validated step (of its tasks)."""
    solved: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for row in read_jsonl(run / "val_rollouts.jsonl"):
        og = row["officegym"]
        solved[row.get("template") or row.get("category") or "-"][int(og.get("step", 0))].append(
            bool((og.get("verdict") or {}).get("matched")))
    steps = sorted({s for per in solved.values() for s in per})
    rows = [[t] + [f"{sum(per[s])}/{len(per[s])}" if per.get(s) else "-" for s in steps] for t, per in sorted(solved.items())]
    return ["template"] + [str(s) for s in steps], rows


def print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n{title}")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--every", type=int, default=5, help="training steps per row of the rollout table")
    a = p.parse_args(argv)
    for run in a.runs:
        cfg_path = run / "config.yaml"
        if not (run / "metrics.jsonl").exists():
            print(f"{run}: no metrics.jsonl", file=sys.stderr)
            return 2
        import yaml

        cfg = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) if cfg_path.exists() else {}
        g = cfg.get("grpo", {})
        n_val = int((cfg.get("data") or {}).get("max_val_tasks") or 0) or 24
        print(f"\n## {run}: reward {g.get('reward')}, lr {(cfg.get('optim') or {}).get('lr')}, "
              f"{g.get('num_prompts_per_step')} x {g.get('num_generations_per_prompt')} rollouts a step, "
              f"negative_weight {g.get('negative_weight')}, validation n = {n_val}")
        print_table("validation (greedy)", ["step", "accuracy [95% CI]", "rollouts with an invalid call", "turns"],
                    validation_table(run, n_val))
        print_table(f"training rollouts (T={(cfg.get('rollout') or {}).get('temperature')})",
                    ["steps", "rollouts", "solved", "solved with an invalid call", "calls / rollout",
                     "zero-variance groups", "reward std", "entropy", "gradient norm: policy / SFT term",
                     "step s (median)",
                     "resident GB, max (children)"], training_table(run, a.every))
        header, rows = validation_by_template(run)
        if rows:
            print_table("validation per template (tasks solved, by step)", header, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
