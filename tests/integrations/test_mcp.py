"""`officegym mcp`: one task's session over MCP, driven by the official SDK's own client, in process,
over stdio (the command as a subprocess) and over streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters

from officegym.cli import app
from officegym.core import registry
from officegym.core.task import read_tasks
from officegym.integrations.mcp_server import build_server
from officegym.integrations.task_session import TaskSession, pick_task

runner = CliRunner()
WRITE = ("email_send_email", {"recipient": "nobody@example.com", "subject": "x", "body": "y"})


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A small generated world, its tasks, and the index of a task whose answer writes."""
    root = tmp_path_factory.mktemp("mcp")
    world, out = root / "world", root / "tasks"
    assert runner.invoke(app, ["generate", "world", "--seed", "3", "--size", "small", "--out", str(world)]).exit_code == 0
    res = runner.invoke(app, ["generate", "tasks", "--world", str(world), "--n", "60", "--out", str(out)])
    assert res.exit_code == 0, res.output
    path = out / "train.jsonl"
    tasks = read_tasks(path)
    writes = registry.write_tools("workplace_assistant")
    index = next(i for i, t in enumerate(tasks)
                 if any(c.name in writes for c in t.ground_truth) and all(c.name != WRITE[0] for c in t.ground_truth))
    return world, path, tasks, index


def _session(made) -> TaskSession:
    world, _, tasks, index = made
    return TaskSession(registry.make("workplace", world=world), tasks[index])


async def _play(client, calls) -> dict:
    names = {t.name for t in (await client.list_tools()).tools}
    assert "submit" in names
    for name, arguments in calls:
        assert name in names
        result = await client.call_tool(name, arguments)
        assert not result.is_error, result.content[0].text
    submitted = await client.call_tool("submit", {})
    assert not submitted.is_error
    assert json.loads(submitted.content[0].text) == submitted.structured_content
    return submitted.structured_content


def _truth(made):
    _, _, tasks, index = made
    return [(c.name, c.arguments) for c in tasks[index].ground_truth]


def test_replaying_the_ground_truth_in_process_scores_1_and_a_wrong_write_0(made):
    async def run():
        async with Client(build_server(_session(made))) as client:
            good = await _play(client, _truth(made))
        async with Client(build_server(_session(made))) as client:
            bad = await _play(client, [*_truth(made), WRITE])
        return good, bad

    good, bad = asyncio.run(run())
    assert good["reward"] == 1.0 and good["matched"] and good["calls"] == len(_truth(made))
    assert bad["reward"] == 0.0 and bad["side_effects"] and bad["diff"]


def test_the_tools_answer_as_officegyms_loop_does_and_bad_calls_are_tool_errors(made):
    ts = _session(made)
    direct = registry.make("workplace", world=made[0]).session().execute(*_truth(made)[0]).text

    async def run():
        async with Client(build_server(ts)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            first = await client.call_tool(*_truth(made)[0])
            unknown = await client.call_tool("no_such_tool", {"a": 1})
            bad_args = await client.call_tool("email_send_email", {"recipient": 3})
            prompt = await client.get_prompt("task")
            resource = await client.read_resource("officegym://task")
            return listed, first, unknown, bad_args, prompt, resource

    listed, first, unknown, bad_args, prompt, resource = asyncio.run(run())
    assert set(listed) == {*ts.tool_names, "submit"}
    spec = ts.specs[0]
    assert listed[spec.name].input_schema == spec.parameters and listed[spec.name].description == spec.description
    assert first.content[0].text == direct
    assert unknown.is_error and "no_such_tool" in unknown.content[0].text
    assert bad_args.is_error and "not provided" in bad_args.content[0].text  # the reference's own refusal
    assert bad_args.meta["officegym/status"] == "rejected" and unknown.meta["officegym/status"] == "error"
    assert prompt.messages[0].content.text == ts.task.user_prompt
    assert json.loads(resource.contents[0].text)["id"] == ts.task.id
    assert len(ts.calls) == 3  # every call is recorded for the verdict, failed ones too


def test_after_submit_the_session_is_closed_and_the_verdict_stays():
    tasks = registry.make("roles/cto").generate_tasks(2, seed=5)
    ts = TaskSession(registry.make("roles/cto"), tasks[0])

    async def run():
        async with Client(build_server(ts)) as client:
            first = await client.call_tool("submit", {})
            call = await client.call_tool(ts.tool_names[0], {})
            again = await client.call_tool("submit", {})
            return first, call, again

    first, call, again = asyncio.run(run())
    assert first.structured_content == again.structured_content
    assert first.structured_content["reward"] == 0.0  # nothing submitted: no answer
    assert call.is_error and "already submitted" in call.content[0].text


def test_pick_task_says_what_is_wrong():
    tasks = registry.make("roles/cto").generate_tasks(2, seed=5)
    assert pick_task(tasks, task_id=str(tasks[1].id)) is tasks[1]
    for kwargs, words in (({"index": 2}, "out of range"), ({"task_id": "nope"}, "no task with id"),
                          ({"index": 0, "task_id": "x"}, "not both")):
        with pytest.raises(ValueError, match=words):
            pick_task(tasks, **kwargs)


def _cli(made, *extra) -> list[str]:
    world, path, _, index = made
    return [sys.executable, "-m", "officegym.cli", "mcp", "--tasks", str(path), "--index", str(index),
            "--world", str(world), *extra]


def test_the_command_serves_over_stdio(made):
    command = _cli(made)
    params = StdioServerParameters(command=command[0], args=command[1:], env={**os.environ, "OMP_NUM_THREADS": "1"})

    async def run():
        async with Client(params) as client:
            return await _play(client, _truth(made))

    assert asyncio.run(run())["reward"] == 1.0


def test_the_command_serves_streamable_http_on_localhost(made):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(_cli(made, "--http", str(port)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                time.sleep(0.2)

        async def run():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await _play(client, [*_truth(made), WRITE])

        assert asyncio.run(run())["reward"] == 0.0
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_bad_index_ends_the_command_with_one_line(made):
    world, path, tasks, _ = made
    res = runner.invoke(app, ["mcp", "--tasks", str(path), "--index", str(len(tasks)), "--world", str(world)])
    assert res.exit_code == 2 and "out of range" in res.output
