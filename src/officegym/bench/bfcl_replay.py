"""BFCL's possible answers as the calls an oracle makes: the ground truth that `--policy oracle`
replays to prove the wiring end to end (it scores 100% wherever the checker can be satisfied).

A possible answer lists the acceptable values of each parameter; the replay takes the first one,
and leaves an optional parameter out when its first value is "" (BFCL's mark for "may be omitted").
A dict answer maps each key to its acceptable values and is made concrete the same way. A few
answers cannot be met by any call (a required parameter missing from the answer, an answer key
the function does not have, Java lists whose converter turns every element into a string); the
tests list them.

Java and JavaScript entries show every parameter as a string holding source text ("true", "42L",
`new ArrayList<>(Arrays.asList("a"))`), which bfcl-eval's type converters parse before comparing;
the replay writes the answer's values in that form. live_relevance has no possible answer (any
call is right): the replay calls the first function with placeholder values.

Multi-turn ground truth is a list of call strings per user turn ("cd(folder='document')",
"sort('final_report.pdf')"). They are parsed with `ast`, never evaluated: the function must be a
plain name and every argument a literal; a positional argument takes the name of the backend
method's parameter at its position (bfcl-eval's executor binds it so).
"""

from __future__ import annotations

import ast
import copy
import json
from typing import Any

from officegym.bench import bfcl_lib
from officegym.bench.bfcl_convert import ToolNames, json_type
from officegym.core.types import ToolCall


def _concrete_dict(answer: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, options in answer.items():
        if isinstance(options, list):
            if options and options[0] != "":
                out[key] = copy.deepcopy(options[0])
        else:
            out[key] = copy.deepcopy(options)
    return out


def replay_value(possible: list[Any], doc: dict[str, Any] | None, required: bool) -> tuple[bool, Any]:
    """(present, value): the first acceptable value of one parameter ("" skipped when required)."""
    options = [v for v in possible if v != ""] if required else list(possible)
    if not options or options[0] == "":
        return False, None
    value, doc = options[0], doc or {}
    kind = json_type(doc.get("type", ""))
    items = doc.get("items") if isinstance(doc.get("items"), dict) else {}
    if kind == "object" and isinstance(value, dict):
        return True, _concrete_dict(value)
    if kind == "array" and json_type(items.get("type", "")) == "object" and isinstance(value, list):
        return True, [_concrete_dict(v) if isinstance(v, dict) else v for v in value]
    return True, copy.deepcopy(value)


# ---- Java and JavaScript source text, in the forms bfcl-eval's type converters read ----------

def _java_scalar(value: Any) -> str:
    """A value inside a Java collection literal (read by the converter's `parse_java_value`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def java_source(value: Any, java_type: str, nested: str | None = None) -> str:
    if isinstance(value, str):  # a string, or a variable the answer names
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and not isinstance(value, bool):
        suffix = {"long": "L", "float": "f"}.get(java_type, "")
        return f"{value}{suffix}"
    if isinstance(value, list):
        if java_type == "ArrayList":
            quoted = nested in ("String", "char")
            parts = [json.dumps(v, ensure_ascii=False) if quoted else java_source(v, nested or "any") for v in value]
            return f"new ArrayList<>(Arrays.asList({', '.join(parts)}))" if parts else "new ArrayList<>()"
        return "new Object[]{" + ", ".join(java_source(v, nested or "any") for v in value) + "}"
    if isinstance(value, dict):
        puts = " ".join(f"put({json.dumps(str(k), ensure_ascii=False)}, {_java_scalar(v)});" for k, v in value.items())
        return "new HashMap<String, Object>() {{ " + puts + " }}" if puts else "new HashMap<>()"
    return str(value)


def js_source(value: Any, js_type: str, nested: str | None = None) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"{value}n" if js_type == "Bigint" else str(value)
    if isinstance(value, list):
        quoted = nested == "String"
        return "[" + ", ".join(json.dumps(v, ensure_ascii=False) if quoted and isinstance(v, str)
                               else js_source(v, nested or "any") for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {js_source(v, 'any')}" for k, v in value.items()) + "}"
    return str(value)


def _source(value: Any, doc: dict[str, Any], category: str) -> Any:
    nested = (doc.get("items") or {}).get("type") if isinstance(doc.get("items"), dict) else None
    if category == "simple_java":
        return java_source(value, str(doc.get("type", "any")), nested)
    if category == "simple_javascript":
        return js_source(value, str(doc.get("type", "any")), nested)
    return value


def replay_calls(answer: list[dict[str, Any]], functions: list[dict[str, Any]], names: ToolNames,
                 category: str) -> list[ToolCall]:
    """One call per function of the possible answer, as a model would write it for this entry."""
    docs = {f["name"]: f for f in functions}
    calls = []
    for i, item in enumerate(answer):
        (name, params), = item.items()
        parameters = (docs.get(name) or {}).get("parameters", {})
        props, required = parameters.get("properties", {}), set(parameters.get("required", []))
        args = {}
        for param, possible in params.items():
            if param not in props:  # an answer key the document lacks: the checker refuses any value for it
                continue
            doc = props[param] or {}
            options = possible if isinstance(possible, list) else [possible]
            present, value = replay_value(options, doc, param in required)
            if present:
                args[param] = _source(value, doc, category)
        calls.append(ToolCall(names.to_tool.get(name, name), args, None, f"call_0_{i}"))
    return calls


def _placeholder(schema: dict[str, Any]) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    return {"integer": 0, "number": 0.0, "boolean": False, "array": [], "object": {}}.get(schema.get("type"), "")


def relevance_call(tools: list[Any]) -> list[ToolCall]:
    """A call to the first offered tool, its required parameters given placeholder values."""
    if not tools:
        return []
    spec = tools[0]
    props = spec.parameters.get("properties", {})
    args = {p: _placeholder(props.get(p, {})) for p in spec.parameters.get("required", [])}
    return [ToolCall(spec.name, args, None, "call_0_0")]


class GroundTruthError(ValueError):
    """A ground-truth call string that is not a plain call with literal arguments."""


def parse_call_string(text: str, classes: list[str]) -> tuple[str, dict[str, Any]]:
    """(function name, keyword arguments) of one BFCL ground-truth call string, read with `ast`."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise GroundTruthError(f"{text!r} does not parse: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise GroundTruthError(f"{text!r} is not a call of a plain function name")
    name = node.func.id
    try:
        positional = [ast.literal_eval(a) for a in node.args]
        arguments = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except ValueError:
        raise GroundTruthError(f"{text!r} has an argument that is not a literal") from None
    if len(arguments) != len(node.keywords):
        raise GroundTruthError(f"{text!r} unpacks keyword arguments")
    if positional:
        params = bfcl_lib.backend_parameters(classes, name)
        if params is None or len(positional) > len(params):
            raise GroundTruthError(f"{text!r}: no backend method takes {len(positional)} positional arguments")
        for param, value in zip(params, positional, strict=False):
            if param in arguments:
                raise GroundTruthError(f"{text!r} gives {param!r} twice")
            arguments[param] = value
    return name, arguments


def replay_multi_turn(ground_truth: list[list[str]], classes: list[str], names: ToolNames) -> list[list[ToolCall]]:
    """Per user turn, the ground truth's calls as a model would make them (keyword arguments, the
    tool names the model is shown)."""
    turns = []
    for t, turn in enumerate(ground_truth):
        calls = []
        for i, text in enumerate(turn):
            name, arguments = parse_call_string(text, classes)
            calls.append(ToolCall(names.to_tool.get(name, name), arguments, None, f"call_{t}_{i}"))
        turns.append(calls)
    return turns
