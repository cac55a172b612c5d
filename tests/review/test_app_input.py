"""The review UI answers client input it cannot use with a 4xx (never a 500), over one connection
that stays usable; a bug's 500 tells the client to reconnect; the Host header is checked."""

from __future__ import annotations

import http.client
import json
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("jinja2")
pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

from fastapi.testclient import TestClient  # noqa: E402

from officegym.review.app import create_app  # noqa: E402

HUGE = str(2**64)
MIB = 1 << 20
DEEP = "[" * 100_000 + "]" * 100_000
FORM = {"content-type": "application/x-www-form-urlencoded"}
JSON = {"content-type": "application/json"}


def bad_requests(ids) -> list[tuple[str, str, str | bytes | None, dict]]:
    """(method, url, body, headers) of requests no client should be able to turn into a 500."""
    item = ids[("broken", 0)]
    api = f"/api/items/{item}/decisions"
    return [
        ("POST", api, json.dumps({"action": "reject", "reason": ["truth_wrong"], "reviewer": "x"}), JSON),
        ("POST", api, json.dumps({"action": "accept", "reason": {"code": "truth_wrong"}, "reviewer": "x"}), JSON),
        ("POST", api, json.dumps({"action": "note", "note": {"a": 1}, "reviewer": "x"}), JSON),
        ("POST", api, json.dumps({"action": "accept", "reviewer": ["x"]}), JSON),
        ("POST", api, DEEP, JSON),
        ("POST", api, '{"action": "correct", "reviewer": "x", "calls": ' + "[" * 150 + "]" * 150 + "}", JSON),
        ("POST", api, '{"action": "correct", "reviewer": "x", "calls": [{"name": "email_reply_email", '
                      '"arguments": {"email_id": ' + "9" * 5000 + "}}]}", JSON),
        ("POST", api, json.dumps({"action": "note", "note": "a" * (MIB + 1), "reviewer": "x"}), JSON),
        ("POST", f"/items/{item}/correct", "mode=save&calls=" + "%5B" * 100_000 + "%5D" * 100_000, FORM),
        ("POST", f"/items/{item}/correct", 'mode=save&calls=[{"name":"email_reply_email","arguments":{"email_id":"00000039",'
                                           '"body":' + "[" * 600 + "]" * 600 + "}}]", FORM),
        ("POST", f"/items/{item}/correct", 'mode=save&calls=[{"name":"email_reply_email","arguments":{"email_id":'
                                           + "9" * 5000 + "}}]", FORM),
        ("POST", f"/items/{item}/note", "note=" + "a" * (MIB + 1), FORM),
        ("POST", "/reviewer", "reviewer=" + "a" * (MIB + 1), FORM),
        ("GET", f"/items/{HUGE}", None, {}),
        ("GET", f"/items/-{HUGE}", None, {}),
        ("GET", f"/api/items/{HUGE}", None, {}),
        ("POST", f"/items/{HUGE}/accept", "", FORM),
        ("POST", f"/api/items/{HUGE}/decisions", '{"action": "accept", "reviewer": "x"}', JSON),
        ("GET", f"/queue?page={HUGE}", None, {}),
        ("GET", f"/api/items?offset={HUGE}", None, {}),
        ("GET", f"/audit?item={HUGE}", None, {}),
        ("POST", f"/items/{item}/accept", "", {**FORM, "origin": "http://["}),
    ]


@pytest.fixture
def app_and_store(flagged):
    store, envs, ids = flagged
    return create_app(store, envs, reviewer="ann"), store, ids


def test_bad_input_gets_a_4xx_and_changes_nothing(app_and_store):
    app, store, ids = app_and_store
    with TestClient(app, raise_server_exceptions=False) as c:
        for method, url, body, headers in bad_requests(ids):
            r = c.request(method, url, content=body, headers=headers)
            assert 400 <= r.status_code < 500, (method, url[:60], r.status_code, r.text[:200])
        assert c.post(f"/api/items/{ids[('broken', 0)]}/decisions",
                      json={"action": "reject", "reason": ["truth_wrong"], "reviewer": "x"}).json()["detail"][0]["loc"] == [
            "body", "reason"]
        assert c.get(f"/items/{HUGE}").status_code == 404  # an id SQLite cannot hold names no item
        assert c.get(f"/queue?page={HUGE}").status_code == 400
        assert "page" in c.get(f"/queue?page={HUGE}").text
        big = c.post("/reviewer", content="reviewer=" + "a" * (MIB + 1), headers=FORM)
        assert big.status_code == 413 and "over 1024 KiB" in big.text
        assert c.get("/queue", params={"page": "2"}).status_code == 200  # in range: still a page
        # Not numbers (a superscript passes str.isdigit, not int()): no filter, the first page.
        assert c.get("/audit", params={"item": "\u00b2"}).status_code == 200
        assert c.get("/queue", params={"page": "\u00b2"}).status_code == 200
    assert store.counts()["status"]["pending"] == 4 and store.decisions() == []


class Served:
    """An app on 127.0.0.1 at a port the OS picks, in a daemon thread."""

    def __init__(self, app):
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> int:
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self.server.servers[0].sockets[0].getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _send(conn: http.client.HTTPConnection, method: str, url: str, body=None, headers=None) -> http.client.HTTPResponse:
    conn.request(method, url, body=body, headers=headers or {})
    r = conn.getresponse()
    r.read()
    return r


def test_one_connection_survives_bad_requests_and_a_bug(app_and_store, monkeypatch):
    app, store, ids = app_and_store
    with Served(app) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        first = None
        for method, url, body, headers in bad_requests(ids):
            r = _send(conn, method, url, body, headers)
            assert 400 <= r.status < 500, (method, url[:60], r.status)
            first = first or conn.sock
            # The next request on the same connection works: the refusal left it usable.
            assert _send(conn, "GET", "/api/counts").status == 200, (method, url[:60])
            assert conn.sock is first, (method, url[:60])
        # A chunked body declares no length: it is cut off while it streams.
        conn.request("POST", "/reviewer", body=iter([b"reviewer=", b"a" * MIB, b"a"]),
                     headers={**FORM, "transfer-encoding": "chunked"}, encode_chunked=True)
        r = conn.getresponse()
        r.read()
        assert r.status == 413 and conn.sock is first
        assert _send(conn, "GET", "/api/counts").status == 200
        # A bug (here: the store failing) is a 500 that says the connection closes, so the
        # client opens a new one instead of failing its next request on a dropped connection.
        monkeypatch.setattr(store, "count", lambda *a, **k: 1 / 0)
        r = _send(conn, "GET", "/api/items")
        assert r.status == 500 and r.getheader("connection") == "close"
        monkeypatch.undo()
        assert _send(conn, "GET", "/api/items").status == 200
        conn.close()


def test_host_header_is_checked_against_the_bound_address(flagged):
    from officegym.review.guard import AllowedHosts

    store, envs, ids = flagged
    url = f"/items/{ids[('move', 0)]}/accept"
    app = create_app(store, envs, reviewer="ann", allowed_hosts=AllowedHosts.for_bind("127.0.0.1", 8765))
    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765", "localhost.:8765"):
            assert c.get("/queue", headers={"host": host}).status_code == 200, host
        # A rebound name, another port, no port (80), and junk are refused, posts included.
        for host in ("evil.example:8765", "evil.example", "127.0.0.1:9999", "localhost", "127.0.0.1:8765@evil", "",
                     "[::1", "localhost:99999", "127.0.0.2:8765"):
            r = c.get("/queue", headers={"host": host})
            assert r.status_code == 400 and "--allowed-hosts" in r.text, host
        assert c.post(url, headers={"host": "evil.example:8765"}, follow_redirects=False).status_code == 400
        assert store.get(ids[("move", 0)])["status"] == "pending"
        assert c.post(url, follow_redirects=False).status_code == 303
    bound = AllowedHosts.for_bind("192.168.1.5", 9000)
    assert bound.allows("192.168.1.5:9000") and bound.allows("localhost:9000") and not bound.allows("192.168.1.5:8765")
    every = AllowedHosts.for_bind("0.0.0.0", 9000)  # the wildcard is no name; others need --allowed-hosts
    assert every.allows("127.0.0.1:9000") and not every.allows("0.0.0.0:9000") and not every.allows("box.lan:9000")
    assert AllowedHosts.for_bind("127.0.0.1", 0).allows("localhost:41234")  # the OS picks the port


def test_explicit_allowed_hosts_replace_the_default(flagged):
    from officegym.review.guard import AllowedHosts

    store, envs, _ids = flagged
    allowed = AllowedHosts.parse("review.example.com, 10.0.0.5:8000, ::1")
    app = create_app(store, envs, allowed_hosts=allowed)
    with TestClient(app) as c:
        for host, ok in [("review.example.com", True), ("review.example.com:443", True), ("10.0.0.5:8000", True),
                         ("10.0.0.5:8001", False), ("[::1]:1234", True), ("localhost:8765", False), ("testserver", False)]:
            assert (c.get("/api/counts", headers={"host": host}).status_code == 200) is ok, host
    assert AllowedHosts.parse("*").allows("anything.example:1")
    for bad in ("", " , ", "a/b", "host:port", "host:70000", "[::1"):
        with pytest.raises(ValueError):
            AllowedHosts.parse(bad)
