"""The pipeline's report: the before/after table (untrained, after SFT, after GRPO) and the curves."""

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
    return found


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
    plots = sorted(p.relative_to(out) for stage in ("sft", "grpo") for p in (out / stage / "plots").glob("*.png"))
    md = ["# officegym pipeline report", "", f"Run folder: `{out}`. Config: `config.yaml`.", "",
          "## Before and after", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
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
            f"<h2>Before and after</h2><table><tr>{cells}</tr>{body}</table><h2>Training curves</h2>{images}")
    html_path = out / "report.html"
    atomic_write(html_path, page)
    return md_path, html_path
