"""The rollout row's one writer and one reader (core/rollout_row.py)."""

from __future__ import annotations

import copy
import json

import pytest

from officegym.core.rollout_row import (
    ROLLOUT_KEYS,
    RolloutRow,
    RolloutRowError,
    make_row,
    officegym_of,
    parse,
    rollout_row,
    row_key,
    task_row,
)
from officegym.core.task import Task, TaskFormatError
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall

TASK_ROW = {
    "id": "t-7",
    "responses_create_params": {
        "input": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Delete email 1"}],
        "tools": [{"type": "function", "name": "email_delete_email", "parameters": {}}],
        "parallel_tool_calls": False,
        "temperature": 1.0,
    },
    "ground_truth": [{"name": "email_delete_email", "arguments": "{\"email_id\": \"00000001\"}"}],
    "category": "workplace_assistant_email",
    "environment_name": "workplace_assistant",
    "template": "delete_email",
}


def trajectory() -> Trajectory:
    good = ToolCall("email_delete_email", {"email_id": "00000001"}, "{\"email_id\": \"00000001\"}", "call_0")
    bad = ToolCall("email_delete_email", None, "{oops", "call_1", parse_error="invalid JSON arguments")
    turns = [
        Turn(text="Deleting.", executions=[ToolExecution(good, "{\"output\": \"Email deleted successfully.\"}"),
                                           ToolExecution(bad, "{\"error\": \"bad\"}", status="error")],
             invalid=["<tool_call>x</tool_call>: not JSON"], prompt_tokens=100, completion_tokens=20),
        Turn(text="Done.", prompt_tokens=130, completion_tokens=3),
    ]
    return Trajectory("t-7", turns, reward=1.0, reward_components={"outcome": 1.0},
                      verdict={"matched": True, "mode": "outcome"}, stop_reason="answered", seconds=0.5,
                      env_seconds=0.01, policy="oracle", sample_index=2)


def test_the_writer_appends_response_reward_and_record_to_the_task_row():
    task = Task.from_row(TASK_ROW)
    row = rollout_row(task, trajectory())
    assert list(row) == [*TASK_ROW, *ROLLOUT_KEYS]
    assert task_row(row) == TASK_ROW
    assert [i["type"] for i in row["response"]["output"]] == [
        "message", "function_call", "function_call", "function_call_output", "function_call_output", "message"]
    assert row["response"]["output"][2]["arguments"] == "{oops"  # undecodable arguments kept as they came
    assert row["response"]["usage"] == {"input_tokens": 230, "output_tokens": 23}
    assert row["reward"] == 1.0
    og = row["officegym"]
    assert og["task_id"] == "t-7" and og["sample_index"] == 2 and og["call_status"] == ["ok", "error"]
    assert og["invalid_fragments"] == ["<tool_call>x</tool_call>: not JSON"] and og["turns"] == 2 and og["tokens"] == 253
    json.dumps(row, allow_nan=False)  # plain JSON


def test_make_row_leaves_the_task_row_alone():
    before = copy.deepcopy(TASK_ROW)
    row = make_row(TASK_ROW, {"output": []}, 0.5)
    assert "officegym" not in row and row["reward"] == 0.5 and before == TASK_ROW
    # a task row that already had one of the keys keeps its place, with the new value
    again = make_row(row, {"output": [1]}, 1.0, {"step": 3})
    assert list(again) == [*row, "officegym"] and again["response"] == {"output": [1]} and row["reward"] == 0.5


def test_the_reader_gives_back_what_the_writer_wrote():
    task = Task.from_row(TASK_ROW)
    traj = trajectory()
    row = json.loads(json.dumps(rollout_row(task, traj)))
    rollout = parse(row)
    assert rollout.row is row  # a view, not a copy
    assert rollout.task().to_row() == task.to_row() and "response" not in rollout.task().metadata
    calls = rollout.calls()
    assert [c.name for c in calls] == ["email_delete_email"] * 2
    assert calls[0].arguments == {"email_id": "00000001"} and calls[1].parse_error is not None
    assert rollout.reward == 1.0 and rollout.matched and rollout.verdict == {"matched": True, "mode": "outcome"}
    assert rollout.task_id == "t-7" and rollout.sample_index == 2 and rollout.key == ("t-7", 2) == row_key(row)
    assert rollout.step is None and rollout.has_ground_truth
    assert len(rollout.function_call_items) == 2


@pytest.mark.parametrize(("row", "message"), [
    ([1, 2], "a rollout row must be a JSON object, got list"),
    ("text", "a rollout row must be a JSON object, got str"),
    ({**TASK_ROW}, "rollout row has no response.output list"),
    ({**TASK_ROW, "response": "done"}, "rollout row has no response.output list"),
    ({**TASK_ROW, "response": {"output": {"type": "message"}}}, "rollout row has no response.output list"),
])
def test_damaged_rows_are_refused_with_a_clear_error(row, message):
    with pytest.raises(RolloutRowError, match=message):
        parse(row)
    assert issubclass(RolloutRowError, ValueError)


def test_a_response_without_output_has_no_calls():
    rollout = parse({**TASK_ROW, "response": {}})
    assert rollout.output == [] and rollout.calls() == []


def test_damaged_parts_read_as_absent_never_raise():
    rollout = RolloutRow({"id": 5, "response": {"output": [3, "x", {"type": "function_call", "name": "a", "arguments": "{}"}]},
                          "reward": float("nan"), "officegym": ["not", "a", "dict"]})
    assert rollout.officegym == {} and officegym_of(rollout.row) == {} and officegym_of([1]) == {}
    assert rollout.reward is None and not rollout.matched and rollout.verdict is None
    assert rollout.task_id == "5" and rollout.sample_index is None and rollout.key == ("5", 0)
    assert [c.name for c in rollout.calls()] == ["a"]
    for reward in (True, "1", None):
        assert RolloutRow({"reward": reward}).reward is None
    # a verdict's word decides over the reward; without one, reward 1 is a match
    assert not RolloutRow({"reward": 1.0, "officegym": {"verdict": {"matched": False}}}).matched
    assert RolloutRow({"reward": 1, "officegym": {"verdict": {"mode": "outcome"}}}).matched
    with pytest.raises(TaskFormatError):
        RolloutRow({"responses_create_params": {"input": 5}, "response": {}}).task()


def test_reading_never_changes_the_row():
    row = rollout_row(Task.from_row(TASK_ROW), trajectory())
    before = copy.deepcopy(row)
    rollout = parse(row)
    rollout.task(), rollout.calls(), rollout.matched, rollout.key, task_row(row)
    assert row == before
