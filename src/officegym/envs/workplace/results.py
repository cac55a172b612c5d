"""How workplace tool results are classified and rendered as the text the model sees (the result
type itself is core's ToolResult)."""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

from officegym.core.types import ToolResult


class Rejected(str):
    """A tool's own refusal message ("Email not found.", "Invalid ..."): a string marked as an error."""

    __slots__ = ()


def _render(value: Any, status: str) -> str:
    return render_output(value)


def tool_result(value: Any, status: str = "ok") -> ToolResult:
    """A workplace result: the model sees NeMo Gym's `{"output": ...}` body whatever the status
    ("rejected" and "error" messages are outputs there too)."""
    return ToolResult(value, status, render=_render)


def render_output(value: Any) -> str:
    """The HTTP body NeMo Gym returns for a tool call: `{"output": ...}` serialised as FastAPI does
    (pydantic: compact, non-ASCII kept, NaN as null, pydantic's float spelling such as 0.00001)."""
    try:
        return to_json({"output": value}, inf_nan_mode="null", fallback=str).decode()
    except ValueError:  # a lone surrogate from the model: UTF-8 cannot carry it (the reference answers 500)
        return to_json({"output": _replace_surrogates(value)}, inf_nan_mode="null", fallback=str).decode()


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace_surrogates(v) for v in value]
    return value


def not_an_object_result(value: Any) -> ToolResult:
    """FastAPI's 422 body for a tool call whose JSON arguments are not an object."""
    detail = {
        "type": "model_attributes_type",
        "loc": ["body"],
        "msg": "Input should be a valid dictionary or object to extract fields from",
        "input": value,
    }
    try:
        body = to_json({"detail": [detail]}, inf_nan_mode="null", fallback=str).decode()
    except ValueError:
        body = to_json({"detail": [_replace_surrogates(detail)]}, inf_nan_mode="null", fallback=str).decode()
    return ToolResult(f"arguments must be a JSON object: {detail['msg']}", "error", body)
