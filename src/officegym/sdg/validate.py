"""The validation every generated task passes before it is kept, cheapest check first.

1. schema: every call names an offered tool, with known argument names, the required ones, and
   the declared JSON types;
2. replay: the ground truth runs in a fresh sandbox with no tool error, and every id argument
   appeared in the output of an earlier call (ids are read, never guessed);
3. outcome: a task with writes changes the state; a task without writes leaves it untouched, its
   condition (re-decided through the tools alone) is false, and the write it must not do would
   change the state (so doing it is caught);
4. determinism: replaying again gives the same state.

The sandbox is environment-specific (`Sandbox`); the checks are not.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from officegym.core.types import ToolCall, ToolSpec

# Rejection reasons, in the order the checks run.
REASONS = (
    "template_error", "unknown_tool", "bad_arguments", "tool_error", "guessed_id", "no_state_change",
    "do_nothing_changes_state", "trigger_mismatch", "unverifiable_do_nothing", "nondeterministic",
    "duplicate_query", "duplicate_ground_truth",
)

_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list}


class Sandbox(Protocol):
    """What validation needs from an environment."""

    def specs(self) -> dict[str, ToolSpec]: ...

    def new(self) -> Any: ...

    def run(self, state: Any, call: ToolCall) -> tuple[str, str | None]:
        """(output text the model would see, error message or None)."""
        ...

    def fingerprint(self, state: Any) -> Hashable:
        """The state exactly (for the determinism check)."""
        ...

    def changed(self, state: Any) -> bool:
        """Whether the verifier would see a state different from the starting one."""
        ...

    def is_write(self, name: str) -> bool: ...

    def probe(self) -> Callable[[str, dict[str, Any]], Any]:
        """A function that runs a read tool on a fresh state and returns its parsed value."""
        ...


@dataclass
class Candidate:
    """A proposed task: the query, its ground-truth calls and what validation must know."""

    template: str
    category: str
    domains: tuple[str, ...]
    query: str
    calls: list[ToolCall]
    world_id: str = ""
    phrasing: int = 0
    conditions: int = 0
    date_steps: int = 0
    trigger: Callable[[Any], bool] | None = None
    trigger_expected: bool | None = None
    tempting: list[ToolCall] = field(default_factory=list)
    slots: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    reply: str | None = None  # the right answer is this text and no call (a request no tool serves)


@dataclass
class Rejection:
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"


def check_schema(calls: Sequence[ToolCall], specs: dict[str, ToolSpec]) -> Rejection | None:
    for k, c in enumerate(calls):
        spec = specs.get(c.name)
        if spec is None:
            return Rejection("unknown_tool", f"call {k}: no tool named {c.name!r}")
        if c.parse_error is not None or not isinstance(c.arguments, dict):
            return Rejection("bad_arguments", f"call {k} ({c.name}): arguments are not a JSON object")
        props = spec.parameters.get("properties", {})
        unknown = sorted(set(c.arguments) - set(props))
        if unknown:
            return Rejection("bad_arguments", f"call {k} ({c.name}): unknown argument(s) {', '.join(unknown)}")
        missing = [p for p in spec.parameters.get("required", []) if p not in c.arguments]
        if missing:
            return Rejection("bad_arguments", f"call {k} ({c.name}): missing required {', '.join(missing)}")
        for name, value in c.arguments.items():
            want = _JSON_TYPES.get(props[name].get("type", ""))
            if want is not None and (not isinstance(value, want) or (want is int and isinstance(value, bool))):
                return Rejection("bad_arguments", f"call {k} ({c.name}): {name} should be {props[name]['type']}, got {value!r}")
    return None


def is_id_argument(name: str) -> bool:
    return name.endswith("_id")


def replay(sandbox: Sandbox, calls: Sequence[ToolCall], check_ids: bool = True) -> tuple[Any, Rejection | None]:
    """Run the calls in a fresh state; reject on the first tool error or (with `check_ids`) on an
    id argument that no earlier output contained."""
    state = sandbox.new()
    seen = ""
    for k, c in enumerate(calls):
        for name, value in c.arguments.items():
            if check_ids and is_id_argument(name) and f'"{value}"' not in seen:
                return state, Rejection("guessed_id", f"call {k} ({c.name}): {name}={value!r} was not returned by any earlier call")
        output, error = sandbox.run(state, c)
        if error is not None:
            return state, Rejection("tool_error", f"call {k} ({c.name}): {error}")
        seen += output
    return state, None


def validate(candidate: Candidate, sandbox: Sandbox) -> Rejection | None:
    """None when the candidate passes every check, else the first rejection."""
    if candidate.reply is not None:
        # nothing to replay: any write the agent makes changes the state, and the verifier sees it
        if candidate.calls or not candidate.reply.strip():
            return Rejection("template_error", "a task answered in words has no calls and a non-empty reply")
        return None
    specs = sandbox.specs()
    rejection = check_schema(candidate.calls, specs)
    if rejection:
        return rejection
    state, rejection = replay(sandbox, candidate.calls)
    if rejection:
        return rejection
    writes = [c for c in candidate.calls if sandbox.is_write(c.name)]
    changed = sandbox.changed(state)
    if writes and not changed:
        return Rejection("no_state_change", "the ground truth writes but leaves every table as it was")
    if not writes and changed:
        return Rejection("do_nothing_changes_state", "a ground truth with no writes changed the state")
    if candidate.trigger is not None:
        try:
            fired = bool(candidate.trigger(sandbox.probe()))
        except Exception as exc:  # a trigger that cannot read its answer proves nothing
            return Rejection("trigger_mismatch", f"the condition could not be decided from the tools: {exc!r}")
        if fired != candidate.trigger_expected:
            return Rejection("trigger_mismatch", f"the tools say the condition is {fired}, the template computed {candidate.trigger_expected}")
    if not writes:
        if candidate.trigger is None or candidate.trigger_expected is not False:
            return Rejection("unverifiable_do_nothing", "a task without writes needs a condition that is provably false")
        if not candidate.tempting:
            return Rejection("unverifiable_do_nothing", "no write to tell acting from doing nothing")
        tempted, rejection = replay(sandbox, [*candidate.calls, *candidate.tempting], check_ids=False)
        if rejection or not sandbox.changed(tempted):
            return Rejection("unverifiable_do_nothing", "performing the tempting write would not be caught")
    again, _ = replay(sandbox, candidate.calls)
    if sandbox.fingerprint(again) != sandbox.fingerprint(state):
        return Rejection("nondeterministic", "replaying the ground truth twice gave different states")
    return None
