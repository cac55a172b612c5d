"""The pipeline's report: the before/after table (untrained, after SFT, after GRPO, after each review
round, and the baselines beside them), paired tests between them, the per-round review counts and
the curves.

Where the verifier grades (the role environments: rewards in [0, 1]), the table leads with the mean
reward and its 95% interval, then the share fully right, the reward per difficulty level and the
verdicts' labels; the paired tests compare mean rewards (sign-flip test, eval/stats.py) as well as
the share fully right (exact McNemar). The workplace's 0/1 rewards keep the accuracy table.
What the run's evaluations say is read and compared in pipeline/run_results.py; this module renders it.
"""

from __future__ import annotations

import html
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write
from officegym.core.rollout_row import RolloutRow
from officegym.eval.stats import paired_reward_verdict, paired_verdict
from officegym.pipeline.cells import acc_cell as _acc_cell
from officegym.pipeline.cells import pct as _pct
from officegym.pipeline.report_subsets import NOTE as SUBSET_NOTE
from officegym.pipeline.report_subsets import subset_rows, subset_tests
from officegym.pipeline.run_results import (
    evaluation_folders,
    is_graded,
    load_metrics,
    model_pairs,
    paired_tests,
    review_rounds,
    rollout_rows,
    stage_timings,
    stages_not_needed,
    validation_series,
    verdict_of,
)


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


def _reward_cell(m: dict[str, Any]) -> str:
    """"0.412 [0.350, 0.471] (n=50)": mean reward, its 95% interval (eval/stats.reward_interval), rollouts."""
    if m.get("mean_reward") is None:
        return "-"
    ci = m.get("mean_reward_ci95")
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
    return f"{m['mean_reward']:.3f}{interval} (n={m.get('rollouts', '?')})"


def graded_rows(metrics: dict[str, dict[str, Any]], rows_by_label: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    """The table's rows for a grading verifier: mean reward, fully right, reward per level, the share
    of scenarios to escalate got right, invalid calls, and the verdicts' labels."""
    labels = list(metrics)
    ms = list(metrics.values())
    rows = [["mean reward [95% interval]", *[_reward_cell(m) for m in ms]],
            ["fully right [95% interval]", *[_acc_cell({"accuracy": m.get("accuracy"), "ci95": m.get("accuracy_ci95"),
                                                        "n": m.get("rollouts")}) for m in ms]]]
    by_level: dict[str, dict[int, list[float]]] = {}
    escalations: dict[str, list[bool]] = {}
    verdict_labels: dict[str, Counter] = {}
    for label in labels:
        levels: dict[int, list[float]] = defaultdict(list)
        counts: Counter = Counter()
        for r in rows_by_label.get(label, []):
            v = verdict_of(r)
            level = r.get("difficulty")
            if isinstance(level, int):
                levels[level].append(float(RolloutRow(r).reward or 0.0))
            if v.get("infeasible_scenario"):
                escalations.setdefault(label, []).append(bool(v.get("matched")))
            counts[str(v.get("label") or "-")] += 1
        by_level[label], verdict_labels[label] = levels, counts
    for level in sorted({lv for d in by_level.values() for lv in d}):
        cells = []
        for label in labels:
            values = by_level[label].get(level)
            cells.append(f"{statistics.fmean(values):.3f} (n={len(values)})" if values else "-")
        rows.append([f"mean reward, level {level}", *cells])
    if escalations:
        from officegym.eval.stats import wilson_interval

        cells = []
        for label in labels:
            got = escalations.get(label)
            cells.append(_acc_cell({"accuracy": sum(got) / len(got), "ci95": wilson_interval(sum(got), len(got)),
                                    "n": len(got)}) if got else "-")
        rows.append(["escalated where no answer exists", *cells])
    rows.append(["invalid-call rate", *[_pct(m.get("invalid_call_rate")) for m in ms]])
    for name in sorted({k for c in verdict_labels.values() for k in c}):
        cells = [_pct(c[name] / sum(c.values())) if sum(c.values()) else "-" for c in (verdict_labels[lb] for lb in labels)]
        rows.append([f"verdict: {name}", *cells])
    return rows


def summary_rows(metrics: dict[str, dict[str, Any]],
                 rows_by_label: dict[str, list[dict[str, Any]]] | None = None) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the before/after table; graded rows when `rows_by_label` says the verifier grades."""
    labels = list(metrics)
    if rows_by_label and is_graded(rows_by_label):
        return ["", *labels], graded_rows(metrics, rows_by_label)
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


def _sentences(test: dict[str, Any]) -> list[str]:
    out = [paired_reward_verdict(test["reward"])] if "reward" in test else []
    accuracy = paired_verdict(test["accuracy"])
    return [*out, accuracy.replace("accuracy", "the share fully right") if "reward" in test else accuracy]


def headline(out: Path) -> list[str]:
    """The lines a pipeline prints at its end: each evaluation's mean reward (where the verifier
    grades) and accuracy, and each paired test."""
    metrics = load_metrics(out)
    tests = paired_tests(out)
    graded = any("reward" in t for t in tests) or is_graded({label: rollout_rows(folder)[:50] for folder, label in evaluation_folders(out)})
    lines = []
    for label, m in metrics.items():
        acc = _acc_cell({"accuracy": m.get("accuracy"), "ci95": m.get("accuracy_ci95"), "n": m.get("rollouts")})
        lines.append(f"{label}: mean reward {_reward_cell(m)}, fully right {acc}" if graded else f"{label}: accuracy {acc}")
    return lines + [s for t in tests for s in _sentences(t)]


def _sft_data_line(out: Path) -> str:
    """What SFT imitated when it imitated the oracle's rollouts (RUN/sft_data), or ""."""
    try:
        m = json.loads((out / "sft_data" / "metrics.json").read_text())
    except (OSError, ValueError):
        return ""
    return (f"SFT imitated the oracle's rollouts on the {m.get('tasks', '?')} train tasks (`sft_data/`), "
            f"{_pct(m.get('accuracy'))} of them fully rewarded (SFT keeps those that reach `sft.min_reward`).")


VAL_NOTE = ("Rollouts on the validation tasks (greedy unless validation.temperature is set) every few steps "
            "(step 0: the model GRPO started from), with 95% Wilson intervals; the model evaluated after GRPO is "
            "the checkpoint its config exports.")


def _percent(acc: float, lo: float | None, hi: float | None) -> str:
    return f"{100 * acc:.1f}%" + (f" [{100 * lo:.1f}, {100 * hi:.1f}]" if lo is not None and hi is not None else "")


def write_validation_plot(out: Path, series: list[tuple[int, float, float | None, float | None]]) -> Path | None:
    """GRPO's validation accuracy against its step (`validation_series`), with 95% Wilson intervals:
    with 24 validation tasks one task is 4 points, and the bars say so."""
    if not series:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    steps = [p[0] for p in series]
    acc = [100 * p[1] for p in series]
    ax.plot(steps, acc, marker="o")
    # clamped at 0: Wilson's lower bound at 0 of 12 comes out 2.8e-17 above 0, and matplotlib refuses a
    # negative error bar (the report stage failed on a run whose validation hit 0 of 12)
    bars = [(s, a, max(0.0, 100 * (p[1] - p[2])), max(0.0, 100 * (p[3] - p[1])))
            for s, a, p in zip(steps, acc, series, strict=True)
            if p[2] is not None and p[3] is not None]
    if bars:
        ax.errorbar([b[0] for b in bars], [b[1] for b in bars], yerr=[[b[2] for b in bars], [b[3] for b in bars]],
                    fmt="none", ecolor="tab:blue", alpha=0.5, capsize=3, label="95% interval (Wilson)")
        ax.legend(loc="lower right", fontsize=8)
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
    metrics = load_metrics(out)
    rows_by_label = {label: rollout_rows(folder) for folder, label in evaluation_folders(out) if label in metrics}
    graded = is_graded(rows_by_label)
    header, rows = summary_rows(metrics, rows_by_label) if metrics else (["", "(no evaluations yet)"], [])
    tests = paired_tests(out, graded)
    sentences = [s for t in tests for s in _sentences(t)]
    test_title = ("Did each stage change the reward? (paired, same tasks)" if graded
                  else "Did each stage change accuracy? (paired, same tasks)")
    test_note = ("Mean reward: the paired sign-flip test on each task's reward difference (exact up to 16 tasks "
                 "that differ, else 20,000 seeded sign vectors) and a bootstrap 95% interval of the mean difference; "
                 "fully right: the exact McNemar test." if graded else "")
    intro = ("Mean reward with its 95% interval (bootstrap over tasks for graded rewards, Wilson for 0/1), the "
             "share fully right with its Wilson interval, and the number of rollouts." if graded
             else "Accuracy with its 95% Wilson interval and the number of rollouts.")
    not_needed = stages_not_needed(out)
    val_series = validation_series(out)
    val_plot = write_validation_plot(out, val_series)
    plots = ([val_plot.relative_to(out)] if val_plot else []) + [
        p.relative_to(out) for stage in ("sft", "grpo", "review/round_*/grpo") for p in sorted(out.glob(f"{stage}/plots/*.png"))]
    links = [(label, f"{folder.relative_to(out).as_posix()}/report.html") for folder, label in evaluation_folders(out)
             if (folder / "report.html").exists()]
    md = ["# officegym pipeline report", "", f"Run folder: `{out}`. Config: `config.yaml`.", "",
          "## Before and after", "", intro, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    sub_rows, sub_tests = (subset_rows(metrics), subset_tests(out, model_pairs(out))) if metrics and not graded else ([], [])
    if sub_rows:
        md += ["", "## What transfers: each subset apart", "", SUBSET_NOTE, "", "| " + " | ".join(header) + " |",
               "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in sub_rows]
        md += [""] + [f"- {t}" for t in sub_tests]
    if tests:
        md += ["", f"## {test_title}", ""] + ([test_note, ""] if test_note else []) + [f"- {t}" for t in sentences]
    if links:
        md += ["", "Each evaluation's own report (transcripts, state diffs, failures by kind): "
               + ", ".join(f"[{label}]({href})" for label, href in links) + "."]
    sft_data = _sft_data_line(out)
    if sft_data:
        md += ["", sft_data]
    bfcl = bfcl_tables(out)
    for title, bfcl_rows in bfcl:
        md += ["", f"## {title} (same entries)", "", "| " + " | ".join(BFCL_HEADER) + " |", "|" + "---|" * len(BFCL_HEADER)]
        md += ["| " + " | ".join(r) + " |" for r in bfcl_rows]
    rounds = review_rounds(out)
    if rounds:
        md += ["", *review_lines(rounds)]
    timings = stage_timings(out)
    if timings or not_needed:
        md += ["", "## Time per stage", "", "| stage | seconds |", "|---|---:|"]
        md += [f"| {k} | not needed: {why} |" for k, why in not_needed.items()]
        md += [f"| {k} | {v:.1f} |" for k, v in timings.items()] + [f"| total | {sum(timings.values()):.1f} |"]
    val_rows = [[str(step), _percent(acc, lo, hi)] for step, acc, lo, hi in val_series]
    if val_rows:
        md += ["", "## Validation during GRPO", "", VAL_NOTE, "", "| step | accuracy [95%] |", "|---:|---:|"]
        md += [f"| {a} | {b} |" for a, b in val_rows]
    md += ["", "## Training curves", ""]
    md += [f"![{p.stem}]({p.as_posix()})" for p in plots] or ["(no curves: training has not run or matplotlib is missing)"]
    md_path = out / "report.md"
    atomic_write(md_path, "\n".join(md) + "\n")
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    tests_html = (f"<h2>{html.escape(test_title)}</h2>" + (f"<p>{html.escape(test_note)}</p>" if test_note else "")
                  + "<ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in sentences) + "</ul>") if tests else ""
    links_html = ("<p>Each evaluation's own report: " + ", ".join(
        f'<a href="{html.escape(href)}">{html.escape(label)}</a>' for label, href in links) + ".</p>") if links else ""
    bfcl_html = "".join(
        f"<h2>{html.escape(title)} (same entries)</h2><table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in BFCL_HEADER)
        + "</tr>" + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in bfcl_rows)
        + "</table>" for title, bfcl_rows in bfcl)
    timing_html = ""
    if timings or not_needed:
        timing_html = ("<h2>Time per stage</h2><table><tr><th>stage</th><th>seconds</th></tr>"
                       + "".join(f"<tr><td>{html.escape(k)}</td><td>not needed: {html.escape(why)}</td></tr>"
                                 for k, why in not_needed.items())
                       + "".join(f"<tr><td>{html.escape(k)}</td><td>{v:.1f}</td></tr>" for k, v in timings.items())
                       + f"<tr><td><b>total</b></td><td><b>{sum(timings.values()):.1f}</b></td></tr></table>")
    val_html = ("<h2>Validation during GRPO</h2><p>" + html.escape(VAL_NOTE) + "</p><table><tr><th>step</th>"
                "<th>accuracy [95%]</th></tr>" + "".join(f"<tr><td>{a}</td><td>{html.escape(b)}</td></tr>" for a, b in val_rows)
                + "</table>") if val_rows else ""
    images = "".join(f'<figure><img src="{html.escape(p.as_posix())}" width="640"><figcaption>{html.escape(str(p))}</figcaption></figure>'
                     for p in plots)
    page = (f"<!doctype html><meta charset='utf-8'><title>officegym pipeline</title>"
            f"<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:.3em .8em;border-bottom:1px solid #ddd}}</style>"
            f"<h1>officegym pipeline report</h1><p>Run folder: <code>{html.escape(str(out))}</code></p>"
            f"<h2>Before and after</h2><p>{html.escape(intro)}</p>"
            f"<table><tr>{cells}</tr>{body}</table>{_subsets_html(cells, sub_rows, sub_tests)}{tests_html}{links_html}"
            f"{f'<p>{html.escape(sft_data)}</p>' if sft_data else ''}{bfcl_html}{_review_html(rounds)}{timing_html}"
            f"{val_html}<h2>Training curves</h2>{images}")
    html_path = out / "report.html"
    atomic_write(html_path, page)
    return md_path, html_path


def _subsets_html(header_cells: str, rows: list[list[str]], tests: list[str]) -> str:
    if not rows:
        return ""
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return (f"<h2>What transfers: each subset apart</h2><p>{html.escape(SUBSET_NOTE)}</p><table><tr>{header_cells}</tr>"
            f"{body}</table><ul>" + "".join(f"<li>{html.escape(t)}</li>" for t in tests) + "</ul>")


def _review_html(rounds: list[dict[str, Any]]) -> str:
    if not rounds:
        return ""
    head = ["round", "rollouts", "flagged", "new", "needing review", "pool size"]
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (
        r.get("round"), r.get("rollouts", 0), r.get("flagged", 0), r.get("new_items", 0), r.get("needing_review", 0),
        (r.get("pool") or {}).get("pool", "-"))) + "</tr>" for r in rounds)
    return ("<h2>Human review per round</h2><table><tr>" + "".join(f"<th>{h}</th>" for h in head) + f"</tr>{rows}</table>")
