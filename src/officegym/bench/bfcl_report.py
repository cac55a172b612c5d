"""report.html (self-contained) and report.md for a BFCL run, in the eval reports' style and helpers."""

from __future__ import annotations

import base64
import html
import json
from collections import Counter
from pathlib import Path
from typing import Any

from officegym.bench.bfcl_data import NOT_RUN
from officegym.core.files import atomic_write
from officegym.eval import plots
from officegym.eval.report import CSS, _md_table, _pct, _table

MAX_FAILURES_SHOWN = 300  # the HTML stays readable; results.jsonl holds every row


def _ci(v: dict[str, Any]) -> str:
    low, high = v["ci95"]
    return f"{100 * low:.1f}-{100 * high:.1f}%"


def category_rows(scores: dict[str, Any]) -> list[list[str]]:
    return [[c, f"{v['n']} of {v.get('size', v['n'])}", str(v["correct"]), _pct(v["accuracy"]), _ci(v)]
            for c, v in scores["per_category"].items()]


def summary_rows(scores: dict[str, Any]) -> list[list[str]]:
    s, run = scores["summary"], set(scores["per_category"])

    def shown(key: str, cats: list[str]) -> str:
        missing = [c for c in cats if c not in run]
        note = "" if not missing else (" (not run: counts 0)" if len(missing) == len(cats) else
                                       f" ({', '.join(missing)} not run: count 0)")
        return _pct(s[key]) + note

    return [
        ["non-live AST (mean of simple, multiple, parallel, parallel multiple)",
         shown("non_live_ast", ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
                                "parallel_multiple"])],
        ["live AST (weighted by category size)",
         shown("live_ast", ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"])],
        ["irrelevance (mean of irrelevance, live irrelevance)", shown("irrelevance", ["irrelevance", "live_irrelevance"])],
        ["relevance (live relevance; not in the overall)", shown("relevance", ["live_relevance"])],
        ["multi-turn (mean of base, miss func, miss param, long context)",
         shown("multi_turn", ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                              "multi_turn_long_context"])],
        ["agentic (web search, memory)", _pct(s["agentic"]) + " (not run here: counts 0)"],
        ["BFCL overall = 10% non-live + 10% live + 10% irrelevance + 30% multi-turn + 40% agentic", _pct(s["overall"])],
        ["pooled: every entry run (officegym's figure, 95% Wilson interval)",
         f"{_pct(scores['pooled']['accuracy'])} ({_ci(scores['pooled'])}, n={scores['pooled']['n']})"],
    ]


def _error_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    counts = Counter((r["category"], str(r.get("error_type"))) for r in rows if not r.get("valid"))
    return [[c, t, str(n)] for (c, t), n in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1]))]


def _notes(scores: dict[str, Any], run_info: dict[str, Any]) -> list[str]:
    notes = [f"bfcl-eval {scores['bfcl_eval_version']}; policy {run_info.get('policy')}; "
             f"limit {run_info.get('limit') or 'none'} per category (seed {run_info.get('seed')})."]
    if run_info.get("limit"):
        notes.append("A --limit run scores a seeded sample of each category; the intervals say how far the full "
                     "category's accuracy may lie.")
    notes.append("Not run offline: " + "; ".join(f"{c}" for c in NOT_RUN) + ". Why: docs/benchmarks-bfcl.md.")
    if scores.get("backend_failures"):
        notes.append(f"{scores['backend_failures']} entries failed in the model backend; rerun to retry them.")
    return notes


def _failure_html(r: dict[str, Any]) -> str:
    if "turns" in r:  # a multi-turn episode: every turn's steps, calls and (clipped) results
        body = {"error": r.get("error"), "checker's evidence": r.get("details"), "turns": r.get("turns")}
    else:
        body = {"calls": r.get("calls"), "invalid fragments": r.get("invalid"), "error": r.get("error")}
    text = (r.get("text") or "")[:2000]
    return (f"<details><summary><span class='bad'>{html.escape(str(r['id']))}</span> — "
            f"{html.escape(str(r.get('error_type')))}</summary>"
            f"<p><b>user</b>: {html.escape(str(r.get('question', '')))}</p>"
            + (f"<p><b>model text</b>: {html.escape(text)}</p>" if text else "")
            + "<pre>" + html.escape(json.dumps(body, indent=1, ensure_ascii=False, default=repr)) + "</pre></details>")


def write_report(out_dir: Path, scores: dict[str, Any], rows: list[dict[str, Any]], run_info: dict[str, Any],
                 title: str) -> tuple[Path, Path]:
    """Write report.html and report.md (+ plots/bfcl_accuracy.png) into out_dir."""
    sections = [
        ("Per category (95% Wilson intervals)", ["category", "entries", "correct", "accuracy", "95% interval"],
         category_rows(scores)),
        ("BFCL summary (bfcl-eval's leaderboard formula)", ["figure", "value"], summary_rows(scores)),
        ("Failures by kind", ["category", "error type", "entries"], _error_rows(rows)),
    ]
    notes = _notes(scores, run_info)
    png = None
    if plots.available() and scores["per_category"]:
        data = {c: v["accuracy"] for c, v in scores["per_category"].items()}
        png = plots.bar_png("BFCL accuracy by category", list(data), list(data.values()))
        atomic_write(out_dir / "plots" / "bfcl_accuracy.png", png)
    failures = [r for r in rows if not r.get("valid")]

    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{CSS}</style>"
         f"</head><body><h1>{html.escape(title)}</h1>"]
    h += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    for name, headers, body in sections:
        h.append(f"<h2>{html.escape(name)}</h2>" + _table(headers, body))
    if png is not None:
        h.append(f"<img alt='bfcl_accuracy.png' src='data:image/png;base64,{base64.b64encode(png).decode()}'>")
    h.append(f"<h2>Failures ({len(failures)})</h2>")
    if len(failures) > MAX_FAILURES_SHOWN:
        h.append(f"<p>The first {MAX_FAILURES_SHOWN}; every row is in results.jsonl.</p>")
    h += [_failure_html(r) for r in failures[:MAX_FAILURES_SHOWN]]
    h.append("</body></html>")
    html_path = out_dir / "report.html"
    atomic_write(html_path, "\n".join(h))

    md = [f"# {title}", ""] + [f"> {n}" for n in notes] + [""]
    for name, headers, body in sections:
        md += [f"## {name}", "", _md_table(headers, body), ""]
    if png is not None:
        md += ["![accuracy by category](plots/bfcl_accuracy.png)", ""]
    md += [f"## Failures ({len(failures)})", "", "Calls and checker messages: report.html and results.jsonl.", ""]
    md += [f"- {r['id']}: {r.get('error_type')}: {str((r.get('error') or [''])[0])[:200]}" for r in failures[:50]]
    md_path = out_dir / "report.md"
    atomic_write(md_path, "\n".join(md) + "\n")
    return html_path, md_path
