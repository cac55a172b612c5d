"""Bounds on what a client can make the server hold or do, and answers that never break the
client: no 5xx from input, the keep-alive connection survives a refusal, sessions and requests
are bounded, heavy work leaves the event loop free, oversized bodies get answers NeMo Gym survives."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import httpx
import pytest
from fastapi.testclient import TestClient

from officegym.core.environment import EnvironmentWrapper
from officegym.core.toolcalls import parse_tool_call
from officegym.server.app import REFERENCE_COOKIE, STATUS_HEADER, create_app
from officegym.server.client import EnvClient


def seeded(app) -> TestClient:
    c = TestClient(app)
    assert c.post("/seed_session", json={}).status_code == 200
    return c


def verify_body(task, calls=None) -> dict:
    row = task.to_row()
    calls = task.ground_truth if calls is None else calls
    row["response"] = {"output": [dict(c.to_function_call(), call_id=f"c{i}") for i, c in enumerate(calls)]}
    return row


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def exchange(port: int, requests: list[tuple[str, str, bytes]]) -> list[tuple[int, dict, bytes]]:
    """Sends each (method, path, body) in turn over ONE HTTP/1.1 connection and returns every
    (status, headers, body); fails if the server closed the connection before the last answer."""
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        buffer = b""
        for method, path, body in requests:
            head = (f"{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(body)}\r\n\r\n").encode()
            sock.sendall(head + body)
            while b"\r\n\r\n" not in buffer:
                chunk = sock.recv(65536)
                assert chunk, f"the server closed the connection before answering {method} {path}"
                buffer += chunk
            raw_head, buffer = buffer.split(b"\r\n\r\n", 1)
            lines = raw_head.decode().split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            size = int(headers["content-length"])
            while len(buffer) < size:
                chunk = sock.recv(65536)
                assert chunk, "the server closed the connection mid-answer"
                buffer += chunk
            answers.append((int(lines[0].split()[1]), headers, buffer[:size]))
            buffer = buffer[size:]
    return answers


# -- A: no 5xx from client input, and the connection survives --------------------------------------


def test_metrics_overflow_is_a_422_or_a_score_and_the_connection_survives(live_tiny):
    port = int(live_tiny.url.rsplit(":", 1)[1])
    bodies = [
        {"verify_responses": [{"reward": 10**400}]},  # an integer no float can hold
        {"verify_responses": [{"reward": 1.7e308}, {"reward": -1.7e308}]},  # std beyond the float range
        {"verify_responses": [{"reward": 1e308}, {"reward": 1e308}]},  # the sum overflows, the mean does not
    ]
    requests = [("POST", "/aggregate_metrics", json.dumps(b).encode()) for b in bodies] + [("GET", "/", b"")]
    answers = exchange(port, requests)
    assert [status for status, _, _ in answers] == [422, 422, 200, 200]
    assert b"finite number" in answers[0][2] and b"an integer of 401 digits" in answers[0][2]
    assert b"leave the float range" in answers[1][2]
    assert json.loads(answers[2][2])["agent_metrics"]["mean/reward"] == 1e308


@pytest.mark.parametrize("depth", [300, 700])
def test_deeply_nested_ground_truth_gets_a_422_and_the_connection_survives(live_tiny, tiny_tasks, depth):
    port = int(live_tiny.url.rsplit(":", 1)[1])
    row = verify_body(tiny_tasks[0], calls=[])
    # written by hand: json.dumps itself gives up near 1000 levels
    inner = '{"a": ' * depth + "{}" + "}" * depth
    text = json.dumps({**row, "ground_truth": "GT"}).replace(
        '"GT"', '[{"name": "email_send_email", "arguments": {"recipient": "a@b.c", "x": ' + inner + "}}]")
    answers = exchange(port, [("POST", "/verify", text.encode()), ("GET", "/", b"")])
    assert answers[0][0] == 422 and b"nest at most 100 levels" in answers[0][2]
    assert answers[1][0] == 200


def test_deeply_nested_string_arguments_are_scored_as_the_reference_scores_them(live_tiny, tiny_tasks):
    port = int(live_tiny.url.rsplit(":", 1)[1])
    args = json.dumps({"recipient": "a@b.c", "subject": "s", "body": "b", "x": nested(300)})
    row = verify_body(tiny_tasks[3], calls=[])
    row["ground_truth"] = [{"name": "email_send_email", "arguments": args}]  # the reference's own format
    row["response"]["output"] = [{"type": "function_call", "name": "email_send_email", "arguments": args, "call_id": "c"}]
    answers = exchange(port, [("POST", "/verify", json.dumps(row).encode()), ("GET", "/", b"")])
    assert answers[0][0] == 200 and json.loads(answers[0][2])["reward"] == 1.0  # both calls fail alike: same state
    assert answers[1][0] == 200


def test_an_unexpected_failure_is_answered_without_dropping_the_connection(tiny_env, live_server):
    class Broken(EnvironmentWrapper):
        """The tiny environment whose verify has a bug."""

        def verify(self, *args):
            raise RuntimeError("a bug")

    with live_server(create_app(Broken(tiny_env))) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        row = json.dumps({"responses_create_params": {"input": "hi"}, "response": {"output": []}, "ground_truth": []})
        answers = exchange(port, [("POST", "/verify", row.encode()), ("GET", "/", b"")])
    assert answers[0][0] == 500 and json.loads(answers[0][2]) == {"detail": "internal error: RuntimeError"}
    assert answers[1][0] == 200


# -- B: bounded sessions and requests, a responsive event loop ---------------------------------------


SEND = "email_send_email"


def test_a_session_writes_at_most_so_many_calls_and_bytes(tiny_env, tiny_tasks):
    c = seeded(create_app(tiny_env, max_session_writes=3, max_session_write_bytes=2000))
    for i in range(3):
        r = c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": f"s{i}", "body": "b"})
        assert r.status_code == 200 and r.headers[STATUS_HEADER] == "ok"
    r = c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s3", "body": "b"})
    assert r.status_code == 200 and r.headers[STATUS_HEADER] == "error"
    out = r.json()["output"]
    assert out.startswith(f"Error executing tool '{SEND}': this session has reached its write limit") and "not run" in out
    assert c.post("/email_search_emails", json={"query": "s3"}).json() == {"output": "No emails found."}  # never ran
    assert c.post("/email_search_emails", json={"query": "s2"}).headers[STATUS_HEADER] == "ok"  # reads go on

    c = seeded(create_app(tiny_env, max_session_writes=100, max_session_write_bytes=2000))
    assert c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "big", "body": "x" * 1500}).headers[STATUS_HEADER] == "ok"
    r = c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "big2", "body": "x" * 1500})
    assert r.headers[STATUS_HEADER] == "error" and "write limit" in r.json()["output"]
    assert c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s", "body": "b"}).headers[STATUS_HEADER] == "ok"
    # refused and failed calls write nothing, so they count nothing
    assert c.post("/email_delete_email", json={"email_id": "nope"}).headers[STATUS_HEADER] == "rejected"
    assert TestClient(c.app).get("/health").json()["requests"]["writes_refused"] == 1


def test_the_defaults_refuse_no_write_of_normal_use(tiny_env):
    c = seeded(create_app(tiny_env))
    statuses = {c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": f"s{i}", "body": "x" * 2000}).headers[STATUS_HEADER]
                for i in range(300)}  # far more than an episode, which the old budget (128 writes, 64 KiB) refused
    assert statuses == {"ok"}
    assert c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "long", "body": "x" * 200_000}).headers[STATUS_HEADER] == "ok"
    health = TestClient(c.app).get("/health").json()
    assert health["max_session_writes"] is None and health["max_session_write_bytes"] is None  # no count, no argument budget
    assert health["max_session_bytes"] == 16 * 1024 * 1024 and health["max_store_bytes"] == 1024 ** 3
    assert 600_000 < health["sessions"]["bytes"] < 2_000_000  # 300 rows of 2 KB and one of 200 KB, weighed


def test_what_a_session_holds_is_bounded_in_bytes_not_by_its_requests(tiny_env):
    """Forwarding an e-mail stores "FW: " + its subject: tiny requests, big rows (issue 47 N2)."""
    c = seeded(create_app(tiny_env, max_session_bytes=1_000_000))
    c.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "x" * 50_000, "body": "b"})
    statuses = []
    for _ in range(40):  # the e-mail sent is "3" (send_email ids are not zero-padded)
        statuses.append(c.post("/email_forward_email", json={"email_id": "3", "recipient": "a@b.cd"}).headers[STATUS_HEADER])
    first_error = statuses.index("error")
    assert 15 <= first_error <= 20 and set(statuses[first_error:]) == {"error"}  # ~50 KB a forward, 1 MB a session
    r = c.post("/email_forward_email", json={"email_id": "3", "recipient": "a@b.cd"})
    assert "this session holds" in r.json()["output"] and "limit is 1000000" in r.json()["output"]
    assert c.post("/email_search_emails", json={"query": "b"}).headers[STATUS_HEADER] == "ok"  # reads go on
    assert TestClient(c.app).get("/health").json()["sessions"]["bytes"] < 1_100_000


def test_the_store_is_bounded_in_bytes_evicting_idle_sessions_first(tiny_env):
    now = [0.0]
    app = create_app(tiny_env, max_store_bytes=400_000, evict_idle_s=60, clock=lambda: now[0])
    idle, busy = seeded(app), seeded(app)
    idle.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s", "body": "x" * 250_000})
    now[0] = 30
    assert busy.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s", "body": "x" * 100_000}).headers[STATUS_HEADER] == "ok"
    assert busy.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s", "body": "x" * 100_000}).headers[STATUS_HEADER] == "ok"
    r = busy.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s", "body": "b"})  # 450 KB held, idle used 30 s ago
    assert r.headers[STATUS_HEADER] == "error" and "every one is in use" in r.json()["output"]
    now[0] = 61  # the first session idled past evict_idle_s: it makes room
    assert busy.post(f"/{SEND}", json={"recipient": "a@b.cd", "subject": "s", "body": "b"}).headers[STATUS_HEADER] == "ok"
    assert idle.post("/email_search_emails", json={}).status_code == 400
    sessions = TestClient(app).get("/health").json()["sessions"]
    assert sessions["evicted_idle"] == 1 and 200_000 < sessions["bytes"] < 400_000
    busy.post("/close_session", json={"resources_session_id": "x", "episode_id": {"rollout_id": "x", "attempt": 0}})
    assert TestClient(app).get("/health").json()["sessions"]["bytes"] == 0  # closing frees what it held


def test_verify_replays_at_most_max_verify_calls(tiny_env, tiny_tasks):
    read = parse_tool_call({"name": "email_search_emails", "arguments": '{"query": "Update"}'})
    c = TestClient(create_app(tiny_env))
    out = c.post("/verify", json=verify_body(tiny_tasks[3], calls=[read] * 1001)).json()  # reads only: would match
    assert out["reward"] == 0.0 and out["failure_kind"] == "officegym:too_many_calls"
    assert "1001 function calls" in out["failure_reason"] and "at most 1000" in out["officegym"]["refused"]
    assert c.post("/verify", json=verify_body(tiny_tasks[3], calls=[read] * 1000)).json()["reward"] == 1.0
    c = TestClient(create_app(tiny_env, max_verify_calls=2))
    row = verify_body(tiny_tasks[3], calls=[])
    row["ground_truth"] = [{"name": "email_search_emails", "arguments": "{}"}] * 3
    r = c.post("/verify", json=row)
    assert r.status_code == 422 and "ground truth has 3 calls" in r.json()["detail"]


def test_a_heavy_verify_leaves_the_event_loop_free(tiny_env, tiny_tasks, live_server):
    entered, release = threading.Event(), threading.Event()

    class Slow(EnvironmentWrapper):
        """The tiny environment whose verify waits until the test lets it go."""

        def verify(self, *args):
            entered.set()
            assert release.wait(30)
            return tiny_env.verify(*args)

    read = parse_tool_call({"name": "email_search_emails", "arguments": '{"query": "Update"}'})
    with live_server(create_app(Slow(tiny_env))) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        answer: list = []
        worker = threading.Thread(target=lambda: answer.append(
            httpx.post(srv.url + "/verify", json=verify_body(tiny_tasks[3], calls=[read] * 40), timeout=30)))
        worker.start()
        try:
            assert entered.wait(10)
            # the verify holds its thread; the loop must still answer others
            assert c.get("/", timeout=5).status_code == 200
            assert c.post("/seed_session", json={}, timeout=5).status_code == 200
        finally:
            release.set()
            worker.join(30)
    assert answer[0].status_code == 200 and answer[0].json()["reward"] == 1.0


def test_the_client_waits_out_a_full_server(tiny_env, tiny_tasks, live_server):
    async def main(url: str) -> None:
        async with EnvClient(url, busy_wait_s=10) as client:
            first = await client.seed_session(tiny_tasks[0])
            waiting = asyncio.ensure_future(client.seed_session(tiny_tasks[0]))
            await asyncio.sleep(0.3)
            assert not waiting.done()  # the server is full: the client waits instead of failing
            await first.aclose()
            second = await waiting
            assert (await second.call("company_directory_find_email_address", {"name": "bo"})) == '{"output":["bo.kim@acme.com"]}'

    with live_server(create_app(tiny_env, max_sessions=1)) as srv:
        asyncio.run(main(srv.url))


# -- D: body limits ------------------------------------------------------------------------------------


def test_the_default_body_limit_admits_what_nemo_gym_sends(tiny_env, tiny_tasks):
    row = verify_body(tiny_tasks[0])
    row["response"]["output"].append({"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "x" * (10 * 1024 * 1024), "annotations": []}]})  # a 10 MiB episode
    r = TestClient(create_app(tiny_env)).post("/verify", json=row)
    assert r.status_code == 200 and r.json()["reward"] == 1.0


def test_a_verify_body_over_the_limit_is_scored_zero_in_a_shape_nemo_gym_accepts(tiny_env, tiny_tasks):
    app = create_app(tiny_env, max_body_bytes=4096)
    c = seeded(app)
    row = verify_body(tiny_tasks[0])
    row["response"]["output"].append({"type": "message", "role": "assistant",
                                      "content": [{"type": "output_text", "text": "x" * 5000, "annotations": []}]})
    body = json.dumps(row).encode()

    def chunks():  # no Content-Length: the limit is found while reading
        for i in range(0, len(body), 1000):
            yield body[i:i + 1000]

    for content in (body, chunks()):
        r = c.post("/verify", content=content, headers={"content-type": "application/json"})
        assert r.status_code == 200 and r.headers["connection"] == "close"
        out = r.json()
        assert out["reward"] == 0.0 and out["mask_sample"] is False and out["failure_kind"] == "officegym:request_too_large"
        assert "larger than 4096 bytes" in out["failure_reason"]
    assert c.post("/email_search_emails", json={}).status_code == 400  # the session ended, as a verified one does
    openai_types = pytest.importorskip("openai.types.responses")
    openai_types.Response.model_validate(out["response"])  # NeMo Gym validates the answer's response so


def test_other_routes_over_the_limit_get_413_and_seeding_ignores_the_unread_body(tiny_env):
    app = create_app(tiny_env, max_body_bytes=4096)
    c = TestClient(app)
    r = c.post("/seed_session", json={"responses_create_params": {"input": "x" * 5000}})  # the task row, too big
    assert r.status_code == 200 and REFERENCE_COOKIE in r.headers["set-cookie"]
    r = c.post("/email_search_emails", json={"query": "x" * 5000})
    assert r.status_code == 413 and "4096" in r.json()["detail"] and r.headers["connection"] == "close"
    assert c.post("/email_search_emails", json={"query": "Update"}).status_code == 200  # the seeded session lives
    assert c.post("/aggregate_metrics", json={"verify_responses": [{"reward": 1}] * 400}).status_code == 413


def test_serve_passes_the_limits_and_refuses_bad_ones(tiny_world):
    from officegym.server.config import ServeConfig
    from officegym.server.serve import ServeError, build_environment, make_app

    env = build_environment(world=tiny_world)
    app = make_app(env, ServeConfig(max_session_writes=5, max_session_write_bytes=6000, max_verify_calls=7))
    health = TestClient(app).get("/health").json()
    assert (health["max_session_writes"], health["max_session_write_bytes"], health["max_verify_calls"]) == (5, 6000, 7)
    assert health["max_body_bytes"] == 64 * 1024 * 1024
    for bad in ({"max_session_writes": 0}, {"max_session_write_bytes": 0}, {"max_verify_calls": 0}):
        with pytest.raises(ServeError):
            make_app(env, ServeConfig(**bad))


def test_run_with_a_model_url_that_only_looks_like_one_is_a_422(tiny_env, tiny_tasks):
    row = {**tiny_tasks[0].to_row(), "model_server_url": "http://[::", "model": "m"}
    r = TestClient(create_app(tiny_env)).post("/run", json=row)
    assert r.status_code == 422 and "base URL" in r.json()["detail"]
