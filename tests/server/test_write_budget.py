"""No write the reference performs is refused by default: memory is bounded by the bytes sessions
hold (one session's, the whole store's), not by counting a session's writes (issue 47 item 4)."""

from __future__ import annotations

from dataclasses import asdict

from fastapi.testclient import TestClient

from officegym.server import config
from officegym.server.app import STATUS_HEADER, create_app
from officegym.server.limits import Seeded, WriteLimits

SEND = "email_send_email"


def seeded(app) -> TestClient:
    c = TestClient(app)
    assert c.post("/seed_session", json={}).status_code == 200
    return c


def test_no_count_or_argument_budget_by_default(tiny_env):
    assert config.DEFAULT_MAX_SESSION_WRITES is None and config.DEFAULT_MAX_SESSION_WRITE_BYTES is None
    health = TestClient(create_app(tiny_env)).get("/health").json()
    assert health["max_session_writes"] is None and health["max_session_write_bytes"] is None
    assert health["max_session_bytes"] == config.DEFAULT_MAX_SESSION_BYTES
    assert health["max_store_bytes"] == config.DEFAULT_MAX_STORE_BYTES


def test_a_session_of_many_writes_succeeds(tiny_env):
    """1,050 writes in one session: past the 1,000 the count budget allowed, far past the 128 of before."""
    c = seeded(create_app(tiny_env))
    statuses = set()
    for i in range(1050):
        if i % 3 == 0:
            r = c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": f"s{i}", "body": "x" * 100})
        elif i % 3 == 1:
            r = c.post("/calendar_update_event", json={"event_id": "00000000", "field": "event_name", "new_value": f"n{i}"})
        else:
            r = c.post("/customer_relationship_manager_update_customer",
                       json={"customer_id": "00000000", "field": "notes", "new_value": f"note {i}"})
        statuses.add(r.headers[STATUS_HEADER])
    assert statuses == {"ok"}
    assert c.post("/email_search_emails", json={"query": "s1047"}).json()["output"]["pagination"]["total_emails"] == 1
    health = TestClient(c.app).get("/health").json()
    assert health["requests"].get("writes_refused", 0) == 0


def test_the_store_wide_byte_bound_still_protects_memory_and_says_why(tiny_env):
    app = create_app(tiny_env, max_store_bytes=300_000)
    first, second = seeded(app), seeded(app)
    assert first.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s", "body": "x" * 200_000}).headers[STATUS_HEADER] == "ok"
    assert second.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s", "body": "x" * 150_000}).headers[STATUS_HEADER] == "ok"
    r = second.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "zebra", "body": "b"})
    assert r.status_code == 200 and r.headers[STATUS_HEADER] == "error"
    assert r.json()["output"] == (f"Error executing tool '{SEND}': the server's sessions hold their maximum of 300000 "
                                  "bytes of data and every one is in use. The call was not run.")
    assert second.post("/email_search_emails", json={"query": "zebra"}).json() == {"output": "No emails found."}  # not run
    assert first.post("/email_search_emails", json={"query": "s"}).headers[STATUS_HEADER] == "ok"  # reads go on
    assert seeded(app).post("/email_search_emails", json={}).status_code == 200  # a new session still starts
    assert TestClient(app).get("/health").json()["sessions"]["bytes"] < 450_000


def test_an_operator_may_still_count_writes():
    limits = WriteLimits(max_writes=2, max_bytes=None, write_tools=frozenset({SEND}))
    s = Seeded(session=None, writes=2)
    assert "(2 writes;" in limits.refusal(s, SEND, 10)
    assert limits.refusal(s, "email_search_emails", 10) is None
    assert WriteLimits(None, None, frozenset({SEND})).refusal(Seeded(None, writes=10**6, write_bytes=10**9), SEND, 10) is None
    only_bytes = WriteLimits(None, 100, frozenset({SEND})).refusal(Seeded(None, write_bytes=95), SEND, 10)
    assert "(100 bytes of write arguments;" in only_bytes


def test_the_launcher_and_the_cli_leave_the_counts_off(tiny_world_dir, monkeypatch):
    from typer.testing import CliRunner

    from officegym.cli import app
    from officegym.integrations.nemo_gym.launch import ServerSettings
    from officegym.server import serve

    settings = ServerSettings.model_validate({"host": "h", "port": 1})
    assert settings.max_session_writes is None and settings.max_session_write_bytes is None
    seen = {}
    monkeypatch.setattr(serve, "run_server", lambda env, cfg: seen.update(asdict(cfg)))
    result = CliRunner().invoke(app, ["serve", "--world", str(tiny_world_dir)])
    assert result.exit_code == 0, result.output
    assert seen["max_session_writes"] is None and seen["max_session_write_bytes"] is None
    result = CliRunner().invoke(app, ["serve", "--world", str(tiny_world_dir), "--max-session-writes", "5"])
    assert seen["max_session_writes"] == 5
