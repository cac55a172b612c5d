"""Task rows in, verify answers out: what /verify, /run and /seed_session need of a row."""

from __future__ import annotations

from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.rollout_row import RolloutRow, task_row
from officegym.core.task import Task, TaskFormatError
from officegym.core.toolcalls import ToolCallParseError
from officegym.core.types import ToolCall
from officegym.server.protocol import BadRequest, detail, nested_deeper_than, require, validation_error

# Fields of the verify response: NeMo Gym 0.7's BaseVerifyResponse declares the first six; SPEC
# 5.1 (an earlier snapshot) also lists the task fields, which officegym echoes when present.
VERIFY_ECHO = ("responses_create_params", "response")
VERIFY_DEFAULTS = (("mask_sample", False), ("failure_kind", None), ("failure_reason", None))
TASK_ECHO = ("ground_truth", "id", "category", "environment_name")
# Rows are copied and walked recursively; real ones nest about 10 levels (tool schemas).
MAX_ROW_DEPTH = 100


def resolve_mode(env: BaseEnvironment, default: str | None, requested: Any) -> str | None:
    """The verification mode a request asks for (else the server's default); 422 for an unknown one."""
    mode = requested if requested is not None else default
    if mode is None:
        return None
    modes = env.modes
    if not isinstance(mode, str) or (modes and mode not in modes):
        raise BadRequest(detail(f"unknown verification mode {mode!r}; choose from {', '.join(modes)}", 422))
    return mode


def echo(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in VERIFY_ECHO if k in row}


def verify_answer(row: dict[str, Any], reward: float) -> dict[str, Any]:
    """The verify response's fields: the echo, `reward`, NeMo Gym's defaults and the task fields."""
    out = echo(row)
    out["reward"] = reward
    out.update(VERIFY_DEFAULTS)
    out.update({k: row[k] for k in TASK_ECHO if k in row})
    return out


def check_params(rcp: dict[str, Any], for_run: bool = False) -> None:
    """What Task.from_row and the agent loop need of responses_create_params."""
    given = rcp.get("input", [])
    if not isinstance(given, (str, list)) or (for_run and isinstance(given, list) and not all(isinstance(m, dict) for m in given)):
        raise BadRequest(validation_error("list_type", ["body", "responses_create_params", "input"],
                                          "Input should be a string or a list of message objects", given))
    tools = rcp.get("tools")
    if for_run and tools is not None and (not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)):
        raise BadRequest(validation_error("list_type", ["body", "responses_create_params", "tools"],
                                          "Input should be a list of tool objects", tools))


def check_depth(row: dict[str, Any]) -> None:
    """422 for a row nested deeper than MAX_ROW_DEPTH, before anything recurses into it."""
    if nested_deeper_than(row, MAX_ROW_DEPTH):
        raise BadRequest(validation_error("too_deep", ["body"], f"Input should nest at most {MAX_ROW_DEPTH} levels "
                                          "of objects and arrays (tool-call arguments are JSON strings)", None))


def task_and_calls(row: dict[str, Any]) -> tuple[Task, list[ToolCall]]:
    """The task a verify row names and the calls its `response.output` holds; 422 when it cannot be verified."""
    check_depth(row)
    check_params(require(row, "responses_create_params", dict, "dictionary"))
    response = require(row, "response", dict, "dictionary")
    output = response.get("output", [])
    if not isinstance(output, list):
        raise BadRequest(validation_error("list_type", ["body", "response", "output"], "Input should be a valid list", output))
    if "ground_truth" not in row and not isinstance(row.get("verifier_metadata"), dict):
        raise BadRequest(validation_error("missing", ["body", "ground_truth"], "Field required", None))
    if not isinstance(row.get("ground_truth", []), (list, str)):
        raise BadRequest(validation_error("list_type", ["body", "ground_truth"], "Input should be a valid list or string",
                                          row["ground_truth"]))
    # The task without its tool schemas: verification replays calls against the ground truth, and an
    # environment whose task offers no tools judges with its own (what /verify has always done).
    rcp = {k: v for k, v in row["responses_create_params"].items() if k != "tools"}
    try:
        return Task.from_row({**task_row(row), "responses_create_params": rcp}), RolloutRow(row).calls()
    except (TaskFormatError, ToolCallParseError) as exc:
        raise BadRequest(detail(str(exc), 422)) from None


def task_from_row(row: dict[str, Any]) -> Task:
    """Task.from_row, with 422 for a row it refuses."""
    check_depth(row)
    try:
        return Task.from_row(row)
    except TaskFormatError as exc:
        raise BadRequest(detail(str(exc), 422)) from None


def scored_zero(row: dict[str, Any], kind: str, reason: str) -> dict[str, Any]:
    """A verify answer with reward 0 for a rollout the server would not replay (NeMo Gym's agent
    survives a scored answer; a 4xx or 5xx from /verify aborts its whole collection)."""
    out = verify_answer(row, 0.0)
    out.update(failure_kind=f"officegym:{kind}", failure_reason=reason)
    return out


def oversized_answer(limit: int) -> dict[str, Any]:
    """The scored answer to a /verify body over the limit: the body was not read, so the echo is a
    minimal request and Responses-API object (what NeMo Gym's agent validates the answer with)."""
    row = {"responses_create_params": {"input": []},
           "response": {"id": "officegym-body-too-large", "object": "response", "created_at": 0, "model": "",
                        "output": [], "parallel_tool_calls": False, "tool_choice": "auto", "tools": []}}
    return scored_zero(row, "request_too_large", f"request body larger than {limit} bytes: not read, scored 0 "
                                                 "(the server's --max-body-bytes)")
