"""Fixtures for the server tests: apps over the tiny world, a real uvicorn on 127.0.0.1, tasks."""

from __future__ import annotations

import json
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")

from officegym.core.task import Task
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.server.app import create_app

SYSTEM = "Today's date is Thursday, 2023-11-30 and the current time is 23:59:00. Remember the current date and time when answering queries."


def tiny_task(task_id, prompt: str, ground_truth: list[tuple[str, dict]], category: str = "workplace_assistant_email") -> Task:
    return Task.from_row({
        "id": task_id,
        "responses_create_params": {
            "input": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            "tools": [s.to_schema() for s in TOOL_SPECS],
            "parallel_tool_calls": False,
            "temperature": 1.0,
        },
        "ground_truth": [{"name": n, "arguments": json.dumps(a)} for n, a in ground_truth],
        "category": category,
        "environment_name": "workplace_assistant",
    })


TINY_TASKS = [
    tiny_task(0, "Reply to Bo's last e-mail with 'Thanks'.", [("email_reply_email", {"email_id": "00000001", "body": "Thanks"})]),
    tiny_task(1, "Delete the customer Fay Hunt.", [("customer_relationship_manager_delete_customer", {"customer_id": "00000002"})],
              "workplace_assistant_customer_relationship_manager"),
    tiny_task(2, "Move 'Design logo' to In Review.",
              [("project_management_update_task", {"task_id": "00000001", "field": "list_name", "new_value": "In Review"})],
              "workplace_assistant_project_management"),
    tiny_task(3, "How many visits were there on 2023-11-28?", [], "workplace_assistant_analytics"),
    tiny_task(4, "Book a 30 minute sync with Ana tomorrow at 10 and mark Dana Fox as qualified.", [
        ("calendar_create_event", {"event_name": "sync", "participant_email": "ana.lee@acme.com",
                                   "event_start": "2023-12-01 10:00:00", "duration": "30"}),
        ("customer_relationship_manager_update_customer", {"customer_id": "00000000", "field": "status", "new_value": "Qualified"}),
    ], "workplace_assistant_calendar"),
]


@pytest.fixture(scope="session")
def tiny_env(tiny_world):
    return WorkplaceEnvironment(tiny_world)


@pytest.fixture
def tiny_app(tiny_env):
    return create_app(tiny_env)


@pytest.fixture(scope="session")
def tiny_tasks():
    return TINY_TASKS


class LiveServer:
    """A real uvicorn serving `app` on 127.0.0.1 at a free port (chosen by the OS), in a daemon thread."""

    def __init__(self, app):
        import uvicorn

        self.app = app
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on", timeout_keep_alive=30)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.port = 0
        self.url = ""

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.time() + 10
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def live_server():
    """LiveServer(app): a context manager serving app on 127.0.0.1 (yields .url)."""
    return LiveServer


@pytest.fixture(scope="session")
def make_tiny_task():
    return tiny_task


@pytest.fixture(scope="module")
def live_tiny(tiny_world):
    """A server over the tiny world, shared by a module's tests (sessions never cross anyway)."""
    with LiveServer(create_app(WorkplaceEnvironment(tiny_world))) as srv:
        yield srv


@pytest.fixture(scope="session")
def fake_openai(fake_openai_module):
    return fake_openai_module
