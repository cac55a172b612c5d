"""Replays for review: run calls in a fresh session, fingerprint the end state, check corrections."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.session import BaseSession
from officegym.core.task import Task
from officegym.core.toolcalls import ToolCallParseError, parse_tool_call
from officegym.core.trajectory import ToolExecution
from officegym.core.types import ToolCall, Verdict


def replay(env: BaseEnvironment, task: Task | None, calls: Sequence[ToolCall]) -> tuple[BaseSession, list[ToolExecution]]:
    """Run calls in order in a fresh session; returns the session and every call's result."""
    session = env.session(task)
    results = []
    for call in calls:
        r = session.execute(call.name, call.arguments if call.parse_error is None else call.raw_arguments)
        results.append(ToolExecution(call, r.text, r.status))
    return session, results


def with_ground_truth(task: Task, calls: Sequence[ToolCall]) -> Task:
    """A copy of `task` whose ground truth is `calls`."""
    new = copy.deepcopy(task)
    new.ground_truth = [ToolCall(c.name, copy.deepcopy(c.arguments), c.raw_arguments, None, c.parse_error) for c in calls]
    new.ground_truth_raw = None
    return new


def oracle_calls(task: Task) -> list[ToolCall]:
    """The task's oracle plan: `metadata.oracle_calls` when a generator recorded one (it may hold
    the reads a solution needs), else the ground truth."""
    plan = task.metadata.get("oracle_calls")
    if isinstance(plan, list):
        try:
            return [parse_tool_call(c) for c in plan]
        except ToolCallParseError:
            pass
    return list(task.ground_truth)


def state_fingerprint(env: BaseEnvironment, task: Task | None, calls: Sequence[ToolCall], writes: Any = None) -> str:
    """A strict fingerprint of the end state the calls leave: the environment's own
    (`BaseEnvironment.state_fingerprint`; the workplace's tables), else the multiset of successful
    write calls (or of all successful calls when the write tools are not known).
    """
    session, results = replay(env, task, calls)
    own = env.state_fingerprint(session)
    if own is not None:
        return own
    is_write = writes if callable(writes) else (writes.__contains__ if writes is not None else None)
    done = sorted(
        json.dumps([r.call.name, r.call.arguments], sort_keys=True, default=str)
        for r in results
        if r.ok and (is_write is None or is_write(r.call.name))
    )
    return json.dumps(done)


def fingerprint_diff(a: str, b: str, limit: int = 4) -> list[str]:
    """What differs between two end-state fingerprints, in a few readable lines."""
    try:
        sa, sb = json.loads(a), json.loads(b)
    except ValueError:
        return []
    if not (isinstance(sa, dict) and isinstance(sb, dict)):
        return [f"successful calls {sa} vs {sb}"][:limit]
    out = []
    for table in sorted(set(sa) | set(sb)):
        ta, tb = sa.get(table, {}), sb.get(table, {})
        base_a = {o: cells for o, cells in ta.get("changed", [])}
        base_b = {o: cells for o, cells in tb.get("changed", [])}
        for origin in sorted(set(base_a) | set(base_b)):
            ra, rb = base_a.get(origin), base_b.get(origin)
            if ra != rb:
                if ra is None or rb is None:
                    out.append(f"{table}: base row {origin} changed in only one state")
                else:
                    cols = [f"{x!r} vs {y!r}" for x, y in zip(ra, rb) if x != y]
                    out.append(f"{table}: base row {origin}: " + ", ".join(cols))
        del_a, del_b = set(ta.get("deleted", [])), set(tb.get("deleted", []))
        if del_a != del_b:
            out.append(f"{table}: deleted base rows {sorted(del_a)} vs {sorted(del_b)}")
        new_a = [json.dumps(r) for r in ta.get("new", [])]
        new_b = [json.dumps(r) for r in tb.get("new", [])]
        only_a = [r for r in new_a if r not in new_b]
        only_b = [r for r in new_b if r not in new_a]
        if only_a or only_b:
            out.append(f"{table}: new rows {', '.join(only_a) or '-'} vs {', '.join(only_b) or '-'}")
    return out[:limit]


class CorrectionError(ValueError):
    """A correction that cannot be saved; the message says why (the tool's error for a bad call)."""


@dataclass
class CorrectionCheck:
    """A correction that replays cleanly and verifies: what it did, and how the reviewed rollout
    scores against it."""

    calls: list[ToolCall]
    results: list[ToolExecution]
    self_verdict: Verdict
    rescored: Verdict | None = None
    warnings: list[str] = field(default_factory=list)
    turns: list[int] | None = None  # calls per turn when replayed turn by turn (a role's reads, then its answer)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "calls": [c.to_nemo() for c in self.calls],
            "outputs": [{"name": r.call.name, "status": r.status, "output": r.output} for r in self.results],
            "self_verdict": self.self_verdict.to_dict(),
            "rescored": self.rescored.to_dict() if self.rescored is not None else None,
            "warnings": self.warnings,
        }
        if self.turns is not None:
            out["turns"] = list(self.turns)
        return out


# Tool arguments are flat; the replay and the verifier copy and compare values recursively, so
# deeper nesting only serves to exhaust the stack.
MAX_CALLS_DEPTH = 32


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in a JSON value (without recursing)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            if d <= MAX_CALLS_DEPTH:
                stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


def parse_calls_text(text: str) -> list[ToolCall]:
    """Ground-truth calls typed by a reviewer: a JSON list of `{"name", "arguments"}` objects
    (arguments as an object or a JSON string) or WorkBench call strings."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorrectionError(f"the calls are not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # a number over int()'s digit limit, nesting past the stack
        raise CorrectionError(f"the calls are not valid JSON: {str(exc)[:120]}") from None
    if _depth(value) > MAX_CALLS_DEPTH:
        raise CorrectionError(f"the calls are nested deeper than {MAX_CALLS_DEPTH} levels")
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise CorrectionError("the calls must be a JSON list of {\"name\": ..., \"arguments\": {...}} objects")
    calls = []
    for i, item in enumerate(value, 1):
        if isinstance(item, dict) and not isinstance(item.get("name"), str):
            raise CorrectionError(f"call {i} has no tool name")
        try:
            call = parse_tool_call(item)
        except ToolCallParseError as exc:
            raise CorrectionError(f"call {i}: {exc}") from None
        if call.parse_error:
            raise CorrectionError(f"call {i} ({call.name or '?'}): {call.parse_error}")
        if not isinstance(call.arguments, dict):
            raise CorrectionError(f"call {i} ({call.name}): arguments must be a JSON object")
        # Keep arguments as decoded values; the JSON text is rebuilt when written out.
        calls.append(ToolCall(call.name, call.arguments))
    return calls


def replay_cleanly(env: BaseEnvironment, task: Task, calls: Sequence[ToolCall]) -> list[ToolExecution]:
    """Replay a correction's calls; CorrectionError (with the tool's own error text) when one fails."""
    _, results = replay(env, task, calls)
    for i, r in enumerate(results, 1):
        if not r.ok:
            raise CorrectionError(f"call {i} ({r.call.name}) failed on replay ({r.status}): {r.output}")
    return results


def check_correction(
    env: BaseEnvironment, task: Task, calls: Sequence[ToolCall], rollout_calls: Sequence[ToolCall] = (), mode: str | None = None
) -> CorrectionCheck:
    """Replay corrected ground-truth calls and re-verify them before they are saved.

    Refused (CorrectionError, with the tool's own error text) when a call fails on replay or when
    the calls do not verify against themselves. Otherwise returns the replay and the reviewed
    rollout's verdict against the corrected truth.
    """
    results = replay_cleanly(env, task, calls)
    corrected = with_ground_truth(task, calls)
    self_verdict = env.verify(corrected, list(calls), mode)
    if not self_verdict.matched:
        raise CorrectionError("the corrected calls do not verify against themselves: the replay is not deterministic")
    warnings = []
    if self_verdict.modes_disagree:
        warnings.append(f"the {self_verdict.other_mode} verification mode disagrees with {self_verdict.mode}")
    rescored = env.verify(corrected, list(rollout_calls), mode)
    return CorrectionCheck(list(calls), results, self_verdict, rescored, warnings)
