"""What a caller may ask of a session: the base class every environment's sessions derive from.

A session is one isolated episode. It answers a tool call two ways: `execute` gives a ToolResult
(the value and its status: ok, rejected, error) and `call` the text the model sees. A session
defines at least one of them; the other follows from it. Neither raises on model input. `aclose()`
frees what the session holds outside the process (a remote session's server-side state): nothing
for one in process. `problem` says why a session cannot run (a task row naming no scenario);
`held_bytes()` what it holds in memory, when it knows. The agent loop awaits `aexecute`: `execute`
in process, the request for a session on a server (server/client.py).

So the agent loop, the review queue and the server ask instead of probing with `getattr`.
"""

from __future__ import annotations

from typing import Any

from officegym.core.types import ToolResult


class BaseSession:
    __slots__ = ()
    problem: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.execute is BaseSession.execute and cls.call is BaseSession.call:
            raise TypeError(f"{cls.__name__} must define execute or call")

    def execute(self, name: str, arguments: Any = None) -> ToolResult:
        """Run one tool; a session that answers the text alone reports every call as ok."""
        text = self.call(name, arguments)
        return ToolResult(text, "ok", body=text)

    def call(self, name: str, arguments: Any = None) -> str:
        """What the model sees for a tool call."""
        return self.execute(name, arguments).text

    async def aexecute(self, name: str, arguments: Any = None) -> ToolResult:
        """`execute`, awaited by the agent loop (a session over the network overrides it)."""
        return self.execute(name, arguments)

    async def aclose(self) -> None:
        """Free what the session holds outside this process (nothing here)."""

    def held_bytes(self) -> int | None:
        """An upper bound of the memory the session holds beyond what it shares (the server bounds
        its sessions by it); None: not known."""
        return None
