"""How tool results are classified and rendered as the text the model sees."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any


class Rejected(str):
    """A tool's own refusal message ("Email not found.", "Invalid ..."): a string marked as an error."""

    __slots__ = ()


@dataclass(slots=True)
class ToolResult:
    """The value a tool returned and whether the call failed.

    `status` is "ok", "rejected" (the tool refused with its own message) or "error" (unknown
    tool, bad arguments, an exception inside the tool: the reference's "Error executing tool").
    """

    value: Any
    status: str = "ok"

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def text(self) -> str:
        return render_output(self.value)


def _sanitize(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {k: _sanitize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_sanitize(v) for v in value]
    return value


def render_output(value: Any) -> str:
    """The HTTP body NeMo Gym returns for a tool call: compact `{"output": ...}`, NaN as null."""
    body = {"output": value}
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a NaN cell (missing CSV value) somewhere in the records
        return json.dumps(_sanitize(body), ensure_ascii=False, separators=(",", ":"), default=str)
    except TypeError:  # a value JSON cannot hold; show its text rather than fail the rollout
        return json.dumps(_sanitize(body), ensure_ascii=False, separators=(",", ":"), default=str)
