"""A slow search pattern (issue 47 N1) holds neither the server's event loop nor other sessions."""

from __future__ import annotations

import threading
import time

import httpx

from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.patterns import MATCH_BUDGET_S
from officegym.server.app import create_app


def test_a_slow_pattern_does_not_hold_the_server(tiny_world, live_server):
    with live_server(create_app(WorkplaceEnvironment(tiny_world))) as srv:
        slow = httpx.Client(base_url=srv.url, timeout=30)
        assert slow.post("/seed_session", json={}).status_code == 200
        slow.post("/project_management_create_task", json={
            "task_name": "a" * 60 + "!", "assigned_to_email": "bo.kim@acme.com", "list_name": "Backlog",
            "due_date": "2023-12-01", "board": "Back end"})
        answers: list[str] = []

        def attack():
            for _ in range(4):
                answers.append(slow.post("/project_management_search_tasks", json={"task_name": "(a|aa)+$"}).text)

        thread = threading.Thread(target=attack)
        thread.start()
        waits = []
        with httpx.Client(base_url=srv.url, timeout=30) as probe:
            while thread.is_alive():
                started = time.monotonic()
                assert probe.get("/health").status_code == 200
                waits.append(time.monotonic() - started)
        thread.join()
        slow.close()
    assert len(answers) == 4 and all("took longer than" in a for a in answers)
    assert max(waits) < MATCH_BUDGET_S + 1.0
