"""Rows are read-only data: reading, verifying, rolling out and re-writing a row never changes it
(Task.from_row shares the row's parts instead of copying them)."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import make_policy
from officegym.core.rollout_row import rollout_row
from officegym.core.task import Task
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.eval.verify_rows import TaskIndex, verify_rollouts

SYSTEM = "Today's date is Thursday, 2023-11-30 and the current time is 23:59:00."
# Arguments as objects (not JSON text), with nulls and lists: the parts a replay could reach into.
TRUTH = [
    {"name": "email_search_emails", "arguments": {"query": "budget", "date_min": None}},
    {"name": "customer_relationship_manager_update_customer",
     "arguments": {"customer_id": "00000000", "field": "status", "new_value": "Qualified"}},
]


def task_row() -> dict:
    return {
        "id": "t1",
        "responses_create_params": {
            "input": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Mark Dana Fox as qualified."}],
            "tools": [s.to_schema() for s in TOOL_SPECS],
            "parallel_tool_calls": False,
            "temperature": 1.0,
        },
        "ground_truth": copy.deepcopy(TRUTH),
        "category": "workplace_assistant_customer_relationship_manager",
        "environment_name": "workplace_assistant",
        "domains": ["crm"],
    }


def rollout(row: dict) -> dict:
    calls = [*TRUTH, {"name": "email_send_email", "arguments": {"recipient": ["a@b.c"], "subject": None, "body": "x"}}]
    output = []
    for i, c in enumerate(calls):
        output.append({"type": "function_call", "name": c["name"], "arguments": copy.deepcopy(c["arguments"]),
                       "call_id": f"c{i}", "status": "completed"})
        output.append({"type": "function_call_output", "call_id": f"c{i}", "output": "{\"output\": []}"})
    return {**row, "response": {"output": output, "usage": {"input_tokens": 1, "output_tokens": 1}}, "reward": 0.0,
            "officegym": {"task_id": "t1", "sample_index": 0, "verdict": {"matched": False}}}


def test_the_verify_path_leaves_rollout_rows_unchanged(tiny_world):
    row = rollout(task_row())
    without_truth = {k: v for k, v in row.items() if k != "ground_truth"}
    before, before_without = copy.deepcopy(row), copy.deepcopy(without_truth)
    for mode in ("outcome", "nemo_gym"):
        (verdict,) = verify_rollouts(WorkplaceEnvironment(tiny_world), [(1, row)], None, mode)
        assert verdict.error is None and verdict.reward == 1.0
        assert verdict.evidence["invalid_calls"]  # a list where a string belongs: refused, nothing sent
        index = TaskIndex([Task.from_row(task_row())])
        (by_prompt,) = verify_rollouts(WorkplaceEnvironment(tiny_world), [(1, without_truth)], index, mode)
        assert by_prompt.error is None and by_prompt.reward == 1.0
    env = WorkplaceEnvironment(tiny_world)
    task = Task.from_row(row)
    assert env.verify(task, task.ground_truth).reward == 1.0
    assert row == before and without_truth == before_without
    assert json.dumps(row) == json.dumps(before)


def test_the_servers_verify_leaves_the_row_unchanged(tiny_world):
    pytest.importorskip("fastapi")
    from officegym.server.rows import task_and_calls, verify_answer

    row = rollout(task_row())
    before = copy.deepcopy(row)
    task, calls = task_and_calls(row)
    verdict = WorkplaceEnvironment(tiny_world).verify(task, calls)
    answer = verify_answer(row, verdict.reward)
    assert answer["reward"] == 1.0 and row == before


def test_rolling_out_and_writing_a_task_read_from_a_row_leaves_the_row_unchanged(tiny_world):
    row = task_row()
    before = copy.deepcopy(row)
    task = Task.from_row(row)
    env = WorkplaceEnvironment(tiny_world)
    (traj,) = asyncio.run(run_rollouts(env, [(task, 0)], make_policy("oracle"), LoopConfig()))
    assert traj.reward == 1.0
    written = rollout_row(task, traj)
    # what a writer's caller does to the row it got (the trainer adds its step) stays in that row
    written["officegym"].update(step=3)
    written["responses_create_params"]["tools"].clear()
    written["responses_create_params"]["input"][1]["content"] = "changed"
    assert row == before and task.to_row() == Task.from_row(before).to_row()
