"""What the NeMo Gym launcher tests share: a small world on disk, a free loopback port, and the
protocol exchange a NeMo Gym agent has with a resources server (seed, tool call, verify)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from types import SimpleNamespace

import pytest
import yaml

from officegym.integrations import nemo_gym

SERVER_BLOCK = ("workplace_assistant", "resources_servers", "officegym_workplace_assistant")


@pytest.fixture(scope="session")
def small_world(tmp_path_factory):
    """A generated world (seed 5, small) written in NeMo Gym's csv_data layout: (folder, world)."""
    from officegym.envs.workplace.generate.world import generate_world
    from officegym.envs.workplace.generate.writer import write_world

    world = generate_world(5, "small")
    return write_world(world, tmp_path_factory.mktemp("world") / "csv_data"), world


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shipped_config() -> dict:
    return yaml.safe_load(nemo_gym.config_path().read_text(encoding="utf-8"))


def server_block(config: dict) -> dict:
    return config[SERVER_BLOCK[0]][SERVER_BLOCK[1]][SERVER_BLOCK[2]]


def launcher_env(config: dict, name: str = "workplace_assistant", **extra: str) -> dict[str, str]:
    """The two variables NeMo Gym's launcher sets for a server process (and any `extra` ones)."""
    return {"NEMO_GYM_CONFIG_DICT": yaml.safe_dump(config), "NEMO_GYM_CONFIG_PATH": name, **extra}


def configured(world=None, port: int | None = None, **settings) -> dict:
    """The shipped config as the launcher hands it on: host and port filled in, as NeMo Gym fills them."""
    config = shipped_config()
    block = server_block(config)
    block.update(host="127.0.0.1", port=port or free_port(), **settings)
    if world is not None:
        block["world"] = str(world)
    config.update(head_server={"host": "127.0.0.1", "port": 11000}, dry_run=False)
    return config


def wait_until_up(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """What NeMo Gym's launcher waits for: a GET of the server's root that connects."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"the entrypoint exited with {proc.returncode} before serving:\n{out}")
        try:
            httpx.get(url + "/", timeout=2.0)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError(f"nothing answered at {url} within {timeout} s")


def stop(proc: subprocess.Popen, sig) -> int:
    """Stop the entrypoint as the launcher does (SIGINT) and return its exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": json.dumps(arguments)}


def verify_row(task_id: str, ground_truth: list[dict], predicted: list[dict]) -> dict:
    """A /verify body as NeMo Gym's simple agent posts it: the task row plus the episode's response."""
    output = [{"type": "function_call", "call_id": f"call_{i}", "name": c["name"], "arguments": c["arguments"],
               "id": f"fc_{i}", "status": "completed"} for i, c in enumerate(predicted)]
    output.append({"type": "message", "role": "assistant", "id": "msg_end", "status": "completed",
                   "content": [{"type": "output_text", "text": "Done.", "annotations": []}]})
    return {
        "id": task_id,
        "responses_create_params": {"input": [{"role": "user", "content": "tidy my mailbox"}]},
        "ground_truth": ground_truth,
        "category": "workplace_assistant_email",
        "environment_name": "workplace_assistant",
        "response": {"id": "resp_1", "object": "response", "created_at": 0, "model": "policy",
                     "output": output, "parallel_tool_calls": False, "tool_choice": "auto", "tools": []},
    }


def quirk_calls(world) -> tuple[list[dict], list[dict]]:
    """(ground truth, prediction): the same delete and send in swapped order. NeMo Gym's reward is
    0 (the e-mails' row labels differ), the outcome mode's 1: which one a server gives shows its mode."""
    email_id = world.tables["emails"][0][0]
    send = call("email_send_email", recipient=world.directory[1], subject="Agenda", body="See you at ten.")
    delete = call("email_delete_email", email_id=email_id)
    return [delete, send], [send, delete]


@pytest.fixture(scope="session")
def protocol_exchange():
    """check(base_url, world, cookie_name): a NeMo Gym agent's exchange with the server, checked."""
    import httpx

    def check(base_url: str, world, cookie_name: str) -> None:
        with httpx.Client(base_url=base_url, timeout=30.0) as client:
            seeded = client.post("/seed_session", json={"id": "t1"})
            assert seeded.status_code == 200 and seeded.json() == {}
            assert cookie_name in seeded.cookies, seeded.headers.get("set-cookie")
            # a tool call in the seeded session sees (and changes) that session's world
            first = world.tables["emails"][0]
            found = client.post("/email_search_emails", json={"query": first[3]})
            assert found.status_code == 200
            assert first[0] in json.dumps(found.json()), found.text[:300]
            deleted = client.post("/email_delete_email", json={"email_id": first[0]})
            assert deleted.json() == {"output": "Email deleted successfully."}, deleted.text
            assert client.post("/email_delete_email", json={"email_id": first[0]}).json() != deleted.json()

            truth, swapped = quirk_calls(world)
            assert client.post("/verify", json=verify_row("t1", truth, truth)).json()["reward"] == 1.0
            client.post("/seed_session", json={"id": "t2"})
            default = client.post("/verify", json=verify_row("t2", truth, swapped)).json()
            assert default["reward"] == 0.0, default  # nemo_gym mode: the reference's verdict
            client.post("/seed_session", json={"id": "t3"})
            outcome = client.post("/verify?mode=outcome", json=verify_row("t3", truth, swapped)).json()
            assert outcome["reward"] == 1.0, outcome
            wrong = verify_row("t4", truth, [truth[0]])  # only the delete: the e-mail was not sent
            assert client.post("/verify", json=wrong).json()["reward"] == 0.0
            assert client.get("/health").json()["mode"] == "nemo_gym"

    return check


@pytest.fixture(scope="session")
def ng():
    """The helpers above, for the test modules (conftest is not importable under importlib mode)."""
    return SimpleNamespace(free_port=free_port, shipped_config=shipped_config, server_block=server_block,
                           launcher_env=launcher_env, configured=configured, wait_until_up=wait_until_up,
                           stop=stop, call=call, verify_row=verify_row, quirk_calls=quirk_calls)
