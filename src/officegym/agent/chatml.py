"""The ChatML tool format local models see: the chat templates and the same rendering in Python.

Inside officegym a conversation is a list of Chat-Completions messages. Local models see it as ChatML
text (`render_chatml`, or `TOOL_CHAT_TEMPLATE` in a tokenizer) and answer in text, which
`parse_text_tool_calls` (agent/tool_call_parser.py) turns back into ToolCalls.

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
from collections.abc import Iterable, Sequence
from typing import Any

from officegym.core.types import ToolSpec

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
# The comment inside names officegym.agent.formats, the module the templates were first written in:
# it stays, since models trained with a template carry its exact text and `tool_format_of` compares it.
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


def tojson(value: Any) -> str:
    """JSON exactly as the chat-template `tojson` filter of transformers writes it."""
    return json.dumps(value, ensure_ascii=False)


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _type_text(spec: Any) -> str:
    """An argument's type in a signature: the JSON type, `string[]`, an enum's values joined by ` | `;
    the JSON schema itself where that would lose structure (objects with properties, nested arrays)."""
    if not isinstance(spec, dict):
        return tojson(spec)
    enum, kind, items = spec.get("enum"), spec.get("type"), spec.get("items")
    if _is_list(enum) and enum:
        return " | ".join(tojson(v) for v in enum)
    if (kind == "array" and isinstance(items, dict) and isinstance(items.get("type"), str)
            and items["type"] not in ("array", "object") and "enum" not in items):
        return items["type"] + "[]"
    if isinstance(kind, str) and kind != "array" and not (kind == "object" and spec.get("properties")):
        return kind
    if _is_list(kind) and kind and all(isinstance(k, str) for k in kind):
        return " | ".join(kind)
    return tojson(spec)


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
    args_text = arguments if isinstance(arguments, str) else tojson(arguments)
    return f'<tool_call>\n{{"name": {tojson(call.get("name"))}, "arguments": {args_text}}}\n</tool_call>'


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
                intro, listing = TOOLS_INTRO, "".join("\n" + tojson(t) for t in tool_list)
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
