"""The small, stable protocols every environment implements (core/environment.py and
core/session.py are the base classes that implement them with defaults)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolResult, ToolSpec, Verdict


@runtime_checkable
class Session(Protocol):
    """One isolated episode. `call` and `execute` never raise on model input: errors come back as
    text (`call`) or as an "error" ToolResult (`execute`); `aclose` frees it."""

    def call(self, name: str, arguments: Any = None) -> str: ...

    def execute(self, name: str, arguments: Any = None) -> ToolResult: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class Environment(Protocol):
    name: str

    def tools(self, task: Task | None = None) -> list[ToolSpec]: ...

    def session(self, task: Task | None = None) -> Session: ...

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict: ...
