"""BFCL documents -> tool schemas -> calls -> the checker's form, without bfcl-eval installed."""

from __future__ import annotations

import json
import re

import pytest

from officegym.bench.bfcl_convert import (
    CallError,
    ToolNames,
    decode_calls,
    to_json_schema,
    tool_specs,
    unknown_functions,
)
from officegym.bench.bfcl_replay import relevance_call, replay_calls, replay_value
from officegym.core.types import ToolCall

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

ODD = {
    "name": "géo.distance.計算",
    "description": "Distance between two places.",
    "parameters": {
        "type": "dict",
        "required": ["from", "route"],
        "properties": {
            "from": {"type": "dict", "description": "Start.", "required": ["lat"],
                     "properties": {"lat": {"type": "float"}, "lon": {"type": "float", "default": 0.0},
                                    "label": {"type": "string", "optional": True}}},
            "route": {"type": "array", "items": {"type": "dict", "properties": {
                "mode": {"type": "string", "enum": ["car", "train"]},
                "stops": {"type": "tuple", "items": {"type": "integer"}}}}},
            "unit": {"type": "string", "enum": ["km", "mi"], "default": "km"},
            "extra": {"type": "any", "description": "Anything."},
            "strict": {"type": "boolean"},
            "données": {"type": "HashMap"},
        },
    },
}


def test_names_are_valid_unique_and_reversible():
    originals = ["math.factorial", "math_factorial", "計算.面積", "a.b.c", "x" * 90, "x" * 90 + ".y", "ok-name", ""]
    names = ToolNames(originals)
    tools = [names.to_tool[o] for o in originals]
    assert all(TOOL_NAME.match(t) for t in tools), tools
    assert len(set(tools)) == len(originals)
    assert names.to_tool["math_factorial"] == "math_factorial"  # a valid name keeps itself ...
    assert names.to_tool["math.factorial"] != "math_factorial"  # ... so the dotted one gets another
    for original, tool in zip(originals, tools):
        assert names.original(tool) == original
        assert names.original(original) == original  # a model may call the documented name
    assert names.original("nope") is None
    assert ToolNames(["a.b"]).to_tool["a.b"] == "a_b"  # what BFCL's own tool conversion shows


def test_schema_types_map_to_json_schema():
    schema = to_json_schema(ODD["parameters"])
    assert schema["type"] == "object" and schema["required"] == ["from", "route"]
    start = schema["properties"]["from"]
    assert start["type"] == "object" and start["required"] == ["lat"]
    assert start["properties"]["lat"] == {"type": "number"}
    assert start["properties"]["lon"] == {"type": "number", "default": 0.0}
    assert "optional" not in start["properties"]["label"]  # BFCL's own key, not JSON schema
    route = schema["properties"]["route"]
    assert route["type"] == "array" and route["items"]["type"] == "object"
    assert route["items"]["properties"]["mode"] == {"type": "string", "enum": ["car", "train"]}
    assert route["items"]["properties"]["stops"] == {"type": "array", "items": {"type": "integer"}}
    assert schema["properties"]["unit"] == {"type": "string", "enum": ["km", "mi"], "default": "km"}
    assert schema["properties"]["extra"]["type"] == "string"
    assert schema["properties"]["strict"] == {"type": "boolean"}
    assert schema["properties"]["données"]["type"] == "object"
    assert to_json_schema({"type": "SomethingElse"}) == {"type": "string"}
    assert to_json_schema({"type": "array"}) == {"type": "array", "items": {}}


def test_odd_schema_round_trips_through_a_model_call():
    names = ToolNames([ODD["name"]])
    (spec,) = tool_specs([ODD], names)
    assert TOOL_NAME.match(spec.name) and spec.parameters["type"] == "object"
    json.dumps(spec.to_chat_tool())  # what a model backend sends
    args = {"from": {"lat": 48.85, "label": "Paris — centre"}, "route": [{"mode": "train", "stops": [1, 2]}],
            "données": {"clé": "valeur"}}
    wire = json.loads(json.dumps({"name": spec.name, "arguments": args}, ensure_ascii=False))  # text and back
    decoded = decode_calls([ToolCall(wire["name"], wire["arguments"])], names)
    assert decoded == [{ODD["name"]: args}]


def test_bad_calls_give_clear_errors():
    names = ToolNames(["math.factorial"])
    with pytest.raises(CallError, match="not valid JSON"):
        decode_calls([ToolCall("math_factorial", {}, '{"n": ', parse_error="Expecting value")], names)
    with pytest.raises(CallError, match="must be a JSON object"):
        decode_calls([ToolCall("math_factorial", [1, 2])], names)
    calls = [ToolCall("launch_rocket", {"n": 1})]
    assert decode_calls(calls, names) == [{"launch_rocket": {"n": 1}}]  # decodes: irrelevance sees a call
    assert unknown_functions(calls, names) == ["launch_rocket"]


def test_replay_takes_the_first_acceptable_value():
    assert replay_value(["units", ""], {"type": "string"}, required=False) == (True, "units")
    assert replay_value(["", "units"], {"type": "string"}, required=False) == (False, None)
    assert replay_value(["", 25], {"type": "integer"}, required=True) == (True, 25)
    assert replay_value([{"a": ["x", "y"], "b": ["", 1]}], {"type": "dict"}, required=True) == (True, {"a": "x"})
    doc = {"type": "array", "items": {"type": "dict"}}
    assert replay_value([[{"k": [1]}, {"k": [2]}]], doc, required=True) == (True, [{"k": 1}, {"k": 2}])
    names = ToolNames([ODD["name"]])
    answer = [{ODD["name"]: {"from": [{"lat": [1.5]}], "route": [[]], "unit": ["", "km"], "ghost": ["x"]}}]
    (call,) = replay_calls(answer, [ODD], names, "simple_python")
    assert call.name == names.to_tool[ODD["name"]]
    assert call.arguments == {"from": {"lat": 1.5}, "route": []}  # "ghost" is not in the document
    (spec,) = tool_specs([ODD], names)
    (placeholder,) = relevance_call([spec])
    assert placeholder.name == spec.name and set(placeholder.arguments) == {"from", "route"}
