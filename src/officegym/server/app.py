"""The HTTP resources server: NeMo Gym's protocol over any officegym environment.

Endpoints (SPEC 5.1-5.3; officegym additions marked +):

    POST /seed_session      any JSON object (the agent sends the task row; ignored by the workplace,
                            the session's task for environments with `session_from_row`) -> {}
    POST /{tool_name}       the tool's JSON arguments -> 200 with the tool's body, {"output": ...}
    POST /verify            task row + `response` -> the reference's echo + `reward` (+ `officegym` evidence)
    POST /aggregate_metrics {"verify_responses": [...]} -> reward statistics per task and overall
    POST /close_session     drop the caller's session (NeMo Gym 0.7's route; + frees memory here)
    GET  /reverify_mode     "stateless": verify reads no session state
    GET  /                  liveness
  + GET  /health            liveness and session-store statistics
  + GET  /tools             the environment's tool schemas (Responses-API "function" shape)
  + POST /run               task row + model server -> one verified rollout (NeMo Gym's simple agent)

Sessions ride on a cookie exactly as in the reference: Starlette's SessionMiddleware signs a JSON
session dict with itsdangerous; cookie name and secret are both
"WorkbenchResourcesServer___workplace_assistant" for the workplace environment, and every request
gets a `session_id` (uuid4) if it has none, with the cookie re-sent on every response. The id keys a
bounded store (LRU + idle TTL, sessions.py); NeMo Gym 0.7 also drops the session once it is verified.

Bad input never gives a 500: bodies that are not JSON, not objects or of the wrong types get the
4xx FastAPI would give the reference (422 with the same `detail`), bodies over `max_body_bytes` get
413, unknown tools and bad arguments get the reference's in-band "Error executing tool ..." text.
Tool calls also carry an `x-officegym-status` header (ok | rejected | error) so that a remote
rollout records the same statuses as an in-process one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import statistics
import time
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic_core import to_json
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from officegym.agent.loop import LoopConfig, rollout
from officegym.core.policy import Completion, PolicyRequest, SamplingParams
from officegym.core.protocols import Environment
from officegym.core.task import Task, TaskFormatError
from officegym.core.toolcalls import ToolCallParseError, function_calls_from_output
from officegym.core.trajectory import Trajectory
from officegym.server.sessions import SessionStore

SESSION_ID_KEY = "session_id"
REFERENCE_COOKIE = "WorkbenchResourcesServer___workplace_assistant"
NOT_INITIALIZED = "Session not initialized. Please call seed_session first."
STATUS_HEADER = "x-officegym-status"
# POST routes of the server itself: a tool of that name cannot be reached at /{name} (the fixed
# route wins, as in the reference); officegym's client sends such calls to /officegym/call.
RESERVED_PATHS = frozenset({"seed_session", "verify", "aggregate_metrics", "close_session", "run"})
# Fields of the verify response: NeMo Gym 0.7's BaseVerifyResponse declares the first six; SPEC
# 5.1 (an earlier snapshot) also lists the task fields, which officegym echoes when present.
VERIFY_ECHO = ("responses_create_params", "response")
VERIFY_DEFAULTS = (("mask_sample", False), ("failure_kind", None), ("failure_reason", None))
TASK_ECHO = ("ground_truth", "id", "category", "environment_name")
RUN_KEYS = ("model_server_url", "model", "api", "max_steps", "mode")

DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_IDLE_TTL_S = 3600.0
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_RUN_STEPS = 100


@dataclass
class ServerConfig:
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    cookie_name: str = REFERENCE_COOKIE
    secret_key: str = REFERENCE_COOKIE
    mode: str | None = None  # verification mode; None: the environment's default
    evidence: bool = True  # add the verdict's evidence to /verify and /run answers under "officegym"
    max_steps: int = 6  # /run: model turns per episode (the reference config's max_steps)
    model_server_url: str | None = None  # /run: default OpenAI-compatible base URL (.../v1)
    model: str | None = None  # /run: default model name
    model_api: str = "chat"  # /run: "chat" (Chat Completions) or "responses" (Responses API)
    policy_options: dict[str, Any] | None = None  # /run: OpenAIPolicy options (timeout, max_retries, ...)
    sweep_interval_s: float = 30.0


# -- JSON in and out ----------------------------------------------------------------------------


def dumps(value: Any) -> bytes:
    """Compact JSON as FastAPI writes it, NaN/inf as null (NeMo Gym reads bodies with orjson, which
    rejects NaN). Never raises: strings that UTF-8 cannot hold (lone surrogates) are replaced."""
    try:
        return to_json(value, inf_nan_mode="null", fallback=str)
    except Exception:  # lone surrogates, absurd nesting: render something readable instead
        try:
            return to_json(_scrub(value), inf_nan_mode="null", fallback=str)
        except Exception:
            return to_json({"detail": "the answer could not be rendered as JSON"})


def _scrub(value: Any, depth: int = 0) -> Any:
    if depth > 200:
        return "..."
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_scrub(str(k), depth + 1): _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v, depth + 1) for v in value]
    return value


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(value), status_code=status, media_type="application/json", headers=headers)


def _detail(detail: Any, status: int) -> Response:
    return json_response({"detail": detail}, status)


def _validation_error(type_: str, loc: list[Any], msg: str, input_: Any, ctx: dict | None = None) -> Response:
    """FastAPI's 422 body for a request the reference's pydantic models would reject."""
    item: dict[str, Any] = {"type": type_, "loc": loc, "msg": msg, "input": input_}
    if ctx is not None:
        item["ctx"] = ctx
    return _detail([item], 422)


def not_an_object(value: Any) -> Response:
    return _validation_error(
        "model_attributes_type", ["body"], "Input should be a valid dictionary or object to extract fields from", value
    )


class BadRequest(Exception):
    def __init__(self, response: Response):
        self.response = response


async def read_json(request: Request, *, allow_empty: bool = False) -> Any:
    """The request body as JSON, or BadRequest carrying FastAPI's 422 for it."""
    raw = await request.body()
    if not raw:
        if allow_empty:
            return {}
        raise BadRequest(_validation_error("missing", ["body"], "Field required", None))
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BadRequest(_validation_error("json_invalid", ["body", exc.pos], "JSON decode error", {}, {"error": exc.msg})) from None
    except (ValueError, RecursionError) as exc:  # undecodable bytes, nesting deeper than Python's stack
        raise BadRequest(_validation_error("json_invalid", ["body", 0], "JSON decode error", {}, {"error": str(exc)[:200]})) from None


async def read_object(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    value = await read_json(request, allow_empty=allow_empty)
    if not isinstance(value, dict):
        raise BadRequest(not_an_object(value))
    return value


def _require(row: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in row:
        raise BadRequest(_validation_error("missing", ["body", key], "Field required", row))
    value = row[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BadRequest(_validation_error(f"{what}_type", ["body", key], f"Input should be a valid {what}", value))
    return value


# -- middleware -----------------------------------------------------------------------------------


class BodyLimitMiddleware:
    """Reads the whole request body (at most `max_bytes`) before the app sees it; a larger body is
    answered with 413 at once, whether or not it announced its length."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    await _send_plain(send, 400, {"detail": "invalid Content-Length header"})
                    return
                if length > self.max_bytes:
                    await _send_plain(send, 413, self._too_large())
                    return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _send_plain(send, 413, self._too_large())
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> dict[str, str]:
        return {"detail": f"request body larger than {self.max_bytes} bytes"}


async def _send_plain(send: Send, status: int, content: dict[str, Any]) -> None:
    body = dumps(content)
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")],
    })
    await send({"type": "http.response.body", "body": body})


_ENTERED = "officegym.session_read"


class SessionIdMiddleware:
    """Gives every request a session id, as the reference's inner middleware does; assigning it
    always marks the session modified, so the signed cookie is re-sent on every response."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[_ENTERED] = True
            session = scope["session"]
            sid = session.get(SESSION_ID_KEY)
            session[SESSION_ID_KEY] = sid if isinstance(sid, str) and sid else str(uuid.uuid4())
        await self.app(scope, receive, send)


class CookieSessionMiddleware:
    """Starlette's SessionMiddleware (the reference's), except that a validly signed cookie whose
    payload is not base64 JSON of an object counts as no cookie: Starlette raises on it, and the
    reference's public signing secret lets anyone sign one."""

    def __init__(self, app: ASGIApp, secret_key: str, session_cookie: str):
        self.sessions = SessionMiddleware(app, secret_key=secret_key, session_cookie=session_cookie)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.sessions(scope, receive, send)
        except Exception:
            if scope["type"] != "http" or scope.get(_ENTERED):
                raise  # the app's own failure, not the cookie's
            headers = [(k, v) for k, v in scope["headers"] if k != b"cookie"]
            await self.sessions({**scope, "headers": headers}, receive, send)


# -- the app --------------------------------------------------------------------------------------


def create_app(
    env: Environment,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    *,
    cookie_name: str | None = None,
    secret_key: str | None = None,
    mode: str | None = None,
    evidence: bool = True,
    max_steps: int = 6,
    model_server_url: str | None = None,
    model: str | None = None,
    model_api: str = "chat",
    policy_options: dict[str, Any] | None = None,
    sweep_interval_s: float = 30.0,
    clock: Callable[[], float] = time.monotonic,
) -> FastAPI:
    """A FastAPI app serving `env` with NeMo Gym's resources-server protocol (see the module doc).

    `cookie_name`/`secret_key` default to the reference's (both
    "WorkbenchResourcesServer___workplace_assistant" for the workplace environment); pass a real
    secret when the port is reachable by anyone who should not forge session cookies.
    """
    if max_body_bytes < 1024:
        raise ValueError("max_body_bytes must be at least 1024")
    if model_api not in ("chat", "responses"):
        raise ValueError("model_api must be 'chat' or 'responses'")
    if not 1 <= max_steps <= MAX_RUN_STEPS:
        raise ValueError(f"max_steps must be between 1 and {MAX_RUN_STEPS}")
    modes = _env_modes(env)
    for given in (mode, getattr(env, "mode", None)):
        if given is not None and modes and given not in modes:
            raise ValueError(f"unknown verification mode {given!r}; choose from {', '.join(modes)}")
    # A cookie name is an RFC 6265 token: "roles/cost" must lose its slash.
    default_cookie = (REFERENCE_COOKIE if env.name == "workplace_assistant"
                      else "OfficegymResourcesServer___" + re.sub(r"[^A-Za-z0-9_.-]", "_", env.name))
    cookie = cookie_name or default_cookie
    config = ServerConfig(
        max_sessions=max_sessions, idle_ttl_s=idle_ttl_s, max_body_bytes=max_body_bytes, cookie_name=cookie,
        secret_key=secret_key or cookie, mode=mode, evidence=evidence, max_steps=max_steps,
        model_server_url=model_server_url, model=model, model_api=model_api, policy_options=policy_options,
        sweep_interval_s=sweep_interval_s,
    )
    state = _ServerState(env, config, SessionStore(max_sessions, idle_ttl_s, clock))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        sweeper = asyncio.create_task(state.sweep_forever()) if idle_ttl_s is not None else None
        try:
            yield
        finally:
            if sweeper is not None:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper
            await state.close_policies()

    app = FastAPI(title="officegym resources server", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.officegym = state
    # Added innermost first: the body limit runs before the session cookie is read.
    app.add_middleware(SessionIdMiddleware)
    app.add_middleware(CookieSessionMiddleware, secret_key=config.secret_key, session_cookie=config.cookie_name)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)

    # Plain Starlette routes: every handler reads and checks its own body (giving the 422 bodies
    # FastAPI gives the reference), which spares FastAPI's per-request dependency solving.
    for path, handler, method in (
        ("/", state.liveness, "GET"),
        ("/health", state.health, "GET"),
        ("/tools", state.tools, "GET"),
        ("/reverify_mode", state.reverify_mode, "GET"),
        ("/seed_session", state.seed_session, "POST"),
        ("/verify", state.verify, "POST"),
        ("/aggregate_metrics", state.aggregate_metrics, "POST"),
        ("/close_session", state.close_session, "POST"),
        ("/run", state.run, "POST"),
        ("/officegym/call", state.call_by_body, "POST"),
        ("/{path}", state.call_tool, "POST"),  # last: fixed routes win, as in the reference
    ):
        app.add_route(path, _handling_bad_requests(handler), methods=[method], include_in_schema=False)
    return app


def _handling_bad_requests(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except BadRequest as exc:
            return exc.response

    endpoint.__name__ = handler.__name__
    return endpoint


def _session_id(request: Request) -> str:
    return request.session[SESSION_ID_KEY]


class _ServerState:
    def __init__(self, env: Environment, config: ServerConfig, store: SessionStore):
        self.env = env
        self.config = config
        self.store = store
        self.started = time.time()
        self.counts: dict[str, int] = defaultdict(int)
        self._policies: OrderedDict[tuple[int, str, str, str], Any] = OrderedDict()

    # -- liveness and introspection

    async def liveness(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def health(self, request: Request) -> Response:
        world = getattr(self.env, "world", None)
        return json_response({
            "status": "ok",
            "environment": self.env.name,
            "world": getattr(world, "path", None),
            "mode": self.config.mode or getattr(self.env, "mode", None),
            "uptime_s": round(time.time() - self.started, 3),
            "sessions": self.store.stats().to_dict(),
            "max_sessions": self.config.max_sessions,
            "idle_ttl_s": self.config.idle_ttl_s,
            "max_body_bytes": self.config.max_body_bytes,
            "requests": dict(self.counts),
            "write_tools": sorted(getattr(self.env, "write_tools", ()) or ()),
            "cookie": self.config.cookie_name,
        })

    async def tools(self, request: Request) -> Response:
        return json_response([spec.to_schema() for spec in self.env.tools(None)])

    async def reverify_mode(self, request: Request) -> Response:
        return json_response("stateless")

    # -- sessions

    async def seed_session(self, request: Request) -> Response:
        body = await read_object(request, allow_empty=True)  # the reference validates, then ignores it
        if getattr(self.env, "session_from_row", False):
            session = self._session_from_row(body)
        else:
            session = self.env.session(None)
        self.store.put(_session_id(request), session)
        self.counts["seed_session"] += 1
        return Response(b"{}", media_type="application/json")

    def _session_from_row(self, row: dict[str, Any]) -> Any:
        """The session of the task a row names, for environments whose episodes depend on the task
        (the role environments rebuild the scenario from the row's metadata); 422 when it names none."""
        if "responses_create_params" not in row:
            raise BadRequest(_detail(f"{self.env.name} sessions are seeded with the task row (its "
                                     "responses_create_params and metadata): the body has none", 422))
        _check_params(_require(row, "responses_create_params", dict, "dictionary"))
        try:
            task = Task.from_row({**row, "response": None})
        except TaskFormatError as exc:
            raise BadRequest(_detail(str(exc), 422)) from None
        session = self.env.session(task)
        problem = getattr(session, "problem", None)
        if problem:
            raise BadRequest(_detail(problem, 422))
        return session

    async def close_session(self, request: Request) -> Response:
        body = await read_object(request, allow_empty=True)
        self.store.pop(_session_id(request))
        self.counts["close_session"] += 1
        rid = body.get("resources_session_id")
        return json_response({"resources_session_id": rid} if isinstance(rid, str) else {})

    async def sweep_forever(self) -> None:
        interval = max(0.5, min(self.config.sweep_interval_s, (self.config.idle_ttl_s or 60.0) / 2))
        while True:
            await asyncio.sleep(interval)
            self.store.sweep()

    # -- tools

    async def call_tool(self, request: Request) -> Response:
        arguments = await read_object(request)
        return self._call(request, request.path_params["path"], arguments)

    async def call_by_body(self, request: Request) -> Response:
        """officegym's route for tool names that cannot be a URL segment (empty, "/", reserved)."""
        body = await read_object(request)
        name = _require(body, "name", str, "string")
        arguments = body.get("arguments", {})
        if not isinstance(arguments, dict):
            return not_an_object(arguments)
        return self._call(request, name, arguments)

    def _call(self, request: Request, name: str, arguments: dict[str, Any]) -> Response:
        session = self.store.get(_session_id(request))
        if session is None:
            self.counts["unseeded"] += 1
            return _detail(NOT_INITIALIZED, 400)
        self.counts["tool_calls"] += 1
        execute = getattr(session, "execute", None)
        if execute is not None:
            result = execute(name, arguments)
            try:
                text = result.text
            except Exception:  # a value UTF-8 cannot hold (lone surrogates): render it readable
                text = dumps({"output": result.value}).decode()
            status = result.status
        else:
            text, status = session.call(name, arguments), "ok"
        return Response(text, media_type="application/json", headers={STATUS_HEADER: status})

    # -- verify

    async def verify(self, request: Request) -> Response:
        row = await read_object(request)
        task, calls = _task_and_calls(row)
        mode = self._mode(request.query_params.get("mode"))
        try:
            verdict = self.env.verify(task, calls, mode)
        finally:
            self.store.pop(_session_id(request))  # NeMo Gym 0.7 drops the session once verified
        self.counts["verify"] += 1
        out = _echo(row)
        out["reward"] = verdict.reward
        out.update(VERIFY_DEFAULTS)
        out.update({k: row[k] for k in TASK_ECHO if k in row})
        if self.config.evidence:
            out["officegym"] = {"verdict": verdict.to_dict()}
        return json_response(out)

    def _mode(self, requested: Any) -> str | None:
        mode = requested if requested is not None else self.config.mode
        if mode is None:
            return None
        modes = _env_modes(self.env)
        if not isinstance(mode, str) or (modes and mode not in modes):
            raise BadRequest(_detail(f"unknown verification mode {mode!r}; choose from {', '.join(modes)}", 422))
        return mode

    # -- aggregate metrics

    async def aggregate_metrics(self, request: Request) -> Response:
        body = await read_object(request)
        rows = _require(body, "verify_responses", list, "list")
        return json_response(aggregate_metrics(rows))

    # -- the simple agent

    async def run(self, request: Request) -> Response:
        row = await read_object(request)
        _check_params(_require(row, "responses_create_params", dict, "dictionary"), for_run=True)
        cfg = self.config
        url = row.get("model_server_url", cfg.model_server_url)
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise BadRequest(_detail("model_server_url must be the http(s) base URL of an OpenAI-compatible "
                                     "server, e.g. http://127.0.0.1:8000/v1", 422))
        rcp = row["responses_create_params"]
        model = row.get("model") or rcp.get("model") or cfg.model
        if not isinstance(model, str) or not model:
            raise BadRequest(_detail("model: give the model name (in the body, in responses_create_params.model, "
                                     "or with --model when starting the server)", 422))
        api = row.get("api", cfg.model_api)
        if api not in ("chat", "responses"):
            raise BadRequest(_detail("api must be 'chat' or 'responses'", 422))
        max_steps = row.get("max_steps", cfg.max_steps)
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or not 1 <= max_steps <= MAX_RUN_STEPS:
            raise BadRequest(_detail(f"max_steps must be an integer from 1 to {MAX_RUN_STEPS}", 422))
        mode = self._mode(row.get("mode"))
        params = _sampling(rcp)
        try:  # what a model server is sent must be strict JSON in UTF-8
            json.dumps(rcp, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (UnicodeEncodeError, ValueError, RecursionError) as exc:
            raise BadRequest(_detail(f"responses_create_params cannot be sent to a model server: {exc}", 422)) from None
        task_row = {k: v for k, v in row.items() if k not in RUN_KEYS}
        try:
            task = Task.from_row(task_row)
        except TaskFormatError as exc:
            raise BadRequest(_detail(str(exc), 422)) from None
        policy = self._policy(url, model, api)

        async def submit(req: PolicyRequest) -> Completion:
            try:
                return (await policy.complete([req], params))[0]
            except Exception as exc:  # a policy that fails outright fails this episode, not the server
                return Completion(finish_reason="error", error=f"{type(exc).__name__}: {exc}")

        # NeMo Gym's simple agent feeds tool outputs back whole, so nothing is truncated here.
        config = LoopConfig(max_steps=max_steps, max_tool_output_chars=None, mode=mode, params=params)
        traj = await rollout(self.env, task, submit, config, policy_name=f"openai:{model}")
        self.counts["run"] += 1
        if traj.error:
            return _detail(f"model server error: {traj.error}", 502)
        out = _echo(task_row)
        out["response"] = {
            "output": response_output(traj),
            "usage": {"input_tokens": sum(t.prompt_tokens for t in traj.turns),
                      "output_tokens": sum(t.completion_tokens for t in traj.turns)},
        }
        out["reward"] = traj.reward
        out.update(VERIFY_DEFAULTS)
        out.update({k: task_row[k] for k in TASK_ECHO if k in task_row})
        if self.config.evidence:
            out["officegym"] = {
                "verdict": traj.verdict,
                "stop_reason": traj.stop_reason,
                "turns": len(traj.turns),
                "call_status": [e.status for t in traj.turns for e in t.executions],
                "invalid_fragments": [x for t in traj.turns for x in t.invalid],
                "seconds": traj.seconds,
                "env_seconds": traj.env_seconds,
            }
        return json_response(out)

    def _policy(self, url: str, model: str, api: str):
        from officegym.agent.openai_compat import OpenAIPolicy

        # Keyed by event loop too: a policy's HTTP client belongs to the loop that made it.
        key = (id(asyncio.get_running_loop()), url, model, api)
        policy = self._policies.get(key)
        if policy is None:
            policy = OpenAIPolicy(model, base_url=url, api=api, **(self.config.policy_options or {}))
            self._policies[key] = policy
            while len(self._policies) > 16:
                _, old = self._policies.popitem(last=False)
                asyncio.get_running_loop().create_task(old.aclose())
        else:
            self._policies.move_to_end(key)
        return policy

    async def close_policies(self) -> None:
        for policy in self._policies.values():
            with contextlib.suppress(Exception):
                await policy.aclose()
        self._policies.clear()


def _env_modes(env: Environment) -> tuple[str, ...]:
    if getattr(env, "name", None) == "workplace_assistant":
        from officegym.envs.workplace.verify import MODES

        return MODES
    modes = getattr(env, "modes", ())
    return tuple(modes) if isinstance(modes, tuple | list) and all(isinstance(m, str) for m in modes) else ()


def _echo(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in VERIFY_ECHO if k in row}


def _check_params(rcp: dict[str, Any], for_run: bool = False) -> None:
    """What Task.from_row and the agent loop need of responses_create_params."""
    given = rcp.get("input", [])
    if not isinstance(given, (str, list)) or (for_run and isinstance(given, list) and not all(isinstance(m, dict) for m in given)):
        raise BadRequest(_validation_error("list_type", ["body", "responses_create_params", "input"],
                                           "Input should be a string or a list of message objects", given))
    tools = rcp.get("tools")
    if for_run and tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        raise BadRequest(_validation_error("list_type", ["body", "responses_create_params", "tools"],
                                           "Input should be a list of tool objects", tools))


def _task_and_calls(row: dict[str, Any]):
    _check_params(_require(row, "responses_create_params", dict, "dictionary"))
    response = _require(row, "response", dict, "dictionary")
    output = response.get("output", [])
    if not isinstance(output, list):
        raise BadRequest(_validation_error("list_type", ["body", "response", "output"], "Input should be a valid list", output))
    if "ground_truth" not in row and not isinstance(row.get("verifier_metadata"), dict):
        raise BadRequest(_validation_error("missing", ["body", "ground_truth"], "Field required", None))
    if not isinstance(row.get("ground_truth", []), (list, str)):
        raise BadRequest(_validation_error("list_type", ["body", "ground_truth"], "Input should be a valid list or string",
                                           row["ground_truth"]))
    # The task without its tool schemas: verification replays calls against the ground truth, and
    # Task.from_row deep-copies what it is given (27 schemas are most of a row's 12 KB).
    slim = {**row, "responses_create_params": {k: v for k, v in row["responses_create_params"].items() if k != "tools"},
            "response": None}
    try:
        return Task.from_row(slim), function_calls_from_output(output)
    except (TaskFormatError, ToolCallParseError) as exc:
        raise BadRequest(_detail(str(exc), 422)) from None


def _sampling(rcp: dict[str, Any]) -> SamplingParams:
    """The sampling settings NeMo Gym's agent forwards from responses_create_params."""
    params = SamplingParams()
    for key, attr in (("temperature", "temperature"), ("top_p", "top_p"), ("max_output_tokens", "max_new_tokens")):
        value = rcp.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise BadRequest(_detail(f"responses_create_params.{key} must be a non-negative number", 422))
        setattr(params, attr, int(value) if attr == "max_new_tokens" else float(value))
    return params


def response_output(traj: Trajectory) -> list[dict[str, Any]]:
    """The episode as Responses-API output items in the simple agent's order: each turn's message
    and function calls, then their outputs."""
    items: list[dict[str, Any]] = []
    for turn in traj.turns:
        if turn.text:
            items.append({"type": "message", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
        for ex in turn.executions:
            call = ex.call
            items.append({"type": "function_call", "name": call.name,
                          "arguments": call.arguments_json if call.parse_error is None else (call.raw_arguments or ""),
                          "call_id": call.call_id or "", "status": "completed"})
        for ex in turn.executions:
            items.append({"type": "function_call_output", "call_id": ex.call.call_id or "", "output": ex.output})
    return items


# -- aggregate metrics ----------------------------------------------------------------------------


def _stats(values: list[float], prefix: str = "") -> dict[str, float]:
    return {
        f"{prefix}mean/reward": statistics.fmean(values),
        f"{prefix}max/reward": max(values),
        f"{prefix}min/reward": min(values),
        f"{prefix}median/reward": statistics.median(values),
        f"{prefix}std/reward": statistics.pstdev(values),
    }


def _pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def aggregate_metrics(rows: list[Any]) -> dict[str, Any]:
    """Reward statistics of verify responses, grouped by task (`_ng_task_index`, else `id`, else
    position): per task mean/max/min/median/std, overall the same plus pass@k for k = 1, 2, 4, ...
    up to the fewest rollouts of any task (a rollout passes with reward >= 1)."""
    groups: dict[str, list[float]] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise BadRequest(_validation_error("dict_type", ["body", "verify_responses", i], "Input should be a valid dictionary", row))
        reward = row.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
            raise BadRequest(_validation_error("float_type", ["body", "verify_responses", i, "reward"],
                                               "Input should be a valid number", reward))
        key = row.get("_ng_task_index", row.get("id", i))
        groups.setdefault(json.dumps(key, sort_keys=True, default=str), []).append(float(reward))
    if not groups:
        return {"group_level_metrics": [], "agent_metrics": {"num_tasks": 0, "num_rollouts": 0}, "key_metrics": {}}
    per_task = []
    for key, values in groups.items():
        per_task.append({"_ng_task_index": json.loads(key), "num_rollouts": len(values), **_stats(values)})
    everything = [v for values in groups.values() for v in values]
    agent: dict[str, Any] = {"num_tasks": len(groups), "num_rollouts": len(everything), **_stats(everything)}
    k_max = min(len(v) for v in groups.values())
    k = 1
    while k <= k_max:
        agent[f"pass@{k}"] = statistics.fmean(_pass_at_k(len(v), sum(x >= 1.0 for x in v), k) for v in groups.values())
        k *= 2
    top = max(int(key.split("@")[1]) for key in agent if key.startswith("pass@"))
    key_metrics = {"mean/reward": agent["mean/reward"], f"pass@{top}": agent[f"pass@{top}"]}
    return {"group_level_metrics": per_task, "agent_metrics": agent, "key_metrics": key_metrics}
