"""Tool-call formats: the ChatML text format for local models, and message-shape conversions.

Inside officegym a conversation is a list of Chat-Completions messages. Local models see it as ChatML
text (`render_chatml`, or `TOOL_CHAT_TEMPLATE` in a tokenizer) and answer in text, which
`parse_text_tool_calls` turns back into ToolCalls. HTTP backends speaking the Responses API get the
same conversation as Responses items (`chat_messages_to_responses_items` and its inverse).

The text layout, one turn per role change:

    <|im_start|>system
    {system prompt}\n\n{tools section: one JSON signature per line inside <tools>...</tools>}<|im_end|>
    <|im_start|>user
    ...<|im_end|>
    <|im_start|>assistant
    {content}\n<tool_call>\n{"name": "...", "arguments": {...}}\n</tool_call><|im_end|>
    <|im_start|>tool
    <tool_response>\n{result 1}\n</tool_response>\n<tool_response>\n{result 2}\n</tool_response><|im_end|>

The tools section comes in two formats (TOOL_FORMATS): `json`, one JSON object a line (TOOL_CHAT_TEMPLATE,
the default), and `signatures`, one `name(argument: type, optional?: type): description` a function
with its arguments' descriptions indented below (SIGNATURES_CHAT_TEMPLATE): the same facts in about
a third fewer tokens. Everything else is the same in both.

Consecutive tool messages share one `tool` turn, one `<tool_response>` block each. Nothing about
earlier turns depends on later ones, so the rendering is prefix preserving: the prompt for turn k
followed by the model's text for turn k is a prefix of the rendering of the longer conversation.
That lets a trainer reuse the exact token ids a model sampled.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from officegym.core.policy import Completion
from officegym.core.types import ToolCall, ToolSpec

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
GENERATION_PROMPT = IM_START + "assistant\n"
# Markers that end a turn; a backend that does not strip special tokens leaves them in the text.
END_OF_TURN_MARKERS = (IM_END, "<|endoftext|>", IM_START)

TOOLS_INTRO = (
    "# Tools\n\n"
    "You can call the functions below. Each line inside <tools></tools> is the JSON signature of one function:\n"
    "<tools>"
)
# The compact list (tool format "signatures"): one TypeScript-like signature a function, its
# description, then one indented line per described argument. The workplace's first prompts are
# 25-38% shorter than with the JSON lines (benchmarks/tool_format_tokens.py): small models train and
# decode on shorter prompts.
SIGNATURES_INTRO = (
    "# Tools\n\n"
    "You can call the functions below, each written name(argument: type, optional?: type): what it does, "
    "then what its arguments mean:\n"
    "<tools>"
)
TOOLS_OUTRO = (
    "\n</tools>\n\n"
    "To call a function, write a block holding a JSON object with the function name and its arguments:\n"
    "<tool_call>\n"
    '{"name": "<function-name>", "arguments": {"<argument-name>": <value>}}\n'
    "</tool_call>\n"
    "Write one block per call; a turn may hold several. "
    "Each result comes back inside <tool_response></tool_response> tags."
)

# Written for the environment transformers gives chat templates (ImmutableSandboxedEnvironment with
# trim_blocks, lstrip_blocks, and `tojson` = json.dumps(ensure_ascii=False)). Every tag strips the
# whitespace around it, so only the quoted strings reach the output. `render_chatml` is the same
# function in Python; the tests check that both agree.
_TEMPLATE_SOURCE = r"""
{#- officegym ChatML tool-calling template (officegym.agent.formats) -#}
{%- macro text(content) -%}
    {%- if content is none -%}
    {%- elif content is string -%}{{- content -}}
    {%- elif content is mapping -%}{{- content -}}
    {%- elif content is iterable -%}
        {%- for part in content -%}
            {%- if part is mapping and part['text'] is string -%}{{- part['text'] -}}{%- endif -%}
        {%- endfor -%}
    {%- else -%}{{- content -}}
    {%- endif -%}
{%- endmacro -%}
{%- set has_tools = tools is defined and tools -%}
{%- if messages and messages[0]['role'] == 'system' -%}
    {%- set system_text = text(messages[0]['content']) -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set system_text = none -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- if has_tools or system_text is not none -%}
    {{- '<|im_start|>system\n' -}}
    {%- if system_text is not none -%}{{- system_text -}}{%- endif -%}
    {%- if has_tools -%}
        {%- if system_text is not none -%}{{- '\n\n' -}}{%- endif -%}
        {{- @TOOLS_INTRO@ -}}
        @TOOLS_LIST@
        {{- @TOOLS_OUTRO@ -}}
    {%- endif -%}
    {{- '<|im_end|>\n' -}}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- set content = text(message['content']) -%}
    {%- if message['role'] == 'assistant' -%}
        {{- '<|im_start|>assistant\n' + content -}}
        {%- if message['tool_calls'] is defined and message['tool_calls'] -%}
            {%- for tool_call in message['tool_calls'] -%}
                {%- set call = tool_call['function'] if tool_call['function'] is defined else tool_call -%}
                {%- if content or not loop.first -%}{{- '\n' -}}{%- endif -%}
                {{- '<tool_call>\n{"name": ' + (call['name'] | tojson) + ', "arguments": ' -}}
                {%- if call['arguments'] is string -%}{{- call['arguments'] -}}
                {%- elif call['arguments'] is defined -%}{{- call['arguments'] | tojson -}}
                {%- else -%}{{- '{}' -}}
                {%- endif -%}
                {{- '}\n</tool_call>' -}}
            {%- endfor -%}
        {%- endif -%}
        {{- '<|im_end|>\n' -}}
    {%- elif message['role'] == 'tool' -%}
        {%- if loop.first or loop.previtem['role'] != 'tool' -%}{{- '<|im_start|>tool\n' -}}
        {%- else -%}{{- '\n' -}}
        {%- endif -%}
        {{- '<tool_response>\n' + content + '\n</tool_response>' -}}
        {%- if loop.last or loop.nextitem['role'] != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
    {%- else -%}
        {{- '<|im_start|>' + message['role'] + '\n' + content + '<|im_end|>\n' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
""".strip()

_JSON_LIST = r"""{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}"""

# `_signature` in Jinja: the tests check both on random schemas. `x is list` is spelt out as
# sequence-but-not-string-or-mapping (Jinja has no list test).
_SIGNATURES_LIST = r"""
{%- macro is_list(x) -%}{{- 'y' if x is sequence and x is not string and x is not mapping else '' -}}{%- endmacro -%}
{%- macro type_text(spec) -%}
    {%- if spec is not mapping -%}{{- spec | tojson -}}
    {%- elif is_list(spec['enum']) and spec['enum'] | length > 0 -%}
        {%- for v in spec['enum'] -%}{{- (' | ' if not loop.first else '') + (v | tojson) -}}{%- endfor -%}
    {%- elif spec['type'] is string and spec['type'] == 'array' and spec['items'] is mapping
            and spec['items']['type'] is string and spec['items']['type'] not in ('array', 'object')
            and spec['items']['enum'] is not defined -%}
        {{- spec['items']['type'] + '[]' -}}
    {%- elif spec['type'] is string and spec['type'] != 'array'
            and not (spec['type'] == 'object' and spec['properties'] is defined and spec['properties']) -%}
        {{- spec['type'] -}}
    {%- elif is_list(spec['type']) and spec['type'] | length > 0
            and spec['type'] | select('string') | list | length == spec['type'] | length -%}
        {{- spec['type'] | join(' | ') -}}
    {%- else -%}{{- spec | tojson -}}
    {%- endif -%}
{%- endmacro -%}
{%- for tool in tools -%}
    {%- set fn = tool['function'] -%}
    {%- set params = fn['parameters'] if fn['parameters'] is mapping else {} -%}
    {%- set props = params['properties'] if params['properties'] is mapping else {} -%}
    {%- set required = params['required'] if is_list(params['required']) else [] -%}
    {{- '\n' + fn['name'] + '(' -}}
    {%- for name, spec in props.items() -%}
        {{- (', ' if not loop.first else '') + name + ('' if name in required else '?') + ': ' + type_text(spec) -}}
    {%- endfor -%}
    {{- ')' -}}
    {%- if fn['description'] is string and fn['description'] -%}{{- ': ' + fn['description'] -}}{%- endif -%}
    {%- for name, spec in props.items() -%}
        {%- if spec is mapping and spec['description'] is string and spec['description'] -%}
            {{- '\n  ' + name + ': ' + spec['description'] -}}
        {%- endif -%}
    {%- endfor -%}
{%- endfor -%}
""".strip()


def _template(intro: str, tools_list: str) -> str:
    # The wording lives once, in the INTRO/OUTRO constants; a JSON string literal is also a valid Jinja one.
    return (_TEMPLATE_SOURCE.replace("@TOOLS_INTRO@", json.dumps(intro)).replace("@TOOLS_OUTRO@", json.dumps(TOOLS_OUTRO))
            .replace("@TOOLS_LIST@", tools_list))


TOOL_CHAT_TEMPLATE: str = _template(TOOLS_INTRO, _JSON_LIST)
SIGNATURES_CHAT_TEMPLATE: str = _template(SIGNATURES_INTRO, _SIGNATURES_LIST)
# tool format -> the chat template that renders it; `render_chatml(tool_format=...)` is each in Python
TOOL_FORMATS: dict[str, str] = {"json": TOOL_CHAT_TEMPLATE, "signatures": SIGNATURES_CHAT_TEMPLATE}


def tool_format_of(chat_template: Any) -> str | None:
    """The officegym tool format a chat template is, or None for another template."""
    return next((name for name, text in TOOL_FORMATS.items() if text == chat_template), None)


def _tojson(value: Any) -> str:
    """JSON exactly as the chat-template `tojson` filter of transformers writes it."""
    return json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------------
# Rendering


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _type_text(spec: Any) -> str:
    """An argument's type in a signature: the JSON type, `string[]`, an enum's values joined by ` | `;
    the JSON schema itself where that would lose structure (objects with properties, nested arrays)."""
    if not isinstance(spec, dict):
        return _tojson(spec)
    enum, kind, items = spec.get("enum"), spec.get("type"), spec.get("items")
    if _is_list(enum) and enum:
        return " | ".join(_tojson(v) for v in enum)
    if (kind == "array" and isinstance(items, dict) and isinstance(items.get("type"), str)
            and items["type"] not in ("array", "object") and "enum" not in items):
        return items["type"] + "[]"
    if isinstance(kind, str) and kind != "array" and not (kind == "object" and spec.get("properties")):
        return kind
    if _is_list(kind) and kind and all(isinstance(k, str) for k in kind):
        return " | ".join(kind)
    return _tojson(spec)


def _signature(tool: dict[str, Any]) -> str:
    """One tool in the "signatures" format (SIGNATURES_CHAT_TEMPLATE's tools list, in Python)."""
    fn = tool["function"]
    params = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {}
    props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = params.get("required") if _is_list(params.get("required")) else []
    args = ", ".join(f"{name}{'' if name in required else '?'}: {_type_text(spec)}" for name, spec in props.items())
    description = fn.get("description")
    text = f"\n{fn['name']}({args})" + (f": {description}" if isinstance(description, str) and description else "")
    for name, spec in props.items():
        if isinstance(spec, dict) and isinstance(spec.get("description"), str) and spec["description"]:
            text += f"\n  {name}: {spec['description']}"
    return text


def message_text(content: Any) -> str:
    """The text of a message's content: a string, None, or a list of parts with a `text` field."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return str(content)


def chat_tools(tools: Iterable[ToolSpec | dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Tools in the Chat-Completions shape the template expects, from ToolSpecs or either API's dicts."""
    out = []
    for tool in tools or []:
        if isinstance(tool, ToolSpec):
            out.append(tool.to_chat_tool())
        elif isinstance(tool.get("function"), dict):
            out.append(tool)
        else:  # Responses-API shape: the function fields sit at the top level
            fn = {"name": tool["name"], "description": tool.get("description", ""),
                  "parameters": tool.get("parameters", {})}
            out.append({"type": "function", "function": fn})
    return out


def _tool_call_block(tool_call: dict[str, Any]) -> str:
    call = tool_call.get("function", tool_call)
    arguments = call.get("arguments", {})
    # An argument string is trusted to be JSON and kept verbatim: a template cannot re-encode it.
    args_text = arguments if isinstance(arguments, str) else _tojson(arguments)
    return f'<tool_call>\n{{"name": {_tojson(call.get("name"))}, "arguments": {args_text}}}\n</tool_call>'


def assistant_text(message: dict[str, Any]) -> str:
    """What the model generates for an assistant message: content, tool_call blocks, `<|im_end|>`."""
    content = message_text(message.get("content"))
    blocks = [_tool_call_block(tc) for tc in message.get("tool_calls") or []]
    sep = "\n" if content and blocks else ""
    return content + sep + "\n".join(blocks) + IM_END


def render_chatml(
    messages: Sequence[dict[str, Any]],
    tools: Iterable[ToolSpec | dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    tool_format: str = "json",
) -> str:
    """Render a conversation as ChatML text; equal to rendering TOOL_FORMATS[tool_format]."""
    if tool_format not in TOOL_FORMATS:
        raise ValueError(f"tool_format must be one of {sorted(TOOL_FORMATS)}, got {tool_format!r}")
    tool_list = chat_tools(tools)
    rest = list(messages)
    system = None
    if rest and rest[0].get("role") == "system":
        system, rest = message_text(rest[0].get("content")), rest[1:]
    parts = []
    if tool_list or system is not None:
        body = system or ""
        if tool_list:
            if tool_format == "signatures":
                intro, listing = SIGNATURES_INTRO, "".join(_signature(t) for t in tool_list)
            else:
                intro, listing = TOOLS_INTRO, "".join("\n" + _tojson(t) for t in tool_list)
            body += ("\n\n" if system is not None else "") + intro + listing + TOOLS_OUTRO
        parts.append(f"{IM_START}system\n{body}{IM_END}\n")
    for i, message in enumerate(rest):
        role = message.get("role")
        if role == "assistant":
            parts.append(GENERATION_PROMPT + assistant_text(message) + "\n")
        elif role == "tool":
            opens = i == 0 or rest[i - 1].get("role") != "tool"
            closes = i == len(rest) - 1 or rest[i + 1].get("role") != "tool"
            response = f"<tool_response>\n{message_text(message.get('content'))}\n</tool_response>"
            parts.append((f"{IM_START}tool\n" if opens else "\n") + response + (f"{IM_END}\n" if closes else ""))
        else:
            parts.append(f"{IM_START}{role}\n{message_text(message.get('content'))}{IM_END}\n")
    if add_generation_prompt:
        parts.append(GENERATION_PROMPT)
    return "".join(parts)


# ---------------------------------------------------------------------------------------------------
# Parsing model text


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
    call = ToolCall(name=name, arguments=arguments, raw_arguments=_tojson(arguments))
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


# ---------------------------------------------------------------------------------------------------
# Message shapes


def _arguments_text(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return _tojson({} if call.arguments is None else call.arguments)


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
                    "arguments": arguments if isinstance(arguments, str) else _tojson(arguments or {}),
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
    return _tojson(output)


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
                arguments = _tojson(arguments or {})
            call = {"id": item.get("call_id") or item.get("id") or "", "type": "function",
                    "function": {"name": item.get("name"), "arguments": arguments}}
            messages[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": _output_text(item.get("output"))})
    return messages
