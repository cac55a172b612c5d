"""SFT from rollout files reads rows through core's rollout-row reader: damaged rows are dropped
with a reason, never crash the build."""

from __future__ import annotations

import json

from officegym.core.files import write_jsonl_rows
from officegym.train.sft_data import BuildReport, rollout_conversations

TASK = {
    "id": "t1",
    "responses_create_params": {
        "input": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Delete email 1"}],
        "tools": [{"type": "function", "name": "email_delete_email", "description": "Delete an e-mail.",
                   "parameters": {"type": "object", "properties": {"email_id": {"type": "string"}}}}],
    },
    "ground_truth": [],
}
OUTPUT = [
    {"type": "function_call", "name": "email_delete_email", "arguments": "{\"email_id\": \"1\"}", "call_id": "c0"},
    {"type": "function_call_output", "call_id": "c0", "output": "{\"output\": \"Email deleted successfully.\"}"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
]


def test_rollout_rows_become_conversations_and_damaged_rows_are_dropped(tmp_path):
    good = {**TASK, "response": {"output": OUTPUT}, "reward": 1.0, "officegym": {"task_id": "t1"}}
    rows = [
        good,
        {**good, "reward": 0.0},
        {**good, "reward": float("nan")},
        {**good, "reward": True},
        [1, 2],
        {**good, "response": "done"},
        {**TASK, "reward": 1.0},
        {**good, "responses_create_params": {"input": 5}},
        {**good, "response": {"output": []}},
    ]
    path = tmp_path / "rollouts.jsonl"
    write_jsonl_rows(path, rows)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    report = BuildReport()
    (conv,) = rollout_conversations([path], 1.0, report)
    assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert conv.messages[2]["tool_calls"][0]["function"]["name"] == "email_delete_email"
    assert [t.name for t in conv.tools] == ["email_delete_email"]
    assert report.conversations == 1
    assert report.dropped == {"reward below 1.0": 3, "malformed row": 4, "no assistant turn": 1, "unreadable line": 1}
    assert json.loads(path.read_text().split("\n")[0]) == json.loads(json.dumps(good))  # the file is only read


def test_rollout_rows_of_other_templates_are_left_out_when_templates_are_given(tmp_path):
    rows = [{**TASK, "id": f"t{i}", "template": name, "response": {"output": OUTPUT}, "reward": 1.0}
            for i, name in enumerate(["email.delete", "email.send", "email.delete"])]
    path = tmp_path / "rollouts.jsonl"
    write_jsonl_rows(path, rows)
    report = BuildReport()
    assert len(rollout_conversations([path], 1.0, report, templates=["email.delete"])) == 2
    assert report.dropped == {"template not in data.templates": 1}
    assert len(rollout_conversations([path], 1.0, BuildReport())) == 3
