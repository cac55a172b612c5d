"""NeMo Gym's rollout health check finds nothing wrong with rollouts collected against officegym.

Observability on, nemo-gym 0.7.0's model server may answer a model call before writing that call's
capture record; the collector reads the records once /run returns, so a fast /verify let the
episode's last call go missing (`trajectory_capture_mismatch`). officegym's /verify waits for the
record (server/capture.py). The first tests check that wait on any Python; the last runs NeMo Gym's
own launcher, collector and health check where nemo-gym imports.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml

from officegym.integrations import nemo_gym
from officegym.server.app import create_app
from officegym.server.capture import capture_dir_from_environ


def _app(world, capture_dir, wait_s=5.0):
    from officegym.core.registry import make

    return create_app(make("workplace", world=world), model_call_capture_dir=capture_dir, capture_wait_s=wait_s)


async def _verify(app, path, row):
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        await client.post("/seed_session", json={})
        started = time.monotonic()
        answer = await client.post(path, json=row)
        return answer, time.monotonic() - started, (await client.get("/health")).json()["model_call_capture"]


def _row(ng, world, response_id="resp_1"):
    truth, _ = ng.quirk_calls(world)
    row = ng.verify_row("t1", truth, truth)
    row["response"]["id"] = response_id
    return row


def test_verify_waits_until_the_model_call_is_captured(small_world, ng, tmp_path):
    folder, world = small_world
    app = _app(folder, tmp_path)

    async def scenario():
        async def capture_later():
            await asyncio.sleep(0.3)
            with open(tmp_path / "7-0-0.capture.jsonl", "ab") as f:  # what NeMo Gym's model server appends
                f.write(json.dumps({"model_call_id": "m1", "response": {"id": "resp_1"}}).encode() + b"\n")

        writer = asyncio.create_task(capture_later())
        result = await _verify(app, "/ng-rollout/7-0-0/verify", _row(ng, world))
        await writer
        return result

    answer, elapsed, stats = asyncio.run(scenario())
    assert answer.status_code == 200 and answer.json()["reward"] == 1.0
    assert 0.3 <= elapsed < 4.0
    assert stats == {"dir": str(tmp_path), "active": True, "waited": 1, "timed_out": 0}


def test_no_wait_without_the_rollout_prefix_or_a_capture_dir(small_world, ng, tmp_path):
    folder, world = small_world
    answer, elapsed, stats = asyncio.run(_verify(_app(folder, tmp_path), "/verify", _row(ng, world)))
    assert answer.json()["reward"] == 1.0 and elapsed < 1.0 and stats["waited"] == 0
    answer, elapsed, stats = asyncio.run(_verify(_app(folder, None), "/ng-rollout/1-0-0/verify", _row(ng, world)))
    assert answer.json()["reward"] == 1.0 and elapsed < 1.0 and stats is None


def test_a_capture_that_never_comes_costs_three_short_waits_then_none(small_world, ng, tmp_path):
    folder, world = small_world
    app = _app(folder, tmp_path, wait_s=0.05)
    for n in range(4):
        answer, _, stats = asyncio.run(_verify(app, f"/ng-rollout/{n}-0-0/verify", _row(ng, world, f"r{n}")))
        assert answer.json()["reward"] == 1.0
    assert stats == {"dir": str(tmp_path), "active": False, "waited": 3, "timed_out": 3}


def test_capture_dir_comes_from_the_launchers_config(tmp_path):
    def env(**top):
        return {"NEMO_GYM_CONFIG_DICT": yaml.safe_dump({"workplace_assistant": {}, **top})}

    assert capture_dir_from_environ(env(observability_enabled=True, model_call_capture_dir=str(tmp_path))) == tmp_path
    assert capture_dir_from_environ(env(observability_enabled=False, model_call_capture_dir=str(tmp_path))) is None
    assert capture_dir_from_environ(env(observability_enabled=True, model_call_capture_dir="rel/dir")) is None
    assert capture_dir_from_environ(env(observability_enabled=True)) is None
    assert capture_dir_from_environ({}) is None
    assert capture_dir_from_environ({"NEMO_GYM_CONFIG_DICT": "[: not yaml"}) is None


# -- NeMo Gym's collector and health check (where nemo-gym imports)

def _nemo_gym_reason() -> str | None:
    if sys.version_info < (3, 13):
        return f"nemo-gym 0.7.0 asks for Python >= 3.13.14; this is {sys.version.split()[0]}"
    if importlib.util.find_spec("nemo_gym") is None:
        return "nemo-gym is not installed"
    if not (Path(sys.executable).parent / "gym").exists():
        return "NeMo Gym's `gym` command is not beside this Python"
    missing = [m for m in ("typer", "msgspec", "regex", "dateutil", "fastapi", "uvicorn", "itsdangerous")
               if importlib.util.find_spec(m) is None]
    return f"officegym's server dependencies are missing here: {', '.join(missing)}" if missing else None


def example_tasks(count: int) -> list[dict]:
    """`count` rows from NeMo Gym's workplace examples, each prompt tagged with its index."""
    import resources_servers.workplace_assistant as ref

    path = Path(next(iter(ref.__path__))) / "data" / "example.jsonl"  # a namespace package: no __file__
    base = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = []
    for k in range(count):
        row = json.loads(json.dumps(base[k % len(base)]))
        row["id"] = k
        row["responses_create_params"]["input"][-1]["content"] += f" (task {k})"
        rows.append(row)
    return rows


class ScriptedModel:
    """An OpenAI Responses API that plays each task's ground truth: all calls in one turn, one call
    a turn, a read first, or no call, then a message (the task's index picks)."""

    def __init__(self, rows: list[dict]):
        self.truth = {row["id"]: json.loads(row["ground_truth"]) if isinstance(row["ground_truth"], str)
                      else row["ground_truth"] for row in rows}
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                out = json.dumps(model.answer(body)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def turns(self, k: int) -> list[list[dict]]:
        calls = [{"name": c["name"], "arguments": c["arguments"]} for c in self.truth[k]]
        read = {"name": "company_directory_find_email_address", "arguments": json.dumps({"name": "carlos"})}
        return [[calls], [[c] for c in calls], [[read], calls], []][k % 4]

    def answer(self, body: dict) -> dict:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        user = [i for i in items if i.get("role") == "user"][-1]
        k = int(json.dumps(user["content"]).rsplit("(task ", 1)[1].split(")")[0])
        made = sum(1 for i in items if i.get("type") == "function_call")
        done, output = 0, None
        for turn in self.turns(k):
            if done == made:
                output = [{"type": "function_call", "id": f"fc_{uuid.uuid4().hex}", "call_id": f"call_{uuid.uuid4().hex[:12]}",
                           "name": c["name"], "arguments": c["arguments"], "status": "completed"} for c in turn]
                break
            done += len(turn)
        output = output or [{"type": "message", "id": f"msg_{uuid.uuid4().hex}", "role": "assistant",
                             "status": "completed", "content": [{"type": "output_text", "text": "Done.",
                                                                 "annotations": []}]}]
        return {"id": f"resp_{uuid.uuid4().hex}", "object": "response", "created_at": time.time(),
                "model": body.get("model", "scripted"), "output": output, "status": "completed",
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}


def premade_venvs(root: Path) -> Path:
    """The venvs `+skip_venv_if_present=true +uv_venv_dir=<root>` reuses: this Python's for all four servers."""
    for server in ("resources_servers/officegym_workplace_assistant", "responses_api_agents/simple_agent",
                   "responses_api_models/openai_model", "environment_servers/legacy_agent"):
        (root / server).mkdir(parents=True, exist_ok=True)
        (root / server / ".venv").symlink_to(sys.prefix)
    return root


@pytest.mark.skipif(_nemo_gym_reason() is not None, reason=str(_nemo_gym_reason()))
def test_nemo_gyms_health_check_flags_no_rollout(tmp_path):
    rows = example_tasks(52)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(row) + "\n" for row in rows))
    model = ScriptedModel(rows)
    gym = str(Path(sys.executable).parent / "gym")
    observe = ["+observability_enabled=true", f"+model_call_capture_dir={tmp_path / 'capture'}"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    with open(tmp_path / "start.log", "w") as log:
        servers = subprocess.Popen(
            [gym, "env", "start", "--search-dir", str(nemo_gym.root()), "--resources-server", nemo_gym.SERVER_NAME,
             "--model-type", "openai_model", "--model", "scripted", "--model-url", model.url, "--model-api-key", "EMPTY",
             "+skip_venv_if_present=true", f"+uv_venv_dir={premade_venvs(tmp_path / 'venvs')}", *observe],
            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while "servers ready" not in (tmp_path / "start.log").read_text():
                assert servers.poll() is None and time.monotonic() < deadline, (tmp_path / "start.log").read_text()[-3000:]
                time.sleep(1)
            out = tmp_path / "rollouts.jsonl"
            collected = subprocess.run(
                [gym, "eval", "run", "--no-serve", "--agent", nemo_gym.AGENT_INSTANCE_NAME, "--input", str(tasks),
                 "--output", str(out), "--num-repeats", "2", "--concurrency", "16", *observe],
                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
            rollouts = [json.loads(line) for line in out.read_text().splitlines()]
            assert len(rollouts) == 104 and all("ng_model_call_capture" in r for r in rollouts)
            assert sum(r["reward"] for r in rollouts) == 78  # the 3 styles that play the ground truth, 2 repeats
            summary = json.loads((tmp_path / "quality_summary.json").read_text())["run"]
            assert summary["verdicts"] == {"healthy": 104, "unhealthy": 0, "unobserved": 0}, summary["issues"]
            assert not any(summary["issues"].values()), summary["issues"]
        finally:
            os.killpg(servers.pid, signal.SIGTERM)
            try:
                servers.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(servers.pid, signal.SIGKILL)
            model.server.shutdown()
            shutil.rmtree(tmp_path / "venvs", ignore_errors=True)
