"""Request hygiene for the review UI: the Host check against DNS rebinding, bounded request bodies,
query numbers SQLite can hold, and a 500 that tells the client to reconnect."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from officegym.review.store import INT64_MAX

MAX_BODY_BYTES = 1 << 20
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS = ("", "0.0.0.0", "::")
log = logging.getLogger("officegym.review")


class BodyTooLargeError(ValueError):
    """A request body over the limit; the message is for the client."""


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body, refused as soon as it passes `limit` bytes (a declared length is believed first).
    The server discards what is left of a refused body, so the connection stays usable."""
    too_large = BodyTooLargeError(f"the request body is over {limit // 1024} KiB")
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large
    return bytes(body)


def parse_int(text: str | None) -> int | None:
    """`text` as a decimal integer, None when it is not one. A number too long for 64 bits comes
    back as one just beyond them, so callers check a range instead of meeting int()'s digit limit."""
    text = (text or "").strip()
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()):  # isdigit alone passes "²", which int() refuses
        return None
    if len(digits) > 19:
        return -INT64_MAX - 2 if text.startswith("-") else INT64_MAX + 1
    return int(text)


def split_host(value: str, bare_ipv6: bool = False) -> tuple[str, int | None] | None:
    """(name, port) of `host[:port]` or `[v6]:port`, lower-case; None when malformed. A Host
    header brackets IPv6 addresses; `bare_ipv6` also reads `::1` (an allowed-hosts entry)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
    elif value.count(":") > 1 and bare_ipv6:
        name, port = value, None
    else:
        name, sep, port = value.partition(":")
        port = port if sep else None
    if not name or any(c in name for c in "/?#@[] "):
        return None
    if port is None:
        return name.rstrip("."), None
    if not port.isdigit() or len(port) > 5 or int(port) > 65535:
        return None
    return name.rstrip("."), int(port)


class AllowedHosts:
    """The Host headers the UI answers: (name, port) pairs, a None port matching any port."""

    def __init__(self, entries: Iterable[tuple[str, int | None]], any_host: bool = False):
        self.entries = frozenset(entries)
        self.any_host = any_host

    @classmethod
    def for_bind(cls, host: str, port: int) -> AllowedHosts:
        """Localhost names and the bound address, on the bound port. Port 0 lets the OS pick,
        so the port is unknown here and any passes."""
        names = set(LOCAL_NAMES)
        bound = host.strip().strip("[]").lower()
        if bound not in WILDCARD_HOSTS:
            names.add(bound)
        return cls((n, port or None) for n in names)

    @classmethod
    def parse(cls, text: str) -> AllowedHosts:
        """`--allowed-hosts`: comma-separated `host`, `host:port` or `[v6]:port`; `*` is any host."""
        entries, any_host = [], False
        for part in filter(None, (p.strip() for p in text.split(","))):
            if part == "*":
                any_host = True
                continue
            parsed = split_host(part, bare_ipv6=True)
            if parsed is None:
                raise ValueError(f"not a host or host:port: {part!r}")
            entries.append(parsed)
        if not entries and not any_host:
            raise ValueError("--allowed-hosts names no host")
        return cls(entries, any_host)

    def allows(self, header: str, default_port: int = 80) -> bool:
        if self.any_host:
            return True
        parsed = split_host(header)
        if parsed is None:
            return False
        name, port = parsed
        port = default_port if port is None else port
        return any(name == n and p in (None, port) for n, p in self.entries)

    def describe(self) -> str:
        if self.any_host:
            return "any host"
        return ", ".join(sorted(f"[{n}]" if ":" in n else n for n, _ in self.entries))


class HostCheck:
    """Refuse requests whose Host header is not one the UI serves: a page on another site whose
    name was rebound to this machine's address would otherwise read and post to the UI."""

    def __init__(self, app: ASGIApp, allowed: AllowedHosts):
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = Headers(scope=scope).get("host", "")
            if not self.allowed.allows(host, 443 if scope.get("scheme") == "https" else 80):
                text = (f"Host {host!r} is not served here (this review UI answers {self.allowed.describe()}); "
                        "start it with --allowed-hosts to add names")
                await PlainTextResponse(text, status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class CloseOnError:
    """Turn an unhandled exception into a 500 that carries `Connection: close`. The server drops
    the connection after a failed app either way; said in the response, the client reconnects
    instead of failing its next request on the dead connection."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception:
            if started:  # part of a response went out: only dropping the connection ends it
                raise
            log.exception("review UI: %s %s failed", scope.get("method"), scope.get("path"))
            await PlainTextResponse("Internal Server Error", status_code=500,
                                    headers={"connection": "close"})(scope, receive, send)
