"""Detours: ground-truth replays with one wrong read in them, and the right call after it.

A model that reads with the wrong tool (a customer search where the request is about project tasks)
sees a result that does not answer the request; trained only on clean replays, it has never seen
that state and answers "Done." without the write. A detour puts one such read, a read tool the task
offers other than the ground truth's next tool, with arguments carried over from that call, before a
ground-truth call; the environment answers it for real. The detour turn carries no loss (the model
is not taught to make it); the turns after it teach what to do next. Writes are never detours, so
the replayed end state, and the verifier's verdict, stay the ground truth's.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Collection, Sequence
from typing import Any

from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolSpec

DETOUR_ID = "detour"


def plan_detour(task: Task, tools: Sequence[ToolSpec], write_tools: Collection[str] | None, share: float,
                seed: int = 0) -> tuple[int, ToolCall] | None:
    """For a `share` of tasks (drawn from the task id and `seed`): the ground-truth index the detour
    goes before and the detour call; None when the task gets none or none can be made (no ground
    truth, writes unknown, no other read tool whose required arguments the call can fill)."""
    truth = list(task.ground_truth)
    if share <= 0 or not truth or write_tools is None:
        return None
    rng = random.Random(zlib.crc32(f"{seed}:{task.id}".encode()))
    if rng.random() >= share:
        return None
    at = rng.randrange(len(truth))
    wanted = truth[at]
    options = []
    for spec in tools:
        if spec.name in write_tools or spec.name == wanted.name:
            continue
        arguments, shared = carried_arguments(spec, wanted.arguments if isinstance(wanted.arguments, dict) else {})
        if arguments is not None:
            options += [(spec.name, arguments)] * (3 if shared else 1)  # the confusable ones: same argument names
    if not options:
        return None
    name, arguments = rng.choice(options)
    return at, ToolCall(name, arguments)


def carried_arguments(spec: ToolSpec, given: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """Arguments for `spec` from another call's: values under the same names; a required string
    parameter with none gets the call's first string value. (None, False) when a required parameter
    stays empty; the bool says whether any argument name was shared."""
    props = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or [])
    out = {k: v for k, v in given.items() if k in props}
    shared = bool(out)
    texts = [v for v in given.values() if isinstance(v, str) and v]
    for name in sorted(required - set(out)):
        if (props.get(name) or {}).get("type") == "string" and texts:
            out[name] = texts[0]
        else:
            return None, False
    if not out and not texts:
        return None, False
    if not out:  # nothing required: the first string parameter carries the call's text
        first = next((k for k, p in props.items() if (p or {}).get("type") == "string"), None)
        if first is None:
            return None, False
        out[first] = texts[0]
    return out, shared


def is_detour_turn(message: dict[str, Any]) -> bool:
    """An assistant message of a replay whose calls are all detours (it is not trained on)."""
    calls = message.get("tool_calls") or []
    return bool(calls) and all(str(c.get("id", "")).startswith(DETOUR_ID) for c in calls)
