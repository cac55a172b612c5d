"""docs/nemo-rl.md's launcher commands run as written.

The slow test runs the doc's two marked blocks verbatim with bash (servers by name with pre-made
venvs, offline; then NeMo Gym's collector and health check) in a folder outside the checkout,
against a scripted Responses-API model. It needs a venv holding nemo-gym and officegym, as the doc's
setup block makes one: this interpreter's, or OFFICEGYM_NEMO_GYM_VENV; else it is skipped.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
DOC = CHECKOUT / "docs" / "nemo-rl.md"


def block(name: str) -> str:
    """The bash block after the doc's `<!-- name: ... -->` marker."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- {name}:[^>]*-->\s*```bash\n(.*?)```", text, re.S)
    assert found, f"docs/nemo-rl.md has no '{name}' block"
    return found.group(1)


def test_the_doc_names_nemo_gyms_python_and_the_offline_flags():
    text = DOC.read_text(encoding="utf-8")
    assert "Python >= 3.13.14" in text
    start = block("start")
    assert "+skip_venv_if_present=true" in start and '+uv_venv_dir="$PWD/venvs"' in start
    assert "gym eval run --no-serve" in block("collect")
    assert "a whole `gym env start`" not in text and "not tested: `gym eval run`" not in text  # stale notes
    try:
        requires = importlib.metadata.metadata("nemo-gym")["Requires-Python"]
    except importlib.metadata.PackageNotFoundError:
        return
    if importlib.metadata.version("nemo-gym") == "0.7.0":
        assert requires.replace(" ", "") == ">=3.13.14"


def nemo_gym_venv() -> Path | None:
    given = os.environ.get("OFFICEGYM_NEMO_GYM_VENV")
    prefix = Path(given) if given else Path(sys.prefix)
    has = all((prefix / "bin" / tool).exists() for tool in ("python", "gym", "officegym"))
    return prefix if has else None


class Model:
    """A Responses API: one directory lookup, then a message."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                called = any(isinstance(i, dict) and i.get("type") == "function_call" for i in body.get("input", []))
                item = ({"type": "message", "id": f"msg_{uuid.uuid4().hex}", "role": "assistant",
                         "status": "completed", "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
                        if called else
                        {"type": "function_call", "id": f"fc_{uuid.uuid4().hex}", "call_id": f"c_{uuid.uuid4().hex}",
                         "name": "company_directory_find_email_address", "arguments": '{"name": "carlos"}',
                         "status": "completed"})
                out = json.dumps({"id": f"resp_{uuid.uuid4().hex}", "object": "response", "created_at": time.time(),
                                  "model": "scripted", "output": [item], "status": "completed",
                                  "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                                  "usage": {"input_tokens": 50, "output_tokens": 5, "total_tokens": 55,
                                            "input_tokens_details": {"cached_tokens": 0},
                                            "output_tokens_details": {"reasoning_tokens": 0}}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


# What NeMo Gym writes into the folder it runs in (with its own uv venvs, the four server folders).
NEMO_GYM_LEAVES = ("outputs", "resources_servers", "responses_api_agents", "responses_api_models",
                   "environment_servers", "capture", "venvs", "rollouts.jsonl")


def left_in_checkout() -> list[str]:
    return [name for name in NEMO_GYM_LEAVES if (CHECKOUT / name).exists()]


@pytest.mark.slow
@pytest.mark.skipif(nemo_gym_venv() is None, reason="no venv with nemo-gym, its `gym` and `officegym` "
                    "(this interpreter's, or OFFICEGYM_NEMO_GYM_VENV): make one with the doc's setup block")
def test_the_docs_launcher_commands_run_as_written(tmp_path):
    assert not tmp_path.resolve().is_relative_to(CHECKOUT)
    (tmp_path / "ng").symlink_to(nemo_gym_venv())  # what the doc's setup block leaves there
    model = Model()
    env = {**os.environ, "MODEL_TYPE": "openai_model", "MODEL": "scripted", "MODEL_URL": model.url}
    before = left_in_checkout()
    with open(tmp_path / "start.log", "w") as log:
        servers = subprocess.Popen(["bash", "-c", block("start")], cwd=tmp_path, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 300
            while "All 4 / 4 servers ready" not in (tmp_path / "start.log").read_text():
                assert servers.poll() is None and time.monotonic() < deadline, (tmp_path / "start.log").read_text()[-3000:]
                time.sleep(1)
            collected = subprocess.run(["bash", "-c", block("collect")], cwd=tmp_path, env=env, capture_output=True,
                                       text=True, timeout=600)
            assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
        finally:
            os.killpg(servers.pid, signal.SIGINT)  # the doc's Ctrl-C
            try:
                servers.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(servers.pid, signal.SIGKILL)
            model.server.shutdown()
    rollouts = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 10  # NeMo Gym's 5 example tasks, 2 repeats
    assert all(r["response"]["output"][0]["name"] == "company_directory_find_email_address" for r in rollouts)
    assert "officegym" in rollouts[0]  # scored by officegym's server
    summary = json.loads((tmp_path / "quality_summary.json").read_text())["run"]
    assert summary["verdicts"] == {"healthy": 10, "unhealthy": 0, "unobserved": 0}, summary["issues"]
    assert left_in_checkout() == before  # nothing left in the checkout
