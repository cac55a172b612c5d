"""Reports: one self-contained HTML file (plots inlined) and a Markdown file with PNGs beside it.

Each failed rollout is shown once, with its prompt, the expected calls, its turns and the verifier's
evidence as tables (eval/failures.py), so a reader sees why it failed without opening the JSONL.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write
from officegym.core.rollout_row import RolloutRow, officegym_of
from officegym.eval import plots
from officegym.eval.failures import CSS as FAILURE_CSS
from officegym.eval.failures import failure_html, failure_md
from officegym.eval.metrics import errored as ended_in_error

CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:14px}
th{background:#f3f3f3}td.n{text-align:right}details{margin:.3em 0}pre{background:#f7f7f7;padding:6px;
white-space:pre-wrap;word-break:break-word;font-size:12px}.ok{color:#1a7f37}.bad{color:#b42318}
.note{background:#fff8e1;padding:6px 10px;border-left:4px solid #f5b700}
"""


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _num(x: Any, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def summary_rows(m: dict[str, Any]) -> list[tuple[str, str]]:
    """(metric, value) pairs summing up an eval run's metrics: the report's and the console's summary.
    Every figure is over the scored rollouts; errored ones (an error, not the model, ended them) are a row apart."""
    seconds = m.get("seconds_per_rollout") or {}
    rows = [("rollouts scored", str(m["rollouts"]))]
    if m.get("errored"):
        rows.append(("errored rollouts (not scored)", str(m["errored"])))
    rows += [
        ("tasks x samples", f"{m['tasks']} x {m['samples_per_task']}"),
        ("accuracy", _pct(m["accuracy"])),
        ("mean reward", _num(m["mean_reward"], ".3f")),
    ]
    rows += [(f"pass@{k}", _pct(v)) for k, v in m["pass_at_k"].items()]
    rows += [(f"pass^{k}", _pct(v)) for k, v in m["pass_hat_k"].items()]
    rows += [
        ("side-effect rate", _pct(m["side_effect_rate"])),
        ("invalid-call rate", _pct(m["invalid_call_rate"])),
        ("calls per rollout", _num(m["calls_per_rollout"], ".2f")),
        ("tokens per rollout", _num(m["tokens_per_rollout"], ".0f")),
        ("seconds per rollout (median)", _num(seconds.get("median"), ".3f")),
        ("environment share of time", _pct(m["env_share_of_time"])),
    ]
    if m.get("rollout_errors"):
        rows.append(("scored rollouts that met an error", str(m["rollout_errors"])))
    return rows


def headline(m: dict[str, Any]) -> str:
    """An evaluation in one line: its mean reward with the interval and its accuracy over the scored
    rollouts, and the errored ones apart (never a score for rollouts that did not run)."""
    if m["accuracy"] is None:
        text = "no rollout ran, so there is no score"
    else:
        low, high = m["mean_reward_ci95"]
        text = (f"mean reward {m['mean_reward']:.3f} [{low:.3f}, {high:.3f}], fully right {m['accuracy']:.1%} "
                f"on {m['tasks']} tasks")
    return text + (f"; {m['errored']} rollouts ended in an error and are not scored" if m.get("errored") else "")


def errored_lines(m: dict[str, Any], most: int = 3) -> list[str]:
    """What to say first about a run with errored rollouts: how many, and their main causes."""
    n = m.get("errored") or 0
    if not n:
        return []
    causes = list((m.get("errored_causes") or {}).items())
    ran = m["rollouts"]
    lines = [f"{n} of {n + ran} rollouts ended in an error and are not scored: "
             + (f"every figure is over the {ran} that ran." if ran else "none ran, so there is no score.")]
    lines += [f"{count} x {cause}" for cause, count in causes[:most]]
    if len(causes) > most:
        lines.append(f"... and {len(causes) - most} other causes ({sum(c for _, c in causes[most:])} rollouts)")
    return lines


def _cause(og: dict[str, Any]) -> str:
    """Who failed and how, from a row's officegym block (rows from before sources were kept: the backend)."""
    return f"{og.get('error_source') or 'backend'}: {og.get('error')}"


def _plots(m: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, bytes]:
    if not plots.available():
        return {}
    out = {}
    for group in ("category", "difficulty"):
        data = {k: v["accuracy"] for k, v in m["by"][group].items() if v["accuracy"] is not None}
        if (data and len(data) > 1) or (data and group == "category"):
            out[f"accuracy_by_{group}.png"] = plots.bar_png(f"accuracy by {group}", list(data), list(data.values()))
    buckets = {k: v["accuracy"] for k, v in m["buckets"].items() if v["accuracy"] is not None}
    if buckets:
        out["accuracy_by_writes.png"] = plots.bar_png("accuracy by ground-truth writes", list(buckets), list(buckets.values()))
    calls = [len(RolloutRow(r).function_call_items) for r in rows]
    if not calls:
        return out
    out["calls_per_rollout.png"] = plots.hist_png("tool calls per rollout", calls, "calls", bins=max(1, min(20, max(calls, default=0) + 1)))
    return out


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _sections(m: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    sections = [("Summary", ["metric", "value"], [list(r) for r in summary_rows(m)])]
    if m.get("errored"):
        sections.append(("Errored rollouts by cause (not scored)", ["cause", "rollouts"],
                         [[cause, str(n)] for cause, n in (m.get("errored_causes") or {}).items()]))
    sections.append(("By ground-truth writes", ["bucket", "rollouts", "accuracy"],
                     [[b, str(v["n"]), _pct(v["accuracy"])] for b, v in m["buckets"].items()]))
    for group in ("category", "difficulty", "template"):
        data = m["by"][group]
        if len(data) > 1 or group == "category":
            sections.append((f"By {group}", [group, "rollouts", "accuracy"],
                             [[k, str(v["n"]), _pct(v["accuracy"])] for k, v in data.items()]))
    kinds = [[k, str(v)] for k, v in m["errors"].items()]
    if "failures_with_invalid_call" in m:
        kinds.append(["(any kind) with an invalid or failed call", str(m["failures_with_invalid_call"])])
    sections.append(("Failures by primary kind (the first that applies: a missing write hides an invalid call "
                     "in the same rollout)", ["kind", "rollouts"], kinds))
    if m.get("reward_components"):
        sections.append(("Reward components (mean)", ["component", "mean"],
                         [[k, f"{v:.3f}"] for k, v in m["reward_components"].items()]))
    return sections


def _label_section(rows: list[dict[str, Any]]) -> tuple[str, list[str], list[list[str]]] | None:
    """Rollouts and mean reward per verdict label, for verifiers that label their verdicts (roles)."""
    by: dict[str, list[float]] = {}
    for r in rows:
        rollout = RolloutRow(r)
        label = (rollout.verdict or {}).get("label")
        if isinstance(label, str):
            by.setdefault(label, []).append(rollout.reward or 0.0)
    if not by:
        return None
    body = [[k, str(len(v)), f"{sum(v) / len(v):.3f}"] for k, v in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    return ("By verdict label", ["label", "rollouts", "mean reward"], body)


def _notes(m: dict[str, Any]) -> list[str]:
    notes = errored_lines(m)[:1]
    share = m.get("empty_ground_truth_share")
    if share:
        notes.append(
            f"{_pct(share)} of the tasks have an empty ground truth: a policy that never writes scores that "
            "share for free. Read the accuracy on tasks with at least one write."
        )
    return notes


def write_report(out_dir: Path, metrics: dict[str, Any], rows: list[dict[str, Any]], title: str = "officegym eval") -> tuple[Path, Path]:
    """Write report.html (self-contained) and report.md (+ plots/*.png) into out_dir."""
    errored = [r for r in rows if ended_in_error(r)]
    rows = [r for r in rows if not ended_in_error(r)]  # what the figures are over
    pngs = _plots(metrics, rows)
    for name, data in pngs.items():
        atomic_write(out_dir / "plots" / name, data)
    failures = [r for r in rows if not RolloutRow(r).matched]
    sections = _sections(metrics)
    labels = _label_section(rows)
    if labels is not None:
        sections.insert(1, labels)
    notes = _notes(metrics)

    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
         f"<style>{CSS}{FAILURE_CSS}</style></head><body>",
         f"<h1>{html.escape(title)}</h1>"]
    h += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    for name, headers, body in sections:
        h.append(f"<h2>{html.escape(name)}</h2>" + _table(headers, body))
    if pngs:
        h.append("<h2>Plots</h2>")
        h += [f"<img alt='{n}' src='data:image/png;base64,{base64.b64encode(d).decode()}'>" for n, d in pngs.items()]
    else:
        h.append("<p class='note'>Plots need matplotlib (pip install 'officegym[report]').</p>")
    h.append(f"<h2 id='failures'>Failures ({len(failures)})</h2>")
    if failures:
        h.append("<p class='muted'>Each with the verifier's reason and the request; open one for the expected "
                 "calls, the model's turns and the state diff.</p>")
    h += [failure_html(r, f"f{i}") for i, r in enumerate(failures)]
    if errored:
        h.append(f"<h2>Errored rollouts ({len(errored)}, not scored)</h2><ul>")
        h += [f"<li>task {html.escape(str(og.get('task_id')))} sample {og.get('sample_index')}: "
              f"{html.escape(_cause(og))}</li>" for og in map(officegym_of, errored)]
        h.append("</ul>")
    h.append("</body></html>")
    html_path = out_dir / "report.html"
    atomic_write(html_path, "\n".join(h))

    md = [f"# {title}", ""]
    md += [f"> {n}" for n in notes] + ([""] if notes else [])
    for name, headers, body in sections:
        md += [f"## {name}", "", _md_table(headers, body), ""]
    if pngs:
        md += ["## Plots", ""] + [f"![{n}](plots/{n})" for n in pngs] + [""]
    md += [f"## Failures ({len(failures)})", "", "Expected calls, turns and state diffs: report.html.", ""]
    md += [failure_md(r) for r in failures[:50]]
    if len(failures) > 50:
        md.append(f"- ... and {len(failures) - 50} more (report.html lists them all)")
    if errored:
        md += ["", f"## Errored rollouts ({len(errored)}, not scored)", ""]
        md += [f"- task {og.get('task_id')} sample {og.get('sample_index')}: {_cause(og)}"
               for og in map(officegym_of, errored[:50])]
    md_path = out_dir / "report.md"
    atomic_write(md_path, "\n".join(md) + "\n")
    return html_path, md_path


def compare_table(runs: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Rows of key metrics, one column per run."""
    names = list(runs)
    keys = [("accuracy", lambda m: _pct(m["accuracy"])), ("mean reward", lambda m: _num(m["mean_reward"], ".3f"))]
    keys += [(f"pass@{k}", lambda m, k=k: _pct(m["pass_at_k"].get(k))) for k in sorted({k for m in runs.values() for k in m["pass_at_k"]})]
    keys += [
        ("accuracy, >= 1 write", lambda m: _pct(m["buckets"].get(">= 1 write", {}).get("accuracy"))),
        ("accuracy, empty ground truth", lambda m: _pct(m["buckets"].get("empty ground truth", {}).get("accuracy"))),
        ("side-effect rate", lambda m: _pct(m["side_effect_rate"])),
        ("invalid-call rate", lambda m: _pct(m["invalid_call_rate"])),
        ("calls per rollout", lambda m: _num(m["calls_per_rollout"], ".2f")),
        ("rollouts", lambda m: str(m["rollouts"])),
        ("errored rollouts (not scored)", lambda m: str(m.get("errored", 0))),
    ]
    return ["metric", *names], [[k, *(f(runs[n]) for n in names)] for k, f in keys]
