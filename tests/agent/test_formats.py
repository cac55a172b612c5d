"""The ChatML tool format (template, renderer, parser) and the message-shape conversions."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from officegym.agent.chatml import (
    END_OF_TURN_MARKERS,
    GENERATION_PROMPT,
    IM_END,
    SIGNATURES_CHAT_TEMPLATE,
    TOOL_CHAT_TEMPLATE,
    TOOL_FORMATS,
    assistant_text,
    chat_tools,
    render_chatml,
    tool_format_of,
)
from officegym.agent.messages import (
    assistant_message,
    chat_messages_to_responses_items,
    responses_items_to_chat_messages,
)
from officegym.agent.tool_call_parser import ParsedText, completion_from_text, parse_text_tool_calls
from officegym.core.policy import Completion
from officegym.core.types import ToolCall, ToolSpec

jinja2 = pytest.importorskip("jinja2")
from jinja2.ext import loopcontrols  # noqa: E402
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402


def _hf_environment():
    """The Jinja environment transformers' apply_chat_template builds (without transformers)."""

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


TEMPLATE = _hf_environment().from_string(TOOL_CHAT_TEMPLATE)
SIGNATURES = _hf_environment().from_string(SIGNATURES_CHAT_TEMPLATE)


def render_jinja(messages, tools=None, add_generation_prompt=True):
    return TEMPLATE.render(messages=messages, tools=chat_tools(tools) if tools is not None else None,
                           add_generation_prompt=add_generation_prompt)


SEND = ToolSpec("email_send_email", "Sends an email.", {
    "type": "object",
    "properties": {"recipient": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
    "required": ["recipient", "subject", "body"],
})
DELETE = ToolSpec("email_delete_email", "Deletes an email by id.", {
    "type": "object", "properties": {"email_id": {"type": "string"}}, "required": ["email_id"],
})
TOOLS = [SEND, DELETE]


def _tc(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CONVERSATION = [
    {"role": "system", "content": "Today's date is Thursday, 2023-11-30."},
    {"role": "user", "content": "Delete mail 7 and 8, then tell ana."},
    {"role": "assistant", "content": "Deleting both.", "tool_calls": [
        _tc("call_0", "email_delete_email", '{"email_id": "7"}'),
        _tc("call_1", "email_delete_email", {"email_id": "8"}),
    ]},
    {"role": "tool", "tool_call_id": "call_0", "content": "Email deleted successfully."},
    {"role": "tool", "tool_call_id": "call_1", "content": "Email deleted successfully."},
    {"role": "assistant", "content": None, "tool_calls": [
        _tc("call_2", "email_send_email", {"recipient": "ana@acme.com", "subject": "Done", "body": "Héllo \"ana\"\n"}),
    ]},
    {"role": "tool", "tool_call_id": "call_2", "content": '{"output": "Email sent successfully."}'},
    {"role": "assistant", "content": "Both mails are gone and ana knows."},
]


# ---------------------------------------------------------------------------------------------------
# Layout


def test_layout_of_a_whole_conversation():
    text = render_chatml(CONVERSATION, TOOLS, add_generation_prompt=False)
    assert text.startswith("<|im_start|>system\nToday's date is Thursday, 2023-11-30.\n\n# Tools\n\n")
    tools_block = text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    assert [json.loads(line) for line in tools_block.split("\n")] == [t.to_chat_tool() for t in TOOLS]
    assert (
        "<|im_start|>assistant\nDeleting both.\n"
        '<tool_call>\n{"name": "email_delete_email", "arguments": {"email_id": "7"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "email_delete_email", "arguments": {"email_id": "8"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>tool\n<tool_response>\nEmail deleted successfully.\n</tool_response>\n"
        "<tool_response>\nEmail deleted successfully.\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<tool_call>\n"
    ) in text
    assert '"body": "Héllo \\"ana\\"\\n"' in text  # non-ASCII kept, as transformers' tojson does
    assert text.endswith("<|im_start|>assistant\nBoth mails are gone and ana knows.<|im_end|>\n")
    assert render_chatml(CONVERSATION, TOOLS).endswith("<|im_end|>\n" + GENERATION_PROMPT)


def test_system_turn_only_when_needed():
    user = [{"role": "user", "content": "hi"}]
    assert render_chatml(user, None) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert render_chatml(user, TOOLS).startswith("<|im_start|>system\n# Tools\n\n")
    assert render_chatml([], None, add_generation_prompt=False) == ""


def test_tools_in_every_shape_render_the_same():
    responses_shape = [t.to_schema() for t in TOOLS]
    chat_shape = [t.to_chat_tool() for t in TOOLS]
    msgs = CONVERSATION[:2]
    assert render_chatml(msgs, TOOLS) == render_chatml(msgs, responses_shape) == render_chatml(msgs, chat_shape)


def test_content_parts_are_joined():
    msgs = [{"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]}]
    assert render_chatml(msgs) == render_jinja(msgs) == "<|im_start|>user\nab<|im_end|>\n<|im_start|>assistant\n"


# ---------------------------------------------------------------------------------------------------
# Template == renderer


EDGE_CONVERSATIONS = [
    [],
    [{"role": "system", "content": ""}],
    [{"role": "system", "content": None}, {"role": "user", "content": "x"}],
    [{"role": "user", "content": "x"}, {"role": "system", "content": "late system"}],
    [{"role": "tool", "tool_call_id": "a", "content": "first"}, {"role": "tool", "tool_call_id": "b", "content": ""}],
    [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": None}],
    [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"name": "f", "arguments": {}}]}],
    [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [_tc("1", "f", "{}")]}],
    [{"role": "user", "content": "x"}, {"role": "assistant", "content": "a", "tool_calls": [{"function": {"name": "f"}}]}],
    [{"role": "user", "content": "{{ not a template }} {% raw %}"}, {"role": "assistant", "content": "<|im_end|>"}],
    [{"role": "developer", "content": "be brief"}, {"role": "tool", "content": "orphan", "tool_call_id": None}],
    CONVERSATION,
]


@pytest.mark.parametrize("messages", EDGE_CONVERSATIONS)
@pytest.mark.parametrize("tools", [None, [], TOOLS])
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_template_equals_renderer(messages, tools, add_generation_prompt):
    assert render_jinja(messages, tools, add_generation_prompt) == render_chatml(messages, tools, add_generation_prompt)


def test_template_without_tools_variable():
    msgs = [{"role": "user", "content": "hi"}]
    assert TEMPLATE.render(messages=msgs) == render_chatml(msgs, add_generation_prompt=False)


# Conversations a rollout can produce: system?, user, then assistant turns with their tool results.
texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=24)
json_scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | texts
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3), max_leaves=8)
arguments = st.dictionaries(texts, json_values, max_size=4)
names = st.from_regex(r"[a-z][a-z_]{0,20}", fullmatch=True)


@st.composite
def tool_call_dicts(draw, index):
    args = draw(arguments)
    form = draw(st.sampled_from(["dict", "string", "compact string"]))
    if form == "string":
        args = json.dumps(args, ensure_ascii=False)
    elif form == "compact string":
        args = json.dumps(args, separators=(",", ":"))
    return _tc(f"call_{index}", draw(names), args)


@st.composite
def conversations(draw):
    msgs = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(texts)})
    msgs.append({"role": "user", "content": draw(texts)})
    for _ in range(draw(st.integers(1, 4))):
        n_calls = draw(st.integers(0, 3))
        message = {"role": "assistant", "content": draw(texts | st.none() if n_calls else texts)}
        if n_calls:
            message["tool_calls"] = [draw(tool_call_dicts(i)) for i in range(n_calls)]
        msgs.append(message)
        for call in message.get("tool_calls", []):
            msgs.append({"role": "tool", "tool_call_id": call["id"], "content": draw(texts)})
        if draw(st.booleans()):
            msgs.append({"role": "user", "content": draw(texts)})
    return msgs


tool_lists = st.sampled_from([None, [], [DELETE], TOOLS])
fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(conversations(), tool_lists, st.booleans())
def test_template_equals_renderer_on_random_conversations(messages, tools, add_generation_prompt):
    assert render_jinja(messages, tools, add_generation_prompt) == render_chatml(messages, tools, add_generation_prompt)


@fast
@given(conversations(), tool_lists)
def test_prefix_preserving(messages, tools):
    full = render_chatml(messages, tools, add_generation_prompt=False)
    assert render_jinja(messages, tools, add_generation_prompt=False) == full
    for k, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt = render_chatml(messages[:k], tools, add_generation_prompt=True)
        assert render_jinja(messages[:k], tools, add_generation_prompt=True) == prompt
        sampled = prompt + assistant_text(message)  # what the model's tokens decode to, <|im_end|> included
        assert full.startswith(sampled)
        assert render_chatml(messages[: k + 1], tools, add_generation_prompt=False) == sampled + "\n"
        for j in range(k + 1, len(messages) + 1):
            assert render_chatml(messages[:j], tools, add_generation_prompt=True).startswith(sampled)


# ---------------------------------------------------------------------------------------------------
# The "signatures" tool format

FIND = ToolSpec("company_directory_find_email_address", "Look up colleagues' addresses.", {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Part of a person's name"}},
    "required": [],
})
ODD = ToolSpec("odd", "", {
    "type": "object",
    "properties": {
        "field": {"type": "string", "enum": ["event_name", "duration"], "description": "Field to change"},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "rows": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "when": {"type": ["string", "null"]},
        "filter": {"type": "object", "properties": {"k": {"type": "integer"}}},
        "loose": {},
    },
    "required": ["field", "ids"],
})


def render_signatures(messages, tools=None, add_generation_prompt=True):
    return SIGNATURES.render(messages=messages, tools=chat_tools(tools) if tools is not None else None,
                             add_generation_prompt=add_generation_prompt)


def test_signatures_layout():
    msgs = CONVERSATION[:2]
    text = render_chatml(msgs, [SEND, FIND, ODD], tool_format="signatures")
    block = text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    assert block.split("\n") == [
        "email_send_email(recipient: string, subject: string, body: string): Sends an email.",
        "company_directory_find_email_address(name?: string): Look up colleagues' addresses.",
        "  name: Part of a person's name",
        'odd(field: "event_name" | "duration", ids: integer[], rows?: ' + json.dumps(ODD.parameters["properties"]["rows"])
        + ", when?: string | null, filter?: " + json.dumps(ODD.parameters["properties"]["filter"]) + ", loose?: {})",
        "  field: Field to change",
    ]
    assert "name(argument: type, optional?: type)" in text
    # the rest of the conversation is the JSON format's, and only the tools section is shorter
    json_text = render_chatml(msgs, [SEND, FIND, ODD])
    assert text.rsplit("</tools>", 1)[1] == json_text.rsplit("</tools>", 1)[1] and len(text) < len(json_text)
    assert render_signatures(msgs, [SEND, FIND, ODD]) == text
    with pytest.raises(ValueError, match="tool_format"):
        render_chatml(msgs, TOOLS, tool_format="yaml")


def test_tool_format_of_names_the_templates():
    assert tool_format_of(TOOL_CHAT_TEMPLATE) == "json" and tool_format_of(SIGNATURES_CHAT_TEMPLATE) == "signatures"
    assert tool_format_of(None) is None and tool_format_of("{{ messages }}") is None
    assert set(TOOL_FORMATS) == {"json", "signatures"}


# Tool schemas as they come: JSON-schema-like, sometimes odd (types as lists, enums, nesting, junk).
schema_types = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object", "", "é"])
descriptions = st.fixed_dictionaries({}, optional={"description": texts | st.integers()})
flat_specs = st.one_of(
    st.builds(lambda t, d: {"type": t, **d}, schema_types, descriptions),
    st.builds(lambda t, d: {"type": t, **d}, st.lists(schema_types, max_size=3) | st.integers(), descriptions),
    st.builds(lambda e, d: {"type": "string", "enum": e, **d}, st.lists(json_scalars, max_size=3) | texts, descriptions),
    st.builds(lambda i, d: {"type": "array", "items": i, **d},
              st.fixed_dictionaries({"type": schema_types}, optional={"enum": st.lists(json_scalars, max_size=2)})
              | json_scalars, descriptions),
    st.just({}),
    json_scalars,
)
property_specs = st.recursive(
    flat_specs,
    lambda inner: st.fixed_dictionaries({"type": st.sampled_from(["array", "object"])},
                                        optional={"items": inner, "properties": st.dictionaries(texts, inner, max_size=2)}),
    max_leaves=4,
)
tool_schemas = st.builds(
    lambda name, description, props, required, junk: {
        "type": "function",
        "function": {"name": name, "description": description,
                     "parameters": junk if junk is not None else {"type": "object", "properties": props, "required": required}},
    },
    names, texts | st.none() | st.integers(), st.dictionaries(texts, property_specs, max_size=4),
    st.lists(texts, max_size=3) | texts | st.none(), st.none() | st.sampled_from([None, "x", [], {"properties": []}]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tool_schemas, min_size=1, max_size=3), st.booleans())
def test_signatures_of_random_schemas(tools, add_generation_prompt):
    messages = [{"role": "user", "content": "x"}]
    assert (render_signatures(messages, tools, add_generation_prompt)
            == render_chatml(messages, tools, add_generation_prompt, tool_format="signatures"))


@fast
@given(conversations(), st.lists(tool_schemas, max_size=3) | tool_lists, st.booleans())
def test_signatures_template_equals_renderer(messages, tools, add_generation_prompt):
    assert (render_signatures(messages, tools, add_generation_prompt)
            == render_chatml(messages, tools, add_generation_prompt, tool_format="signatures"))


@pytest.mark.parametrize("messages", EDGE_CONVERSATIONS)
def test_signatures_template_equals_renderer_on_edges(messages):
    for tools in (None, [], TOOLS, [FIND, ODD]):
        assert render_signatures(messages, tools) == render_chatml(messages, tools, tool_format="signatures")


# ---------------------------------------------------------------------------------------------------
# Parsing model text: a corpus of good and broken outputs

# (id, model text, expected content, expected [(name, arguments)], expected number of invalid fragments)
GOOD = '<tool_call>\n{"name": "email_delete_email", "arguments": {"email_id": "7"}}\n</tool_call>'
D7 = ("email_delete_email", {"email_id": "7"})
D8 = ("email_delete_email", {"email_id": "8"})
CORPUS = [
    # well formed
    ("plain answer", "All done, the mail is gone.", "All done, the mail is gone.", [], 0),
    ("empty text", "", "", [], 0),
    ("one call", GOOD, "", [D7], 0),
    ("one call with end marker", GOOD + "<|im_end|>", "", [D7], 0),
    ("endoftext marker", "Done.<|endoftext|>", "Done.", [], 0),
    ("text after end marker is dropped", "Done.<|im_end|>\n<|im_start|>user\nmore", "Done.", [], 0),
    ("new turn without end marker", "Done.\n<|im_start|>user\nhi", "Done.", [], 0),
    ("prose before", "I will delete it.\n" + GOOD, "I will delete it.", [D7], 0),
    ("prose after", GOOD + "\nThat should do it.", "That should do it.", [D7], 0),
    ("prose between", "First.\n" + GOOD + "\nSecond.\n" + GOOD.replace('"7"', '"8"'), "First.\nSecond.", [D7, D8], 0),
    ("two calls", GOOD + "\n" + GOOD.replace('"7"', '"8"'), "", [D7, D8], 0),
    ("calls on one line", GOOD.replace("\n", "") * 2, "", [D7, D7], 0),
    ("no arguments key", '<tool_call>{"name": "company_directory_list"}</tool_call>', "", [("company_directory_list", {})], 0),
    ("null arguments", '<tool_call>{"name": "f", "arguments": null}</tool_call>', "", [("f", {})], 0),
    ("empty-string arguments", '<tool_call>{"name": "f", "arguments": ""}</tool_call>', "", [("f", {})], 0),
    ("unicode and escapes", '<tool_call>{"name": "f", "arguments": {"b": "H\\u00e9 \\"x\\"\\n", "c": "é"}}</tool_call>',
     "", [("f", {"b": 'Hé "x"\n', "c": "é"})], 0),
    ("nested values", '<tool_call>{"name": "f", "arguments": {"a": [1, 2.5, {"b": null}], "t": true}}</tool_call>',
     "", [("f", {"a": [1, 2.5, {"b": None}], "t": True})], 0),
    ("name with spaces in JSON", '<tool_call>\n  {  "name" : "f" ,\n "arguments" : { } }  \n</tool_call>', "", [("f", {})], 0),
    # recovered
    ("arguments as JSON string", '<tool_call>{"name": "f", "arguments": "{\\"email_id\\": \\"7\\"}"}</tool_call>',
     "", [("f", {"email_id": "7"})], 0),
    ("parameters instead of arguments", '<tool_call>{"name": "f", "parameters": {"a": 1}}</tool_call>', "", [("f", {"a": 1})], 0),
    ("chat-completions shape", '<tool_call>{"type": "function", "function": {"name": "f", "arguments": "{}"}}</tool_call>',
     "", [("f", {})], 0),
    ("missing closing tag at the end", '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n', "", [("f", {"a": 1})], 0),
    ("truncated closing tag", '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_ca', "", [("f", {"a": 1})], 0),
    ("missing closing tag before next call", '<tool_call>{"name": "f", "arguments": {}}\n' + GOOD, "", [("f", {}), D7], 0),
    ("duplicated opening tag", "<tool_call>\n" + GOOD, "", [D7], 0),
    ("nested tags", "<tool_call>" + GOOD + "</tool_call>", "", [D7], 0),
    ("duplicated closing tag", GOOD + "\n</tool_call>", "", [D7], 0),
    ("code fence inside", '<tool_call>\n```json\n{"name": "email_delete_email", "arguments": {"email_id": "7"}}\n```\n</tool_call>',
     "", [D7], 0),
    ("bare code fence inside", '<tool_call>```{"name": "f", "arguments": {}}```</tool_call>', "", [("f", {})], 0),
    ("code fence around the block", "```xml\n" + GOOD + "\n```", "", [D7], 0),
    ("single quotes", "<tool_call>{'name': 'f', 'arguments': {'a': 'say \"hi\"', 'b': 'it\\'s'}}</tool_call>",
     "", [("f", {"a": 'say "hi"', "b": "it's"})], 0),
    ("python literals", '<tool_call>{"name": "f", "arguments": {"a": True, "b": False, "c": None}}</tool_call>',
     "", [("f", {"a": True, "b": False, "c": None})], 0),
    ("python literal strings untouched", '<tool_call>{"name": "f", "arguments": {"a": "None True", "b": None}}</tool_call>',
     "", [("f", {"a": "None True", "b": None})], 0),
    ("trailing commas", '<tool_call>{"name": "f", "arguments": {"a": [1, 2,], "b": 3,},}</tool_call>',
     "", [("f", {"a": [1, 2], "b": 3})], 0),
    ("unquoted keys", '<tool_call>{name: "f", arguments: {email_id: "7"}}</tool_call>', "", [("f", {"email_id": "7"})], 0),
    ("raw newline in a string", '<tool_call>{"name": "f", "arguments": {"body": "line 1\nline 2"}}</tool_call>',
     "", [("f", {"body": "line 1\nline 2"})], 0),
    ("extra closing brace", '<tool_call>{"name": "f", "arguments": {"a": 1}}}</tool_call>', "", [("f", {"a": 1})], 0),
    ("two objects in one block", '<tool_call>\n{"name": "f", "arguments": {}}\n{"name": "g", "arguments": {}}\n</tool_call>',
     "", [("f", {}), ("g", {})], 0),
    ("list of calls in one block", '<tool_call>[{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"x": 1}}]</tool_call>',
     "", [("f", {}), ("g", {"x": 1})], 0),
    ("single-quoted arguments string", "<tool_call>{\"name\": \"f\", \"arguments\": \"{'a': 1}\"}</tool_call>",
     "", [("f", {"a": 1})], 0),
    # rejected
    ("truncated JSON", '<tool_call>\n{"name": "f", "arguments": {"a": ', "", [], 1),
    ("truncated string", '<tool_call>\n{"name": "f", "arguments": {"a": "unfinished', "", [], 1),
    ("missing brace in a closed block", '<tool_call>{"name": "f", "arguments": {"a": 1}</tool_call>', "", [], 1),
    ("no name", '<tool_call>{"arguments": {"a": 1}}</tool_call>', "", [], 1),
    ("name not a string", '<tool_call>{"name": 42, "arguments": {}}</tool_call>', "", [], 1),
    ("empty name", '<tool_call>{"name": "", "arguments": {}}</tool_call>', "", [], 1),
    ("arguments a list", '<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>', "", [], 1),
    ("arguments string not JSON", '<tool_call>{"name": "f", "arguments": "email_id=7"}</tool_call>', "", [], 1),
    ("not an object", '<tool_call>"email_delete_email"</tool_call>', "", [], 1),
    ("empty block", "<tool_call>\n</tool_call>", "", [], 1),
    ("python call syntax", '<tool_call>email_delete_email(email_id="7")</tool_call>', "", [], 1),
    ("apostrophe inside single quotes", "<tool_call>{'name': 'f', 'arguments': {'body': 'I can't come'}}</tool_call>", "", [], 1),
    ("NaN", '<tool_call>{"name": "f", "arguments": {"x": NaN}}</tool_call>', "", [], 1),
    ("prose after JSON in block", '<tool_call>{"name": "f", "arguments": {}} and then more</tool_call>', "", [], 1),
    ("unquoted value", '<tool_call>{"name": "f", "arguments": {"a": yes}}</tool_call>', "", [], 1),
    ("stray closing tag", 'Calling {"name": "f", "arguments": {}}</tool_call>', 'Calling {"name": "f", "arguments": {}}', [], 1),
    ("one good one bad", GOOD + '\n<tool_call>{"name": "f", "arguments": {"a": </tool_call>', "", [D7], 1),
    ("unclosed block swallowing prose", '<tool_call>{"name": "f", "arguments": {}}\nNow I wait.', "", [], 1),
    ("truncated opening tag", "Let me call it.\n<tool_ca", "Let me call it.", [], 1),
    ("bad call in a list fails the block", '<tool_call>[{"name": "f", "arguments": {}}, {"arguments": {}}]</tool_call>', "", [], 1),
    ("empty list", "<tool_call>[]</tool_call>", "", [], 1),
]


@pytest.mark.parametrize(("text", "content", "calls", "n_invalid"), [c[1:] for c in CORPUS], ids=[c[0] for c in CORPUS])
def test_corpus(text, content, calls, n_invalid):
    parsed = parse_text_tool_calls(text)
    assert parsed.content == content
    assert [(c.name, c.arguments) for c in parsed.calls] == calls
    assert [c.call_id for c in parsed.calls] == [f"call_{i}" for i in range(len(calls))]
    assert len(parsed.invalid) == n_invalid, parsed.invalid
    for call in parsed.calls:
        assert json.loads(call.raw_arguments) == call.arguments and call.parse_error is None


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 40
    assert len({c[0] for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(("text", "reason"), [
    ('<tool_call>{"arguments": {}}</tool_call>', 'no "name"'),
    ('<tool_call>{"name": null}</tool_call>', '"name" must be a non-empty string, got null'),
    ('<tool_call>{"name": "f", "arguments": 3}</tool_call>', '"arguments" must be a JSON object, got int'),
    ('<tool_call>{"name": "f", "arguments": "nope"}</tool_call>', '"arguments" is a string that is not valid JSON'),
    ('<tool_call>{"name": "f"', "never closed and what follows it is not one JSON value"),
    ("<tool_call></tool_call>", "empty <tool_call> block"),
    ("<tool_call>{'body': 'I can't'}</tool_call>", "no unambiguous repair"),
    ('<tool_call>{"a": NaN}</tool_call>', "NaN is not valid JSON"),
    ("<tool_call>{'a': yes}</tool_call>", "still not JSON after fixing single-quoted strings"),
    ('<tool_call>{"name": "f"} trailing words</tool_call>', "unexpected text after the JSON object"),
    ('x</tool_call>', "</tool_call> without an opening <tool_call>"),
])
def test_rejections_say_why(text, reason):
    parsed = parse_text_tool_calls(text)
    assert parsed.calls == [] and len(parsed.invalid) == 1
    assert reason in parsed.invalid[0]


def test_invalid_fragment_is_quoted_and_shortened():
    body = '{"name": "f", "arguments": {"a": "' + "x" * 500 + '"'
    (line,) = parse_text_tool_calls(f"<tool_call>{body}</tool_call>").invalid
    assert '<tool_call>{"name": "f"' in line and line.endswith("...</tool_call>") and len(line) < 400


def test_repairs_are_reported():
    parsed = parse_text_tool_calls("<tool_call>{'name': 'f', 'arguments': {'a': True,},}\n")
    assert parsed.repairs == ["Python literals", "single-quoted strings", "trailing commas", "missing </tool_call>"]
    assert parse_text_tool_calls(GOOD).repairs == []


def test_deeply_nested_json_does_not_crash():
    deep = "[" * 100_000 + "]" * 100_000
    parsed = parse_text_tool_calls(f'<tool_call>{{"name": "f", "arguments": {{"a": {deep}}}}}</tool_call>')
    assert parsed.calls == [] and len(parsed.invalid) == 1


def test_id_prefix():
    parsed = parse_text_tool_calls(GOOD * 2, id_prefix="call_3_")
    assert [c.call_id for c in parsed.calls] == ["call_3_0", "call_3_1"]


def test_completion_from_text():
    completion = completion_from_text("Deleting.\n" + GOOD + '<tool_call>{"name": 1}</tool_call><|im_end|>')
    assert isinstance(completion, Completion)
    assert completion.text == "Deleting."
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [D7]
    assert len(completion.invalid) == 1


# Canonical assistant turns: prose without edge whitespace or tag characters, calls with dict arguments.
prose = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="<`"), max_size=30).map(str.strip)


@st.composite
def assistant_turns(draw):
    calls = [_tc(f"call_{i}", draw(names), draw(arguments)) for i in range(draw(st.integers(0, 3)))]
    message = {"role": "assistant", "content": draw(prose)}
    if calls:
        message["tool_calls"] = calls
    return message


@fast
@given(assistant_turns())
def test_parse_inverts_rendering(message):
    text = assistant_text(message)
    assert text.endswith(IM_END)
    # A turn cannot carry ChatML's own turn markers (generation stops at them), so none may occur inside.
    assume(not any(m in text[: -len(IM_END)] for m in END_OF_TURN_MARKERS))
    parsed = parse_text_tool_calls(text)
    assert parsed == ParsedText(content=parsed.content, calls=parsed.calls)  # nothing invalid, nothing repaired
    assert parsed.content == message["content"]
    expected = [(tc["function"]["name"], tc["function"]["arguments"]) for tc in message.get("tool_calls", [])]
    assert [(c.name, c.arguments) for c in parsed.calls] == expected
    # The message rebuilt from the parse renders back to the very same text.
    assert assistant_text(assistant_message(parsed.content, parsed.calls)) == text


# ---------------------------------------------------------------------------------------------------
# Message shapes


def test_assistant_message():
    calls = [
        ToolCall("f", {"a": "é"}, call_id="x1"),
        ToolCall("g", {"b": 1}, raw_arguments='{"b":1}'),
        ToolCall("h", None),
    ]
    message = assistant_message("hi", calls)
    assert message == {"role": "assistant", "content": "hi", "tool_calls": [
        _tc("x1", "f", '{"a": "é"}'), _tc("call_1", "g", '{"b":1}'), _tc("call_2", "h", "{}"),
    ]}
    assert assistant_message(None, []) == {"role": "assistant", "content": ""}


def test_chat_to_responses_items():
    items = chat_messages_to_responses_items(CONVERSATION)
    assert items[0] == {"role": "system", "content": "Today's date is Thursday, 2023-11-30."}
    assert items[2] == {"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Deleting both.", "annotations": []}]}
    assert items[3] == {"type": "function_call", "name": "email_delete_email", "arguments": '{"email_id": "7"}',
                        "call_id": "call_0"}
    assert items[4]["arguments"] == '{"email_id": "8"}'  # dict arguments become a JSON string
    assert items[5] == {"type": "function_call_output", "call_id": "call_0", "output": "Email deleted successfully."}
    assert [it.get("type", it.get("role")) for it in items] == [
        "system", "user", "message", "function_call", "function_call", "function_call_output",
        "function_call_output", "function_call", "function_call_output", "message",
    ]


def test_tool_note_without_call_id_goes_as_user_message():
    items = chat_messages_to_responses_items([{"role": "tool", "tool_call_id": None, "content": "bad call"}])
    assert items == [{"role": "user", "content": "bad call"}]


def test_responses_items_to_chat():
    messages = responses_items_to_chat_messages(chat_messages_to_responses_items(CONVERSATION))
    assert messages[2] == {"role": "assistant", "content": "Deleting both.", "tool_calls": [
        _tc("call_0", "email_delete_email", '{"email_id": "7"}'), _tc("call_1", "email_delete_email", '{"email_id": "8"}'),
    ]}
    assert messages[5]["content"] == "" and messages[5]["tool_calls"][0]["id"] == "call_2"
    assert render_chatml(messages, TOOLS) == render_chatml(CONVERSATION, TOOLS)


def test_nemo_gym_inputs():
    assert responses_items_to_chat_messages("Delete mail 7") == [{"role": "user", "content": "Delete mail 7"}]
    items = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "input_text", "text": "hello "}, {"type": "input_text", "text": "there"}],
         "type": "message"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "name": "f", "arguments": {"a": 1}, "call_id": "c1", "id": "fc_1", "status": "completed"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "ok"}]},
        {"type": "function_call_output", "call_id": "c2", "output": {"output": 1}},
    ]
    assert responses_items_to_chat_messages(items) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "", "tool_calls": [_tc("c1", "f", '{"a": 1}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "tool", "tool_call_id": "c2", "content": '{"output": 1}'},
    ]


def test_reference_rollouts_convert(reference_dir):
    for line in (reference_dir / "example_rollouts.jsonl").read_text().splitlines():
        row = json.loads(line)
        items = row["responses_create_params"]["input"] + row["response"]["output"]
        messages = responses_items_to_chat_messages(items)
        assert [m["role"] for m in messages[:2]] == ["system", "user"]
        calls = [it for it in row["response"]["output"] if it["type"] == "function_call"]
        chat_calls = [tc for m in messages if m["role"] == "assistant" for tc in m.get("tool_calls", [])]
        assert [(tc["id"], tc["function"]["name"], tc["function"]["arguments"]) for tc in chat_calls] == [
            (c["call_id"], c["name"], c["arguments"]) for c in calls
        ]
        assert messages[-1]["role"] == "assistant" and messages[-1]["content"]
        back = chat_messages_to_responses_items(messages)
        assert [it for it in back if it.get("type") == "function_call"] == [
            {k: c[k] for k in ("type", "name", "arguments", "call_id")} for c in calls
        ]
        render_chatml(messages, row["responses_create_params"]["tools"])  # renders without error


def test_reference_dataset_inputs_convert(reference_dir):
    for line in (reference_dir / "example.jsonl").read_text().splitlines():
        row = json.loads(line)
        params = row["responses_create_params"]
        messages = responses_items_to_chat_messages(params["input"])
        assert messages == [{"role": m["role"], "content": m["content"]} for m in params["input"]]
        assert chat_messages_to_responses_items(messages) == params["input"]


@st.composite
def canonical_conversations(draw):
    """Conversations whose round trip through Responses items is exact: string content, string
    arguments, no assistant message directly after another (Responses items merge those)."""
    msgs = draw(conversations())
    out = []
    for m in msgs:
        m = {**m, "content": m.get("content") or ""}
        if m["role"] == "assistant":
            if out and out[-1]["role"] == "assistant":
                continue
            for tc in m.get("tool_calls", []):
                args = tc["function"]["arguments"]
                if not isinstance(args, str):
                    tc["function"]["arguments"] = json.dumps(args)
        out.append(m)
    return out


@fast
@given(canonical_conversations())
def test_chat_round_trip(messages):
    items = chat_messages_to_responses_items(messages)
    assert responses_items_to_chat_messages(items) == messages
    assert chat_messages_to_responses_items(responses_items_to_chat_messages(items)) == items


@pytest.mark.parametrize("arguments", [{"<tool_call>": None}, {"body": "see </tool_call> and <tool_call> here"},
                                       {"a": ["</tool_call>", {"<tool_call>": "<|im_end"}]}])
def test_tags_inside_a_calls_json_strings_belong_to_it(arguments):
    """A call whose JSON holds the block's own tags in its strings (hypothesis found {"<tool_call>": null})."""
    message = {"role": "assistant", "content": "ok", "tool_calls": [_tc("call_0", "a", arguments), _tc("call_1", "b", {})]}
    text = assistant_text(message)
    parsed = parse_text_tool_calls(text)
    assert parsed.invalid == [] and parsed.repairs == [] and parsed.content == "ok"
    assert [(c.name, c.arguments) for c in parsed.calls] == [("a", arguments), ("b", {})]
    assert assistant_text(assistant_message(parsed.content, parsed.calls)) == text


def test_an_integer_past_pythons_digit_limit_is_an_invalid_call_not_a_crash():
    parsed = parse_text_tool_calls('<tool_call>{"name": "a", "arguments": {"n": ' + "1" * 5000 + "}}</tool_call>")
    assert parsed.calls == [] and len(parsed.invalid) == 1 and "digits" in parsed.invalid[0]


def test_many_broken_blocks_parse_in_linear_time():
    """Each block is decoded from its own slice: 20,000 broken blocks (2.5 MB) parse in well under a
    second where decoding from each block to the text's end took 7 s."""
    import time

    text = ("<tool_call>[" + "1," * 50 + "</tool_call>") * 2000
    start = time.perf_counter()
    parsed = parse_text_tool_calls(text)
    small = time.perf_counter() - start
    start = time.perf_counter()
    parse_text_tool_calls(text * 8)
    assert len(parsed.invalid) == 2000 and time.perf_counter() - start < 8 * small * 3 + 0.5
