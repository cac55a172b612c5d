"""ASGI middlewares: NeMo Gym's rollout path prefix, the request-body limit, the reference's
session cookie and session id."""

from __future__ import annotations

import re
import uuid
from typing import Any

from starlette.middleware.sessions import SessionMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from officegym.server.capture import ROLLOUT_ID
from officegym.server.protocol import BODY_TOO_LARGE, SESSION_ID_KEY, dumps

# NeMo Gym's agent (observability on) posts to /ng-rollout/<rollout id>/<route>; its servers strip
# the prefix before routing. The id takes the characters NeMo Gym allows in a rollout id.
ROLLOUT_PREFIX = re.compile(r"^/ng-rollout/(?P<id>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<rest>/.*)$")


class RolloutPrefixMiddleware:
    """Serves /ng-rollout/<id>/<route> as /<route>, as NeMo Gym's resources servers do (<id> kept in the scope)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = ROLLOUT_PREFIX.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is not None:
            path = match.group("rest")
            scope = {**scope, "path": path, "raw_path": path.encode(), ROLLOUT_ID: match.group("id")}
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Reads the whole request body (at most `max_bytes`) before the app sees it. A larger body is
    not read on: the app gets an empty body and `scope[BODY_TOO_LARGE]`, so that each route can
    answer in a way its caller survives (/verify scores it 0; the rest answer 413), and the
    connection is closed after the answer, the rest of the body being unread."""

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
                    await send_plain(send, 400, {"detail": "invalid Content-Length header"})
                    return
                if length > self.max_bytes:
                    await self._too_large(scope, receive, send)
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
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self._replaying(b"".join(chunks), scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self._replaying(b"", {**scope, BODY_TOO_LARGE: self.max_bytes}, receive, closing)

    async def _replaying(self, body: bytes, scope: Scope, receive: Receive, send: Send) -> None:
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def send_plain(send: Send, status: int, content: dict[str, Any]) -> None:
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
