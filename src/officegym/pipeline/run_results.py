"""The run folder's finished evaluations and what they say, for the report: which there are (the
models in stage order, each review round's, the baselines), their metrics and rollouts, the stage
times and review rounds recorded, the paired tests between them and GRPO's validation series.
pipeline/report.py renders them.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from officegym.core.rollout_row import officegym_of

EVALS = (("eval_base", "untrained"), ("eval_sft", "after SFT"), ("eval_grpo", "after GRPO"))
BASELINE = " (baseline)"


def baseline_folders(out: Path) -> list[tuple[Path, str]]:
    """(folder, label) of each finished baseline evaluation, by folder name."""
    found = []
    for path in sorted(out.glob("baselines/*/metrics.json")):
        folder = path.parent
        try:
            policy = json.loads((folder / "run.json").read_text()).get("policy") or folder.name
        except (OSError, ValueError, AttributeError):
            policy = folder.name
        found.append((folder, f"{policy}{BASELINE}"))
    return found


def evaluation_folders(out: Path) -> list[tuple[Path, str]]:
    """(folder, label) of every finished evaluation: the models in stage order, each review round's,
    then the baselines."""
    found = [(out / folder, label) for folder, label in EVALS if (out / folder / "metrics.json").exists()]
    for path in sorted(out.glob("review/round_*/eval/metrics.json")):
        found.append((path.parent, f"after review round {int(path.parent.parent.name.removeprefix('round_'))}"))
    return found + baseline_folders(out)


def load_metrics(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for folder, label in evaluation_folders(out):
        try:
            found[label] = json.loads((folder / "metrics.json").read_text())
        except ValueError:
            continue
    return found


def rollout_rows(folder: Path) -> list[dict[str, Any]]:
    from officegym.core.files import load_appendable_jsonl

    path = folder / "rollouts.jsonl"
    return load_appendable_jsonl(path) if path.exists() else []


def verdict_of(row: dict[str, Any]) -> dict[str, Any]:
    verdict = officegym_of(row).get("verdict")
    return verdict if isinstance(verdict, dict) else {}


def is_graded(rows_by_label: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether the verifier of these evaluations grades (says so in its verdicts), so the report
    compares mean rewards rather than 0/1 accuracy alone."""
    return any(verdict_of(r).get("graded") for rows in rows_by_label.values() for r in rows)


def stage_timings(out: Path) -> dict[str, float]:
    try:
        raw = json.loads((out / "timings.json").read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in raw.items() if isinstance(v, int | float)} if isinstance(raw, dict) else {}


def review_rounds(out: Path) -> list[dict[str, Any]]:
    rounds = []
    for path in sorted(out.glob("review/round_*/summary.json")):
        try:
            rounds.append(json.loads(path.read_text()))
        except ValueError:
            continue
    return rounds


def stages_not_needed(out: Path) -> dict[str, str]:
    try:
        record = json.loads((out / "stages.json").read_text())
    except (OSError, ValueError):
        return {}
    found = record.get("not_needed") if isinstance(record, dict) else None
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def comparison_pairs(out: Path) -> list[tuple[tuple[Path, str], tuple[Path, str]]]:
    """Which evaluations are compared: each model stage with the one before it, the untrained model
    with the last trained one (when a stage lies between), and each baseline with the last model."""
    models = [(out / folder, label) for folder, label in EVALS if (out / folder / "rollouts.jsonl").exists()]
    pairs = list(itertools.pairwise(models))
    if len(models) >= 3:
        pairs.append((models[0], models[-1]))
    if len(models) >= 2:
        pairs += [(b, models[-1]) for b in baseline_folders(out) if (b[0] / "rollouts.jsonl").exists()]
    return pairs


def model_pairs(out: Path) -> list[tuple[str, list[dict[str, Any]], str, list[dict[str, Any]]]]:
    """The compared pairs of model stages (no baselines) with their rollouts."""
    def rows(folder: Path) -> list[dict[str, Any]]:
        try:
            return rollout_rows(folder)
        except ValueError:
            return []
    return [(la, rows(fa), lb, rows(fb)) for (fa, la), (fb, lb) in comparison_pairs(out)
            if "baselines" not in (fa.parent.name, fb.parent.name)]


def paired_tests(out: Path, graded: bool | None = None) -> list[dict[str, Any]]:
    """The comparisons of `comparison_pairs` on the tasks both evaluations ran, from rollouts.jsonl:
    the share fully right (exact McNemar) under "accuracy", and where the verifier grades (`graded`;
    None: ask the rollouts) the mean reward (paired sign-flip test) under "reward"."""
    from officegym.eval.stats import paired_outcomes, paired_rewards

    tests = []
    cache: dict[Path, list[dict[str, Any]]] = {}
    for (fa, la), (fb, lb) in comparison_pairs(out):
        for folder in (fa, fb):
            if folder not in cache:
                try:
                    cache[folder] = rollout_rows(folder)
                except ValueError:
                    cache[folder] = []
        rows_a, rows_b = cache[fa], cache[fb]
        if graded is None:
            graded = is_graded({"a": rows_a, "b": rows_b})
        try:
            cmp = paired_outcomes(rows_a, rows_b)
        except ValueError:
            continue
        if not cmp.n:
            continue
        test: dict[str, Any] = {"from": la, "to": lb, "accuracy": {"from": la, "to": lb, **cmp.as_dict()}}
        if graded:
            test["reward"] = {"from": la, "to": lb, **paired_rewards(rows_a, rows_b).as_dict()}
        tests.append(test)
    return tests


def _validation_rollouts(out: Path) -> dict[int, int]:
    """Validation rollouts per step, counted in val_rollouts.jsonl (runs from before `val/rollouts`)."""
    from officegym.core.files import read_jsonl_text

    counts: dict[int, int] = {}
    path = out / "grpo" / "val_rollouts.jsonl"
    for line in read_jsonl_text(path) if path.is_file() else []:
        try:
            step = officegym_of(json.loads(line)).get("step")
        except ValueError:
            continue  # a torn last line: the run may still be appending (read only here)
        if isinstance(step, int):
            counts[step] = counts.get(step, 0) + 1
    return counts


def validation_series(out: Path) -> list[tuple[int, float, float | None, float | None]]:
    """(step, accuracy, 95% Wilson low, high) of GRPO's validation; the interval is None where the
    number of validation rollouts is unknown."""
    from officegym.eval.stats import wilson_interval
    from officegym.train.tracking import read_metrics

    if not (out / "grpo" / "metrics.jsonl").exists():
        return []
    records = [r for r in read_metrics(out / "grpo") if isinstance(r.get("val/accuracy"), int | float)]
    logged = all(isinstance(r.get("val/rollouts"), int | float) for r in records)
    counted = {} if logged else _validation_rollouts(out)
    series = []
    for r in records:
        step, acc = int(r["step"]), float(r["val/accuracy"])
        n = int(r.get("val/rollouts") or counted.get(step, 0))
        lo, hi = wilson_interval(round(acc * n), n) if n > 0 else (None, None)
        series.append((step, acc, lo, hi))
    return series
