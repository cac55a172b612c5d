"""The resources server's handlers: sessions, tool calls, verify, metrics, introspection."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from officegym.core.protocols import Environment
from officegym.server.agent import SimpleAgent
from officegym.server.config import ServerConfig
from officegym.server.metrics import aggregate_metrics
from officegym.server.protocol import (
    NOT_INITIALIZED,
    SESSION_ID_KEY,
    STATUS_HEADER,
    BadRequest,
    detail,
    dumps,
    json_response,
    not_an_object,
    read_object,
    require,
)
from officegym.server.rows import check_params, resolve_mode, task_and_calls, task_from_row, verify_answer
from officegym.server.sessions import SessionStore


def session_id(request: Request) -> str:
    return request.session[SESSION_ID_KEY]


class ServerState:
    """The environment, its session store and request counts, with one handler per route."""

    def __init__(self, env: Environment, config: ServerConfig, store: SessionStore):
        self.env = env
        self.config = config
        self.store = store
        self.started = time.time()
        self.counts: dict[str, int] = defaultdict(int)
        self.agent = SimpleAgent(env, config, self.counts)

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
        self.store.put(session_id(request), session)
        self.counts["seed_session"] += 1
        return Response(b"{}", media_type="application/json")

    def _session_from_row(self, row: dict[str, Any]) -> Any:
        """The session of the task a row names, for environments whose episodes depend on the task
        (the role environments rebuild the scenario from the row's metadata); 422 when it names none."""
        if "responses_create_params" not in row:
            raise BadRequest(detail(f"{self.env.name} sessions are seeded with the task row (its "
                                    "responses_create_params and metadata): the body has none", 422))
        check_params(require(row, "responses_create_params", dict, "dictionary"))
        session = self.env.session(task_from_row({**row, "response": None}))
        problem = getattr(session, "problem", None)
        if problem:
            raise BadRequest(detail(problem, 422))
        return session

    async def close_session(self, request: Request) -> Response:
        body = await read_object(request, allow_empty=True)
        self.store.pop(session_id(request))
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
        name = require(body, "name", str, "string")
        arguments = body.get("arguments", {})
        if not isinstance(arguments, dict):
            return not_an_object(arguments)
        return self._call(request, name, arguments)

    def _call(self, request: Request, name: str, arguments: dict[str, Any]) -> Response:
        session = self.store.get(session_id(request))
        if session is None:
            self.counts["unseeded"] += 1
            return detail(NOT_INITIALIZED, 400)
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

    # -- verify and metrics

    async def verify(self, request: Request) -> Response:
        row = await read_object(request)
        task, calls = task_and_calls(row)
        mode = resolve_mode(self.env, self.config.mode, request.query_params.get("mode"))
        try:
            verdict = self.env.verify(task, calls, mode)
        finally:
            self.store.pop(session_id(request))  # NeMo Gym 0.7 drops the session once verified
        self.counts["verify"] += 1
        out = verify_answer(row, verdict.reward)
        if self.config.evidence:
            out["officegym"] = {"verdict": verdict.to_dict()}
        return json_response(out)

    async def aggregate_metrics(self, request: Request) -> Response:
        body = await read_object(request)
        rows = require(body, "verify_responses", list, "list")
        return json_response(aggregate_metrics(rows))

    async def run(self, request: Request) -> Response:
        return await self.agent.run(request)

    async def aclose(self) -> None:
        await self.agent.aclose()
