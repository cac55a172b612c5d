"""Message-shape conversions: a turn as a Chat-Completions assistant message, and Chat-Completions
messages to and from Responses-API items (HTTP backends speaking the Responses API, NeMo Gym rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from officegym.agent.chatml import message_text, tojson
from officegym.core.types import ToolCall


def _arguments_text(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return tojson({} if call.arguments is None else call.arguments)


def assistant_message(content: str | None, calls: Sequence[ToolCall]) -> dict[str, Any]:
    """The Chat-Completions assistant message for a turn; `tool_calls` only when there are calls."""
    message: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        message["tool_calls"] = [
            {
                "id": call.call_id or f"call_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_text(call)},
            }
            for i, call in enumerate(calls)
        ]
    return message


def chat_messages_to_responses_items(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-Completions messages as Responses-API input items.

    Assistant text becomes a `message` item with `output_text`, each tool call a `function_call`,
    each tool result a `function_call_output`. A tool message without a `tool_call_id` (officegym's
    note about a malformed call) answers no call, so it goes as a user message.
    """
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        text = message_text(message.get("content"))
        if role == "assistant":
            tool_calls = message.get("tool_calls") or []
            if text or not tool_calls:
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": text, "annotations": []}]})
            for tc in tool_calls:
                fn = tc.get("function", tc)
                arguments = fn.get("arguments")
                items.append({
                    "type": "function_call",
                    "name": fn.get("name"),
                    "arguments": arguments if isinstance(arguments, str) else tojson(arguments or {}),
                    "call_id": tc.get("id") or tc.get("call_id") or "",
                })
        elif role == "tool" and message.get("tool_call_id"):
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"], "output": text})
        elif role == "tool":
            items.append({"role": "user", "content": text})
        else:
            items.append({"role": role, "content": text})
    return items


def _output_text(output: Any) -> str:
    if isinstance(output, str | list | tuple) or output is None:
        return message_text(output)
    return tojson(output)


def responses_items_to_chat_messages(items: str | Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses-API items (or a NeMo Gym `input`: a string or `{"role", "content"}` messages) as
    Chat-Completions messages.

    `function_call` items join the assistant message right before them, as one turn; items without a
    chat equivalent (reasoning) are skipped.
    """
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")  # NeMo Gym input messages have no type
        if kind == "message":
            messages.append({"role": item.get("role", "user"), "content": message_text(item.get("content"))})
        elif kind == "function_call":
            if not messages or messages[-1]["role"] != "assistant":
                messages.append({"role": "assistant", "content": ""})
            arguments = item.get("arguments")
            if not isinstance(arguments, str):
                arguments = tojson(arguments or {})
            call = {"id": item.get("call_id") or item.get("id") or "", "type": "function",
                    "function": {"name": item.get("name"), "arguments": arguments}}
            messages[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _output_text(item.get("output"))})
    return messages
