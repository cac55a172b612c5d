"""Settings the NeMo Gym entry hands to the server explicitly: the model-call capture directory from
the launcher's configuration (no environment variable read by the server itself), and the
workplace's reference_compat; `officegym serve` offers the same."""

from __future__ import annotations

import importlib.util
from dataclasses import asdict

import pytest
import yaml
from fastapi.testclient import TestClient

from officegym.integrations.nemo_gym import launch
from officegym.server import serve
from officegym.server.config import ServeConfig


def test_the_capture_dir_is_read_with_the_configuration_and_passed_as_a_setting(ng, small_world, tmp_path, monkeypatch):
    config = ng.configured(small_world[0])
    config.update(observability_enabled=True, model_call_capture_dir=str(tmp_path / "capture"))
    got = launch.load_launch(ng.launcher_env(config))
    assert got.capture_dir == tmp_path / "capture"
    seen = {}
    monkeypatch.setattr(serve, "run_server", lambda env, cfg: seen.update(asdict(cfg)))
    monkeypatch.setattr(launch, "_exit_with_parent", lambda: None)
    launch.serve(got)
    assert seen["model_call_capture_dir"] == str(tmp_path / "capture")

    for off in ({"observability_enabled": False}, {"model_call_capture_dir": "relative/dir"}):
        assert launch.load_launch(ng.launcher_env({**config, **off})).capture_dir is None
    del config["model_call_capture_dir"]
    got = launch.load_launch(ng.launcher_env(config))
    assert got.capture_dir is None and launch._serve_config(got).model_call_capture_dir is None


def test_the_server_reads_no_launcher_variable(small_world, tmp_path, monkeypatch):
    """Only the entry reads NEMO_GYM_CONFIG_DICT; run_server serves what it is given."""
    import uvicorn

    monkeypatch.setenv("NEMO_GYM_CONFIG_DICT", yaml.safe_dump({"observability_enabled": True,
                                                               "model_call_capture_dir": str(tmp_path)}))
    served = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: served.append(self.config.app))
    env = serve.build_environment("workplace", small_world[0])
    serve.run_server(env, ServeConfig(port=1))
    assert TestClient(served[0]).get("/health").json()["model_call_capture"] is None
    serve.run_server(env, ServeConfig(port=1, model_call_capture_dir=str(tmp_path)))
    assert TestClient(served[1]).get("/health").json()["model_call_capture"]["dir"] == str(tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pandas3 needs pyarrow")
def test_reference_compat_from_the_launcher_and_the_cli(ng, small_world, tmp_path, monkeypatch, capsys):
    config = ng.configured(small_world[0])
    assert launch.load_launch(ng.launcher_env(config)).settings.reference_compat == "pandas2"  # shipped
    del ng.server_block(config)["reference_compat"]
    assert launch.load_launch(ng.launcher_env(config)).settings.reference_compat is None
    ng.server_block(config)["reference_compat"] = "pandas3"
    got = launch.load_launch(ng.launcher_env(config))
    assert got.settings.reference_compat == "pandas3"
    served = []
    monkeypatch.setattr(serve, "run_server", lambda env, cfg: served.append((env, cfg)))
    monkeypatch.setattr(launch, "_exit_with_parent", lambda: None)
    launch.serve(got)
    assert served[0][0].reference_compat == "pandas3" and served[0][1] == launch._serve_config(got)
    app = serve.make_app(*served[0])
    client = TestClient(app)
    client.post("/seed_session", json={})
    answer = client.post("/calendar_update_event", json={"event_id": "00000001", "field": "duration", "new_value": 30})
    assert "Invalid value '30' for dtype 'str'" in answer.json()["output"]

    config["dry_run"] = True
    ng.server_block(config)["reference_compat"] = "pandas4"
    assert launch.main(ng.launcher_env(config)) == 2
    assert "unknown reference_compat 'pandas4'" in capsys.readouterr().err

    from typer.testing import CliRunner

    from officegym.cli import app as cli

    seen = {}
    monkeypatch.setattr(serve, "run_server", lambda env, cfg: seen.update(env=env))
    result = CliRunner().invoke(cli, ["serve", "--world", str(small_world[0]), "--reference-compat", "pandas3"])
    assert result.exit_code == 0, result.output
    assert seen["env"].reference_compat == "pandas3"
    with pytest.raises(serve.ServeError, match="applies to the workplace"):
        serve.build_environment("roles/cost", None, None, "pandas3")
    assert serve.build_environment("roles/cost", None, None, "pandas2").name != "workplace_assistant"  # the default
    assert serve.build_environment("workplace", small_world[0]).reference_compat == "pandas2"
