"""Async client of an officegym (or NeMo Gym) resources server, and a remote Environment.

`EnvClient(base_url)` speaks the protocol: `seed_session` returns a `RemoteSession` that carries
its own cookies (never shared between sessions: the HTTP client's cookie jar is disabled), so
thousands of sessions can run concurrently over one connection pool; `call`/`execute` post a tool
call with the session's cookies, `verify` posts a task row plus `response`, `run` asks the server's
simple agent for a whole verified rollout.

`RemoteEnvironment(base_url)` is a BaseEnvironment whose awaited members (`asession`, `averify`,
and its sessions' `aexecute`, which the agent loop awaits) are requests to the server, so the loop
runs against a server with the same trajectories and rewards as in-process:

    async with RemoteEnvironment("http://127.0.0.1:8000") as env:
        trajs = await run_rollouts(env, jobs, policy, LoopConfig())

What the model sees is decided as in-process: arguments that are not JSON never reach the server
(NeMo Gym's simple agent answers `{"error": "Invalid tool call arguments: ..."}` itself), JSON that
is not an object gets the server's 422 body, everything else the tool's body.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import re
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.rollout_row import RolloutRow
from officegym.core.session import BaseSession
from officegym.core.task import Task
from officegym.core.toolcalls import invalid_json_result
from officegym.core.types import InvalidCall, TableDiff, ToolCall, ToolResult, ToolSpec, Verdict
from officegym.server.protocol import RESERVED_PATHS, STATUS_HEADER

_SEGMENT = re.compile(r"[A-Za-z0-9_.\-]+")


class RemoteError(RuntimeError):
    """The server could not be reached, or answered in a way no model input explains."""

    def __init__(self, message: str, status: int | None = None, body: str | None = None):
        super().__init__(message)
        self.status = status
        self.body = body


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    """Keeps the shared HTTP client from storing or sending cookies: each session sends its own."""

    def set_ok(self, cookie, request):  # type: ignore[override]
        return False

    def return_ok(self, cookie, request):  # type: ignore[override]
        return False


def _dumps(value: Any) -> bytes:
    # ensure_ascii keeps lone surrogates (\ud800) intact across the wire; NaN stays NaN, as
    # Python's json (the server's reader) accepts it.
    return json.dumps(value).encode()


@dataclass
class RemoteSession(BaseSession):
    """One seeded session on a server: its cookies and the client that carries them. Every way to
    call a tool is a request, so `execute` and `call` are awaitable too."""

    client: EnvClient
    cookies: dict[str, str] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)  # names it in NeMo Gym's /close_session body
    lost: bool = False  # the server no longer knew this session (evicted, expired, verified)
    closed: bool = False

    async def aexecute(self, name: str, arguments: Any = None) -> ToolResult:
        return await self.client.execute(self, name, arguments)

    async def execute(self, name: str, arguments: Any = None) -> ToolResult:  # type: ignore[override]
        return await self.aexecute(name, arguments)

    async def call(self, name: str, arguments: Any = None) -> str:  # type: ignore[override]
        return (await self.aexecute(name, arguments)).text

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await self.client.close_session(self)


class EnvClient:
    """An async client of one server. Use it as `async with EnvClient(url) as c:` or call
    `aclose()`. `max_connections` bounds concurrent requests (the pool queues the rest)."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 60.0,
        max_connections: int = 256,
        connect_retries: int = 3,
        transport: Any = None,
        busy_wait_s: float = 60.0,
    ):
        import httpx

        self.base_url = base_url.rstrip("/")
        self.connect_retries = connect_retries
        self.busy_wait_s = busy_wait_s  # how long seed_session waits out a full server (503 + Retry-After)
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections,
                              keepalive_expiry=2.0)  # well under the server's keep-alive timeout
        self._http = httpx.AsyncClient(timeout=timeout, limits=limits, transport=transport)
        self._http.cookies.jar.set_policy(_NoCookies())
        # Requests wait here rather than in httpx's pool, whose bookkeeping grows with its queue.
        self._gate = asyncio.Semaphore(max_connections)
        self._rows: OrderedDict[int, tuple[Task, str]] = OrderedDict()  # id(task) -> (task, its row as JSON)

    async def __aenter__(self) -> EnvClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- transport

    async def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        cookies: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ):
        import httpx

        headers = {"content-type": "application/json"}
        if cookies:
            headers["cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        content = None if body is None else body if isinstance(body, bytes) else _dumps(body)
        url = self.base_url + path
        last: Exception | None = None
        for attempt in range(self.connect_retries + 1):
            if attempt:
                await asyncio.sleep(0.05 * 2 ** (attempt - 1))
            try:
                async with self._gate:
                    return await self._http.request(method, url, content=content, headers=headers, params=params)
            except (httpx.ConnectError, httpx.PoolTimeout) as exc:  # nothing was sent: safe to retry
                last = exc
            except httpx.HTTPError as exc:
                raise RemoteError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        raise RemoteError(f"{method} {url}: cannot connect ({type(last).__name__}: {last}) "
                          f"after {self.connect_retries + 1} attempts")

    def _row_json(self, row: dict[str, Any] | Task | None) -> str:
        """A task row as JSON text; a Task's is kept (rollouts send the same task many times)."""
        if not isinstance(row, Task):
            return json.dumps(row if row is not None else {})
        cached = self._rows.get(id(row))
        if cached is not None and cached[0] is row:
            self._rows.move_to_end(id(row))
            return cached[1]
        text = json.dumps(row.to_row())
        self._rows[id(row)] = (row, text)
        if len(self._rows) > 4096:
            self._rows.popitem(last=False)
        return text

    def _with_response(self, row: dict[str, Any] | Task, extra: dict[str, Any]) -> bytes:
        """The row's JSON with `extra` keys added (replacing any the row has)."""
        if not isinstance(row, Task):
            return _dumps({**row, **extra})
        text = self._row_json(row)
        if any(f'"{k}"' in text for k in extra):  # the row has such a key: merge the slow way
            return _dumps({**json.loads(text), **extra})
        tail = json.dumps(extra)[1:]
        return (text[:-1] + (", " if text != "{}" else "") + tail).encode()

    @staticmethod
    def _update_cookies(session: RemoteSession, response: Any) -> None:
        for header in response.headers.get_list("set-cookie"):
            pair = header.split(";", 1)[0]
            name, sep, value = pair.partition("=")
            if not sep:
                continue
            if "01 Jan 1970" in header:  # the server cleared it
                session.cookies.pop(name.strip(), None)
            else:
                session.cookies[name.strip()] = value.strip()

    @staticmethod
    def _json(response: Any, what: str) -> Any:
        if response.status_code != 200:
            raise RemoteError(f"{what}: HTTP {response.status_code}: {response.text[:500]}", response.status_code, response.text)
        try:
            return response.json()
        except ValueError as exc:
            raise RemoteError(f"{what}: the answer is not JSON: {response.text[:200]!r}") from exc

    # -- the protocol

    async def health(self) -> dict[str, Any]:
        return self._json(await self._request("GET", "/health"), "GET /health")

    async def tools(self) -> list[dict[str, Any]]:
        return self._json(await self._request("GET", "/tools"), "GET /tools")

    async def seed_session(self, row: dict[str, Any] | Task | None = None) -> RemoteSession:
        """A fresh session. `row` (the task row; the reference ignores it) is sent as NeMo Gym's
        agent sends it."""
        session = RemoteSession(self)
        body = self._row_json(row).encode()
        waited = 0.0
        while True:
            response = await self._request("POST", "/seed_session", body)
            if response.status_code != 503 or waited >= self.busy_wait_s:
                break
            try:  # the server holds its maximum of live sessions: one frees when a rollout ends
                pause = min(max(float(response.headers.get("retry-after", 1)), 0.05), 10.0)
            except ValueError:
                pause = 1.0
            await asyncio.sleep(pause)
            waited += pause
        self._json(response, "POST /seed_session")
        self._update_cookies(session, response)
        if not session.cookies:
            raise RemoteError("POST /seed_session: the server set no session cookie")
        return session

    async def execute(self, session: RemoteSession, name: str, arguments: Any = None) -> ToolResult:
        """A tool call in `session`, with the text the model sees and its status."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError) as exc:
                return invalid_json_result(exc)
        elif arguments is None:
            arguments = {}
        if _SEGMENT.fullmatch(name) and name not in RESERVED_PATHS and name not in (".", ".."):
            response = await self._request("POST", f"/{name}", arguments, session.cookies)
        else:  # a name that cannot be a URL segment (or is one of the server's own routes)
            response = await self._request("POST", "/officegym/call", {"name": name, "arguments": arguments}, session.cookies)
        self._update_cookies(session, response)
        text = response.text
        if response.status_code == 200:
            return ToolResult(text, response.headers.get(STATUS_HEADER, "ok"), text)
        if response.status_code == 400:
            session.lost = True
        if 400 <= response.status_code < 500:
            # What NeMo Gym's agent does: whatever the body says is the tool's output.
            return ToolResult(text, "error", text)
        raise RemoteError(f"POST /{name}: HTTP {response.status_code}: {text[:500]}", response.status_code, text)

    async def call(self, session: RemoteSession, name: str, arguments: Any = None) -> str:
        """The body text of a tool call: exactly what NeMo Gym's agent feeds back to the model."""
        return (await self.execute(session, name, arguments)).text

    async def verify(
        self,
        row: dict[str, Any] | Task,
        response: dict[str, Any] | None = None,
        calls: Sequence[ToolCall] | None = None,
        session: RemoteSession | None = None,
        mode: str | None = None,
    ) -> dict[str, Any]:
        """POST /verify: the task row plus `response` (or one built from `calls`); returns the
        server's answer (`reward`, and the verdict under `officegym` from an officegym server)."""
        if response is None:
            response = {"output": [c.to_function_call() for c in calls or ()]}
        body = self._with_response(row, {"response": response})
        params = {"mode": mode} if mode is not None else None
        answer = await self._request("POST", "/verify", body, session.cookies if session else None, params)
        if session is not None:
            self._update_cookies(session, answer)
        return self._json(answer, "POST /verify")

    async def run(
        self,
        row: dict[str, Any] | Task,
        model_server_url: str | None = None,
        model: str | None = None,
        max_steps: int | None = None,
        api: str | None = None,
        mode: str | None = None,
    ) -> dict[str, Any]:
        """POST /run: one rollout by the server's simple agent against an OpenAI-compatible model
        server, verified. Options left as None take the server's defaults."""
        extra = {"model_server_url": model_server_url, "model": model, "max_steps": max_steps, "api": api, "mode": mode}
        body = self._with_response(row, {k: v for k, v in extra.items() if v is not None})
        return self._json(await self._request("POST", "/run", body), "POST /run")

    async def aggregate_metrics(self, verify_responses: list[dict[str, Any]]) -> dict[str, Any]:
        return self._json(await self._request("POST", "/aggregate_metrics", {"verify_responses": verify_responses}),
                          "POST /aggregate_metrics")

    async def close_session(self, session: RemoteSession) -> None:
        body = {"resources_session_id": session.id, "episode_id": {"rollout_id": session.id}}
        response = await self._request("POST", "/close_session", body, session.cookies)
        self._json(response, "POST /close_session")


def verdict_from_dict(d: dict[str, Any]) -> Verdict:
    """Rebuild a Verdict from `Verdict.to_dict()` (as an officegym server returns it)."""
    d = dict(d)
    tables = {
        name: TableDiff(list(t.get("missing", [])), list(t.get("extra", [])), list(t.get("changed", [])), t.get("note"))
        for name, t in (d.pop("diff", None) or {}).items()
    }
    invalid = [InvalidCall(c["index"], c["name"], c["error"]) for c in d.pop("invalid_calls", None) or []]
    d.pop("modes_disagree", None)
    return Verdict(
        reward=float(d.pop("reward")),
        matched=bool(d.pop("matched")),
        mode=d.pop("mode"),
        tables=tables,
        side_effects=bool(d.pop("side_effects", False)),
        invalid_calls=invalid,
        other_mode=d.pop("other_mode", None),
        other_mode_reward=d.pop("other_mode_reward", None),
        details=d,
    )


class RemoteEnvironment(BaseEnvironment):
    """An environment served over HTTP. `asession()` and `averify()` are the requests (the agent loop
    awaits them; `session()` and `verify()` are the same coroutines); `tools()` is not: it uses the
    task's own tools, else the server's list fetched by `connect()` (called by `async with` and by
    the first session)."""

    def __init__(self, server: str | EnvClient, mode: str | None = None, close_sessions: bool = True, **client_options: Any):
        self.client = server if isinstance(server, EnvClient) else EnvClient(server, **client_options)
        self._owns_client = not isinstance(server, EnvClient)
        self.mode = mode
        self.close_sessions = close_sessions
        self.name = "remote"
        self.write_tools: frozenset[str] = frozenset()
        self._tools: list[ToolSpec] | None = None
        self._connecting: asyncio.Lock | None = None

    async def __aenter__(self) -> RemoteEnvironment:
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()

    async def connect(self) -> None:
        if self._tools is not None:
            return
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self._tools is not None:
                return
            health = await self.client.health()
            self.name = str(health.get("environment") or "remote")
            self.write_tools = frozenset(health.get("write_tools") or ())
            self._tools = [ToolSpec.from_schema(t) for t in await self.client.tools()]

    def tools(self, task: Task | None = None) -> list[ToolSpec]:
        if task is not None and task.tools:
            return [ToolSpec.from_schema(t) for t in task.tools]
        if self._tools is None:
            raise RuntimeError("RemoteEnvironment: call `await env.connect()` (or use `async with`) first")
        return list(self._tools)

    async def asession(self, task: Task | None = None) -> RemoteSession:
        await self.connect()
        session = await self.client.seed_session(task)
        if not self.close_sessions:
            session.closed = True  # aclose() becomes a no-op; the server's TTL/LRU frees it
        return session

    async def session(self, task: Task | None = None) -> RemoteSession:  # type: ignore[override]
        return await self.asession(task)

    async def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:  # type: ignore[override]
        return await self.averify(task, calls, mode)

    async def averify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        answer = await self.client.verify(task, calls=calls, mode=mode or self.mode)
        evidence = RolloutRow(answer).verdict
        if evidence is not None:
            return verdict_from_dict(evidence)
        reward = float(answer["reward"])  # a server without evidence (e.g. NeMo Gym's own)
        return Verdict(reward=reward, matched=reward >= 1.0, mode=mode or self.mode or "remote")
