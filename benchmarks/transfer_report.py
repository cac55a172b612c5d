"""What a pipeline run's models learnt and what transferred, from its folder.

    python benchmarks/transfer_report.py RUN [--templates] [--against OTHER_RUN]

For each model evaluation (eval_base, eval_sft, eval_grpo) it prints, per subset of the test split
(new fills of trained templates, held-out templates, held-out wordings, "change nothing" tasks, NeMo
Gym's example tasks): accuracy with its 95% Wilson interval, accuracy on tasks with >= 1 write, the
side-effect and invalid-call rates; then accuracy per family (email, calendar, ...) and the failure
kinds of each subset (missing write, extra write, wrong tool, invalid call, wrong argument value);
with --templates, accuracy per template. Then exact McNemar tests between consecutive stages on each
subset. With --against, another run's evaluations (of the same test tasks: a run made from the same
task folder) get columns of their own and each stage is tested against its own there, task by task.
It reads metrics.json, rollouts.jsonl and tasks/*.jsonl only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.core.rollout_row import RolloutRow
from officegym.core.task import read_tasks
from officegym.envs.workplace.tools import WRITE_TOOLS
from officegym.eval.metrics import classify_failure
from officegym.eval.stats import paired_outcomes, wilson_interval
from officegym.eval.subsets import LABELS, changes_nothing, subset_of, subsets_of

STAGES = (("eval_base", "untrained"), ("eval_sft", "after SFT"), ("eval_grpo", "after GRPO"))


def _rows(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _pct(rate: dict | None) -> str:
    if not rate or rate.get("accuracy") is None:
        return "-"
    lo, hi = rate.get("ci95") or (None, None)
    return f"{100 * rate['accuracy']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] (n={rate['n']})"


def _overall(m: dict) -> dict:
    return {"accuracy": m.get("accuracy"), "ci95": m.get("accuracy_ci95"), "n": m.get("rollouts")}


def _task_subsets(task) -> set[str]:
    return subsets_of(task, WRITE_TOOLS) if task is not None else set()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--templates", action="store_true", help="also print accuracy per template")
    ap.add_argument("--against", type=Path, help="another run over the same test tasks, side by side")
    args = ap.parse_args()
    console = Console(width=200)
    tasks = {str(t.id): t for split in ("validation", "test") if (args.run / "tasks" / f"{split}.jsonl").exists()
             for t in read_tasks(args.run / "tasks" / f"{split}.jsonl")}
    found = [(args.run / folder, label) for folder, label in STAGES if (args.run / folder / "metrics.json").exists()]
    if not found:
        print(f"{args.run}: no evaluation with metrics.json", file=sys.stderr)
        return 1
    pairs = list(itertools.pairwise(label for _, label in found))
    if args.against is not None:
        other = [(args.against / folder, f"{args.against.name}: {label}") for folder, label in STAGES
                 if (args.against / folder / "metrics.json").exists()]
        if not other:
            print(f"{args.against}: no evaluation with metrics.json", file=sys.stderr)
            return 1
        pairs += [(o, label) for _, label in found for _, o in other if o.endswith(f": {label}")]
        found += other
    stages = [(str(path), label) for path, label in found]
    metrics = {label: json.loads((Path(path) / "metrics.json").read_text()) for path, label in stages}
    rows = {label: _rows(Path(path) / "rollouts.jsonl") for path, label in stages}

    table = Table(title="Each subset apart")
    table.add_column("subset / measure")
    for _, label in stages:
        table.add_column(label)
    for name, title in LABELS.items():
        subs = [metrics[label].get("subsets", {}).get(name) for _, label in stages]
        if not any(subs):
            continue
        table.add_row(f"{title}: accuracy", *[_pct(_overall(s)) if s else "-" for s in subs])
        table.add_row("  >= 1 write", *[_pct((s or {}).get("buckets", {}).get(">= 1 write")) for s in subs])
        table.add_row("  side effects / invalid calls", *[
            f"{100 * s['side_effect_rate']:.1f}% / {100 * s['invalid_call_rate']:.1f}%"
            if s and s.get("side_effect_rate") is not None else "-" for s in subs])
    console.print(table)

    # per family and failure kinds, recomputed from the rows so every subset gets them
    fam = Table(title="Accuracy per family (all evaluated tasks)")
    fam.add_column("family")
    for _, label in stages:
        fam.add_column(label)
    families = sorted({str(t.category).removeprefix("workplace_assistant_") for t in tasks.values()})
    for family in families:
        cells = []
        for _, label in stages:
            ok = [RolloutRow(r).matched for r in rows[label]
                  if (t := tasks.get(RolloutRow(r).task_id)) is not None
                  and str(t.category).removeprefix("workplace_assistant_") == family]
            cells.append(_pct({"accuracy": sum(ok) / len(ok), "ci95": wilson_interval(sum(ok), len(ok)), "n": len(ok)})
                         if ok else "-")
        fam.add_row(family, *cells)
    console.print(fam)

    kinds = Table(title="Failure kinds per subset (share of the subset's failed rollouts)")
    kinds.add_column("stage / subset")
    kinds_order = ("missing write", "extra write", "wrong tool", "invalid call", "wrong argument value")
    for k in kinds_order:
        kinds.add_column(k)
    for _, label in stages:
        by_subset: dict[str, list[str]] = defaultdict(list)
        for r in rows[label]:
            t = tasks.get(RolloutRow(r).task_id)
            if t is None or RolloutRow(r).matched:
                continue
            kind = classify_failure(r, [c.name for c in t.ground_truth], WRITE_TOOLS)
            by_subset[subset_of(t) or "other"].append(kind)
            if changes_nothing(t, WRITE_TOOLS):
                by_subset["do_nothing"].append(kind)
        for name, got in sorted(by_subset.items()):
            kinds.add_row(f"{label} / {LABELS.get(name, name)} ({len(got)})",
                          *[f"{100 * got.count(k) / len(got):.0f}%" for k in kinds_order])
    console.print(kinds)

    if args.templates:
        tpl = Table(title="Accuracy per template")
        tpl.add_column("template")
        for _, label in stages:
            tpl.add_column(label)
        names = sorted({k for m in metrics.values() for k in m.get("by", {}).get("template", {})})
        for name in names:
            tpl.add_row(name, *[_pct(metrics[label].get("by", {}).get("template", {}).get(name)) for _, label in stages])
        console.print(tpl)

    for la, lb in pairs:
        for name in ("trained", "heldout_template", "heldout_wording", "heldout", "do_nothing"):
            kept_a, kept_b = ([r for r in rows[label] if name in _task_subsets(tasks.get(RolloutRow(r).task_id))]
                              for label in (la, lb))
            cmp = paired_outcomes(kept_a, kept_b)
            if cmp.n:
                d = cmp.as_dict()
                console.print(f"{lb} vs {la}, {LABELS[name]}: {100 * d['accuracy_a']:.1f}% -> {100 * d['accuracy_b']:.1f}% "
                              f"({100 * d['delta']:+.1f} points; {d['only_b']} gained, {d['only_a']} lost, "
                              f"{d['n']} tasks; exact McNemar p = {d['p_value']:.3g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
