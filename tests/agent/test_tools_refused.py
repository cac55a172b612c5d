"""A server that refuses tool calls (vLLM started without a tool parser) stops an evaluation at once
with the fix, instead of scoring rollouts that all failed the same way."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from officegym.agent.openai_compat import tools_refused
from officegym.cli import app

runner = CliRunner()
VLLM_400 = {"object": "error", "type": "BadRequestError", "param": None, "code": 400,
            "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'}


def test_vllms_answer_and_other_servers_are_recognised_and_other_400s_are_not():
    vllm = tools_refused(400, json.dumps(VLLM_400), "http://h:8000/v1")
    assert vllm is not None and "restart vLLM with --enable-auto-tool-choice --tool-call-parser hermes" in str(vllm)
    llama = tools_refused(400, '{"error": {"message": "tools param requires --jinja flag"}}', "http://h/v1")
    assert llama is not None and "a server that supports tool calls" in str(llama)
    assert tools_refused(400, '{"error": {"message": "context too long"}}', "http://h/v1") is None
    assert tools_refused(500, json.dumps(VLLM_400), "http://h/v1") is None


def test_eval_against_a_server_without_tool_calls_stops_at_the_first_answer(fake_openai_module, tmp_path):
    world, tasks = tmp_path / "world", tmp_path / "tasks"
    assert runner.invoke(app, ["generate", "world", "--seed", "1", "--size", "small", "--out", str(world)]).exit_code == 0
    assert runner.invoke(app, ["generate", "tasks", "--world", str(world), "--n", "4", "--out", str(tasks)]).exit_code == 0
    out = tmp_path / "run"
    with fake_openai_module.FakeOpenAI(lambda body, n: {"status": 400, "json": VLLM_400}) as srv:
        res = runner.invoke(app, ["eval", "--policy", "openai:fake-model", "--base-url", srv.base_url, "--tasks",
                                  str(tasks / "train.jsonl"), "--world", str(world), "--concurrency", "1", "--out", str(out)])
        calls = len(srv.calls)
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"the model server at {srv.base_url} refuses tool calls (HTTP 400" in said
    assert "restart vLLM with --enable-auto-tool-choice --tool-call-parser hermes" in said
    assert calls == 1  # one rollout at a time: the first answer ended the evaluation
    assert not (out / "metrics.json").exists()  # no accuracy for rollouts that never ran
    rows = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["officegym"]["stop_reason"] == "error"  # written; retried on the next run
