"""A full session store never aborts a collection (issue 47 item 1): sessions that crashed rollouts
left behind make room, least recently used first; only a store whose every session is in use refuses."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from fastapi.testclient import TestClient

from officegym.core.toolcalls import ToolCall
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.server.app import create_app
from officegym.server.client import EnvClient


async def _rollout(client: EnvClient, task) -> float:
    session = await client.seed_session(task)
    out = await client.execute(session, "email_search_emails", {"query": "Update"})
    assert out.status == "ok", out.text
    answer = await client.verify(task, calls=[ToolCall(c.name, c.arguments) for c in task.ground_truth], session=session)
    return answer["reward"]


def test_abandoned_sessions_make_room_and_every_later_rollout_succeeds(tiny_world, tiny_tasks, live_server, caplog):
    app = create_app(WorkplaceEnvironment(tiny_world), max_sessions=5, evict_idle_s=0.2)

    async def collect(url: str) -> list[float]:
        async with EnvClient(url, busy_wait_s=0) as client:  # no waiting out a 503: a refusal fails the test
            for _ in range(12):  # crashed rollouts: seeded, never verified nor closed
                session = await client.seed_session(tiny_tasks[0])
                await client.execute(session, "email_delete_email", {"email_id": "00000001"})
                await asyncio.sleep(0.25)
            rewards = []
            for _ in range(3):  # as many rollouts at once as the store holds
                rewards += await asyncio.gather(*(_rollout(client, t) for t in tiny_tasks))
            return rewards

    with caplog.at_level(logging.WARNING, logger="officegym.server.routes"), live_server(app) as srv:
        rewards = asyncio.run(collect(srv.url))
        health = TestClient(app).get("/health").json()
    assert rewards == [1.0] * 15
    assert health["sessions"]["evicted_idle"] == 7 + 5 and health["sessions"]["refused"] == 0
    assert health["evict_idle_s"] == 0.2
    assert any("evicted sessions idle for 0.2 s" in r.getMessage() for r in caplog.records)


def test_only_a_store_of_sessions_in_use_refuses_and_says_why(tiny_env):
    app = create_app(tiny_env, max_sessions=2, evict_idle_s=30)
    busy = [TestClient(app) for _ in range(2)]
    for c in busy:
        assert c.post("/seed_session", json={}).status_code == 200
    r = TestClient(app).post("/seed_session", json={})
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert "every one of them was used in the last 30 s" in r.json()["detail"]
    assert "--max-sessions" in r.json()["detail"]
    assert [c.post("/email_search_emails", json={}).status_code for c in busy] == [200, 200]  # nobody evicted


def test_a_session_in_use_keeps_its_state_while_idle_ones_go(tiny_env):
    now = [0.0]
    app = create_app(tiny_env, max_sessions=2, evict_idle_s=60, clock=lambda: now[0])
    idle, busy = TestClient(app), TestClient(app)
    idle.post("/seed_session", json={})
    busy.post("/seed_session", json={})
    busy.post("/email_delete_email", json={"email_id": "00000001"})
    now[0] = 59
    busy.post("/email_search_emails", json={})
    now[0] = 61  # idle last used at 0, busy at 59
    assert TestClient(app).post("/seed_session", json={}).status_code == 200
    assert idle.post("/email_search_emails", json={}).status_code == 400  # evicted
    gone = busy.post("/email_get_email_information_by_id", json={"email_id": "00000001", "field": "subject"})
    assert gone.json() == {"output": "Email not found."}  # its deletion is still there


def test_nemo_gym_client_collects_past_abandoned_sessions(tiny_world, tiny_tasks, live_server):
    server_utils = pytest.importorskip("nemo_gym.server_utils")
    aiohttp = pytest.importorskip("aiohttp")
    app = create_app(WorkplaceEnvironment(tiny_world), max_sessions=3, evict_idle_s=0.2)

    async def collect(url: str) -> list[float]:
        rewards = []
        async with aiohttp.ClientSession() as http:
            for _ in range(6):  # abandoned
                async with http.post(f"{url}/seed_session", json={}) as r:
                    await server_utils.raise_for_status(r)
            await asyncio.sleep(0.3)
            for task in tiny_tasks:
                async with aiohttp.ClientSession() as own:  # one cookie jar per rollout, as NeMo Gym's agent
                    async with own.post(f"{url}/seed_session", json=task.to_row()) as r:
                        await server_utils.raise_for_status(r)
                    row = task.to_row()
                    row["response"] = {"output": [dict(c.to_function_call(), call_id=f"c{i}")
                                                  for i, c in enumerate(task.ground_truth)]}
                    async with own.post(f"{url}/verify", json=row) as r:
                        await server_utils.raise_for_status(r)
                        rewards.append((await r.json())["reward"])
        return rewards

    with live_server(app) as srv:
        started = time.monotonic()
        assert asyncio.run(collect(srv.url)) == [1.0] * len(tiny_tasks)
        assert time.monotonic() - started < 30
