"""The LLM teacher against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from officegym.core.task import iter_jsonl
from officegym.envs.workplace.generate import generate_world
from officegym.sdg.dataset import build_dataset
from officegym.sdg.teacher import apply_teacher, facts, keeps_facts
from officegym.sdg.workplace import WorkplaceSource


@pytest.fixture
def fake(fake_openai_module):
    return fake_openai_module


def test_fact_preservation():
    slots = {"first": "Ana", "k": 42, "body": "Got it, thanks!"}
    assert keeps_facts("please tell ana: 'Got it, thanks!' about the 42 items", facts(slots))
    assert not keeps_facts("please tell ana: 'Got it!' about the 42 items", facts(slots))
    assert not keeps_facts("", [])


def test_teacher_paraphrases_and_keeps_only_trajectories_that_reach_the_computed_state(fake, tmp_path):
    src = WorkplaceSource(generate_world(4, "reference").to_world(), "seed4-reference")
    ds = build_dataset([src], 12, seed=0)
    rows = [r for split in ds.rows.values() for r in split]
    truth = {r["responses_create_params"]["input"][-1]["content"]: r for r in rows}
    sabotaged = rows[0]["responses_create_params"]["input"][-1]["content"]  # the teacher gets this one wrong
    drop_paraphrase = rows[1]["responses_create_params"]["input"][-1]["content"]

    def script(body, n):
        messages = body["messages"]
        first = messages[-1]["content"] if messages[0]["role"] == "user" else None
        if first and first.startswith("Rewrite the following request"):
            query = first.split("Request: ", 1)[1]
            if query == drop_paraphrase:
                return {"content": "Do something vague."}  # loses the facts: rejected
            return {"content": f"Could you do this for me: {query}"}
        user = next(m["content"] for m in messages if m["role"] == "user")
        original = user.removeprefix("Could you do this for me: ")
        row = truth[original]
        done = sum(m["role"] == "tool" for m in messages)
        calls = row["ground_truth"]
        if original == sabotaged:
            calls = [{"name": "email_delete_email", "arguments": json.dumps({"email_id": "99999999"})}]
        if done < len(calls):
            c = calls[done]
            return {"content": "I will look this up first.", "tool_calls": [fake.tool_call(c["name"], c["arguments"], f"c{done}")]}
        return {"content": "All done."}

    with fake.FakeOpenAI(script, served=("teacher",)) as server:
        stats = apply_teacher(ds, server.base_url, model="teacher", out=tmp_path)
    assert stats["paraphrase_kept"] == len(rows) - 1 and stats["paraphrase_rejected"] == 1
    assert stats["trajectory_rejected"] == 1 and stats["trajectory_kept"] == len(rows) - 1
    kept = [row for _, row in iter_jsonl(tmp_path / "teacher_trajectories.jsonl")]
    assert len(kept) == len(rows) - 1
    assert all(any(m["role"] == "tool" for m in k["messages"]) or not k["calls"] for k in kept)
    paraphrased = [r for r in rows if r.get("paraphrased_by")]
    assert all(r["responses_create_params"]["input"][-1]["content"].startswith("Could you do this for me:") for r in paraphrased)
    assert all(r["original_query"] in r["responses_create_params"]["input"][-1]["content"] for r in paraphrased)


def test_unreachable_teacher_is_a_clear_error(tmp_path):
    from officegym.sdg.teacher import TeacherError

    src = WorkplaceSource(generate_world(4, "small").to_world(), "seed4-small")
    ds = build_dataset([src], 3, seed=0)
    with pytest.raises(TeacherError, match="teacher"):
        apply_teacher(ds, "http://127.0.0.1:9/v1", out=tmp_path)
