"""officegym's NeMo Gym resources server, without NeMo Gym: the shipped folder and config are what
NeMo Gym's launcher looks for, and the entrypoint started the way the launcher starts it (in its
folder, `python app.py`, NEMO_GYM_CONFIG_DICT and NEMO_GYM_CONFIG_PATH set) serves the protocol on
the host and port of the configuration. test_nemo_gym_launcher.py runs the same through nemo-gym."""

from __future__ import annotations

import fnmatch
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from officegym.integrations import nemo_gym
from officegym.integrations.nemo_gym import launch

REPO = Path(__file__).resolve().parents[2]


# -- the shipped folder and config

def test_the_shipped_config_names_the_entrypoint_and_defaults_to_nemo_gym_mode(ng):
    config = ng.shipped_config()
    block = ng.server_block(config)
    assert (nemo_gym.server_dir() / block["entrypoint"]).is_file()
    assert block["mode"] == "nemo_gym" and block["world"] == "reference" and block["domain"] == "agent"
    assert "host" not in block and "port" not in block  # NeMo Gym chooses them
    # the agent and the environment server point at the instance by the names NeMo Gym's own config uses
    agent = config[nemo_gym.AGENT_INSTANCE_NAME]["responses_api_agents"]["simple_agent"]
    assert agent["resources_server"] == {"type": "resources_servers", "name": nemo_gym.INSTANCE_NAME}
    relay = config["workplace_assistant_environment_server"]["environment_servers"]["legacy_agent"]
    assert relay["agent_server"]["name"] == nemo_gym.AGENT_INSTANCE_NAME
    # and the settings the config holds are the ones the entrypoint reads, with its defaults
    settings = launch.ServerSettings.model_validate({**block, "host": "h", "port": 1})
    assert settings.mode == "nemo_gym" and settings.max_body_bytes == 64 * 1024 * 1024
    assert set(block) <= set(launch.ServerSettings.model_fields) | launch.NEMO_GYM_KEYS


def test_the_folder_is_what_nemo_gyms_launcher_finds_by_name(ng):
    """`--resources-server NAME` means <root>/resources_servers/NAME/configs/NAME.yaml, and a server
    folder counts only with a requirements.txt or a pyproject.toml (both: the launcher refuses)."""
    folder = nemo_gym.server_dir()
    assert folder.parent.name == "resources_servers" and folder.parent.parent == nemo_gym.root()
    assert nemo_gym.config_path() == folder / "configs" / f"{nemo_gym.SERVER_NAME}.yaml"
    assert nemo_gym.config_path() == nemo_gym.root() / nemo_gym.config_relpath()
    assert (folder / "requirements.txt").is_file() and not (folder / "pyproject.toml").exists()
    instances = [k for k, v in ng.shipped_config().items() if "resources_servers" in v]
    assert instances == [nemo_gym.INSTANCE_NAME]
    assert list(ng.shipped_config()[nemo_gym.INSTANCE_NAME]["resources_servers"]) == [nemo_gym.SERVER_NAME]


def _requirement_names(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if line:
            name = re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower().replace("_", "-")
            out[name] = line
    return out


def test_the_venv_requirements_are_officegyms_server_dependencies():
    """The launcher builds the server's venv from requirements.txt (plus nemo-gym); officegym itself
    comes from the tree, so the file must hold exactly officegym's dependencies and its server extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = _requirement_names([*project["dependencies"], *project["optional-dependencies"]["server"]])
    shipped = _requirement_names((nemo_gym.server_dir() / "requirements.txt").read_text().splitlines())
    assert shipped == wanted
    # the launcher drops lines holding '../..' (its own repo-relative installs): none may be lost that way
    assert not any("../.." in line for line in shipped.values())


def test_package_data_ships_every_file_of_the_folder():
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "officegym.integrations.nemo_gym"]
    package = Path(nemo_gym.__file__).parent
    files = [p for p in nemo_gym.root().rglob("*") if p.is_file()
             and not {"__pycache__", ".venv"} & set(p.relative_to(package).parts)]
    assert {p.name for p in files} >= {"app.py", "requirements.txt", f"{nemo_gym.SERVER_NAME}.yaml"}
    for path in files:
        rel = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(rel, g) and rel.count("/") == g.count("/") for g in globs), rel


def test_app_py_runs_the_officegym_tree_it_ships_in(tmp_path):
    """Not whichever officegym the venv may hold: the tree the entrypoint is part of."""
    home = tmp_path / "tree"
    (home / "officegym").mkdir(parents=True)
    (home / "officegym" / "__init__.py").write_text("MARK = 'the copy'\n")
    copy = home / "officegym" / "integrations" / "nemo_gym" / "root" / "resources_servers" / "x" / "app.py"
    copy.parent.mkdir(parents=True)
    shutil.copy(nemo_gym.server_dir() / "app.py", copy)
    probe = ("import runpy, sys; ns = runpy.run_path(sys.argv[1], run_name='probe'); ns['_load_officegym'](); "
             "import officegym; print(officegym.__file__, officegym.MARK)")
    out = subprocess.run([sys.executable, "-c", probe, str(copy)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(home / "officegym" / "__init__.py"), "the", "copy"]
    # the shipped app.py finds the officegym tree it lies in
    ns = runpy.run_path(str(nemo_gym.server_dir() / "app.py"), run_name="probe")
    assert ns["Path"](ns["__file__"]).resolve().parents[6] == Path(nemo_gym.__file__).resolve().parents[3]


# -- reading the launcher's configuration

def test_the_launch_reads_host_port_mode_and_world_from_the_launchers_config(ng, small_world):
    folder, _ = small_world
    config = ng.configured(folder, port=12345, bogus_setting=1)
    got = launch.load_launch(ng.launcher_env(config))
    assert (got.name, got.server) == ("workplace_assistant", nemo_gym.SERVER_NAME)
    assert (got.settings.host, got.settings.port, got.settings.mode) == ("127.0.0.1", 12345, "nemo_gym")
    assert got.world == Path(folder).resolve()
    assert got.cookie_name == got.secret_key == "WorkbenchResourcesServer___workplace_assistant"
    assert got.ignored == ("bogus_setting",) and got.dry_run is False
    # another instance name gets its own cookie, as NeMo Gym names its servers' cookies
    config["my_office"] = config.pop("workplace_assistant")
    other = launch.load_launch(ng.launcher_env(config, "my_office", OFFICEGYM_SERVER_SECRET="s3"))
    assert (other.cookie_name, other.secret_key) == ("WorkbenchResourcesServer___my_office", "s3")
    # settings given in the block (or as ++overrides, which land there) win over the defaults
    block = ng.server_block(ng.configured(folder))
    block.update(mode="outcome", max_sessions=7, idle_ttl_s=0)
    tuned = launch.load_launch(ng.launcher_env({"workplace_assistant": {"resources_servers": {"s": block}}}))
    assert (tuned.settings.mode, tuned.settings.max_sessions, tuned.settings.idle_ttl_s) == ("outcome", 7, 0)


def test_world_reference_is_nemo_gyms_csv_data_found_on_its_search_roots(ng, tmp_path, monkeypatch):
    extra = tmp_path / "extra_root"
    data = extra / "resources_servers" / "workplace_assistant" / "csv_data"
    (data / "processed").mkdir(parents=True)
    got = launch.load_launch(ng.launcher_env(ng.configured(), NEMO_GYM_EXTRA_ROOTS=f"/nowhere{os.pathsep}{extra}"))
    assert got.world == data
    # relative folders are looked up on the same roots
    (extra / "worlds" / "w1").mkdir(parents=True)
    rel = launch.load_launch(ng.launcher_env(ng.configured("worlds/w1"), NEMO_GYM_EXTRA_ROOTS=str(extra)))
    assert rel.world == (extra / "worlds" / "w1").resolve()
    assert launch.load_launch(ng.launcher_env(ng.configured("generated"))).world is None
    monkeypatch.chdir(tmp_path)
    install_root = launch.search_roots({})[-1]
    if install_root != tmp_path:  # nemo-gym is installed (as in the venvs NeMo Gym builds): its csv_data
        got = launch.load_launch(ng.launcher_env(ng.configured()))
        assert got.world == install_root / launch.REFERENCE_WORLD and (got.world / "processed").is_dir()
        return
    # nothing to find: the error says where it looked
    with pytest.raises(launch.LaunchError, match="csv_data") as err:
        launch.load_launch(ng.launcher_env(ng.configured(), NEMO_GYM_EXTRA_ROOTS=str(tmp_path / "none")))
    assert str(tmp_path / "none") in str(err.value)


@pytest.mark.parametrize(("change", "message"), [
    ({"port": None}, "port"),
    ({"num_workers": 4}, "one process"),
    ({"max_sessions": 0}, "max_sessions"),
    ({"world": "/no/such/world"}, "not a folder"),
    ({"env": "no_such_env"}, "unknown environment"),
    ({"expose_tools_over_mcp": True}, "MCP"),
    ({"log_level": "bogus"}, "log_level"),  # issue 47 N6: was uvicorn's traceback
    ({"evict_idle_s": -1}, "evict_idle_s"),
    ({"max_store_bytes": -1}, "max_store_bytes"),
])
def test_settings_that_cannot_be_served_are_refused_with_the_reason(ng, small_world, change, message):
    config = ng.configured(small_world[0])
    block = ng.server_block(config)
    for key, value in change.items():
        if value is None:
            block.pop(key)
        else:
            block[key] = value
    with pytest.raises(launch.LaunchError, match=message):
        launch.load_launch(ng.launcher_env(config))


def test_the_entrypoint_explains_a_start_outside_the_launcher_or_a_wrong_instance(ng, capsys):
    assert launch.main({}) == 2
    assert "NEMO_GYM_CONFIG_DICT" in capsys.readouterr().err
    assert launch.main(ng.launcher_env(ng.configured(), name="policy_model")) == 2
    assert "no server instance 'policy_model'" in capsys.readouterr().err
    assert launch.main(ng.launcher_env(ng.configured(), name="workplace_assistant_simple_agent")) == 2
    assert "not a resources server" in capsys.readouterr().err


def test_interpolations_are_resolved_or_refused(ng, small_world):
    config = ng.configured(small_world[0])
    config["officegym_mode"] = "outcome"
    ng.server_block(config)["mode"] = "${officegym_mode}"
    try:
        import omegaconf  # noqa: F401  (NeMo Gym's venvs have it)
    except ImportError:
        with pytest.raises(launch.LaunchError, match="omegaconf"):
            launch.load_launch(ng.launcher_env(config))
    else:
        assert launch.load_launch(ng.launcher_env(config)).settings.mode == "outcome"


def test_a_dry_run_builds_the_server_and_does_not_serve(ng, small_world, capsys):
    port = ng.free_port()
    config = ng.configured(small_world[0], port=port)
    config["dry_run"] = True
    assert launch.main(ng.launcher_env(config)) == 0
    assert "dry run" in capsys.readouterr().out
    import socket

    with socket.socket() as s:  # nothing took the port
        s.bind(("127.0.0.1", port))
    ng.server_block(config)["mode"] = "no_such_mode"  # a bad setting fails the dry run, as it would the start
    assert launch.main(ng.launcher_env(config)) == 2
    assert "mode" in capsys.readouterr().err


# -- started as the launcher starts it

def test_the_entrypoint_serves_the_protocol_where_the_launcher_says(ng, small_world, protocol_exchange):
    folder, world = small_world
    port = ng.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEMO_GYM_")}
    env.update(ng.launcher_env(ng.configured(folder, port=port)))
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=nemo_gym.server_dir(), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        ng.wait_until_up(url, proc)
        protocol_exchange(url, world, "WorkbenchResourcesServer___workplace_assistant")
    finally:
        code = ng.stop(proc, signal.SIGINT)
    out = proc.stdout.read()
    assert code == 0, out  # the launcher's SIGINT is a clean stop
    assert f"on http://127.0.0.1:{port}" in out and "mode nemo_gym" in out


def test_the_cli_prints_the_root_and_the_config(ng):
    from typer.testing import CliRunner

    from officegym.cli import app

    runner = CliRunner()
    assert runner.invoke(app, ["nemo-gym", "root"]).output.strip() == str(nemo_gym.root())
    assert runner.invoke(app, ["nemo-gym", "config"]).output.strip() == str(nemo_gym.config_path())
    assert runner.invoke(app, ["nemo-gym", "config", "--relative"]).output.strip() == nemo_gym.config_relpath()
    shown = runner.invoke(app, ["nemo-gym", "config", "--show"]).output
    assert yaml.safe_load(shown) == ng.shipped_config()


def test_imports_point_downwards():
    """integrations sit on top of server/ (and reach environments through the registry); nothing
    below them imports them, only the CLI does."""
    import ast

    package = Path(launch.__file__).resolve().parents[2]
    for path in package.rglob("*.py"):
        rel = path.relative_to(package).parts
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        ours = {n.split(".")[1] for n in names if n.startswith("officegym.") and n.count(".") >= 1}
        if rel[0] == "integrations":
            assert ours <= {"integrations", "server", "core"}, (path, ours)
        elif rel[0] != "cli":
            assert "integrations" not in ours, path


def test_a_public_bind_with_the_public_secret_is_served_with_a_warning(ng, small_world, capsys, monkeypatch):
    """Issue 47 N9: NeMo Gym's own servers sign with the same public string, so the launcher's
    configuration is served as before (a drop-in), with a warning naming the setting to change."""
    from officegym.server import serve as serve_module

    started = []
    monkeypatch.setattr(serve_module, "run_server", lambda env, config: started.append(config))
    monkeypatch.delenv("OFFICEGYM_SERVER_SECRET", raising=False)
    config = ng.configured(small_world[0])
    ng.server_block(config)["host"] = "0.0.0.0"
    assert launch.main(ng.launcher_env(config)) == 0 and started
    assert "secret_key" in capsys.readouterr().err
    ng.server_block(config)["secret_key"] = "s3cret"
    assert launch.main(ng.launcher_env(config)) == 0
    assert "warning" not in capsys.readouterr().err
