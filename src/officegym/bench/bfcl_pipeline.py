"""BFCL as a pipeline stage: the `bfcl:` config section, one call that runs a subset for a model, and
the before/after table with intervals and a paired test.

The pipeline runs the same selection (categories, limit, seed) before and after training, so the
two runs answer the same entries and the change is tested pairwise (exact McNemar on the entries
only one of them got right), as the pipeline's workplace accuracy is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from officegym.bench import bfcl_lib
from officegym.bench.bfcl_data import OFFLINE, load_cases, parse_categories
from officegym.bench.bfcl_report import write_report
from officegym.bench.bfcl_run import RESULTS, backend_failed, run_bfcl, summarise, write_scores
from officegym.core.files import atomic_write, load_appendable_jsonl
from officegym.core.policy import Policy, SamplingParams
from officegym.eval.stats import mcnemar_exact, wilson_interval


class BfclSection(BaseModel):
    """`bfcl: {categories: [...], limit: N}` in a pipeline config."""

    model_config = ConfigDict(extra="forbid")

    categories: list[str] = Field(default_factory=lambda: ["simple_python", "multiple", "parallel", "irrelevance"],
                                  description="BFCL categories, aliases or groups (officegym bench bfcl --categories)")
    limit: int | None = Field(15, ge=1, description="entries per category, a seeded sample; null: all")
    seed: int = 0
    temperature: float = Field(0.0, ge=0)
    max_new_tokens: int = Field(512, ge=1)
    stages: list[Literal["eval_base", "eval_sft", "eval_grpo"]] = Field(
        default_factory=lambda: ["eval_base", "eval_grpo"],
        description="the evaluation stages that also run BFCL, with the model they evaluate")


def run_stage(policy: Policy, out_dir: Path, section: BfclSection, label: str,
              progress: Any = None) -> dict[str, Any]:
    """Run the section's selection for one model into out_dir (resumable); returns scores.json."""
    categories = parse_categories(section.categories)
    cases = [case for c in categories for case in load_cases(c, section.limit, section.seed)]
    params = SamplingParams(temperature=section.temperature, max_new_tokens=section.max_new_tokens, seed=section.seed)
    result = run_bfcl(cases, policy, out_dir, params, progress=progress)
    scores = summarise(result.rows, categories)
    write_scores(out_dir, scores)
    run_info = {"policy": label, "bfcl_eval_version": bfcl_lib.version(), "categories": categories,
                "limit": section.limit, "seed": section.seed}
    atomic_write(out_dir / "run.json", json.dumps(run_info, indent=2) + "\n")
    write_report(out_dir, scores, result.rows, run_info, title=f"BFCL (bfcl-eval {run_info['bfcl_eval_version']}): {label}")
    return scores


def _outcomes(out_dir: Path) -> dict[str, tuple[str, bool]]:
    rows = load_appendable_jsonl(out_dir / RESULTS)
    return {r["id"]: (r["category"], bool(r.get("valid"))) for r in rows if not backend_failed(r)}


def compare_runs(before_dir: Path, after_dir: Path) -> dict[str, dict[str, Any]]:
    """Per category and pooled ("all"), over the entries both runs scored: n, both accuracies with
    95% Wilson intervals, the change in points, and the exact McNemar p-value."""
    a, b = _outcomes(before_dir), _outcomes(after_dir)
    groups: dict[str, list[tuple[bool, bool]]] = {}
    for entry in sorted(set(a) & set(b)):
        pair = (a[entry][1], b[entry][1])
        groups.setdefault(a[entry][0], []).append(pair)
        groups.setdefault("all", []).append(pair)
    out = {}
    for name, pairs in groups.items():
        n = len(pairs)
        ka, kb = sum(x for x, _ in pairs), sum(y for _, y in pairs)
        only_a = sum(x and not y for x, y in pairs)
        only_b = sum(y and not x for x, y in pairs)
        out[name] = {"n": n, "before": ka / n, "before_ci95": list(wilson_interval(ka, n)), "after": kb / n,
                     "after_ci95": list(wilson_interval(kb, n)), "delta": (kb - ka) / n,
                     "only_before": only_a, "only_after": only_b, "p_value": mcnemar_exact(only_b, only_a)}
    return out


def delta_rows(comparison: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Table rows (category, before [95%], after [95%], change, p) for a pipeline report."""
    def cell(p: float, ci: list[float]) -> str:
        return f"{100 * p:.1f}% [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"

    order = [c for c in OFFLINE if c in comparison] + (["all"] if "all" in comparison else [])
    return [[k, str(v["n"]), cell(v["before"], v["before_ci95"]), cell(v["after"], v["after_ci95"]),
             f"{100 * v['delta']:+.1f} points", f"{v['p_value']:.3g}"] for k, v in ((k, comparison[k]) for k in order)]
