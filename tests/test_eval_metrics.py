from __future__ import annotations

from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.eval.metrics import compute_metrics

WRITES = frozenset({"email_send_email"})


def row(task_id: int, reward: float, calls: list[str], status: list[str], frags: list[str] = ()) -> dict:
    output = [{"type": "function_call", "name": n, "arguments": "{}"} for n in calls]
    return {"id": task_id, "reward": reward, "response": {"output": output},
            "officegym": {"task_id": task_id, "call_status": status, "invalid_fragments": list(frags)}}


def test_failures_with_an_invalid_call_are_counted_whatever_their_primary_kind():
    tasks = [Task(id=i, input=[], ground_truth=[ToolCall("email_send_email", {})]) for i in range(3)]
    rows = [
        row(0, 0.0, ["email_send_email"], ["error"]),  # the write failed: primary kind "missing write"
        row(1, 0.0, [], [], ["<tool_call>{bad"]),  # only a malformed fragment: "missing write" too
        row(2, 1.0, ["email_send_email"], ["ok"]),
    ]
    m = compute_metrics(rows, tasks, WRITES)
    assert m["errors"]["missing write"] == 2 and m["errors"]["invalid call"] == 0
    assert m["failures_with_invalid_call"] == 2
    assert m["invalid_call_rate"] == 2 / 3
