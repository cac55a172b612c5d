"""`officegym serve`: bad settings exit with a message; a real server starts, answers, stops."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict

from typer.testing import CliRunner

from officegym.cli import app


def test_serve_refuses_bad_settings(reference_dir):
    runner = CliRunner()
    result = runner.invoke(app, ["serve", "--world", "/nonexistent"])
    assert result.exit_code == 2 and "not a folder" in result.output
    result = runner.invoke(app, ["serve", "--world", str(reference_dir / "csv_data"), "--mode", "bogus"])
    assert result.exit_code == 2 and "bogus" in result.output


def test_serve_starts_answers_and_stops(reference_dir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "officegym.cli", "serve", "--world", str(reference_dir / "csv_data"),
           "--port", str(port), "--max-sessions", "7", "--mode", "nemo_gym"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                    health = json.loads(r.read())
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                assert time.time() < deadline, "the server did not start"
                time.sleep(0.1)
        assert health["max_sessions"] == 7 and health["mode"] == "nemo_gym"
        assert health["world"].endswith("csv_data")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_serve_passes_the_servers_own_limits_and_the_new_ones(tmp_path, monkeypatch):
    from officegym.envs.workplace.generate import generate_world, write_world
    from officegym.server import config, serve

    tiny_world_dir = tmp_path / "world"
    write_world(generate_world(3, "small"), tiny_world_dir)

    seen = {}
    monkeypatch.setattr(serve, "run_server", lambda env, cfg: seen.update(asdict(cfg)))
    result = CliRunner().invoke(app, ["serve", "--world", str(tiny_world_dir)])
    assert result.exit_code == 0, result.output
    assert seen["max_body_bytes"] == config.DEFAULT_MAX_BODY_BYTES
    assert seen["max_session_writes"] == config.DEFAULT_MAX_SESSION_WRITES
    assert seen["max_session_write_bytes"] == config.DEFAULT_MAX_SESSION_WRITE_BYTES
    assert seen["max_verify_calls"] == config.DEFAULT_MAX_VERIFY_CALLS
    result = CliRunner().invoke(app, ["serve", "--world", str(tiny_world_dir), "--max-session-writes", "5",
                                      "--max-verify-calls", "9"])
    assert (seen["max_session_writes"], seen["max_verify_calls"]) == (5, 9)
    assert seen["model_call_capture_dir"] is None  # NeMo Gym's, from its launcher, when it starts the server
    result = CliRunner().invoke(app, ["serve", "--world", str(tiny_world_dir), "--model-call-capture-dir",
                                      str(tmp_path / "captures")])
    assert result.exit_code == 0, result.output
    assert seen["model_call_capture_dir"] == str(tmp_path / "captures")


def test_the_serve_config_holds_what_create_app_takes():
    import inspect

    from officegym.server.app import create_app
    from officegym.server.config import ServeConfig

    taken = set(inspect.signature(create_app).parameters)
    assert set(ServeConfig().app_options()) <= taken
    # what create_app takes that a served app leaves at its default (tests set them)
    assert taken - set(ServeConfig().app_options()) == {"env", "policy_options", "sweep_interval_s", "clock",
                                                        "capture_wait_s"}
