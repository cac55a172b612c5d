"""The report's "what transfers" section: each evaluation on each subset of the test split (new fills
of trained templates, held-out templates, held-out wordings, "change nothing" tasks) side by side,
and the paired tests of each model stage against the one before it on the held-out subsets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from officegym.core.rollout_row import RolloutRow
from officegym.eval.subsets import LABELS, subsets_of
from officegym.pipeline.cells import acc_cell, pct

MEASURES = (("accuracy", "accuracy [95%]"), (">= 1 write", "tasks with >= 1 write"),
            ("side_effect_rate", "side-effect rate"), ("invalid_call_rate", "invalid-call rate"))
NOTE = ("Each subset of the evaluated tasks apart: new fills of the templates and wordings trained on; whole "
        "templates never trained on; surface features (sentence frames, verbs, quotes, name case, typos) never "
        "trained on; and the tasks whose right answer changes nothing. Accuracy with its 95% Wilson interval "
        "and the number of rollouts.")


def _cell(m: dict[str, Any], measure: str) -> str:
    if measure == "accuracy":
        return acc_cell({"accuracy": m.get("accuracy"), "ci95": m.get("accuracy_ci95"), "n": m.get("rollouts")})
    if measure == ">= 1 write":
        return acc_cell(m.get("buckets", {}).get(">= 1 write"))
    return pct(m.get(measure))


def subset_rows(metrics: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Rows "<subset>: <measure>" with one cell per evaluation; [] when no evaluation has subsets."""
    rows = []
    for name, label in LABELS.items():
        per_eval = [m.get("subsets", {}).get(name) for m in metrics.values()]
        if not any(per_eval):
            continue
        for measure, title in MEASURES:
            if name == "do_nothing" and measure == ">= 1 write":
                continue
            cells = [_cell(m, measure) if m else "-" for m in per_eval]
            rows.append([f"{label}: {title}", *cells])
    return rows


def _task_subsets(out: Path) -> dict[str, set[str]]:
    """Task id -> the subsets it counts in, from the run's task files."""
    from officegym.core.task import read_tasks

    found: dict[str, set[str]] = {}
    for split in ("validation", "test"):
        path = out / "tasks" / f"{split}.jsonl"
        if path.exists():  # the rows say whether they change nothing (their do_nothing flag)
            found.update((str(t.id), subsets_of(t, None)) for t in read_tasks(path))
    return found


def subset_tests(out: Path, pairs: list[tuple[str, list[dict[str, Any]], str, list[dict[str, Any]]]]) -> list[str]:
    """Exact McNemar of each compared pair (label, rows, label, rows) on the held-out subsets and the
    "change nothing" tasks, as sentences."""
    from officegym.eval.stats import paired_outcomes, paired_verdict

    subsets = _task_subsets(out)
    if not any(subsets.values()):
        return []
    sentences = []
    for la, rows_a, lb, rows_b in pairs:
        for name in ("heldout", "heldout_template", "heldout_wording", "do_nothing"):
            kept_a, kept_b = ([r for r in rows if name in subsets.get(RolloutRow(r).task_id, ())]
                              for rows in (rows_a, rows_b))
            try:
                cmp = paired_outcomes(kept_a, kept_b)
            except ValueError:
                continue
            if cmp.n:
                sentences.append(f"{LABELS[name]}: " + paired_verdict({"from": la, "to": lb, **cmp.as_dict()}))
    return sentences
