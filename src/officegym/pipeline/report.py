"""The pipeline's report: the before/after table (untrained, after SFT, after GRPO, after each review
round), the per-round review counts and the curves."""

from __future__ import annotations

import html
import itertools
import json
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write
from officegym.eval.stats import paired_verdict

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


def _acc_cell(rate: dict[str, Any] | None) -> str:
    """"47.6% [28.3, 67.6] (n=21)": accuracy, its 95% Wilson interval, the number of rollouts."""
    if not rate or rate.get("accuracy") is None:
        return "-"
    ci = rate.get("ci95")
    interval = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
    return f"{_pct(rate['accuracy'])}{interval} (n={rate.get('n', '?')})"


def summary_rows(metrics: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    labels = list(metrics)
    ms = list(metrics.values())
    overall = [{"accuracy": m.get("accuracy"), "ci95": m.get("accuracy_ci95"), "n": m.get("rollouts")} for m in ms]
    rows = [["accuracy [95% interval]", *[_acc_cell(o) for o in overall]]]
    for bucket, name in ((">= 1 write", "tasks with >= 1 write"), ("empty ground truth", "do-nothing tasks")):
        cells = [_acc_cell(m.get("buckets", {}).get(bucket)) for m in ms]
        if any(c != "-" for c in cells):  # a row of dashes says nothing: leave it out
            rows.append([f"accuracy, {name}", *cells])
    rows += [["side-effect rate", *[_pct(m.get("side_effect_rate")) for m in ms]],
             ["invalid-call rate", *[_pct(m.get("invalid_call_rate")) for m in ms]]]
    categories = sorted({c for m in ms for c in m.get("by", {}).get("category", {})})
    for c in categories:
        rows.append([f"accuracy, {c.removeprefix('workplace_assistant_')}",
                     *[_acc_cell(m.get("by", {}).get("category", {}).get(c)) for m in ms]])
    return ["", *labels], rows


def paired_tests(out: Path) -> list[dict[str, Any]]:
    """Each stage against the one before it on the same tasks (exact McNemar), from rollouts.jsonl."""
    from officegym.core.files import load_appendable_jsonl
    from officegym.eval.stats import paired_outcomes

    present = [(folder, label) for folder, label in EVALS if (out / folder / "rollouts.jsonl").exists()]
    tests = []
    for (fa, la), (fb, lb) in itertools.pairwise(present):
        try:
            cmp = paired_outcomes(load_appendable_jsonl(out / fa / "rollouts.jsonl"),
                                  load_appendable_jsonl(out / fb / "rollouts.jsonl"))
        except ValueError:
            continue
        if cmp.n:
            tests.append({"from": la, "to": lb, **cmp.as_dict()})
    return tests


def headline(out: Path) -> list[str]:
    """The lines a pipeline prints at its end: accuracy per stage and each paired test."""
    metrics = _load(out)
    lines = [f"{label}: accuracy {_acc_cell({'accuracy': m.get('accuracy'), 'ci95': m.get('accuracy_ci95'), 'n': m.get('rollouts')})}"
             for label, m in metrics.items()]
    return lines + [paired_verdict(t) for t in paired_tests(out)]


def _validation_points(out: Path) -> list[tuple[int, float]]:
    from officegym.train.tracking import read_metrics

    if not (out / "grpo" / "metrics.jsonl").exists():
        return []
    return [(int(r["step"]), float(r["val/accuracy"])) for r in read_metrics(out / "grpo")
            if isinstance(r.get("val/accuracy"), int | float)]


def write_validation_plot(out: Path) -> Path | None:
    """GRPO's validation accuracy against its step (step 0: the model GRPO started from)."""
    points = _validation_points(out)
    if not points:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot([p[0] for p in points], [100 * p[1] for p in points], marker="o")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("validation accuracy (%)")
    ax.set_title("validation accuracy during GRPO", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = out / "plots" / "grpo_validation_accuracy.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(path)
    return path


BFCL_HEADER = ["category", "entries", "before [95%]", "after [95%]", "change", "McNemar p"]


def bfcl_tables(out: Path) -> list[tuple[str, list[list[str]]]]:
    """(title, rows) comparing BFCL before training with each later stage that ran it, over the same
    entries; [] when the pipeline ran no BFCL."""
    from officegym.bench.bfcl_pipeline import compare_runs, delta_rows

    before = out / "bfcl_eval_base"
    if not (before / "results.jsonl").exists():
        return []
    tables = []
    for stage in ("eval_sft", "eval_grpo"):
        after = out / f"bfcl_{stage}"
        if (after / "results.jsonl").exists():
            rows = delta_rows(compare_runs(before, after))
            if rows:
                tables.append((f"BFCL: untrained model vs after {stage.removeprefix('eval_').upper()}", rows))
    return tables


def write_pipeline_report(out: Path) -> tuple[Path, Path]:
    metrics = _load(out)
    header, rows = summary_rows(metrics) if metrics else (["", "(no evaluations yet)"], [])
    tests = paired_tests(out)
    val_plot = write_validation_plot(out)
    plots = ([val_plot.relative_to(out)] if val_plot else []) + [
        p.relative_to(out) for stage in ("sft", "grpo", "review/round_*/grpo") for p in sorted(out.glob(f"{stage}/plots/*.png"))]
    links = [(label, f"{folder}/report.html") for folder, label in EVALS if (out / folder / "report.html").exists()]
    md = ["# officegym pipeline report", "", f"Run folder: `{out}`. Config: `config.yaml`.", "",
          "## Before and after", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    if tests:
        md += ["", "## Did each stage change accuracy? (paired, same tasks)", ""] + [f"- {paired_verdict(t)}" for t in tests]
    if links:
        md += ["", "Each evaluation's own report (transcripts, state diffs, failures by kind): "
               + ", ".join(f"[{label}]({href})" for label, href in links) + "."]
    bfcl = bfcl_tables(out)
    for title, bfcl_rows in bfcl:
        md += ["", f"## {title} (same entries)", "", "| " + " | ".join(BFCL_HEADER) + " |", "|" + "---|" * len(BFCL_HEADER)]
        md += ["| " + " | ".join(r) + " |" for r in bfcl_rows]
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
    tests_html = ("<h2>Did each stage change accuracy? (paired, same tasks)</h2><ul>"
                  + "".join(f"<li>{html.escape(paired_verdict(t))}</li>" for t in tests) + "</ul>") if tests else ""
    links_html = ("<p>Each evaluation's own report: " + ", ".join(
        f'<a href="{html.escape(href)}">{html.escape(label)}</a>' for label, href in links) + ".</p>") if links else ""
    bfcl_html = "".join(
        f"<h2>{html.escape(title)} (same entries)</h2><table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in BFCL_HEADER)
        + "</tr>" + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in bfcl_rows)
        + "</table>" for title, bfcl_rows in bfcl)
    timing_html = ""
    if timings:
        timing_html = ("<h2>Time per stage</h2><table><tr><th>stage</th><th>seconds</th></tr>"
                       + "".join(f"<tr><td>{html.escape(k)}</td><td>{v:.1f}</td></tr>" for k, v in timings.items())
                       + f"<tr><td><b>total</b></td><td><b>{sum(timings.values()):.1f}</b></td></tr></table>")
    images = "".join(f'<figure><img src="{html.escape(p.as_posix())}" width="640"><figcaption>{html.escape(str(p))}</figcaption></figure>'
                     for p in plots)
    page = (f"<!doctype html><meta charset='utf-8'><title>officegym pipeline</title>"
            f"<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:.3em .8em;border-bottom:1px solid #ddd}}</style>"
            f"<h1>officegym pipeline report</h1><p>Run folder: <code>{html.escape(str(out))}</code></p>"
            f"<h2>Before and after</h2><p>Accuracy with its 95% Wilson interval and the number of rollouts.</p>"
            f"<table><tr>{cells}</tr>{body}</table>{tests_html}{links_html}{bfcl_html}{_review_html(rounds)}{timing_html}"
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
