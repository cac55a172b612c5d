"""officegym's resources server through the nemo-gym package itself: NeMo Gym's config loader finds
it by name on an extra search root, its launcher code starts it, and NeMo Gym's own simple agent
runs episodes against it (seed, tool calls, verify) with a scripted model.

What differs from `gym env start`: each server runs on this interpreter (which has nemo-gym and
officegym's dependencies) instead of the uv venv the launcher would build first, no Ray cluster is
started (neither server uses Ray), and no head server runs (the servers read the configuration
from NEMO_GYM_CONFIG_DICT, as launched servers do). Skipped unless nemo-gym imports, which needs
the Python its wheel asks for (>= 3.13)."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from officegym.integrations import nemo_gym

pytestmark = [
    pytest.mark.skipif(sys.version_info < (3, 13), reason=(
        f"nemo-gym asks for Python >= 3.13 (0.7.0: >= 3.13.14); this is {sys.version.split()[0]}")),
    pytest.mark.skipif(sys.version_info >= (3, 13) and importlib.util.find_spec("nemo_gym") is None,
                       reason="nemo-gym is not installed (pip install nemo-gym)"),
]

AGENT = nemo_gym.AGENT_INSTANCE_NAME
INSTANCE = nemo_gym.INSTANCE_NAME


@pytest.fixture(autouse=True)
def _restore_environment():
    """nemo_gym sets variables of this process (HF_HOME, UV_CACHE_DIR, ...) when imported and parsing."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def parse(extra_roots: str, overrides: dict):
    """The merged, validated configuration, as `gym env start` builds it before starting anything."""
    from nemo_gym.global_config import GlobalConfigDictParser, GlobalConfigDictParserConfig
    from omegaconf import OmegaConf

    os.environ["NEMO_GYM_EXTRA_ROOTS"] = extra_roots
    return GlobalConfigDictParser().parse(GlobalConfigDictParserConfig(
        initial_global_config_dict=OmegaConf.create(overrides), skip_load_from_cli=True, skip_load_from_dotenv=True))


def model_overrides(world: Path, model_port: int) -> dict:
    """The shipped config plus NeMo Gym's OpenAI model server config, as a user composes them; the
    model's address is pinned to the scripted model of the test (the model server itself is not run)."""
    return {
        "config_paths": [nemo_gym.config_relpath(), "responses_api_models/openai_model/configs/openai_model.yaml"],
        "policy_base_url": f"http://127.0.0.1:{model_port}/v1", "policy_api_key": "unused",
        "policy_model_name": "scripted",
        "policy_model": {"responses_api_models": {"openai_model": {"host": "127.0.0.1", "port": model_port}}},
        INSTANCE: {"resources_servers": {nemo_gym.SERVER_NAME: {"world": str(world)}}},
    }


def test_nemo_gyms_config_loader_finds_officegym_by_name(small_world, tmp_path):
    from nemo_gym.cli.env import _resolve_server_dir, _server_launch_command
    from nemo_gym.cli.main import _asset_config_path

    os.environ["NEMO_GYM_EXTRA_ROOTS"] = str(nemo_gym.root())
    # `gym env start --resources-server officegym_workplace_assistant` resolves to the shipped config
    assert Path(_asset_config_path("resources-server", nemo_gym.SERVER_NAME)) == nemo_gym.config_path().resolve()

    cfg = parse(str(nemo_gym.root()), model_overrides(small_world[0], 9))
    block = cfg[INSTANCE]["resources_servers"][nemo_gym.SERVER_NAME]
    assert block.mode == "nemo_gym" and block.entrypoint == "app.py"
    assert block.host == "127.0.0.1" and cfg.port_range_low <= block.port <= cfg.port_range_high  # NeMo Gym chose them
    assert cfg[AGENT]["responses_api_agents"]["simple_agent"]["resources_server"]["name"] == INSTANCE
    # the server folder the launcher starts `app.py` in, with the venv interpreter it would build there
    folder = _resolve_server_dir(Path("resources_servers", nemo_gym.SERVER_NAME))
    assert folder.resolve() == nemo_gym.server_dir().resolve()
    command = _server_launch_command(folder, cfg, INSTANCE, Path(block.entrypoint))
    assert command.rstrip().endswith("/bin/python app.py")
    assert f"cd {shlex.quote(str(folder))}" in command


class ScriptedModel:
    """A Responses-API model on 127.0.0.1: its first answer makes the calls the task's prompt names
    (by script name), its next one ends the episode with a message."""

    def __init__(self, scripts: dict[str, list[dict]]):
        import uvicorn
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        self.scripts, self.requests = scripts, []

        async def responses(request: Request):
            body = await request.json()
            self.requests.append(body)
            items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
            prompt = next(i["content"] for i in items if i.get("role") == "user")
            done = any(i.get("type") == "function_call_output" for i in items)
            calls = [] if done else self.scripts[prompt.split("script:")[1].strip()]
            output = [{"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "status": "completed",
                       "name": c["name"], "arguments": c["arguments"]} for n, c in enumerate(calls)]
            if not calls:
                output = [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}]
            return JSONResponse({"id": f"resp_{len(self.requests)}", "object": "response", "created_at": 0,
                                 "model": body.get("model") or "scripted", "output": output,
                                 "parallel_tool_calls": False, "tool_choice": "auto", "tools": body.get("tools", []),
                                 "status": "completed"})

        app = Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the scripted model did not start"
            time.sleep(0.05)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start(cfg, instance: str, folder: Path, log: Path):
    """Start one server the way the launcher does (nemo_gym.cli.setup_command.run_command, its
    environment variables), on this interpreter."""
    from nemo_gym.cli.setup_command import run_command
    from nemo_gym.global_config import NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME, NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME
    from omegaconf import OmegaConf

    block = next(iter(next(iter(cfg[instance].values())).values()))
    handle = open(log, "w")  # noqa: SIM115  (closed with the process)
    command = f"cd {shlex.quote(str(folder))} && exec {shlex.quote(sys.executable)} {shlex.quote(block.entrypoint)}"
    proc = run_command(command, folder,
                       server_name=instance, global_config_dict=cfg, stdout_target=handle, stderr_target=handle,
                       extra_env={NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME: OmegaConf.to_yaml(cfg),
                                  NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME: instance})
    proc.log, proc.handle = log, handle
    return proc


def wait_ready(client, procs, names, timeout=120.0):
    """NeMo Gym's readiness check (ServerClient.poll_for_status) for every server."""
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending:
        for proc in procs:
            assert proc.poll() is None, f"{proc.log.name} exited:\n{proc.log.read_text()[-3000:]}"
        pending = [n for n in pending if client.poll_for_status(n, timeout_seconds=2) != "success"]
        assert time.monotonic() < deadline, f"not ready: {pending}"
        time.sleep(0.3)


def test_nemo_gyms_simple_agent_runs_episodes_against_officegym(small_world, ng, tmp_path):
    import httpx
    from nemo_gym.cli.env import _resolve_server_dir
    from nemo_gym.config_types import BaseServerConfig
    from nemo_gym.server_utils import ServerClient

    folder, world = small_world
    truth, swapped = ng.quirk_calls(world)
    with ScriptedModel({"truth": truth, "swapped": swapped, "nothing": []}) as model:
        cfg = parse(str(nemo_gym.root()), model_overrides(folder, model.port))
        client = ServerClient(head_server_config=BaseServerConfig(**cfg.head_server), global_config_dict=cfg)
        ours = start(cfg, INSTANCE, _resolve_server_dir(Path("resources_servers", nemo_gym.SERVER_NAME)),
                     tmp_path / "resources.log")
        agent = start(cfg, AGENT, _resolve_server_dir(Path("responses_api_agents", "simple_agent")),
                      tmp_path / "agent.log")
        try:
            wait_ready(client, [ours, agent], [INSTANCE, AGENT])
            block = cfg[AGENT]["responses_api_agents"]["simple_agent"]
            rewards = {}
            for script in ("truth", "swapped", "nothing"):
                row = ng.verify_row(f"task-{script}", truth, [])
                row["responses_create_params"] = {"input": [{"role": "user", "content": f"Tidy up. script: {script}"}],
                                                  "tools": [], "parallel_tool_calls": False}
                del row["response"]
                answer = httpx.post(f"http://{block.host}:{block.port}/run", json=row, timeout=120)
                assert answer.status_code == 200, answer.text[:2000]
                body = answer.json()
                rewards[script] = body["reward"]
                made = [(o["name"], json.loads(o["arguments"])) for o in body["response"]["output"]
                        if o["type"] == "function_call"]
                scripted = {"truth": truth, "swapped": swapped, "nothing": []}[script]
                assert made == [(c["name"], json.loads(c["arguments"])) for c in scripted]
                if script != "nothing":  # the tools ran in officegym's session and their answers reached the model
                    outputs = [i for i in model.requests[-1]["input"] if i.get("type") == "function_call_output"]
                    assert [json.loads(o["output"]) for o in outputs] == [
                        {"output": "Email deleted successfully."} if name == "email_delete_email"
                        else {"output": "Email sent successfully."} for name, _ in made]
            # nemo_gym mode (the shipped default): the swapped order loses the reward, as in NeMo Gym's own server
            assert rewards == {"truth": 1.0, "swapped": 0.0, "nothing": 0.0}
        finally:
            codes = {}
            for proc in (agent, ours):  # the launcher's shutdown: SIGINT, then a wait
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
                try:
                    codes[proc.log.name] = proc.wait(timeout=20)
                except Exception:
                    proc.kill()
                    codes[proc.log.name] = proc.wait(timeout=10)
                proc.handle.close()
    assert codes["resources.log"] == 0, (tmp_path / "resources.log").read_text()[-3000:]
    assert "mode nemo_gym" in (tmp_path / "resources.log").read_text()
