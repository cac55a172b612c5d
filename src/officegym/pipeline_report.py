"""The pipeline's report: the before/after table (untrained, after SFT, after GRPO, after each review
round), the per-round review counts and the curves."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write

EVALS = (("eval_base", "untrained"), ("eval_sft", "after SFT"), ("eval_grpo", "after GRPO"))


def _load(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for folder, label in EVALS:
        path = out / folder / "metrics.json"
        if path.exists():
            try:
                found[label] = json.loads(path.read_text())
            except ValueError:
                continue
    for path in sorted(out.glob("review/round_*/eval/metrics.json")):
        try:
            found[f"after review round {int(path.parent.parent.name.removeprefix('round_'))}"] = json.loads(path.read_text())
        except ValueError:
            continue
    return found


def _timings(out: Path) -> dict[str, float]:
    try:
        raw = json.loads((out / "timings.json").read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in raw.items() if isinstance(v, int | float)} if isinstance(raw, dict) else {}


def _rounds(out: Path) -> list[dict[str, Any]]:
    rounds = []
    for path in sorted(out.glob("review/round_*/summary.json")):
        try:
            rounds.append(json.loads(path.read_text()))
        except ValueError:
            continue
    return rounds


def review_lines(rounds: list[dict[str, Any]]) -> list[str]:
    """Markdown: how many items needed review in each round, and the pool it retrained on."""
    lines = ["## Human review per round", "",
             "| round | rollouts flagged from | rollouts | flagged | new | needing review | decided | pool: removed "
             "| replaced | added | pool size |", "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rounds:
        pool = r.get("pool") or {}
        decided = ", ".join(f"{k} {v}" for k, v in sorted((r.get("decided") or {}).items()) if k != "pending") or "-"
        lines.append(f"| {r.get('round')} | `{Path(str(r.get('run_dir', ''))).name}` | {r.get('rollouts', 0)} "
                     f"| {r.get('flagged', 0)} | {r.get('new_items', 0)} | {r.get('needing_review', 0)} | {decided} "
                     f"| {pool.get('removed', 0)} | {pool.get('replaced', 0)} | {pool.get('added', 0)} | {pool.get('pool', '-')} |")
    reasons = sorted({k for r in rounds for k in (r.get("by_reason") or {})})
    if reasons:
        lines += ["", "Flag reasons: " + "; ".join(
            f"round {r.get('round')}: " + ", ".join(f"{k} {v}" for k, v in sorted((r.get("by_reason") or {}).items()))
            for r in rounds)]
    lines += ["", "Review the queue with `officegym review serve --store <run>/review/review.sqlite`; raise "
              "`review.rounds` and rerun the pipeline to import the decisions and retrain."]
    return lines


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def summary_rows(metrics: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    labels = list(metrics)
    rows = [
        ["tasks", *[str(m["tasks"]) for m in metrics.values()]],
        ["accuracy", *[_pct(m["accuracy"]) for m in metrics.values()]],
        ["accuracy, tasks with >= 1 write", *[_pct(m["buckets"].get(">= 1 write", {}).get("accuracy")) for m in metrics.values()]],
        ["accuracy, do-nothing tasks", *[_pct(m["buckets"].get("empty ground truth", {}).get("accuracy")) for m in metrics.values()]],
        ["side-effect rate", *[_pct(m.get("side_effect_rate")) for m in metrics.values()]],
        ["invalid-call rate", *[_pct(m.get("invalid_call_rate")) for m in metrics.values()]],
    ]
    categories = sorted({c for m in metrics.values() for c in m.get("by", {}).get("category", {})})
    for c in categories:
        rows.append([f"accuracy, {c.removeprefix('workplace_assistant_')}",
                     *[_pct(m.get("by", {}).get("category", {}).get(c, {}).get("accuracy")) for m in metrics.values()]])
    return ["", *labels], rows


def write_pipeline_report(out: Path) -> tuple[Path, Path]:
    metrics = _load(out)
    header, rows = summary_rows(metrics) if metrics else (["", "(no evaluations yet)"], [])
    plots = sorted(p.relative_to(out) for stage in ("sft", "grpo", "review/round_*/grpo") for p in out.glob(f"{stage}/plots/*.png"))
    md = ["# officegym pipeline report", "", f"Run folder: `{out}`. Config: `config.yaml`.", "",
          "## Before and after", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    rounds = _rounds(out)
    if rounds:
        md += ["", *review_lines(rounds)]
    timings = _timings(out)
    if timings:
        md += ["", "## Time per stage", "", "| stage | seconds |", "|---|---:|"]
        md += [f"| {k} | {v:.1f} |" for k, v in timings.items()] + [f"| total | {sum(timings.values()):.1f} |"]
    md += ["", "## Training curves", ""]
    md += [f"![{p.stem}]({p.as_posix()})" for p in plots] or ["(no curves: training has not run or matplotlib is missing)"]
    md_path = out / "report.md"
    atomic_write(md_path, "\n".join(md) + "\n")
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    images = "".join(f'<figure><img src="{html.escape(p.as_posix())}" width="640"><figcaption>{html.escape(str(p))}</figcaption></figure>'
                     for p in plots)
    page = (f"<!doctype html><meta charset='utf-8'><title>officegym pipeline</title>"
            f"<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:.3em .8em;border-bottom:1px solid #ddd}}</style>"
            f"<h1>officegym pipeline report</h1><p>Run folder: <code>{html.escape(str(out))}</code></p>"
            f"<h2>Before and after</h2><table><tr>{cells}</tr>{body}</table>{_review_html(rounds)}"
            f"<h2>Training curves</h2>{images}")
    html_path = out / "report.html"
    atomic_write(html_path, page)
    return md_path, html_path


def _review_html(rounds: list[dict[str, Any]]) -> str:
    if not rounds:
        return ""
    head = ["round", "rollouts", "flagged", "new", "needing review", "pool size"]
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
        r.get("round"), r.get("rollouts", 0), r.get("flagged", 0), r.get("new_items", 0), r.get("needing_review", 0),
        (r.get("pool") or {}).get("pool", "-"))) + "</tr>" for r in rounds)
    return ("<h2>Human review per round</h2><table><tr>" + "".join(f"<th>{h}</th>" for h in head) + f"</tr>{rows}</table>")
