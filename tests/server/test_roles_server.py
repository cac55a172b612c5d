"""Role environments over HTTP: sessions seeded from the task row, tools, verify, and serve --env."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from officegym.agent.baseline_policy import make_baseline_policy
from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.scripted import OraclePolicy
from officegym.cli import app as cli_app
from officegym.core import registry
from officegym.server.app import create_app
from officegym.server.client import EnvClient, RemoteEnvironment
from officegym.server.config import ServeConfig
from officegym.server.serve import ServeError, build_environment, make_app

ROLES = ("roles/cto", "roles/coo", "roles/reconcile", "roles/risk", "roles/cost", "roles/council")


@pytest.fixture(scope="module")
def cost_server(live_server):
    with live_server(make_app(build_environment("roles/cost"), ServeConfig())) as srv:
        yield srv


@pytest.fixture(scope="module")
def cost_tasks():
    return registry.make("roles/cost").generate_tasks(6, 21)


def test_seed_call_verify_gives_the_oracle_one(cost_server, cost_tasks):
    async def main():
        async with EnvClient(cost_server.url) as client:
            health = await client.health()
            assert health["environment"] == "roles/cost" and "/" not in health["cookie"]
            assert set(health["write_tools"]) == {"submit_plan", "escalate"}
            out = []
            for task in cost_tasks:
                session = await client.seed_session(task)
                results = [await session.execute(c.name, c.arguments) for c in task.ground_truth]
                assert [r.status for r in results] == ["ok"] * len(results)
                assert "Answer recorded" in results[-1].text
                again = await session.execute(task.ground_truth[-1].name, task.ground_truth[-1].arguments)
                assert again.status == "rejected"  # the first answer is final, server-side too
                answer = await client.verify(task, calls=task.ground_truth, session=session)
                out.append(answer)
            return out

    answers = asyncio.run(main())
    assert [a["reward"] for a in answers] == [1.0] * len(cost_tasks)
    assert all(a["officegym"]["verdict"]["graded"] and a["officegym"]["verdict"]["role"] == "cost" for a in answers)


def test_tool_outputs_over_http_equal_in_process(cost_server, cost_tasks):
    env = registry.make("roles/cost")
    task = cost_tasks[1]

    async def remote():
        async with EnvClient(cost_server.url) as client:
            session = await client.seed_session(task)
            return [await session.call(c.name, c.arguments) for c in task.ground_truth[:-1]]

    local = env.session(task)
    assert asyncio.run(remote()) == [local.call(c.name, c.arguments) for c in task.ground_truth[:-1]]


@pytest.mark.parametrize("name", ROLES)
def test_rollouts_through_a_remote_role_environment_equal_in_process(live_server, name):
    env = registry.make(name)
    tasks = env.generate_tasks(4, 8)

    policies = (OraclePolicy(), make_baseline_policy("greedy"))

    async def remote(url):
        async with RemoteEnvironment(url) as remote_env:
            return [await run_rollouts(remote_env, [(t, 0) for t in tasks], p, LoopConfig()) for p in policies]

    def outputs(trajs):
        return [[(e.output, e.status) for turn in t.turns for e in turn.executions] for t in trajs]

    with live_server(create_app(registry.make(name))) as srv:
        remote_runs = asyncio.run(remote(srv.url))
    for policy, there in zip(policies, remote_runs):
        here = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], policy, LoopConfig()))
        assert [t.reward for t in there] == [t.reward for t in here]
        assert outputs(there) == outputs(here)
        if policy.name == "oracle":
            assert [t.reward for t in there] == [1.0] * len(tasks)


def test_seeding_needs_a_row_that_names_a_scenario(cost_server, cost_tasks):
    import httpx

    with httpx.Client(base_url=cost_server.url) as http:
        empty = http.post("/seed_session", json={})
        assert empty.status_code == 422 and "seeded with the task row" in empty.json()["detail"]
        row = cost_tasks[0].to_row()
        del row["scenario"]
        no_scenario = http.post("/seed_session", json=row)
        assert no_scenario.status_code == 422 and "no scenario metadata" in no_scenario.json()["detail"]
        other_role = registry.make("roles/cto").generate_tasks(1, 0)[0].to_row()
        wrong = http.post("/seed_session", json=other_role)
        assert wrong.status_code == 422 and "not 'cost'" in wrong.json()["detail"]
        bad_params = http.post("/seed_session", json={"responses_create_params": {"input": 5}})
        assert bad_params.status_code == 422
        # a failed seed leaves no session behind: tools answer as unseeded
        assert http.post("/get_usage_report", json={}).status_code == 400


def test_build_environment_and_serve_settings():
    assert build_environment("roles/risk").name == "roles/risk"
    with pytest.raises(ServeError, match="takes no world"):
        build_environment("roles/risk", world="/some/world")
    with pytest.raises(ServeError, match="unknown verification mode"):
        build_environment("roles/cost", mode="outcome")
    with pytest.raises(ServeError, match="unknown verification mode"):
        make_app(build_environment("roles/cost"), ServeConfig(mode="outcome"))
    assert make_app(build_environment("roles/cost", mode="exact"), ServeConfig(mode="exact")) is not None
    with pytest.raises(ServeError, match="unknown environment"):
        build_environment("roles/nope")

    runner = CliRunner()
    res = runner.invoke(cli_app, ["serve", "--env", "roles/cost", "--world", "/x"])
    assert res.exit_code == 2 and "takes no world" in res.output
    res = runner.invoke(cli_app, ["serve", "--env", "roles/cost", "--mode", "nemo_gym"])
    assert res.exit_code == 2 and "unknown verification mode" in res.output


def test_officegym_serve_env_roles_cost_end_to_end(cost_tasks):
    """The real command in a subprocess: seed with a row, call the tools, verify: the oracle gets 1.0."""
    import os
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "officegym.cli", "serve", "--env", "roles/cost", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"

    async def main():
        async with EnvClient(url, connect_retries=0) as client:
            deadline = time.time() + 30
            while True:
                try:
                    health = await client.health()
                    break
                except Exception:
                    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
                    assert time.time() < deadline, "the server did not start"
                    await asyncio.sleep(0.1)
            assert health["environment"] == "roles/cost" and health["world"] is None
            rewards = []
            for task in cost_tasks[:3]:
                session = await client.seed_session(task)
                for call in task.ground_truth:
                    assert (await session.execute(call.name, call.arguments)).status == "ok"
                rewards.append((await client.verify(task, calls=task.ground_truth, session=session))["reward"])
            return rewards

    try:
        assert asyncio.run(main()) == [1.0, 1.0, 1.0]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
