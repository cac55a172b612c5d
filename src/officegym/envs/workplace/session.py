"""A workplace session: copy-on-write tables over a shared world, and the tool dispatcher."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from officegym.core.session import BaseSession
from officegym.core.toolcalls import invalid_json_result
from officegym.core.types import ToolCall, ToolResult
from officegym.envs.workplace.compat import DEFAULT_REFERENCE_COMPAT, PANDAS3
from officegym.envs.workplace.results import Rejected, not_an_object_result, tool_result
from officegym.envs.workplace.table import LABEL_NEXT, LABEL_ZERO, RELABEL_ALL, TableState
from officegym.envs.workplace.tools import TOOLS
from officegym.envs.workplace.world import TABLE_COLUMNS, World

# A fresh session: itself and its five table states (measured with tracemalloc, rounded up).
_SESSION_BYTES = 1024
# Every column of every table, shared by the sessions that start with all of them `str` (pandas 3).
_TEXT_COLUMNS = {name: frozenset(range(len(columns))) for name, columns in TABLE_COLUMNS.items()}


class WorkplaceSession(BaseSession):
    """One isolated episode over a world. Creating one copies nothing; the first write to a table
    copies that table's row list (the rows themselves are shared immutable tuples)."""

    __slots__ = ("calendar", "crm", "durations_as_float", "emails", "plots", "project_tasks", "reference_compat",
                 "world")

    def __init__(self, world: World, reference_compat: str = DEFAULT_REFERENCE_COMPAT):
        self.world = world
        self.reference_compat = reference_compat  # which pandas the reference runs on (compat.py)
        t = world.tables
        ids = world.ids
        self.emails = TableState(TABLE_COLUMNS["emails"], t["emails"], RELABEL_ALL, ids["emails"])
        self.calendar = TableState(TABLE_COLUMNS["calendar"], t["calendar"], LABEL_ZERO, ids["calendar"])
        self.plots = TableState(TABLE_COLUMNS["plots"], (), LABEL_NEXT, ())
        self.project_tasks = TableState(TABLE_COLUMNS["project_tasks"], t["project_tasks"], RELABEL_ALL, ids["project_tasks"])
        self.crm = TableState(TABLE_COLUMNS["crm"], t["crm"], RELABEL_ALL, ids["crm"])
        self.durations_as_float = False  # the reference's in-place float conversion (SPEC 3.3, quirk 4)
        if reference_compat == PANDAS3:
            for name, table in (("emails", self.emails), ("calendar", self.calendar), ("plots", self.plots),
                                ("project_tasks", self.project_tasks), ("crm", self.crm)):
                table.str_columns = _TEXT_COLUMNS[name]  # read_csv(dtype=str) under pandas 3
                table.split_blocks = True  # every `str` column is a block of its own

    @property
    def pandas3(self) -> bool:
        """Whether the read-only columns (directory, visit log) have pandas 3's `str` dtype."""
        return self.reference_compat == PANDAS3

    def table(self, name: str) -> TableState:
        return getattr(self, name)

    def held_bytes(self) -> int:
        """Memory this session holds beyond the shared world (an upper bound; the server bounds
        its sessions by it)."""
        tables = (self.emails, self.calendar, self.plots, self.project_tasks, self.crm)
        return _SESSION_BYTES + sum(t.held_bytes() for t in tables)

    def execute(self, name: str, arguments: Any = None, drop_nulls: bool = True) -> ToolResult:
        """Run one tool. Never raises on model input: failures come back as an "error" result
        carrying the reference's text. `drop_nulls` mirrors the live HTTP route (JSON nulls are
        dropped); the reference's verify replay keeps them."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError) as exc:
                return invalid_json_result(exc)
            if not isinstance(arguments, dict):
                return not_an_object_result(arguments)
        elif arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            return not_an_object_result(arguments)
        entry = TOOLS.get(name) if isinstance(name, str) else None
        if entry is None:
            return tool_result(f"Error executing tool '{_printable(name)}': {_printable(name)!r}", "error")
        if drop_nulls:
            arguments = {k: v for k, v in arguments.items() if v is not None}
        toolkit, method = entry
        try:
            value = getattr(toolkit(self), method)(**arguments)
        except Exception as exc:  # the reference returns every exception to the model as text
            return tool_result(f"Error executing tool '{name}': {exc}", "error")
        return tool_result(value, "rejected" if isinstance(value, Rejected) else "ok")

    def call(self, name: str, arguments: Any = None) -> str:
        """What the model sees for a tool call: the reference's HTTP body `{"output": ...}`."""
        return self.execute(name, arguments).text

    def replay(self, calls: Iterable[ToolCall], drop_nulls: bool = True) -> list[ToolResult]:
        return [self.execute(c.name, c.arguments if c.parse_error is None else c.raw_arguments, drop_nulls) for c in calls]


def _printable(text: Any) -> str:
    """A tool name as the error text can carry it (a lone surrogate cannot be sent as UTF-8)."""
    return str(text).encode("utf-8", "replace").decode("utf-8")
