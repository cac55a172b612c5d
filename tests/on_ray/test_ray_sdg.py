"""The SDG teacher's episodes on Ray actors: against a scripted OpenAI-compatible teacher on 127.0.0.1,
the workers (each with its own client and the world shipped with the run) keep and reject exactly
the trajectories the single-process teacher does."""

from __future__ import annotations

import json

import pytest

from officegym.agent.ray_rollouts import RayOptions
from officegym.core.task import iter_jsonl
from officegym.envs.workplace.generate import generate_world
from officegym.sdg.dataset import build_dataset
from officegym.sdg.teacher import apply_teacher
from officegym.sdg.workplace import WorkplaceSource


@pytest.fixture(scope="module")
def fake(fake_openai_module):
    return fake_openai_module


def test_the_teacher_on_ray_keeps_what_the_single_process_teacher_keeps(fake, tmp_path, ray_cluster):
    # an in-memory world (no folder a worker could read): it travels with the run
    world = generate_world(4, "small").to_world()
    ds, here_ds = (build_dataset([WorkplaceSource(world, "seed4-small")], 10, seed=0) for _ in range(2))
    rows = [r for split in ds.rows.values() for r in split]
    truth = {r["responses_create_params"]["input"][-1]["content"]: r for r in rows}
    sabotaged = rows[0]["responses_create_params"]["input"][-1]["content"]

    def script(body, n):
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        if user.startswith("Rewrite the following request"):
            return {"content": "Could you do this for me: " + user.split("Request: ", 1)[1]}
        original = user.removeprefix("Could you do this for me: ")
        calls = truth[original]["ground_truth"]
        if original == sabotaged:  # the teacher deletes an e-mail that does not exist: rejected
            calls = [{"name": "email_delete_email", "arguments": json.dumps({"email_id": "99999999"})}]
        done = sum(m["role"] == "tool" for m in messages)
        if done < len(calls):
            c = calls[done]
            return {"content": "Let me do this step.", "tool_calls": [fake.tool_call(c["name"], c["arguments"], f"c{done}")]}
        return {"content": "All done."}

    with fake.FakeOpenAI(script, served=("teacher",)) as server:
        here = apply_teacher(here_ds, server.base_url, out=tmp_path / "here")
        there = apply_teacher(ds, server.base_url, out=tmp_path / "there", ray=RayOptions(workers=2, concurrency=4))
    assert there == here
    assert there["trajectory_kept"] == len(rows) - 1 and there["trajectory_rejected"] == 1
    kept_here = [row for _, row in iter_jsonl(tmp_path / "here" / "teacher_trajectories.jsonl")]
    kept_there = [row for _, row in iter_jsonl(tmp_path / "there" / "teacher_trajectories.jsonl")]
    assert kept_there == kept_here
    assert ds.rows == here_ds.rows  # the paraphrases, made in this process either way


def test_generate_refuses_ray_without_a_teacher(tmp_path):
    from typer.testing import CliRunner

    from officegym.cli import app

    result = CliRunner().invoke(app, ["generate", "tasks", "--out", str(tmp_path / "out"), "--n", "3", "--ray"])
    assert result.exit_code == 2 and "needs --teacher" in result.output
