"""Rollout rows in NeMo Gym's format: the task row, `response.output` items and `reward`,
plus an `officegym` block with the verdict, reward components and statistics."""

from __future__ import annotations

from typing import Any

from officegym.core.task import Task
from officegym.core.trajectory import Trajectory


def response_output(traj: Trajectory) -> list[dict[str, Any]]:
    """The episode as Responses-API output items, in the order NeMo Gym's simple agent writes them:
    each turn's message and function calls, then the calls' outputs."""
    items: list[dict[str, Any]] = []
    for turn in traj.turns:
        if turn.text:
            items.append({
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            })
        for ex in turn.executions:
            items.append({
                "type": "function_call",
                "name": ex.call.name,
                "arguments": ex.call.arguments_json if ex.call.parse_error is None else (ex.call.raw_arguments or ""),
                "call_id": ex.call.call_id or "",
                "status": "completed",
            })
        for ex in turn.executions:
            items.append({"type": "function_call_output", "call_id": ex.call.call_id or "", "output": ex.output})
    return items


def rollout_row(task: Task, traj: Trajectory) -> dict[str, Any]:
    row = task.to_row()
    row["response"] = {
        "output": response_output(traj),
        "usage": {
            "input_tokens": sum(t.prompt_tokens for t in traj.turns),
            "output_tokens": sum(t.completion_tokens for t in traj.turns),
        },
    }
    row["reward"] = traj.reward
    row["officegym"] = {
        "task_id": task.id,
        "sample_index": traj.sample_index,
        "policy": traj.policy,
        "reward_components": traj.reward_components,
        "verdict": traj.verdict,
        "stop_reason": traj.stop_reason,
        "error": traj.error,
        "turns": len(traj.turns),
        "invalid_fragments": [x for t in traj.turns for x in t.invalid],
        "call_status": [e.status for t in traj.turns for e in t.executions],
        "tokens": traj.tokens,
        "seconds": traj.seconds,
        "env_seconds": traj.env_seconds,
    }
    return row


def row_key(row: dict[str, Any]) -> tuple[str, int]:
    og = row.get("officegym") or {}
    return str(og.get("task_id", row.get("id"))), int(og.get("sample_index", 0))
