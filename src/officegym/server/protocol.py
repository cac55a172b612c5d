"""The wire format: protocol constants, strict JSON out, checked JSON in, FastAPI's 4xx bodies."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import to_json
from starlette.concurrency import run_in_threadpool

SESSION_ID_KEY = "session_id"
REFERENCE_COOKIE = "WorkbenchResourcesServer___workplace_assistant"
NOT_INITIALIZED = "Session not initialized. Please call seed_session first."
STATUS_HEADER = "x-officegym-status"
# POST routes of the server itself: a tool of that name cannot be reached at /{name} (the fixed
# route wins, as in the reference); officegym's client sends such calls to /officegym/call.
RESERVED_PATHS = frozenset({"seed_session", "verify", "aggregate_metrics", "close_session", "run"})
# Set in the ASGI scope by BodyLimitMiddleware when the body was over the limit and not read.
BODY_TOO_LARGE = "officegym.body_too_large"
# Bodies larger than this are parsed in a worker thread: json.loads of tens of MiB takes long
# enough to stall every other client of the event loop.
PARSE_OFF_LOOP_BYTES = 1024 * 1024


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
        return json.loads(raw) if len(raw) < PARSE_OFF_LOOP_BYTES else await run_in_threadpool(json.loads, raw)
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


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON `value` nests objects and arrays more than `limit` levels deep (walked without
    recursion, so that no depth can exhaust the stack)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


class EpisodeId(BaseModel):
    """NeMo Gym's episode identity: a rollout id (path-safe, without the reserved "-a<N>" attempt
    suffix) and its attempt number."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rollout_id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    attempt: int = Field(default=0, ge=0)

    @field_validator("rollout_id")
    @classmethod
    def _no_attempt_suffix(cls, value: str) -> str:
        if re.search(r"-a[1-9][0-9]*$", value):
            raise ValueError("rollout_id must not end with the reserved attempt suffix '-a<N>'")
        return value


class CloseSessionRequest(BaseModel):
    """The body NeMo Gym's `/close_session` takes (extra keys refused, as there)."""

    model_config = ConfigDict(extra="forbid")

    resources_session_id: str
    episode_id: EpisodeId


def validated(model: type[BaseModel], body: Any) -> Any:
    """`body` validated by `model`, or BadRequest with the 422 FastAPI gives for it."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = [{**e, "loc": ["body", *e["loc"]]} for e in exc.errors(include_url=False)]
        raise BadRequest(detail(errors, 422)) from None
