"""BFCL function documents <-> the tools officegym's policies see, and model calls -> the checker's form.

* Names. Tool names must match ^[a-zA-Z0-9_-]{1,64}$ (OpenAI's rule, which officegym's specs
  follow); BFCL names hold dots ("math.factorial") and could hold anything. `ToolNames` maps one
  entry's functions to tool names (dots become "_", other characters "_xHHHH_", a numbered suffix
  on a clash, a hash on an overlong name) and back. The mapping is per entry and one-to-one, so it
  is reversible by lookup; a call to the original name is accepted as well.
* Schemas. BFCL types ("dict", "float", "tuple", "any", Java's "long", "HashMap", ...) become JSON
  schema types, recursively through `properties` and `items`; descriptions, enums, defaults and
  required lists are kept.
* Calls. A call becomes `{original_name: arguments}`, the form bfcl-eval's decoders hand its
  checker. Nothing the model wrote is ever evaluated.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterable
from typing import Any

from officegym.core.types import ToolCall, ToolSpec

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MAX_NAME = 64

# BFCL type names (any case) -> JSON schema types. Unknown ones become strings, as bfcl-eval's own
# tool conversion does.
_JSON_TYPES = {
    "string": "string", "str": "string", "char": "string", "any": "string",
    "integer": "integer", "int": "integer", "long": "integer", "short": "integer", "byte": "integer",
    "bigint": "integer",
    "float": "number", "double": "number", "number": "number",
    "boolean": "boolean", "bool": "boolean",
    "array": "array", "list": "array", "tuple": "array", "arraylist": "array", "queue": "array", "stack": "array",
    "dict": "object", "object": "object", "hashmap": "object", "hashtable": "object",
}
# Keys of a BFCL parameter that mean the same in JSON schema (BFCL's own "optional" does not).
_KEPT_KEYS = ("description", "enum", "default", "format", "minimum", "maximum", "minItems", "maxItems")


def json_type(bfcl_type: Any) -> str:
    return _JSON_TYPES.get(str(bfcl_type).lower(), "string")


def to_json_schema(param: Any) -> dict[str, Any]:
    """One BFCL parameter (or a function's `parameters`) as JSON schema, recursively."""
    if not isinstance(param, dict):
        return {"type": "string"}
    kind = json_type(param.get("type", "string"))
    out: dict[str, Any] = {"type": kind}
    for key in _KEPT_KEYS:
        if key in param:
            out[key] = copy.deepcopy(param[key])
    if str(param.get("type", "")).lower() == "any":
        out["description"] = (str(out.get("description", "")) + " Any value, written as a string.").strip()
    if kind == "object":
        props = param.get("properties")
        if isinstance(props, dict):
            out["properties"] = {str(k): to_json_schema(v) for k, v in props.items()}
        required = param.get("required")
        if isinstance(required, list):
            out["required"] = [str(r) for r in required]
    elif kind == "array":
        out["items"] = to_json_schema(param["items"]) if isinstance(param.get("items"), dict) else {}
    return out


def _sanitise(name: str) -> str:
    out = []
    for ch in name:
        if ch == ".":
            out.append("_")
        elif re.fullmatch(r"[A-Za-z0-9_-]", ch):
            out.append(ch)
        else:
            out.append(f"_x{ord(ch):04x}_")
    return "".join(out) or "_"


def _shorten(name: str, original: str, room: int = _MAX_NAME) -> str:
    if len(name) <= room:
        return name
    digest = hashlib.sha1(original.encode("utf-8")).hexdigest()[:8]
    return f"{name[: room - 9]}_{digest}"


class ToolNames:
    """The one-to-one map between one entry's BFCL function names and the tool names offered."""

    def __init__(self, names: Iterable[str]):
        self.to_tool: dict[str, str] = {}
        self.to_bfcl: dict[str, str] = {}
        names = list(dict.fromkeys(names))
        # Names that are valid already keep themselves, so a sanitised name never takes one of theirs.
        for name in names:
            if _TOOL_NAME.fullmatch(name):
                self._add(name, name)
        for name in names:
            if name in self.to_tool:
                continue
            base = _shorten(_sanitise(name), name)
            candidate, n = base, 1
            while candidate in self.to_bfcl:
                n += 1
                suffix = f"_{n}"
                candidate = _shorten(base, name, _MAX_NAME - len(suffix)) + suffix
            self._add(name, candidate)

    def _add(self, bfcl: str, tool: str) -> None:
        self.to_tool[bfcl] = tool
        self.to_bfcl[tool] = bfcl

    def original(self, tool_name: str) -> str | None:
        """The BFCL name a model's call refers to (its tool name, or the original name), else None."""
        if tool_name in self.to_bfcl:
            return self.to_bfcl[tool_name]
        return tool_name if tool_name in self.to_tool else None


def tool_specs(functions: list[dict[str, Any]], names: ToolNames) -> list[ToolSpec]:
    """The ToolSpecs a policy sees for one entry's function documents."""
    specs = []
    for f in functions:
        params = to_json_schema({**f.get("parameters", {}), "type": "dict"})
        params.setdefault("properties", {})
        params.setdefault("required", [])
        specs.append(ToolSpec(names.to_tool[f["name"]], str(f.get("description", "")), params))
    return specs


class CallError(ValueError):
    """A model call that does not decode (arguments not JSON, or not an object)."""


def decode_calls(calls: list[ToolCall], names: ToolNames) -> list[dict[str, Any]]:
    """The model's calls as bfcl-eval's decoders give them to its checker: `[{name: {param: value}}]`,
    with tool names mapped back to BFCL's (a name not offered stays as the model wrote it).
    CallError for arguments that are not a JSON object: BFCL's decoders fail on those."""
    decoded = []
    for i, call in enumerate(calls):
        if call.parse_error is not None:
            raise CallError(f"call {i + 1} ({call.name}): arguments are not valid JSON: {call.parse_error}")
        if not isinstance(call.arguments, dict):
            raise CallError(f"call {i + 1} ({call.name}): arguments must be a JSON object, got "
                            f"{type(call.arguments).__name__}")
        decoded.append({names.original(call.name) or call.name: dict(call.arguments)})
    return decoded


def unknown_functions(calls: list[ToolCall], names: ToolNames) -> list[str]:
    """Names the model called that the entry did not offer."""
    return [c.name for c in calls if names.original(c.name) is None]
