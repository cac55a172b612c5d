"""The HTTP resources server: NeMo Gym's protocol over any officegym environment.

Endpoints (SPEC 5.1-5.3; officegym additions marked +):

    POST /seed_session      any JSON object (the agent sends the task row; ignored by the workplace,
                            the session's task for environments with `session_from_row`) -> {}
    POST /{tool_name}       the tool's JSON arguments -> 200 with the tool's body, {"output": ...}
    POST /verify            task row + `response` -> the reference's echo + `reward` (+ `officegym` evidence)
    POST /aggregate_metrics {"verify_responses": [...]} -> NeMo Gym 0.7's statistics per task, repeat and overall
    POST /close_session     NeMo Gym's body, validated -> drops the caller's session (+ frees memory here)
    GET  /reverify_mode     "stateless": verify reads no session state
    GET  /, /health, /healthz, /livez, /readyz   liveness (NeMo Gym's routes; /health adds statistics)
  + GET  /tools             the environment's tool schemas (Responses-API "function" shape)
  + POST /run               task row + model server -> one verified rollout (NeMo Gym's simple agent)

Sessions ride on a cookie exactly as in the reference: Starlette's SessionMiddleware signs a JSON
session dict with itsdangerous; cookie name and secret are both
"WorkbenchResourcesServer___workplace_assistant" for the workplace environment, and every request
gets a `session_id` (uuid4) if it has none, with the cookie re-sent on every response. The id keys a
bounded store (count + idle TTL, sessions.py); NeMo Gym 0.7 also drops the session once it is verified.
A full store makes room by evicting its least recently used session once that one has idled for
`evict_idle_s` (counted in /health's `sessions.evicted_idle`, logged); only when every session is
in active use does it refuse with 503, Retry-After and a `detail` that NeMo Gym's agent passes on
in its own error. What sessions hold is bounded in bytes, per session and over the store
(limits.py): a write past either bound is refused in band once no idle session can make room. NeMo Gym's /ng-rollout/<id>/ path prefix is stripped.

Bad input never gives a 500: bodies that are not JSON, not objects or of the wrong types get the
4xx FastAPI would give the reference (422 with the same `detail`), bodies over `max_body_bytes` are
not read (/verify scores them 0, other routes answer 413), unknown tools and bad arguments get the
reference's in-band "Error executing tool ..." text.
Tool calls also carry an `x-officegym-status` header (ok | rejected | error) so that a remote
rollout records the same statuses as an in-process one.

Modules: protocol.py (constants, JSON in and out, 4xx bodies), middleware.py, routes.py (the
handlers), rows.py (task rows and verify answers), agent.py (/run), metrics.py
(/aggregate_metrics), limits.py (write budget), config.py, sessions.py; this one wires them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from officegym.core.environment import BaseEnvironment
from officegym.core.rollout_row import response_output
from officegym.server.capture import DEFAULT_CAPTURE_WAIT_S
from officegym.server.config import (
    DEFAULT_EVICT_IDLE_S,
    DEFAULT_IDLE_TTL_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_SESSION_BYTES,
    DEFAULT_MAX_SESSION_WRITE_BYTES,
    DEFAULT_MAX_SESSION_WRITES,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_STORE_BYTES,
    DEFAULT_MAX_VERIFY_CALLS,
    MAX_RUN_STEPS,
    ServerConfig,
)
from officegym.server.metrics import aggregate_metrics
from officegym.server.middleware import (
    BodyLimitMiddleware,
    CookieSessionMiddleware,
    RolloutPrefixMiddleware,
    SessionIdMiddleware,
)
from officegym.server.protocol import (
    BODY_TOO_LARGE,
    NOT_INITIALIZED,
    REFERENCE_COOKIE,
    RESERVED_PATHS,
    SESSION_ID_KEY,
    STATUS_HEADER,
    BadRequest,
    detail,
    dumps,
    json_response,
)
from officegym.server.routes import ServerState, too_large
from officegym.server.sessions import SessionStore

# Names other modules and tests import from here (the app was one module before it was split).
__all__ = [
    "DEFAULT_IDLE_TTL_S", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_SESSIONS", "MAX_RUN_STEPS", "NOT_INITIALIZED",
    "REFERENCE_COOKIE", "RESERVED_PATHS", "SESSION_ID_KEY", "STATUS_HEADER", "ServerConfig", "aggregate_metrics",
    "create_app", "dumps", "json_response", "response_output",
]

log = logging.getLogger(__name__)


def create_app(
    env: BaseEnvironment,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    *,
    evict_idle_s: float | None = DEFAULT_EVICT_IDLE_S,
    max_session_writes: int | None = DEFAULT_MAX_SESSION_WRITES,
    max_session_write_bytes: int | None = DEFAULT_MAX_SESSION_WRITE_BYTES,
    max_session_bytes: int | None = DEFAULT_MAX_SESSION_BYTES,
    max_store_bytes: int | None = DEFAULT_MAX_STORE_BYTES,
    max_verify_calls: int = DEFAULT_MAX_VERIFY_CALLS,
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
    model_call_capture_dir: str | Path | None = None,
    capture_wait_s: float = DEFAULT_CAPTURE_WAIT_S,
) -> FastAPI:
    """A FastAPI app serving `env` with NeMo Gym's resources-server protocol (see the module doc).

    `cookie_name`/`secret_key` default to the reference's (both
    "WorkbenchResourcesServer___workplace_assistant" for the workplace environment); pass a real
    secret when the port is reachable by anyone who should not forge session cookies.
    `model_call_capture_dir`: NeMo Gym's, when its observability is on; /verify then waits up to
    `capture_wait_s` for the verified model call to be captured (capture.py).
    """
    if max_body_bytes < 1024:
        raise ValueError("max_body_bytes must be at least 1024")
    if any(v is not None and v < 1 for v in (max_session_writes, max_session_write_bytes)) or max_verify_calls < 1:
        raise ValueError("max_session_writes, max_session_write_bytes (or None for no bound) and max_verify_calls "
                         "must be at least 1")
    if evict_idle_s is not None and evict_idle_s < 0:
        raise ValueError("evict_idle_s must be at least 0")
    if min(max_session_bytes or 1, max_store_bytes or 1) < 1:
        raise ValueError("max_session_bytes and max_store_bytes must be at least 1 (or None for no bound)")
    if model_api not in ("chat", "responses"):
        raise ValueError("model_api must be 'chat' or 'responses'")
    if not 1 <= max_steps <= MAX_RUN_STEPS:
        raise ValueError(f"max_steps must be between 1 and {MAX_RUN_STEPS}")
    modes = env.modes
    for given in (mode, env.mode):
        if given is not None and modes and given not in modes:
            raise ValueError(f"unknown verification mode {given!r}; choose from {', '.join(modes)}")
    cookie = cookie_name or env.cookie_name()  # NeMo Gym's "<resources-server class>___<name>"
    config = ServerConfig(
        max_sessions=max_sessions, idle_ttl_s=idle_ttl_s, evict_idle_s=evict_idle_s, max_body_bytes=max_body_bytes,
        max_session_writes=max_session_writes, max_session_write_bytes=max_session_write_bytes,
        max_session_bytes=max_session_bytes, max_store_bytes=max_store_bytes,
        max_verify_calls=max_verify_calls, cookie_name=cookie,
        secret_key=secret_key or cookie, mode=mode, evidence=evidence, max_steps=max_steps,
        model_server_url=model_server_url, model=model, model_api=model_api, policy_options=policy_options,
        sweep_interval_s=sweep_interval_s,
        capture_dir=Path(model_call_capture_dir) if model_call_capture_dir else None, capture_wait_s=capture_wait_s,
    )
    state = ServerState(env, config, SessionStore(max_sessions, idle_ttl_s, clock, when_full="refuse",
                                                        evict_idle_s=evict_idle_s, max_bytes=max_store_bytes))

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
            await state.aclose()

    app = FastAPI(title="officegym resources server", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.officegym = state
    # Added innermost first: the prefix goes before anything looks at the path, and the body limit
    # runs before the session cookie is read.
    app.add_middleware(SessionIdMiddleware)
    app.add_middleware(CookieSessionMiddleware, secret_key=config.secret_key, session_cookie=config.cookie_name)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    app.add_middleware(RolloutPrefixMiddleware)

    # Plain Starlette routes: every handler reads and checks its own body (giving the 422 bodies
    # FastAPI gives the reference), which spares FastAPI's per-request dependency solving. The
    # last column: whether the handler answers a body too large to read itself (else 413).
    routes: list[tuple[str, Callable[[Request], Any], str, bool]] = [
        *((path, state.liveness, "GET", False) for path in ("/", "/healthz", "/livez", "/readyz")),
        ("/health", state.health, "GET", False),
        ("/tools", state.tools, "GET", False),
        ("/reverify_mode", state.reverify_mode, "GET", False),
        ("/seed_session", state.seed_session, "POST", True),
        ("/verify", state.verify, "POST", True),
        ("/aggregate_metrics", state.aggregate_metrics, "POST", False),
        ("/close_session", state.close_session, "POST", False),
        ("/run", state.run, "POST", False),
        ("/officegym/call", state.call_by_body, "POST", False),
        ("/{path}", state.call_tool, "POST", False),  # last: fixed routes win, as in the reference
    ]
    for path, handler, method, takes_oversized in routes:
        app.add_route(path, _guarded(handler, takes_oversized), methods=[method], include_in_schema=False)
        # Starlette answers HEAD wherever GET is served; NeMo Gym's FastAPI routes do not (405)
        app.router.routes[-1].methods.discard("HEAD")
    return app


def _guarded(handler: Callable[[Request], Any], takes_oversized: bool) -> Callable[[Request], Any]:
    """The handler with its BadRequest answered, a body too large to read answered 413 (unless the
    handler takes it), and any other failure answered 500 here: an exception that left the app
    would make uvicorn drop the client's keep-alive connection with it."""

    async def endpoint(request: Request) -> Response:
        if not takes_oversized and request.scope.get(BODY_TOO_LARGE):
            return too_large(request)
        try:
            return await handler(request)
        except BadRequest as exc:
            return exc.response
        except Exception as exc:
            log.exception("%s %s failed", request.method, request.url.path)
            return detail(f"internal error: {type(exc).__name__}", 500)

    endpoint.__name__ = handler.__name__
    return endpoint
