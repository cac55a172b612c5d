"""The small, stable protocols every environment implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolSpec, Verdict


@runtime_checkable
class Session(Protocol):
    """One isolated episode. `call` never raises on model input: errors come back as text."""

    def call(self, name: str, arguments: Any = None) -> str: ...


@runtime_checkable
class Environment(Protocol):
    name: str

    def tools(self, task: Task | None = None) -> list[ToolSpec]: ...

    def session(self, task: Task | None = None) -> Session: ...

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict: ...
