"""The failed rollouts of an eval report, each shown once as the review UI shows an item: its prompt
beside its id, the expected calls and the model's calls with indented arguments, each call's output,
and the verifier's evidence as tables (the state diff row by row, invalid calls, graded components)."""

from __future__ import annotations

from html import escape
from typing import Any

from officegym.core.rollout_row import RolloutRow, officegym_of
from officegym.core.rollout_view import (
    diff_tables,
    failure_label,
    pretty_json,
    prompt_messages,
    trajectory_turns,
)

CSS = """
.failure{border:1px solid #ccc;border-radius:6px;padding:4px 10px;margin:.4em 0}
.failure>summary{cursor:pointer}.prompt{color:#555}.call{border-left:4px solid #1a7f37;padding-left:8px;margin:.3em 0}
.call.failed{border-left-color:#b42318;background:#fff5f5}.missing td{background:#ffebe9}.extra td{background:#fff8c5}
td.changed{background:#ddf4ff;font-weight:600}.muted{color:#666;font-size:12px}.wide{overflow-x:auto}
"""
OUTPUT_CHARS = 2000  # a tool output longer than this is cut in the report (the rollouts file has it whole)
SHORT_PROMPT = 160
ROW_KINDS = {"missing": "expected, missing", "extra": "unexpected", "changed": "changed"}


def user_prompt(row: dict[str, Any]) -> str:
    """The task's request: the last user message of the prompt."""
    users = [m["content"] for m in prompt_messages(row) if m["role"] == "user"]
    return users[-1] if users else ""


def _cell(value: Any) -> str:
    return "-" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """A table of cells already escaped."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _expected(row: dict[str, Any]) -> str:
    calls = row.get("ground_truth") if isinstance(row.get("ground_truth"), list) else []
    if not calls:
        return "<p class='muted'>none: nothing should change</p>"
    return "".join(f"<pre>{escape(str(c.get('name', '?')))}({escape(pretty_json(c.get('arguments', '')))})</pre>"
                   if isinstance(c, dict) else f"<pre>{escape(str(c))}</pre>" for c in calls)


def _turns(row: dict[str, Any]) -> str:
    parts = []
    for turn in trajectory_turns(row):
        parts.append(f"<p><b>turn {turn['index']}</b></p>")
        if turn["text"]:
            parts.append(f"<pre>{escape(turn['text'])}</pre>")
        for c in turn["calls"]:
            output = "" if c["output"] is None else c["output"]
            cut = output[:OUTPUT_CHARS] + (" [...]" if len(output) > OUTPUT_CHARS else "")
            parts.append(f"<div class='call{' failed' if c['failed'] else ''}'><code>{escape(c['name'])}</code> "
                         f"<span class='muted'>{escape(c['status'] or '?')}</span><pre>{escape(c['arguments'])}</pre>"
                         + (f"<pre>&rarr; {escape(cut)}</pre>" if c["output"] is not None else "") + "</div>")
    fragments = officegym_of(row).get("invalid_fragments") or []
    parts += [f"<pre class='bad'>malformed: {escape(str(f))}</pre>" for f in fragments]
    return "".join(parts) or "<p class='muted'>no model turn recorded</p>"


def _diff(verdict: dict[str, Any]) -> str:
    parts = []
    for t in diff_tables(verdict):
        head = "".join(f"<th>{escape(h)}</th>" for h in ["row", *t["columns"]])
        body = []
        for r in t["rows"]:
            cells = [f"<td>{ROW_KINDS[r['kind']]}</td>"]
            for col in t["columns"]:
                cell = r["cells"].get(col) or {}
                if cell.get("changed"):
                    cells.append(f"<td class='changed'>{escape(_cell(cell.get('expected')))} &rarr; "
                                 f"{escape(_cell(cell.get('actual')))}</td>")
                else:
                    cells.append(f"<td>{escape(_cell(cell.get('value')))}</td>")
            body.append(f"<tr class='{r['kind']}'>{''.join(cells)}</tr>")
        note = f"<p class='muted'>{escape(str(t['note']))}</p>" if t.get("note") else ""
        parts.append(f"<h4>{escape(t['table'])}</h4>{note}<div class='wide'><table><tr>{head}</tr>{''.join(body)}</table></div>")
    return "".join(parts) or "<p class='muted'>no difference from the expected state</p>"


def _evidence(row: dict[str, Any]) -> str:
    verdict = RolloutRow(row).verdict or {}
    og = officegym_of(row)
    if verdict.get("graded"):
        items = "".join(f"<li>{escape(str(e))}</li>" for e in verdict.get("evidence") or []) or "<li>none recorded</li>"
        comps = verdict.get("components") if isinstance(verdict.get("components"), dict) else {}
        return (f"<p><b>{escape(str(verdict.get('label')))}</b>, reward {escape(_cell(row.get('reward')))}</p><ul>{items}</ul>"
                + _table(["component", "value"], [[escape(k), escape(_cell(v))] for k, v in comps.items()]))
    other = f" ({verdict['other_mode']}: {_cell(verdict.get('other_mode_reward'))})" if verdict.get("other_mode") else ""
    facts = [["reward", _cell(row.get("reward"))], ["mode", f"{_cell(verdict.get('mode'))}{other}"],
             ["side effects", _cell(verdict.get("side_effects"))], ["stop", _cell(og.get("stop_reason"))]]
    invalid = [c for c in verdict.get("invalid_calls") or [] if isinstance(c, dict)]
    html = _table(["verdict", ""], [[escape(k), escape(v)] for k, v in facts]) + "<p><b>State: expected vs actual</b></p>" + _diff(verdict)
    if invalid:
        html += "<p><b>Invalid calls</b></p>" + _table(
            ["call", "tool", "error"],
            [[escape(_cell(c.get("index"))), escape(_cell(c.get("name"))), escape(_cell(c.get("error")))] for c in invalid])
    return html


def failure_html(row: dict[str, Any], anchor: str) -> str:
    """One failed rollout (`anchor`: its element id), its summary line holding the id, the verifier's
    reason and the prompt."""
    og = officegym_of(row)
    prompt = user_prompt(row)
    short = prompt if len(prompt) <= SHORT_PROMPT else prompt[:SHORT_PROMPT] + "..."
    return (f"<details class='failure' id='{escape(anchor)}'><summary><span class='bad'>task {escape(str(og.get('task_id')))}</span> "
            f"sample {escape(_cell(og.get('sample_index')))} &middot; {escape(failure_label(row))}"
            f"<br><span class='prompt'>{escape(short)}</span></summary>"
            + (f"<p><b>user</b>: {escape(prompt)}</p>" if short != prompt else "")
            + f"<h4>Expected calls</h4>{_expected(row)}"
            f"<h4>What the model did</h4>{_turns(row)}<h4>Verifier</h4>{_evidence(row)}</details>")


def failure_md(row: dict[str, Any]) -> str:
    """One failed rollout as a Markdown list item: id, reason, prompt."""
    og = officegym_of(row)
    prompt = " ".join(user_prompt(row).split())
    short = prompt if len(prompt) <= SHORT_PROMPT else prompt[:SHORT_PROMPT] + "..."
    return f"- task {og.get('task_id')} sample {og.get('sample_index')}: {failure_label(row)}. \"{short}\""
