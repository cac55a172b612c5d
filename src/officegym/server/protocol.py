"""The wire format: protocol constants, strict JSON out, checked JSON in, FastAPI's 4xx bodies."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from pydantic_core import to_json

SESSION_ID_KEY = "session_id"
REFERENCE_COOKIE = "WorkbenchResourcesServer___workplace_assistant"
NOT_INITIALIZED = "Session not initialized. Please call seed_session first."
STATUS_HEADER = "x-officegym-status"
# POST routes of the server itself: a tool of that name cannot be reached at /{name} (the fixed
# route wins, as in the reference); officegym's client sends such calls to /officegym/call.
RESERVED_PATHS = frozenset({"seed_session", "verify", "aggregate_metrics", "close_session", "run"})


def dumps(value: Any) -> bytes:
    """Compact JSON as FastAPI writes it, NaN/inf as null (NeMo Gym reads bodies with orjson, which
    rejects NaN). Never raises: strings that UTF-8 cannot hold (lone surrogates) are replaced."""
    try:
        return to_json(value, inf_nan_mode="null", fallback=str)
    except Exception:  # lone surrogates, absurd nesting: render something readable instead
        try:
            return to_json(_scrub(value), inf_nan_mode="null", fallback=str)
        except Exception:
            return to_json({"detail": "the answer could not be rendered as JSON"})


def _scrub(value: Any, depth: int = 0) -> Any:
    if depth > 200:
        return "..."
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_scrub(str(k), depth + 1): _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v, depth + 1) for v in value]
    return value


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(value), status_code=status, media_type="application/json", headers=headers)


def detail(message: Any, status: int) -> Response:
    return json_response({"detail": message}, status)


def validation_error(type_: str, loc: list[Any], msg: str, input_: Any, ctx: dict | None = None) -> Response:
    """FastAPI's 422 body for a request the reference's pydantic models would reject."""
    item: dict[str, Any] = {"type": type_, "loc": loc, "msg": msg, "input": input_}
    if ctx is not None:
        item["ctx"] = ctx
    return detail([item], 422)


def not_an_object(value: Any) -> Response:
    return validation_error(
        "model_attributes_type", ["body"], "Input should be a valid dictionary or object to extract fields from", value
    )


class BadRequest(Exception):
    """Raised by a handler to answer with `response` (a 4xx) instead of going on."""

    def __init__(self, response: Response):
        self.response = response


async def read_json(request: Request, *, allow_empty: bool = False) -> Any:
    """The request body as JSON, or BadRequest carrying FastAPI's 422 for it."""
    raw = await request.body()
    if not raw:
        if allow_empty:
            return {}
        raise BadRequest(validation_error("missing", ["body"], "Field required", None))
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise BadRequest(validation_error("json_invalid", ["body", exc.pos], "JSON decode error", {}, {"error": exc.msg})) from None
    except (ValueError, RecursionError) as exc:  # undecodable bytes, nesting deeper than Python's stack
        raise BadRequest(validation_error("json_invalid", ["body", 0], "JSON decode error", {}, {"error": str(exc)[:200]})) from None


async def read_object(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    value = await read_json(request, allow_empty=allow_empty)
    if not isinstance(value, dict):
        raise BadRequest(not_an_object(value))
    return value


def require(row: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """row[key] when it is of `kind`, else BadRequest with FastAPI's 422 ("missing" or "<what>_type")."""
    if key not in row:
        raise BadRequest(validation_error("missing", ["body", key], "Field required", row))
    value = row[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BadRequest(validation_error(f"{what}_type", ["body", key], f"Input should be a valid {what}", value))
    return value
