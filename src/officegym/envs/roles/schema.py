"""The small subset of JSON Schema the role tools use, checked with messages a model can act on.

Supported keywords: type (object, array, string, integer, number, boolean), properties, required,
additionalProperties (false or a schema), items, minItems, maxItems, enum, minimum, maximum,
maxLength. Anything else in a schema is ignored.
"""

from __future__ import annotations

import math
from typing import Any

_TYPE_NAMES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a finite number",
    "boolean": "true or false",
}


def _is_type(value: Any, kind: str | None) -> bool:
    if kind is None:
        return True
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) and _finite(value)
    return True


def _finite(value: int | float) -> bool:
    """Whether the graders can do float arithmetic with it: not NaN or infinite, and an int (JSON has
    no size limit) within float's range; a larger one would raise OverflowError in every sum."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def schema_error(value: Any, schema: dict[str, Any], path: str = "arguments") -> str | None:
    """The first way `value` breaks `schema`, as one sentence, or None when it conforms."""
    kind = schema.get("type")
    if not _is_type(value, kind):
        return f"{path} must be {_TYPE_NAMES.get(kind, kind)}, got {_describe(value)}"
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        return f"{path} must be one of {allowed}, got {_describe(value)}"
    if kind in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path} must be at least {schema['minimum']}, got {value}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path} must be at most {schema['maximum']}, got {value}"
    if kind == "string" and "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"{path} is longer than {schema['maxLength']} characters"
    if kind == "array":
        if len(value) < schema.get("minItems", 0):
            return f"{path} needs at least {schema['minItems']} item(s)"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path} holds more than {schema['maxItems']} items"
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                error = schema_error(item, items, f"{path}[{i}]")
                if error:
                    return error
    if kind == "object":
        props = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                return f"{path} is missing the required field {key!r}"
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                error = schema_error(item, props[key], f"{path}.{key}")
            elif extra is False:
                known = ", ".join(props) or "none"
                return f"{path} has an unknown field {key!r} (fields: {known})"
            elif isinstance(extra, dict):
                error = schema_error(item, extra, f"{path}.{key}")
            else:
                error = None
            if error:
                return error
    return None


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
