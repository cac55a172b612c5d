"""A server other machines can reach needs a cookie secret of its own (issue 47 N9)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from officegym.cli import app
from officegym.server import serve as serve_module
from officegym.server.serve import ServeError, check_bind, is_local

runner = CliRunner()


@pytest.mark.parametrize(("host", "local"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("my-box.example", False),
])
def test_which_binds_stay_on_this_machine(host, local):
    assert is_local(host) is local


def test_a_public_bind_needs_a_secret_and_gets_a_warning_with_one():
    assert check_bind("127.0.0.1", None) is None
    with pytest.raises(ServeError, match="--secret"):
        check_bind("0.0.0.0", None)
    assert "warning" in check_bind("0.0.0.0", "s3cret")


@pytest.fixture
def started(monkeypatch):
    calls = []
    monkeypatch.setattr(serve_module, "run_server", lambda env, config: calls.append((env, config)))
    monkeypatch.delenv("OFFICEGYM_SERVER_SECRET", raising=False)
    return calls


def test_serve_on_every_interface_without_a_secret_is_refused(started, tiny_world_dir):
    res = runner.invoke(app, ["serve", "--host", "0.0.0.0", "--world", str(tiny_world_dir)])
    assert res.exit_code == 2 and "--secret" in res.output and "Traceback" not in res.output
    assert started == []


def test_serve_on_every_interface_with_a_secret_warns_and_starts(started, tiny_world_dir):
    res = runner.invoke(app, ["serve", "--host", "0.0.0.0", "--secret", "s3cret", "--world", str(tiny_world_dir)])
    assert res.exit_code == 0, res.output
    assert "warning: serving on 0.0.0.0" in " ".join(res.output.split())
    assert started and started[0][1].secret_key == "s3cret"


def test_serve_on_loopback_starts_quietly(started, tiny_world_dir):
    res = runner.invoke(app, ["serve", "--world", str(tiny_world_dir)])
    assert res.exit_code == 0 and "warning" not in res.output and started


def test_the_module_entry_refuses_too(started, tiny_world_dir, capsys):
    with pytest.raises(SystemExit) as exit_:
        serve_module.main(["--host", "0.0.0.0", "--world", str(tiny_world_dir)])
    assert exit_.value.code == 2 and "--secret" in capsys.readouterr().err and started == []
