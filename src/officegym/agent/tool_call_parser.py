"""Reading a model turn's text back into prose and tool calls (`parse_text_tool_calls`).

The calls come as `<tool_call>` blocks of JSON (agent/chatml.py). What models actually write is
read as far as it has one meaning: fenced blocks, a list of calls in one block, a missing closing
tag, near-JSON that only one repair makes JSON (single quotes, Python literals, trailing commas,
unquoted keys); the rest is reported in `invalid`, one line per fragment. Nothing is evaluated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from officegym.agent.chatml import END_OF_TURN_MARKERS, tojson
from officegym.core.policy import Completion
from officegym.core.types import ToolCall


@dataclass
class ParsedText:
    """A model turn split into its prose and its tool calls.

    `invalid` holds one line per malformed `<tool_call>` fragment, reason first; `repairs` says which
    unambiguous fixes were needed (single quotes, Python literals...), so format rewards can see them.
    """

    content: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)


class _BadCall(ValueError):
    """A fragment that cannot be read as a tool call; the message is the reason."""


_TAG = re.compile(r"<(/?)tool_call>")
_FENCE = re.compile(r"^```[\w-]*[ \t]*\n?(.*?)\n?[ \t]*(?:```)?$", re.DOTALL)
_FENCE_ONLY = re.compile(r"^```[\w-]*$")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}
_SPACES = re.compile(r"\s*")


def _short(text: str, limit: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cut_at_end_of_turn(text: str) -> str:
    # Anything after an end-of-turn marker belongs to a turn the model should never have written.
    cut = min((i for i in (text.find(m) for m in END_OF_TURN_MARKERS) if i >= 0), default=len(text))
    return text[:cut]


def _strip_partial_tag(text: str, tag: str) -> str:
    """Drop a truncated `tag` (at least its first two characters) at the very end of `text`."""
    for n in range(len(tag) - 1, 1, -1):
        if text.endswith(tag[:n]):
            return text[:-n]
    return text


def _split_blocks(text: str) -> tuple[list[str], list[tuple[str, bool]], list[str]]:
    """Split text into prose segments, tool_call bodies (with whether they were closed), stray tags."""
    outside: list[str] = []
    bodies: list[tuple[str, bool]] = []
    stray: list[str] = []
    inside = False
    pos = 0
    last_close = -1
    skip_to = 0
    for m in _TAG.finditer(text):
        if m.start() < skip_to:
            continue  # a tag inside the JSON value of the block just read
        between = text[pos : m.start()]
        closing = m.group(1) == "/"
        if not inside:
            if not closing:
                outside.append(between)
                whole = _json_block(text, m.end())
                if whole is not None:  # one JSON value, then the closing tag: tags in its strings are its own
                    bodies.append((text[m.end() : whole[0]], True))
                    pos = last_close = skip_to = whole[1]
                    continue
                inside = True
            elif last_close == pos and not between.strip():
                pass  # a doubled closing tag, as in nested <tool_call><tool_call>...</tool_call></tool_call>
            else:
                outside.append(between)
                stray.append(f"</tool_call> without an opening <tool_call>: {_short(between) or '(nothing before it)'}")
        elif closing:
            bodies.append((between, True))
            inside = False
            last_close = m.end()
        elif between.strip():
            bodies.append((between, False))  # the next <tool_call> starts before this one was closed
        # else: a doubled opening tag; keep reading the same block
        pos = m.end()
    tail = text[pos:]
    if inside:
        bodies.append((_strip_partial_tag(tail.rstrip(), "</tool_call>"), False))
    else:
        trimmed = _strip_partial_tag(tail.rstrip(), "<tool_call>")
        if trimmed != tail.rstrip() and len(tail.rstrip()) - len(trimmed) >= 5:
            stray.append("truncated <tool_call> tag at the end of the text")
            tail = trimmed
        outside.append(tail)
    return outside, bodies, stray


_CLOSE_AFTER_VALUE = re.compile(r"\s*</tool_call>")


def _json_block(text: str, start: int) -> tuple[int, int] | None:
    """(end of the value, end of its closing tag) when `text` from `start` is whitespace, one JSON
    value and `</tool_call>`; None otherwise (the tag-by-tag reading then applies)."""
    i = _SPACES.match(text, start).end()
    if text[i : i + 1] not in ("{", "["):
        return None
    # the value ends before the first `<` outside its strings: decode that slice only, so a text of
    # many broken blocks costs each one its own length, not the text's (a JSON error scans back)
    j = i
    while j < len(text) and text[j] != "<":
        if text[j] == '"':
            j = _scan_string(text, j)
            if j < 0:
                return None
        else:
            j += 1
    close = _CLOSE_AFTER_VALUE.match(text, j)
    if close is None:
        return None
    try:
        _value, end = _DECODER.raw_decode(text[i:j])
    except (ValueError, RecursionError):
        return None
    if text[i + end : j].strip():
        return None
    return i + end, close.end()


def _scan_string(text: str, start: int) -> int:
    """Index just past the string literal opening at `start` (quote char text[start]); -1 if unterminated."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == quote:
            return i + 1
        else:
            i += 1
    return -1


def _next_char(text: str, i: int) -> str:
    """The first non-space character at or after `i` ("" at the end)."""
    j = _SPACES.match(text, i).end()
    return text[j : j + 1]


def _escape_controls(body: str) -> str:
    return body.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _single_to_double(body: str) -> str:
    """The inside of a single-quoted string as the inside of a JSON double-quoted one."""
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append("'" if nxt == "'" else ch + nxt)  # \' is not a JSON escape; others are kept
            i += 2
            continue
        out.append('\\"' if ch == '"' else ch)
        i += 1
    return _escape_controls("".join(out))


def _repair_json(text: str) -> tuple[str, list[str]]:
    """Rewrite near-JSON into JSON where only one reading exists.

    Fixes: single-quoted strings, Python's True/False/None, trailing commas, unquoted identifier keys,
    raw newlines/tabs inside strings. Anything else is copied, so the JSON decoder reports it.
    """
    out: list[str] = []
    fixes: set[str] = set()
    last = ""  # the last non-space character written, to tell a key from a value
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            end = _scan_string(text, i)
            if end < 0:
                raise _BadCall("unterminated string")
            inner = text[i + 1 : end - 1]
            if ch == "'":
                out.append('"' + _single_to_double(inner) + '"')
                fixes.add("single-quoted strings")
            else:
                escaped = _escape_controls(inner)
                if escaped != inner:
                    fixes.add("raw control characters in strings")
                out.append('"' + escaped + '"')
            i = end
        elif ch == ",":
            if _next_char(text, i + 1) in ("}", "]"):
                fixes.add("trailing commas")
            else:
                out.append(ch)
            i += 1
        elif (m := _IDENTIFIER.match(text, i)) is not None:
            word = m.group()
            if word in _PYTHON_LITERALS:
                out.append(_PYTHON_LITERALS[word])
                fixes.add("Python literals")
            elif last in ("{", ",") and _next_char(text, m.end()) == ":" and word not in ("true", "false", "null"):
                out.append(json.dumps(word))
                fixes.add("unquoted keys")
            else:
                out.append(word)
            i = m.end()
        else:
            out.append(ch)
            i += 1
        if out and out[-1].strip():
            last = out[-1].strip()[-1]
    return "".join(out), sorted(fixes)


def _reject_constant(name: str) -> Any:
    raise _BadCall(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _decode_all(text: str) -> tuple[list[Any], list[str]]:
    """Every JSON value in `text`, one after another; stray closing braces at the end are dropped."""
    values: list[Any] = []
    fixes: list[str] = []
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return values, fixes
        if values and not text[i:].strip().strip("}"):
            return values, [*fixes, "extra closing braces"]
        try:
            value, i = _DECODER.raw_decode(text, i)
        except _BadCall:
            raise
        except (ValueError, RecursionError) as exc:  # ValueError: also an integer past Python's digit limit
            if values:
                raise _BadCall(f"unexpected text after the JSON object: {_short(text[i:], 40)!r}") from exc
            raise _BadCall(f"invalid JSON ({exc})") from exc
        values.append(value)


def _loads(text: str) -> tuple[list[Any], list[str]]:
    """Decode strictly; else decode the repaired text; else raise with the strict error."""
    try:
        return _decode_all(text)
    except _BadCall as strict_error:
        try:
            repaired, fixes = _repair_json(text)
        except _BadCall as exc:
            raise _BadCall(f"{strict_error}; no unambiguous repair ({exc})") from None
        if not fixes:  # nothing was rewritten, so the strict error is the real one
            raise strict_error from None
        try:
            values, more = _decode_all(repaired)
        except _BadCall:
            raise _BadCall(f"{strict_error}; still not JSON after fixing {', '.join(fixes)}") from None
        return values, fixes + more


def _strip_fence(body: str) -> str:
    m = _FENCE.match(body)
    return m.group(1).strip() if m else body


def _decode_arguments(arguments: Any) -> tuple[dict[str, Any], list[str]]:
    if arguments is None or arguments == "":
        return {}, []
    fixes: list[str] = []
    if isinstance(arguments, str):  # the Chat-Completions habit of JSON inside a string
        try:
            values, fixes = _loads(arguments)
        except _BadCall as exc:
            raise _BadCall(f'"arguments" is a string that is not valid JSON: {exc}') from None
        if len(values) != 1:
            raise _BadCall('"arguments" is a string holding several JSON values')
        arguments = values[0]
        fixes = ["arguments given as a JSON string", *fixes]
    if not isinstance(arguments, dict):
        raise _BadCall(f'"arguments" must be a JSON object, got {type(arguments).__name__}')
    return arguments, fixes


def _call_from_value(value: Any) -> tuple[ToolCall, list[str]]:
    if not isinstance(value, dict):
        raise _BadCall(f"expected a JSON object with name and arguments, got {type(value).__name__}")
    fixes: list[str] = []
    if "name" not in value and isinstance(value.get("function"), dict):  # Chat-Completions tool_call shape
        value, fixes = value["function"], ["Chat-Completions tool_call shape"]
    if "name" not in value:
        raise _BadCall('the JSON object has no "name"')
    name = value["name"]
    if not isinstance(name, str) or not name.strip():
        raise _BadCall(f'"name" must be a non-empty string, got {json.dumps(name)}')
    if "arguments" in value:
        raw = value["arguments"]
    else:  # Llama-style "parameters"; absent means a call without arguments
        raw = value.get("parameters")
        if "parameters" in value:
            fixes.append('"parameters" instead of "arguments"')
    arguments, more = _decode_arguments(raw)
    call = ToolCall(name=name, arguments=arguments, raw_arguments=tojson(arguments))
    return call, fixes + more


def _calls_from_body(body: str, closed: bool) -> tuple[list[ToolCall], list[str]]:
    text = _strip_fence(body.strip())
    if not text:
        raise _BadCall("empty <tool_call> block")
    try:
        values, fixes = _loads(text)
    except _BadCall as exc:
        if not closed:
            raise _BadCall(f"<tool_call> is never closed and what follows it is not one JSON value: {exc}") from None
        raise
    if len(values) == 1 and isinstance(values[0], list):  # a JSON list of calls
        values = values[0]
    if not values:
        raise _BadCall("empty list of calls")
    calls = []
    for value in values:
        call, more = _call_from_value(value)
        calls.append(call)
        fixes = fixes + more
    return calls, fixes


def parse_text_tool_calls(text: str, id_prefix: str = "call_") -> ParsedText:
    """Read the content and the `<tool_call>` blocks of a model turn. Never evaluates anything.

    Valid calls get ids `{id_prefix}0`, `{id_prefix}1`... in order. A block fails as a whole (every
    call in it is dropped) and is reported in `invalid`, so the model can be told what went wrong.
    """
    outside, bodies, stray = _split_blocks(_cut_at_end_of_turn(text))
    result = ParsedText(invalid=list(stray))
    for body, closed in bodies:
        try:
            calls, fixes = _calls_from_body(body, closed)
        except _BadCall as exc:
            result.invalid.append(f"{exc}: <tool_call>{_short(body)}</tool_call>")
            continue
        for call in calls:
            call.call_id = f"{id_prefix}{len(result.calls)}"
            result.calls.append(call)
        if not closed:
            fixes = [*fixes, "missing </tool_call>"]
        result.repairs.extend(f for f in fixes if f not in result.repairs)
    # Bare ``` lines left around a fenced block are scaffolding, not prose.
    segments = [s.strip() for s in outside]
    result.content = "\n".join(s for s in segments if s and not _FENCE_ONLY.match(s))
    return result


def completion_from_text(text: str, id_prefix: str = "call_") -> Completion:
    """A Completion for a model's raw text: its prose as `text`, its calls, its malformed fragments."""
    parsed = parse_text_tool_calls(text, id_prefix)
    return Completion(text=parsed.content, tool_calls=parsed.calls, invalid=parsed.invalid)
