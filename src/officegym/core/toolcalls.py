"""Parse tool calls from every format officegym meets, without ever evaluating text.

Formats: NeMo Gym ground truth (`{"name", "arguments": "<json>"}`), Responses-API `function_call`
items, Chat-Completions `tool_calls` entries, and WorkBench call strings
(`email.send_email.func(recipient="...")`, read with `ast`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable
from typing import Any

from officegym.core.types import ToolCall, ToolResult


class ToolCallParseError(ValueError):
    """Raised only for input that is not a tool call at all (wrong container type)."""


_raw_decode = json.JSONDecoder().raw_decode


def _json_loads(text: str) -> Any:
    """json.loads(text), a third of its time for the usual short arguments text: one JSON value
    with nothing around it is decoded directly; anything else (spaces, a BOM, extra data, an error)
    goes through json.loads, which gives its own value or error."""
    try:
        value, end = _raw_decode(text)
    except ValueError:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def decode_arguments(raw: Any) -> tuple[Any, str | None, str | None]:
    """Return (decoded arguments, raw JSON text or None, parse error or None).

    A dict passes through. A string is decoded as JSON; when that fails the error is kept so that
    replays and evidence can report it, instead of raising.
    """
    if raw is None:
        return {}, None, None
    if isinstance(raw, str):
        try:
            return _json_loads(raw), raw, None
        except (ValueError, RecursionError) as exc:
            return None, raw, f"invalid JSON arguments: {exc}"
    return raw, None, None


def _from_mapping(item: dict[str, Any], name: Any, raw_args: Any, call_id: Any, known: set[str]) -> ToolCall:
    arguments, raw, error = decode_arguments(raw_args)
    extra = {k: v for k, v in item.items() if k not in known}
    return ToolCall(
        name=name if isinstance(name, str) else ("" if name is None else str(name)),
        arguments=arguments,
        raw_arguments=raw,
        call_id=call_id if isinstance(call_id, str) else None,
        parse_error=error,
        extra=extra,
    )


def parse_tool_call(item: Any) -> ToolCall:
    """Parse one tool call in any supported format (dict shapes or a WorkBench string)."""
    if isinstance(item, ToolCall):
        return item
    if isinstance(item, str):
        return parse_workbench_call(item)
    if not isinstance(item, dict):
        raise ToolCallParseError(f"a tool call must be an object or a call string, got {type(item).__name__}")
    fn = item.get("function")
    if isinstance(fn, dict):  # Chat Completions: {"id", "type": "function", "function": {...}}
        return _from_mapping(item, fn.get("name"), fn.get("arguments"), item.get("id"), {"function", "id"})
    # Responses API function_call item or NeMo Gym ground truth; both carry name + arguments.
    call_id = item.get("call_id")
    return _from_mapping(item, item.get("name"), item.get("arguments"), call_id, {"name", "arguments", "call_id"})


def parse_tool_calls(items: Iterable[Any]) -> list[ToolCall]:
    return [parse_tool_call(it) for it in items]


def function_calls_from_output(output: Iterable[Any]) -> list[ToolCall]:
    """The `function_call` items of a Responses-API `output` list, in order (what NeMo Gym verifies)."""
    calls = []
    for item in output or []:
        if isinstance(item, dict) and item.get("type") == "function_call":
            calls.append(parse_tool_call(item))
    return calls


def parse_workbench_call(text: str) -> ToolCall:
    """Parse a WorkBench call string such as `email.send_email.func(recipient="a@b.c")`.

    Only keyword arguments with literal values are accepted; anything else (positional arguments,
    names, calls, attribute access inside arguments) gives a ToolCall with `parse_error` set.
    The dotted name `domain.tool` maps to NeMo Gym's flat `domain_tool`.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return ToolCall(name="", arguments=None, raw_arguments=text, parse_error=f"not a call: {exc}")
    if not isinstance(node, ast.Call):
        return ToolCall(name="", arguments=None, raw_arguments=text, parse_error="not a call expression")
    parts = []
    target = node.func
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if isinstance(target, ast.Name):
        parts.append(target.id)
    else:
        return ToolCall(name="", arguments=None, raw_arguments=text, parse_error="call target is not a dotted name")
    parts.reverse()
    if parts and parts[-1] == "func":
        parts = parts[:-1]
    name = "_".join(parts)
    if node.args:
        return ToolCall(name=name, arguments=None, raw_arguments=text, parse_error="positional arguments are not supported")
    arguments: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return ToolCall(name=name, arguments=None, raw_arguments=text, parse_error="**kwargs are not supported")
        try:
            arguments[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return ToolCall(
                name=name, arguments=None, raw_arguments=text, parse_error=f"argument {kw.arg!r} is not a literal"
            )
    return ToolCall(name=name, arguments=arguments)


def to_workbench_call(call: ToolCall) -> str:
    """Render a call as a WorkBench call string (the inverse of parse_workbench_call)."""
    domain, _, tool = _split_flat_name(call.name)
    args = call.arguments if isinstance(call.arguments, dict) else {}
    rendered = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return f"{domain}.{tool}.func({rendered})"


_DOMAINS = ("customer_relationship_manager", "project_management", "company_directory", "analytics", "calendar", "email")


def _split_flat_name(name: str) -> tuple[str, str, str]:
    for d in _DOMAINS:
        if name.startswith(d + "_"):
            return d, "_", name[len(d) + 1 :]
    return name.partition("_")


def invalid_json_result(exc: Exception) -> ToolResult:
    """What NeMo Gym's simple agent feeds back when a call's arguments are not JSON (no server
    call): every session and the remote client word it so."""
    message = f"Invalid tool call arguments: {exc!r}"
    return ToolResult(message, "error", json.dumps({"error": message}))
