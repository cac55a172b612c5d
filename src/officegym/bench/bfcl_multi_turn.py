"""BFCL's multi-turn categories as episodes: the user turns, the policy's calls executed against
bfcl-eval's own backends, and bfcl-eval's multi-turn checker on the calls each turn made.

The episode follows bfcl-eval's own inference loop (`BaseHandler.inference_multi_turn_FC`):

* The entry's backends (`involved_classes`, loaded with its `initial_config`) are made once, through
  bfcl-eval's executor, and live for the whole episode.
* Each user turn appends its messages and asks the policy for steps until one holds no call. A step's
  calls are executed in order and each result goes back as a tool message. A step whose calls do
  not decode (arguments that are not a JSON object, a malformed call fragment) ends the turn
  unexecuted, as a decoding failure does in BFCL. After BFCL's MAXIMUM_STEP_LIMIT (20) executed
  steps in one turn the episode is force-terminated, the whole entry failing.
* miss_func: functions listed in the entry's `missed_function` for a turn are added to the offered
  tools before that turn, whose (empty) user message becomes BFCL's "I have updated some more
  functions you can choose from. What about now?". The policy is then asked without `previous`,
  so a backend that extends token ids renders the conversation anew, the new tools included.
* The checker gets, per turn, the call strings of each step that executed calls (BFCL drops steps
  that made none), re-executes them and the ground truth in fresh backends and compares the
  backends' states and the calls' results after every turn.

Calls are never evaluated as model text. bfcl-eval's executor runs call strings with `eval`, so
`render_call` builds each string from a decoded call only: the function must be one the entry
documents (bfcl-eval's executor runs any method of the entry's classes, so a function miss_func
holds back runs if called early, as in BFCL), every argument name a Python identifier, every value a JSON value
(dicts with string keys, lists, strings, finite numbers, booleans, null), written with `repr()`;
the finished string is parsed back with `ast` and must be a plain call of literals. A call that
fails these rules is answered with an error and not executed. Two arguments whose cost grows
without bound with their value (MathAPI's power exponent and its precisions) are capped.
"""

from __future__ import annotations

import ast
import keyword
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from officegym.agent.messages import assistant_message
from officegym.bench import bfcl_lib
from officegym.bench.bfcl_data import BfclCase
from officegym.bench.bfcl_score import backend_error_verdict, call_row
from officegym.core.policy import Completion, PolicyRequest
from officegym.core.types import ToolCall, ToolSpec

# (function, argument) -> the largest magnitude executed. BFCL's data uses precisions up to 10 and
# exponents below 10; a model asking for 10**9 digits would stall the run.
COSTLY_ARGUMENTS = {("power", "exponent"): 10_000, ("square_root", "precision"): 10_000,
                    ("logarithm", "precision"): 10_000}
RESULT_CHARS_KEPT = 400  # per tool result in results.jsonl; the model sees the whole text


class CallRefused(ValueError):
    """A decoded call that is not executed (unknown function, argument that is not a JSON value...)."""


def _check_value(value: Any, where: str) -> None:
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CallRefused(f"{where} is not a finite number")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CallRefused(f"{where} has a key that is not a string")
            _check_value(item, f"{where}[{key!r}]")
        return
    raise CallRefused(f"{where} is a {type(value).__name__}, not a JSON value")


def render_call(name: str, arguments: Any, offered: set[str]) -> str:
    """The call string bfcl-eval's executor runs, built only from a validated, decoded call."""
    try:
        return _render(name, arguments, offered)
    except RecursionError:
        raise CallRefused(f"{name}: the arguments are nested too deeply") from None


def _render(name: str, arguments: Any, offered: set[str]) -> str:
    if name not in offered or not name.isidentifier():
        raise CallRefused(f"function {name!r} is not available")
    if not isinstance(arguments, dict):
        raise CallRefused(f"the arguments of {name} are not a JSON object")
    parts = []
    for key, value in arguments.items():
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            raise CallRefused(f"{name}: argument name {key!r} is not a Python identifier")
        _check_value(value, f"{name}: argument {key!r}")
        cap = COSTLY_ARGUMENTS.get((name, key))
        if cap is not None and isinstance(value, int | float) and abs(value) > cap:
            raise CallRefused(f"{name}: {key}={value!r} is over officegym's limit of {cap} for this argument")
        try:
            parts.append(f"{key}={value!r}")
        except ValueError as exc:  # an integer too long to write out
            raise CallRefused(f"{name}: argument {key!r}: {exc}") from None
    text = f"{name}({', '.join(parts)})"
    _assert_plain_call(text, name)
    return text


def _assert_plain_call(text: str, name: str) -> None:
    """Belt and braces: the string must read back as `name(k=<literal>, ...)`."""
    try:
        node = ast.parse(text, mode="eval").body
        ok = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
              and not node.args and all(k.arg is not None for k in node.keywords))
        if ok:
            for k in node.keywords:
                ast.literal_eval(k.value)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        ok = False
    if not ok:
        raise CallRefused(f"{name}: the call does not render as a plain call of literal values")


def _undecodable(completion: Completion) -> list[str]:
    """Why a step's calls do not decode (BFCL then ends the turn without executing them)."""
    reasons = []
    for i, call in enumerate(completion.tool_calls):
        if call.parse_error is not None:
            reasons.append(f"call {i + 1} ({call.name}): arguments are not valid JSON: {call.parse_error}")
        elif not isinstance(call.arguments, dict):
            reasons.append(f"call {i + 1} ({call.name}): arguments must be a JSON object, got "
                           f"{type(call.arguments).__name__}")
    reasons += [f"malformed tool call: {r}" for r in completion.invalid]
    return reasons


def _clip(text: str, limit: int = RESULT_CHARS_KEPT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} more characters]"


@dataclass
class Episode:
    """What one episode did: per turn, the call strings of each executing step (the checker's
    input), a compact transcript, and the cost."""

    decoded: list[list[list[str]]] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    forced_turn: int | None = None  # the turn that went past BFCL's step limit
    backend_error: str | None = None
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    last: Completion | None = None


def _fresh_id(call: ToolCall, turn: int, step: int, index: int, used: set[str]) -> ToolCall:
    if not call.call_id or call.call_id in used:
        call = ToolCall(call.name, call.arguments, call.raw_arguments, f"call_{turn}_{step}_{index}", call.parse_error,
                        dict(call.extra))
    used.add(call.call_id or "")
    return call


async def run_episode(case: BfclCase, submit: Callable[[PolicyRequest], Awaitable[Completion]]) -> Episode:
    """Drive one multi-turn entry with a policy (`submit` sends one request, as the agent loop's)."""
    spec = case.multi_turn
    assert spec is not None, f"{case.id} is not a multi-turn entry"
    limit = bfcl_lib.max_steps_per_turn()
    tools: list[ToolSpec] = list(case.tools)
    # Executable: every function the entry documents, the held-back ones included, as bfcl-eval's
    # executor knows every method of the entry's classes (miss_func_49's ground truth calls `tail` a
    # turn before it is shown). Shown: what BFCL shows at that point.
    executable = {f["name"] for f in case.functions} | {f["name"] for docs, _ in spec.added.values() for f in docs}
    messages: list[dict[str, Any]] = []
    episode = Episode()
    previous: Completion | None = None
    used_ids: set[str] = set()
    with bfcl_lib.Backends(spec.entry, case.category) as backends:
        for t, turn_messages in enumerate(spec.turns):
            shown = [dict(m) for m in turn_messages]
            if t in spec.added:
                tools = tools + spec.added[t][1]
                previous = None  # the tool list changed: let the backend render the conversation anew
                if not shown:
                    shown = [{"role": "user", "content": bfcl_lib.added_functions_prompt()}]
            messages.extend(shown)
            task = spec.turn_task(case, t, tools)
            turn_log: dict[str, Any] = {"user": [_clip(str(m.get("content", ""))) for m in shown], "steps": []}
            episode.transcript.append(turn_log)
            turn_decoded: list[list[str]] = []
            episode.decoded.append(turn_decoded)
            executed_steps = 0
            step = 0
            while True:
                request = PolicyRequest(messages=list(messages), tools=tools, task=task, turn=step, previous=previous)
                try:
                    completion = await submit(request)
                except Exception as exc:  # a continuous backend raising fails this entry, not the run
                    completion = Completion(finish_reason="error", error=f"{type(exc).__name__}: {exc}")
                previous = episode.last = completion
                episode.steps += 1
                episode.prompt_tokens += completion.prompt_tokens
                episode.completion_tokens += completion.completion_tokens
                if completion.error:
                    episode.backend_error = completion.error
                    return episode
                calls = [_fresh_id(c, t, step, i, used_ids) for i, c in enumerate(completion.tool_calls)]
                messages.append(assistant_message(completion.text, calls))
                step_log: dict[str, Any] = {"text": _clip(completion.text, 1000), "calls": [call_row(c) for c in calls]}
                turn_log["steps"].append(step_log)
                step += 1
                if not calls and not completion.invalid:
                    break  # the model answered: the turn is over
                reasons = _undecodable(completion)
                if reasons:
                    # BFCL: a response that does not decode ends the turn; nothing of it runs.
                    note = "Not executed: this turn's tool calls did not decode (" + "; ".join(reasons) + ")."
                    for call in calls:
                        messages.append({"role": "tool", "tool_call_id": call.call_id, "content": note})
                    step_log["undecodable"] = reasons
                    break
                outputs: list[str | None] = []
                strings: list[str] = []
                for call in calls:
                    name = case.names.original(call.name) or call.name
                    try:
                        strings.append(render_call(name, call.arguments, executable))
                        outputs.append(None)
                    except CallRefused as exc:
                        outputs.append(f"Error during execution: {exc}")
                results = iter(backends.execute(strings) if strings else [])
                outputs = [out if out is not None else next(results) for out in outputs]
                for call, out in zip(calls, outputs, strict=True):
                    messages.append({"role": "tool", "tool_call_id": call.call_id, "content": out})
                step_log["results"] = [_clip(str(o)) for o in outputs]
                if strings:
                    turn_decoded.append(strings)
                executed_steps += 1
                if executed_steps > limit:
                    episode.forced_turn = t
                    break
            if episode.forced_turn is not None:
                break
    return episode


def score_episode(case: BfclCase, episode: Episode) -> dict[str, Any]:
    """{valid, error, error_type, details}: bfcl-eval's verdict on the episode."""
    spec = case.multi_turn
    assert spec is not None
    truth = spec.ground_truth
    if len(episode.decoded) != len(truth):
        # bfcl-eval's eval runner: a result with fewer turns than the ground truth was force-terminated.
        return {"valid": False, "error_type": "multi_turn:force_terminated", "details": None,
                "error": [f"Model was force-terminated during inference phase: turn {episode.forced_turn} went past "
                          f"{bfcl_lib.max_steps_per_turn()} steps, so {len(episode.decoded)} of {len(truth)} turns "
                          "were run."]}
    try:
        result = bfcl_lib.multi_turn_check(episode.decoded, truth, spec.entry, case.category)
    except Exception as exc:  # the checker must not stop the run on odd model output
        where = exc.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        at = f" (at {where.tb_frame.f_code.co_name}, line {where.tb_lineno})" if where is not None else ""
        return {"valid": False, "error_type": "officegym:checker_exception", "details": None,
                "error": [f"bfcl-eval's multi-turn checker raised {type(exc).__name__}: {exc}{at}"]}
    if result.get("valid"):
        return {"valid": True, "error_type": None, "error": [], "details": None}
    return {"valid": False, "error_type": result.get("error_type"), "error": [str(result.get("error_message", ""))],
            "details": _details(result)}


def _details(result: dict[str, Any]) -> Any:
    """The checker's evidence, small enough for results.jsonl (states can be whole file systems)."""
    details = result.get("details")
    if not isinstance(details, dict):
        return None
    out: dict[str, Any] = {}
    for key, value in details.items():
        if key == "differences" and isinstance(value, dict):
            out[key] = {k: {side: _clip(repr(v), 600) for side, v in d.items()} if isinstance(d, dict) else _clip(repr(d))
                        for k, d in value.items()}
        elif key in ("missing_items", "model response decoded"):
            out[key] = [_clip(str(v)) for v in value] if isinstance(value, list) else _clip(str(value))
    return out or None


def episode_row(case: BfclCase, episode: Episode, seconds: float) -> dict[str, Any]:
    """The stored result of one multi-turn entry (the same keys as a single-turn row, plus turns)."""
    if episode.backend_error:
        verdict = backend_error_verdict(episode.backend_error, details=None)
    else:
        verdict = score_episode(case, episode)
    last = episode.last or Completion()
    first_user = " / ".join(episode.transcript[0]["user"]) if episode.transcript else ""
    return {
        "id": case.id,
        "category": case.category,
        "index": case.index,
        "valid": verdict["valid"],
        "error_type": verdict["error_type"],
        "error": verdict["error"],
        "details": verdict["details"],
        "decoded": episode.decoded,
        "question": _clip(first_user, 600),
        "turns": episode.transcript,
        "text": last.text,
        "calls": [call_row(c) for c in last.tool_calls],
        "invalid": list(last.invalid),
        "finish_reason": last.finish_reason,
        "steps": episode.steps,
        "prompt_tokens": episode.prompt_tokens,
        "completion_tokens": episode.completion_tokens,
        "seconds": round(seconds, 4),
        "backend_error": episode.backend_error,
    }


async def run_and_row(case: BfclCase, submit: Callable[[PolicyRequest], Awaitable[Completion]]) -> dict[str, Any]:
    start = time.perf_counter()
    episode = await run_episode(case, submit)
    return episode_row(case, episode, time.perf_counter() - start)
