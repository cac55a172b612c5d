"""A rollout row as people read it: pretty arguments, the prompt, the model's turns with each call's
output, the verifier's state diff as tables, a one-line reason. The review UI and the eval report
both show rows this way (they sit on one floor and may not import each other)."""

from __future__ import annotations

import json
from typing import Any

from officegym.core.rollout_row import RolloutRow, officegym_of


def text_of(content: Any) -> str:
    """A message's content as plain text (a string, or the text parts of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return "" if content is None else str(content)


def pretty_json(value: Any) -> str:
    """Arguments or outputs as indented JSON when they are JSON, else as they are."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return value
    try:
        return json.dumps(value, indent=1, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def prompt_messages(row: dict[str, Any]) -> list[dict[str, str]]:
    rcp = row.get("responses_create_params") or {}
    raw = rcp.get("input", []) if isinstance(rcp, dict) else []
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    return [{"role": str(m.get("role", "?")), "content": text_of(m.get("content"))} for m in raw if isinstance(m, dict)]


def trajectory_turns(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's turns: text, then each call with its arguments, status and output.

    A turn starts at an assistant message, or at a call that follows tool outputs (the order
    eval's rows use: a turn's message, its calls, then their outputs).
    """
    output = RolloutRow(row).output
    og = officegym_of(row)
    statuses = og.get("call_status") if isinstance(og.get("call_status"), list) else []
    n_calls = sum(1 for i in output if isinstance(i, dict) and i.get("type") == "function_call")
    if len(statuses) != n_calls:
        statuses = [None] * n_calls
    turns: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    k = 0

    def new_turn() -> dict[str, Any]:
        turn = {"index": len(turns) + 1, "text": "", "calls": [], "seen_output": False}
        turns.append(turn)
        return turn

    for item in output:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            cur = new_turn()
            cur["text"] = text_of(item.get("content"))
        elif kind == "function_call":
            if cur is None or cur["seen_output"]:
                cur = new_turn()
            status = statuses[k]
            k += 1
            cur["calls"].append({
                "name": str(item.get("name", "")), "arguments": pretty_json(item.get("arguments", "")),
                "call_id": item.get("call_id") or "", "status": status, "output": None,
            })
        elif kind == "function_call_output":
            if cur is None:
                cur = new_turn()
            cur["seen_output"] = True
            call_id = item.get("call_id") or ""
            target = next((c for c in cur["calls"] if c["output"] is None and c["call_id"] == call_id), None)
            if target is None:
                target = next((c for c in cur["calls"] if c["output"] is None), None)
            text = pretty_json(item.get("output", ""))
            if target is None:
                cur["calls"].append({"name": "?", "arguments": "", "call_id": call_id, "status": None, "output": text})
            else:
                target["output"] = text
    for t in turns:
        for c in t["calls"]:
            if c["status"] is None and c["output"] is not None:
                c["status"] = "error" if "Error executing tool" in c["output"] else "ok"
            c["failed"] = c["status"] not in (None, "ok")
    return turns


def diff_tables(verdict: Any) -> list[dict[str, Any]]:
    """The expected-vs-actual state diff, one table each: columns, then rows marked missing
    (expected, absent), extra (present, unexpected) or changed (with the cells that differ)."""
    diff = verdict.get("diff") if isinstance(verdict, dict) else None
    if not isinstance(diff, dict):
        return []
    out = []
    for name, d in diff.items():
        if not isinstance(d, dict):
            continue
        columns: list[str] = []

        def see(row: dict[str, Any], columns: list[str] = columns) -> None:
            for c in row:
                if c not in columns:
                    columns.append(c)

        rows = []
        for ch in d.get("changed") if isinstance(d.get("changed"), list) else []:
            if not isinstance(ch, dict):
                continue
            base = ch.get("row") if isinstance(ch.get("row"), dict) else {}
            see(base)
            fields = ch.get("fields") if isinstance(ch.get("fields"), dict) else {}
            cells = {c: {"value": base.get(c)} for c in base}
            for col, pair in fields.items():
                exp, got = ([*pair, None, None])[:2] if isinstance(pair, list) else (pair, None)
                cells[col] = {"expected": exp, "actual": got, "changed": True}
                if col not in columns:
                    columns.append(col)
            rows.append({"kind": "changed", "cells": cells})
        for kind in ("missing", "extra"):
            for r in d.get(kind) if isinstance(d.get(kind), list) else []:
                if isinstance(r, dict):
                    see(r)
                    rows.append({"kind": kind, "cells": {c: {"value": v} for c, v in r.items()}})
        out.append({"table": name, "columns": columns, "rows": rows, "note": d.get("note")})
    return out


def failure_label(row: dict[str, Any]) -> str:
    """A short label of why the verifier decided as it did."""
    verdict = RolloutRow(row).verdict
    if verdict is None:
        return "no verdict"
    if verdict.get("graded") is True and verdict.get("label"):
        return f"{verdict['label']}" + (" (full credit)" if verdict.get("matched") else "")
    if verdict.get("matched"):
        return "matched" + (" (modes disagree)" if verdict.get("modes_disagree") else "")
    diff = verdict.get("diff") or {}
    kinds = sorted({k for d in diff.values() if isinstance(d, dict) for k in ("missing", "extra", "changed") if d.get(k)})
    parts = [f"state differs in {', '.join(diff)}" + (f" ({', '.join(kinds)})" if kinds else "")] if diff else []
    if verdict.get("side_effects"):
        parts.append("side effects")
    if verdict.get("invalid_calls"):
        n = len(verdict["invalid_calls"])
        parts.append(f"{n} invalid call{'' if n == 1 else 's'}")
    return "; ".join(parts) or "not matched"
