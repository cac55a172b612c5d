"""Fixtures for the review tests: a generated small world, tasks over it, and rollout rows crafted
through eval's own row writer (calls really replayed, verdicts really computed, then edited)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from officegym.core.rollout_row import rollout_row
from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.generate import generate_world
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.review.worlds import Environments

WORLD_SPEC = {"generated": {"seed": 0, "size": "small"}}
SYSTEM = "Today's date is Tuesday, 2024-08-13 and the current time is 23:59:00."


def make_task(task_id, prompt: str, gt: list[tuple[str, dict]], category: str = "workplace_assistant_email", **meta) -> Task:
    return Task.from_row({
        "id": task_id,
        "responses_create_params": {
            "input": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            "tools": [s.to_schema() for s in TOOL_SPECS],
            "parallel_tool_calls": False,
            "temperature": 1.0,
        },
        "ground_truth": [{"name": n, "arguments": json.dumps(a)} for n, a in gt],
        "category": category,
        "environment_name": "workplace_assistant",
        **meta,
    })


REPLY = ("email_reply_email", {"email_id": "00000039", "body": "Thanks"})
MOVE = ("project_management_update_task", {"task_id": "00000024", "field": "list_name", "new_value": "In Review"})
TASKS = {
    "reply": make_task("reply", "Reply 'Thanks' to Wiremu's e-mail about Cyrus Ito.", [REPLY]),
    "delete": make_task("delete", "Delete the customer Eamon Bakker.",
                        [("customer_relationship_manager_delete_customer", {"customer_id": "00000015"})],
                        "workplace_assistant_customer_relationship_manager"),
    "move": make_task("move", "Move the medication-list layout task to In Review.",
                      [MOVE],
                      "workplace_assistant_project_management", difficulty=9),
    # Its ground truth replies to an e-mail this world does not have: a broken task.
    "broken": make_task("broken", "Reply 'OK' to the e-mail 99999999.",
                        [("email_reply_email", {"email_id": "99999999", "body": "OK"})]),
}


class RowMaker:
    """Builds rollout rows: the calls are executed in a real session, the verdict is the real
    verifier's, then `edit` can change anything (to craft what the rules must catch)."""

    def __init__(self, env: WorkplaceEnvironment):
        self.env = env

    def row(self, task: Task, calls: list[tuple[str, Any]], sample: int = 0, text: str = "Done.",
            reward: float | str | None = "verdict", **og: Any) -> dict[str, Any]:
        session = self.env.session(task)
        turn = Turn(text="")
        for i, (name, args) in enumerate(calls):
            call = ToolCall(name, args, call_id=f"call_0_{i}")
            result = session.execute(name, args)
            turn.executions.append(ToolExecution(call, result.text, result.status))
        turns = [turn, Turn(text=text)] if calls else [Turn(text=text)]
        traj = Trajectory(task_id=task.id, turns=turns, policy="crafted", sample_index=sample, stop_reason="answered")
        verdict = self.env.verify(task, traj.calls)
        traj.verdict = verdict.to_dict()
        traj.reward = verdict.reward if reward == "verdict" else reward
        traj.reward_components = {"outcome": verdict.reward}
        row = rollout_row(task, traj)
        row["officegym"].update(og)
        return row


@pytest.fixture(scope="session")
def small_world():
    return generate_world(0, "small").to_world("<generated seed 0 small>")


@pytest.fixture(scope="session")
def world_dir(tmp_path_factory):
    """The small world of seed 0 written to a folder (what --world and run.json name)."""
    from officegym.envs.workplace.generate import write_world

    return write_world(generate_world(0, "small"), tmp_path_factory.mktemp("w") / "world")


@pytest.fixture(scope="session")
def env(small_world):
    return WorkplaceEnvironment(small_world)


@pytest.fixture
def envs(small_world):
    e = Environments()
    e.add_world(WORLD_SPEC, small_world)
    return e


@pytest.fixture(scope="session")
def maker(env):
    return RowMaker(env)


@pytest.fixture(scope="session")
def tasks():
    return TASKS


def write_run(folder: Path, rows: list[dict[str, Any]], name: str = "rollouts.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.fixture
def run_writer():
    return write_run


@pytest.fixture
def review_run(tmp_path, maker, tasks):
    """An eval-like run folder with something for most rules: 4 tasks x 3 samples."""
    rows = []
    for s in range(3):  # every sample fails the broken task (its oracle fails too)
        rows.append(maker.row(tasks["broken"], [("email_reply_email", {"email_id": "00000039", "body": "OK"})], s))
    for s in range(3):  # every sample fails a sound task: a training signal, not a human item
        rows.append(maker.row(tasks["delete"], [], s))
    for s in range(3):  # every sample passes a hard task
        rows.append(maker.row(tasks["move"], [MOVE], s))
    # reply: sample 0 right, sample 1 right in another letter case (a different end state the
    # verifier also rewards), sample 2 wrong
    rows.append(maker.row(tasks["reply"], [REPLY], 0))
    rows.append(maker.row(tasks["reply"], [("email_reply_email", {"email_id": "00000039", "body": "thanks"})], 1))
    rows.append(maker.row(tasks["reply"], [("email_reply_email", {"email_id": "00000047", "body": "Thanks"})], 2))
    folder = write_run(tmp_path / "run", rows)
    (folder / "run.json").write_text(json.dumps({"policy": "crafted", "world": "None"}))
    return folder


@pytest.fixture(scope="session")
def world_spec():
    return dict(WORLD_SPEC)


def gt_calls(task: Task) -> list[tuple[str, Any]]:
    return [(c.name, c.arguments) for c in task.ground_truth]


@pytest.fixture(scope="session")
def gt():
    """gt(task) -> the task's ground truth as (name, arguments) pairs."""
    return gt_calls


@pytest.fixture
def flagged(tmp_path, review_run, envs, world_spec):
    """A store with review_run flagged into it (4 items: broken, reply x2, move); yields
    (store, envs, ids by task and sample)."""
    from officegym.review.flag import FlagConfig, flag_run
    from officegym.review.store import Store

    store = Store(tmp_path / "review.sqlite")
    flag_run(review_run, store, FlagConfig(audit_share=0.0), world=world_spec, envs=envs)
    ids = {(it["task_id"], it["sample_index"]): it["id"] for it in store.list()}
    yield store, envs, ids
    store.close()
