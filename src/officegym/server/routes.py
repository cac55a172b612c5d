"""The resources server's handlers: sessions, tool calls, verify, metrics, introspection."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from officegym.core.environment import BaseEnvironment
from officegym.core.session import BaseSession
from officegym.server.agent import SimpleAgent
from officegym.server.capture import ROLLOUT_ID, CaptureBarrier
from officegym.server.config import ServerConfig
from officegym.server.limits import Seeded, WriteLimits, weigh
from officegym.server.metrics import aggregate_metrics
from officegym.server.protocol import (
    BODY_TOO_LARGE,
    NOT_INITIALIZED,
    PARSE_OFF_LOOP_BYTES,
    SESSION_ID_KEY,
    STATUS_HEADER,
    BadRequest,
    CloseSessionRequest,
    detail,
    dumps,
    json_response,
    not_an_object,
    read_object,
    require,
    validated,
)
from officegym.server.rows import (
    check_params,
    oversized_answer,
    resolve_mode,
    scored_zero,
    task_and_calls,
    task_from_row,
    verify_answer,
)
from officegym.server.sessions import SessionStore

log = logging.getLogger(__name__)
FULL_LOG_S = 10.0

# Verifies replaying more calls than this, and metrics over more rows, run in a worker thread so
# that the event loop keeps answering other clients meanwhile.
OFF_LOOP_CALLS = 32
OFF_LOOP_ROWS = 2000


def session_id(request: Request) -> str:
    return request.session[SESSION_ID_KEY]


def too_large(request: Request) -> Response:
    return detail(f"request body larger than {request.scope[BODY_TOO_LARGE]} bytes", 413)


class ServerState:
    """The environment, its session store and request counts, with one handler per route."""

    def __init__(self, env: BaseEnvironment, config: ServerConfig, store: SessionStore):
        self.env = env
        self.config = config
        self.store = store
        self.started = time.time()
        self.counts: dict[str, int] = defaultdict(int)
        self.agent = SimpleAgent(env, config, self.counts)
        self._evictions_logged = 0
        self._logged_at: dict[str, float] = {}
        self.capture = CaptureBarrier(config.capture_dir, config.capture_wait_s) if config.capture_dir else None
        self.limits = WriteLimits(config.max_session_writes, config.max_session_write_bytes,
                                  frozenset(env.write_tools) if env.write_tools else None, config.max_session_bytes)

    # -- liveness and introspection

    async def liveness(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def health(self, request: Request) -> Response:
        return json_response({
            "status": "ok",
            "environment": self.env.name,
            "world": self.env.world_path,
            "mode": self.config.mode or self.env.mode,
            "uptime_s": round(time.time() - self.started, 3),
            "sessions": self.store.stats().to_dict(),
            "max_sessions": self.config.max_sessions,
            "idle_ttl_s": self.config.idle_ttl_s,
            "evict_idle_s": self.config.evict_idle_s,
            "max_body_bytes": self.config.max_body_bytes,
            "max_session_writes": self.config.max_session_writes,
            "max_session_write_bytes": self.config.max_session_write_bytes,
            "max_session_bytes": self.config.max_session_bytes,
            "max_store_bytes": self.config.max_store_bytes,
            "max_verify_calls": self.config.max_verify_calls,
            "requests": dict(self.counts),
            "write_tools": sorted(self.env.write_tools or ()),
            "cookie": self.config.cookie_name,
            "model_call_capture": self.capture.stats() if self.capture else None,
        })

    async def tools(self, request: Request) -> Response:
        return json_response([spec.to_schema() for spec in self.env.tools(None)])

    async def reverify_mode(self, request: Request) -> Response:
        return json_response("stateless")

    # -- sessions

    async def seed_session(self, request: Request) -> Response:
        from_row = self.env.session_from_row
        if request.scope.get(BODY_TOO_LARGE) and from_row:
            return too_large(request)
        # The reference validates the body, then ignores it; one too large to read is ignored unread.
        body = {} if request.scope.get(BODY_TOO_LARGE) else await read_object(request, allow_empty=True)
        session = self._session_from_row(body) if from_row else self.env.session(None)
        seeded = Seeded(session)
        if not self.store.put(session_id(request), seeded, weigh(seeded)):
            self.counts["seed_refused"] += 1
            self._log_limited("refused", "session store full (%d sessions, every one used in the last %s s): "
                              "refused new sessions (%d in all)", self.config.max_sessions,
                              self.config.evict_idle_s, self.counts["seed_refused"])
            return self._full()
        self.counts["seed_session"] += 1
        self._log_evictions()
        return Response(b"{}", media_type="application/json")

    def _full(self) -> Response:
        retry = str(self.config.retry_after_s)
        idle = self.config.evict_idle_s
        why = (f"every one of them was used in the last {idle:g} s" if idle is not None
               else "this server never evicts a session in use (--evict-idle 0)")
        return json_response({"detail": f"officegym: no room for a new session: the server holds its maximum of "
                                        f"{self.config.max_sessions} sessions and {why}; retry in {retry} s, or "
                                        "start the server with a larger --max-sessions (sessions end when "
                                        "verified or closed)"}, 503, {"retry-after": retry})

    def _log_evictions(self) -> None:
        evicted = self.store.evicted_idle()
        if evicted != self._evictions_logged and self._log_limited(
                "evicted", "session store full (%d sessions): evicted sessions idle for %s s or more, least "
                "recently used first (%d in all)", self.config.max_sessions, self.config.evict_idle_s, evicted):
            self._evictions_logged = evicted

    def _log_limited(self, what: str, message: str, *args: Any) -> bool:
        """Log `message` unless a line about `what` went out in the last FULL_LOG_S seconds (a full
        store sees thousands of seeds a minute)."""
        now = time.monotonic()
        if now - self._logged_at.get(what, float("-inf")) < FULL_LOG_S:
            return False
        self._logged_at[what] = now
        log.warning(message, *args)
        return True

    def _session_from_row(self, row: dict[str, Any]) -> BaseSession:
        """The session of the task a row names, for environments whose episodes depend on the task
        (the role environments rebuild the scenario from the row's metadata); 422 when it names none."""
        if "responses_create_params" not in row:
            raise BadRequest(detail(f"{self.env.name} sessions are seeded with the task row (its "
                                    "responses_create_params and metadata): the body has none", 422))
        check_params(require(row, "responses_create_params", dict, "dictionary"))
        session = self.env.session(task_from_row({**row, "response": None}))
        if session.problem:
            raise BadRequest(detail(session.problem, 422))
        return session

    async def close_session(self, request: Request) -> Response:
        """NeMo Gym's close: the body is validated as there; the caller's session is then dropped
        (the reference keeps it, having nothing to free; its contract lets a server release the
        state it keys by the session cookie)."""
        body = validated(CloseSessionRequest, await read_object(request))
        self.store.pop(session_id(request))
        self.counts["close_session"] += 1
        return json_response({"resources_session_id": body.resources_session_id})

    async def sweep_forever(self) -> None:
        interval = max(0.5, min(self.config.sweep_interval_s, (self.config.idle_ttl_s or 60.0) / 2))
        while True:
            await asyncio.sleep(interval)
            self.store.sweep()

    # -- tools

    async def call_tool(self, request: Request) -> Response:
        arguments = await read_object(request)
        return await self._call(request, request.path_params["path"], arguments)

    async def call_by_body(self, request: Request) -> Response:
        """officegym's route for tool names that cannot be a URL segment (empty, "/", reserved)."""
        body = await read_object(request)
        name = require(body, "name", str, "string")
        arguments = body.get("arguments", {})
        if not isinstance(arguments, dict):
            return not_an_object(arguments)
        return await self._call(request, name, arguments)

    async def _call(self, request: Request, name: str, arguments: dict[str, Any]) -> Response:
        seeded = self.store.get(session_id(request))
        if seeded is None:
            self.counts["unseeded"] += 1
            return detail(NOT_INITIALIZED, 400)
        self.counts["tool_calls"] += 1
        size = len(await request.body())
        refusal = self.limits.refusal(seeded, name, size)
        if refusal is None and self.limits.is_write(name) and not self.store.has_room():
            refusal = (f"Error executing tool '{name}': the server's sessions hold their maximum of "
                       f"{self.config.max_store_bytes} bytes of data and every one is in use. The call was not run.")
            self._log_limited("store_bytes", "session store full (%d bytes held, every session in use): refused "
                              "writes", self.store.stats().bytes)
        if refusal is not None:
            self.counts["writes_refused"] += 1
            return Response(dumps({"output": refusal}), media_type="application/json", headers={STATUS_HEADER: "error"})
        result = seeded.session.execute(name, arguments)
        try:
            text = result.text
        except Exception:  # a value UTF-8 cannot hold (lone surrogates): render it readable
            text = dumps({"output": result.value}).decode()
        status = result.status
        self.limits.record(seeded, name, size, status)
        if self.limits.is_write(name):
            self.store.charge(session_id(request), seeded.held_bytes)
        return Response(text, media_type="application/json", headers={STATUS_HEADER: status})

    # -- verify and metrics

    async def verify(self, request: Request) -> Response:
        dropped = True
        try:
            return await self._verify(request)
        except BadRequest:
            dropped = False  # a row refused with a 4xx leaves the session be, as the reference's validation does
            raise
        finally:
            if dropped:
                self.store.pop(session_id(request))  # NeMo Gym 0.7 drops the session once verified

    async def _verify(self, request: Request) -> Response:
        if request.scope.get(BODY_TOO_LARGE):
            self.counts["verify_too_large"] += 1
            return json_response(oversized_answer(request.scope[BODY_TOO_LARGE]))
        row = await read_object(request)
        if self.capture is not None and isinstance(row.get("response"), dict):
            await self.capture.wait(request.scope.get(ROLLOUT_ID), row["response"].get("id"))
        big = len(await request.body()) >= PARSE_OFF_LOOP_BYTES
        task, calls = await run_in_threadpool(task_and_calls, row) if big else task_and_calls(row)
        mode = resolve_mode(self.env, self.config.mode, request.query_params.get("mode"))
        cap = self.config.max_verify_calls
        if len(task.ground_truth) > cap:
            raise BadRequest(detail(f"the ground truth has {len(task.ground_truth)} calls; this server replays "
                                    f"at most {cap} (--max-verify-calls)", 422))
        if len(calls) > cap:
            self.counts["verify_too_many_calls"] += 1
            reason = f"the response makes {len(calls)} function calls; this server replays at most {cap}, scored 0"
            out = scored_zero(row, "too_many_calls", reason)
            return json_response({**out, "officegym": {"refused": reason}} if self.config.evidence else out)
        if big or len(calls) + len(task.ground_truth) > OFF_LOOP_CALLS:
            verdict = await run_in_threadpool(self.env.verify, task, calls, mode)
        else:
            verdict = self.env.verify(task, calls, mode)
        self.counts["verify"] += 1
        out = verify_answer(row, verdict.reward)
        if self.config.evidence:
            out["officegym"] = {"verdict": verdict.to_dict()}
        return json_response(out)

    async def aggregate_metrics(self, request: Request) -> Response:
        body = await read_object(request)
        rows = require(body, "verify_responses", list, "list")
        if len(rows) > OFF_LOOP_ROWS:
            return json_response(await run_in_threadpool(aggregate_metrics, rows))
        return json_response(aggregate_metrics(rows))

    async def run(self, request: Request) -> Response:
        return await self.agent.run(request)

    async def aclose(self) -> None:
        await self.agent.aclose()
