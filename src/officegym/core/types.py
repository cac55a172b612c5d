"""Plain data types shared by every layer: tool specs, tool calls, verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model, in the Responses-API "function" shape."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = False

    @classmethod
    def from_schema(cls, schema: dict[str, Any]) -> ToolSpec:
        """A ToolSpec from a Responses-API tool entry or a Chat-Completions one (`{"function": {...}}`);
        the one conversion every environment, the client and SFT use."""
        fn = schema.get("function") if isinstance(schema.get("function"), dict) else schema
        return cls(
            name=str(fn.get("name", "")),
            description=str(fn.get("description", "")),
            parameters=fn.get("parameters") or {"type": "object", "properties": {}},
            strict=bool(fn.get("strict", False)),
        )

    def to_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "strict": self.strict,
        }

    def to_chat_tool(self) -> dict[str, Any]:
        """The Chat-Completions `tools` entry for this spec."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(slots=True)
class ToolResult:
    """What one tool call returned, for every environment and the remote client.

    `status` is "ok", "rejected" (the tool refused with its own message), "error" (unknown tool,
    bad arguments, an exception) or "invalid" (not a call). The text the model sees is `body` when
    set, else `render(value, status)` when the environment renders its own way (the workplace:
    NeMo Gym's HTTP body), else `{"output": value}` or, for a failed call, `{"error": value}`.
    Rendering is lazy: a verifier's replay only asks `ok`.
    """

    value: Any
    status: str = "ok"
    body: str | None = None
    render: Callable[[Any, str], str] | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def text(self) -> str:
        if self.body is not None:
            return self.body
        if self.render is not None:
            return self.render(self.value, self.status)
        key = "output" if self.status == "ok" else "error"
        return json.dumps({key: self.value}, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(slots=True)
class ToolCall:
    """One tool call: a name and its arguments.

    `arguments` is the decoded JSON value (normally a dict). `raw_arguments` keeps the JSON text the
    call arrived with, so that a NeMo Gym row round-trips byte for byte and so that a replay can
    reproduce exactly what the reference does with undecodable text (`parse_error` says why).
    """

    name: str
    arguments: Any = field(default_factory=dict)
    raw_arguments: str | None = None
    call_id: str | None = None
    parse_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def with_id(self, call_id: str) -> ToolCall:
        """This call under another id, as a new ToolCall (the same arguments, a copy of `extra`): a
        turn's calls get ids of their own without changing the calls a policy or a task holds."""
        return ToolCall(self.name, self.arguments, self.raw_arguments, call_id, self.parse_error, dict(self.extra))

    @property
    def arguments_json(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments)

    def to_nemo(self) -> dict[str, Any]:
        """NeMo Gym ground-truth form: `{"name", "arguments": "<json>"}` (plus keys it came with)."""
        return {**self.extra, "name": self.name, "arguments": self.arguments_json}

    def to_function_call(self) -> dict[str, Any]:
        """A Responses-API `function_call` output item."""
        return {
            "type": "function_call",
            "name": self.name,
            "arguments": self.arguments_json,
            "call_id": self.call_id or "",
        }


@dataclass(slots=True)
class InvalidCall:
    """A call that could not run as asked: unknown tool, bad JSON, bad argument, tool error."""

    index: int
    name: str
    error: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "error": self.error}


@dataclass(slots=True)
class TableDiff:
    """How one table's final state differs from the expected one."""

    missing: list[dict[str, Any]] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None

    def __bool__(self) -> bool:
        return bool(self.missing or self.extra or self.changed or self.note)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"missing": self.missing, "extra": self.extra, "changed": self.changed}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(slots=True)
class Verdict:
    """The verifier's decision and the evidence a human needs to see why."""

    reward: float
    matched: bool
    mode: str
    tables: dict[str, TableDiff] = field(default_factory=dict)
    side_effects: bool = False
    invalid_calls: list[InvalidCall] = field(default_factory=list)
    other_mode: str | None = None
    other_mode_reward: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def modes_disagree(self) -> bool:
        return self.other_mode_reward is not None and self.other_mode_reward != self.reward

    def to_dict(self) -> dict[str, Any]:
        return {
            "reward": self.reward,
            "matched": self.matched,
            "mode": self.mode,
            "side_effects": self.side_effects,
            "diff": {name: d.to_dict() for name, d in self.tables.items() if d},
            "invalid_calls": [c.to_dict() for c in self.invalid_calls],
            "other_mode": self.other_mode,
            "other_mode_reward": self.other_mode_reward,
            "modes_disagree": self.modes_disagree,
            **self.details,
        }
