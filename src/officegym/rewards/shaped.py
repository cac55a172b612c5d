"""The shaped reward: correctness first, then efficiency, tool-use quality and wasted steps.

This is the design doc's shaped reward with the fixes of sdg_roles_review.md section 3.9:

    correctness x max(0, 1 + w_eff * efficiency + w_q * quality - penalty)

    efficiency = 1                                   if steps == 0
               = min(1, optimal_steps / steps)       otherwise
    quality    = successful calls / attempted calls  (1 when nothing was attempted)
    penalty    = min(penalty_cap, step_penalty * number of unnecessary steps)

Fixes against the original (1 + 0.3 (1 - steps/MAX) [steps <= OPTIMAL] + 0.2 quality - 0.1 n):
- all shaping is gated by correctness: a wrong answer gets 0 whatever its process, so stopping
  early with a few successful calls no longer pays (fix 1);
- efficiency is min(1, OPTIMAL/steps): no cliff at OPTIMAL+1 and no dependence on MAX_STEPS (fix 2);
- "unnecessary step" is defined below and its total penalty is capped at 0.2 (fix 3);
- the quality weight defaults to 0.1, not the design's 0.2: successful/attempted is maximised by
  padding the trajectory with cheap reads that cannot fail, so it must stay small (fix 4, "<= 0.1");
- the largest total is 1 + w_eff + w_q (1.4 by default); `normalize=True` divides by it so that
  reports read in [0, 1] (GRPO does not need it: it normalises within the group) (fix 5);
- every component is reported, also when the answer is wrong (fix 6).

Correctness
-----------
`verdict.matched` gives 1 or 0, so the formula above is the gated one. A verifier that grades
(the role environments: `verdict.details["graded"]` is true and `verdict.reward` is a score in
[0, 1], e.g. the ratio to the optimum) gives that score instead: the shaping scales with it, so a
better answer always beats a worse one made the same way, a feasible but suboptimal answer lands
between the oracle and 0, and an answer graded 0 (wrong claims, infeasible) still gets 0.

Steps: what is counted
----------------------
Steps are **tool calls**, not model turns. The ground truth is a list of calls, so calls are the unit
it can be compared with; counting turns would reward packing many calls into one turn and would
depend on whether the backend allows parallel calls.

`optimal_steps` is `task.metadata["optimal_steps"]` when a generator recorded its minimal tool plan
there (a count of all calls, reads included), else `len(task.ground_truth)`. The workplace ground
truth holds only the *write* calls, while a real solution also needs reads (find the e-mail id
before replying) that no ground truth lists. So `steps` counts the same kind of call as the optimum:

- "writes": the number of write calls the model attempted (failed ones included); reads are free
  here and are policed instead by the unused-read rule below and by the quality ratio;
- "calls": every tool call the model attempted;
- "auto" (default): "writes" when the write tools are known and every ground-truth call is a write
  (the workplace case, and vacuously an empty ground truth) and no `optimal_steps` is recorded;
  otherwise "calls".

A task whose ground truth is empty (nothing should change) has optimal = 0: its efficiency is 1
if no counted call was made (no write in "writes" mode, no call at all in "calls" mode) and 0
otherwise, so a correct "look, find nothing to do, stop" keeps the full bonus.

Unnecessary steps
-----------------
Each attempted call is classified at most once, by the first rule that applies, in this order:

1. failed: an invalid call as rewards/calls.py defines it (status rejected, error or invalid) and
   every malformed call fragment of a turn (`Turn.invalid`). The statuses are what the model saw; `verdict.invalid_calls` is not
   used because it indexes the verifier's replay, which need not line up with the trajectory.
2. duplicate: the same tool and the same arguments (compared as canonical JSON) as an earlier
   *successful* call. Retrying a call that failed is not a duplicate (the failure already counted).
3. reverted (needs the write tools): a successful write whose effect a later write undoes:
   - an update (a write whose arguments hold a value key, `new_value` by default) of the same
     target -- same tool, same other arguments, e.g. (tool, id, field) -- that a later successful
     update overwrites with a different value;
   - a create whose output is a new id (a single token: no whitespace) that a later successful
     write named like a delete (`delete_words`) removes: the create, the delete, and any write in
     between that names the id all count, since none of them changes the final state.
4. unused read (needs the write tools): a successful non-write call whose output carries values
   (the leaves of its JSON output, dict keys excluded, minus values echoing its own arguments; a bare
   message such as "No customers found." carries none) none of which appears in the arguments of
   a call in a *later* turn or in the text of a later turn (the final answer). Calls of the same
   turn were written before the output existed, so they cannot use it. Matching is
   case-insensitive; a value of at least `min_atom_len` characters matches as a substring, a
   shorter one only as a whole word. Reads whose output carries no values are never flagged: a
   negative result ("nothing found") is used by not acting, which no taint can see. Nor are
   planned reads: a read that the ground truth itself lists (same tool, same arguments), as the
   role environments list the lookups their answer needs. Their outputs are often used by being
   read (a budget the answer must stay under), which no taint can see either. The workplace
   ground truth lists only writes, so there this exemption never applies.

"Calls beyond the minimal plan" are deliberately not a fifth rule: efficiency already charges for
them, and counting them here as well would charge twice. Without the write tools, rules 3 and 4
are off (reads cannot be told from writes) and steps are counted in "calls" mode.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory
from officegym.core.types import ToolCall, Verdict
from officegym.rewards.base import RewardResult, WriteTools, write_predicate
from officegym.rewards.calls import is_invalid_status, trajectory_calls

STEP_MODES = ("auto", "writes", "calls")
REASONS = ("failed", "duplicate", "reverted", "unused_read")


@dataclass(frozen=True)
class ShapedConfig:
    """Weights and definitions of the shaped reward (see the module docstring)."""

    efficiency_weight: float = 0.3
    quality_weight: float = 0.1  # the design says 0.2; section 3.9 fix 4 asks for <= 0.1
    step_penalty: float = 0.1
    penalty_cap: float = 0.2
    normalize: bool = False  # divide by the maximum (1 + efficiency_weight + quality_weight)
    steps: str = "auto"  # auto | writes | calls: which calls count as steps
    value_keys: tuple[str, ...] = ("new_value",)  # argument keys that carry an update's new value
    delete_words: tuple[str, ...] = ("delete", "remove")  # a write so named undoes a create
    min_atom_len: int = 3  # shorter output values match later text only as whole words

    def __post_init__(self) -> None:
        for name in ("efficiency_weight", "quality_weight", "step_penalty", "penalty_cap"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.steps not in STEP_MODES:
            raise ValueError(f"steps must be one of {', '.join(STEP_MODES)}, got {self.steps!r}")
        # YAML gives lists; keep the config hashable and comparable.
        object.__setattr__(self, "value_keys", tuple(self.value_keys))
        object.__setattr__(self, "delete_words", tuple(self.delete_words))

    @property
    def max_total(self) -> float:
        """The largest unnormalised total: correct, fully efficient, no failures, no waste."""
        return 1.0 + self.efficiency_weight + self.quality_weight


@dataclass(frozen=True, slots=True)
class UnnecessaryStep:
    """One wasted step: `index` into `trajectory.calls` (None for a malformed fragment)."""

    index: int | None
    turn: int
    name: str
    reason: str  # one of REASONS


class ShapedReward:
    """Correctness-gated shaped reward; `writes` says which tools change state (names or predicate)."""

    name = "shaped"

    def __init__(self, config: ShapedConfig | None = None, writes: WriteTools = None, **options: Any):
        if config is not None and options:
            raise TypeError("pass either a ShapedConfig or keyword options, not both")
        self.config = config if config is not None else ShapedConfig(**options)
        self.is_write = write_predicate(writes)
        if self.config.steps == "writes" and self.is_write is None:
            raise ValueError('steps="writes" needs the write tools (writes=...)')

    @property
    def max_total(self) -> float:
        return 1.0 if self.config.normalize else self.config.max_total

    def count_steps(self, task: Task, trajectory: Trajectory) -> tuple[int, int]:
        """(optimal_steps, steps), counted over the same kind of calls (see the module docstring)."""
        executions = _executions(trajectory)
        recorded = task.metadata.get("optimal_steps")
        if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 0:
            return recorded, len(executions)
        mode = self.config.steps
        if mode == "auto":
            is_write = self.is_write
            all_writes = is_write is not None and all(is_write(c.name) for c in task.ground_truth)
            mode = "writes" if all_writes else "calls"
        if mode == "writes":
            assert self.is_write is not None
            return len(task.ground_truth), sum(1 for e in executions if self.is_write(e.call.name))
        return len(task.ground_truth), len(executions)

    def __call__(self, task: Task, trajectory: Trajectory, verdict: Verdict) -> RewardResult:
        c = self.config
        correctness = graded_correctness(verdict)
        optimal, steps = self.count_steps(task, trajectory)
        efficiency = 1.0 if steps == 0 else min(1.0, optimal / steps)

        invalid, attempted = trajectory_calls(trajectory)
        quality = 1.0 if attempted == 0 else (attempted - invalid) / attempted

        wasted = find_unnecessary_steps(trajectory, self.is_write, c, planned_reads(task, self.is_write))
        penalty = min(c.penalty_cap, c.step_penalty * len(wasted))

        # No shaping for a wrong answer (it would pay for stopping early); a graded one scales it.
        total = correctness * max(0.0, 1.0 + c.efficiency_weight * efficiency + c.quality_weight * quality - penalty)
        if c.normalize:
            total /= c.max_total

        by_reason = {r: 0 for r in REASONS}
        for w in wasted:
            by_reason[w.reason] += 1
        components = {
            "correctness": correctness,
            "efficiency": efficiency,
            "quality": quality,
            "penalty": penalty,
            "unnecessary_steps": float(len(wasted)),
            "failed_calls": float(by_reason["failed"]),
            "duplicate_calls": float(by_reason["duplicate"]),
            "reverted_writes": float(by_reason["reverted"]),
            "unused_reads": float(by_reason["unused_read"]),
            "steps": float(steps),
            "optimal_steps": float(optimal),
        }
        return RewardResult(total, components)

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in asdict(self.config).items())
        return f"ShapedReward({options}, writes={'known' if self.is_write else None})"


def graded_correctness(verdict: Verdict) -> float:
    """1/0 from `matched`, or the verifier's own score in [0, 1] when it grades (see the docstring)."""
    details = verdict.details if isinstance(verdict.details, dict) else {}
    if details.get("graded") is True:
        score = verdict.reward
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            return 0.0
        return max(0.0, min(1.0, float(score)))
    return 1.0 if verdict.matched else 0.0


def planned_reads(task: Task, is_write: Callable[[str], bool] | None) -> frozenset[tuple[str, str]]:
    """(tool, canonical arguments) of the ground truth's non-write calls: the reads a plan needs."""
    if is_write is None:
        return frozenset()
    return frozenset((c.name, _canonical_arguments(c)) for c in task.ground_truth if not is_write(c.name))


def find_unnecessary_steps(
    trajectory: Trajectory,
    is_write: Callable[[str], bool] | None = None,
    config: ShapedConfig | None = None,
    planned: Collection[tuple[str, str]] = (),
) -> list[UnnecessaryStep]:
    """The wasted steps of a trajectory, each with its reason, in call order (fragments last).
    `planned` holds (tool, canonical arguments) of reads never flagged as unused (planned_reads)."""
    config = config or ShapedConfig()
    flat = [(t, e) for t, turn in enumerate(trajectory.turns) for e in turn.executions]
    reasons: dict[int, str] = {}

    for i, (_, e) in enumerate(flat):
        if is_invalid_status(e.status):
            reasons[i] = "failed"

    seen: set[tuple[str, str]] = set()
    for i, (_, e) in enumerate(flat):
        key = (e.call.name, _canonical_arguments(e.call))
        if key in seen:
            reasons.setdefault(i, "duplicate")
        if e.status == "ok":
            seen.add(key)

    if is_write is not None:
        for i in sorted(_reverted_writes(flat, is_write, config)):
            reasons.setdefault(i, "reverted")
        for i in _unused_reads(flat, trajectory, is_write, config):
            if (flat[i][1].call.name, _canonical_arguments(flat[i][1].call)) not in planned:
                reasons.setdefault(i, "unused_read")

    out = [UnnecessaryStep(i, flat[i][0], flat[i][1].call.name, reasons[i]) for i in sorted(reasons)]
    for t, turn in enumerate(trajectory.turns):
        out.extend(UnnecessaryStep(None, t, "", "failed") for _ in turn.invalid)
    return out


def _executions(trajectory: Trajectory) -> list[ToolExecution]:
    return [e for turn in trajectory.turns for e in turn.executions]


def _canonical_arguments(call: ToolCall) -> str:
    if call.parse_error is not None:
        return "raw:" + (call.raw_arguments or "")
    return json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


def _reverted_writes(
    flat: list[tuple[int, ToolExecution]], is_write: Callable[[str], bool], config: ShapedConfig
) -> set[int]:
    """Successful writes whose effect a later write undoes (overwritten updates, create+delete)."""
    reverted: set[int] = set()
    last_update: dict[tuple[str, str], tuple[int, str]] = {}  # target -> (index, canonical value)
    created: dict[str, list[int]] = {}  # new id -> indices of the create and the writes naming it
    for i, (_, e) in enumerate(flat):
        call = e.call
        if e.status != "ok" or not is_write(call.name):
            continue
        args = call.arguments if call.parse_error is None and isinstance(call.arguments, dict) else None
        if args is not None and any(k in args for k in config.value_keys):
            target = {k: v for k, v in args.items() if k not in config.value_keys}
            value = {k: v for k, v in args.items() if k in config.value_keys}
            key = (call.name, json.dumps(target, sort_keys=True, default=str))
            canonical_value = json.dumps(value, sort_keys=True, default=str)
            previous = last_update.get(key)
            if previous is not None and previous[1] != canonical_value:
                reverted.add(previous[0])
            last_update[key] = (i, canonical_value)

        leaves = set(_argument_leaves(call))
        is_delete = any(word in call.name.lower() for word in config.delete_words)
        for new_id in [n for n in created if n in leaves]:
            created[new_id].append(i)
            if is_delete:
                reverted.update(created.pop(new_id))
        new_id = _created_id(e.output)
        if new_id is not None and not is_delete:
            created[new_id] = [i]
    return reverted


def _unused_reads(
    flat: list[tuple[int, ToolExecution]],
    trajectory: Trajectory,
    is_write: Callable[[str], bool],
    config: ShapedConfig,
) -> list[int]:
    """Successful reads none of whose output values reach a later turn's calls or text."""
    turns = trajectory.turns
    unused = []
    for i, (t, e) in enumerate(flat):
        if e.status != "ok" or is_write(e.call.name):
            continue
        atoms = _output_atoms(e.output) - set(_argument_leaves(e.call))
        if not atoms:
            continue
        later_leaves = [leaf for t2, e2 in flat if t2 > t for leaf in _argument_leaves(e2.call)]
        later_text = [s.lower() for turn in turns[t + 1 :] for s in (turn.text, *turn.invalid) if s]
        used = any(
            any(leaf == atom or _mentions(leaf, atom, config.min_atom_len) for leaf in later_leaves)
            or any(_mentions(text, atom, config.min_atom_len) for text in later_text)
            for atom in atoms
        )
        if not used:
            unused.append(i)
    return unused


def _mentions(haystack: str, atom: str, min_len: int) -> bool:
    if len(atom) >= min_len:
        return atom in haystack
    return re.search(rf"(?<!\w){re.escape(atom)}(?!\w)", haystack) is not None


def _decode_output(output: str) -> Any:
    """The tool's value: JSON decoded, with NeMo Gym's `{"output": value}` envelope removed."""
    try:
        value = json.loads(output)
    except (ValueError, TypeError, RecursionError):
        return output
    if isinstance(value, dict) and set(value) == {"output"}:
        return value["output"]
    return value


def _created_id(output: str) -> str | None:
    value = _decode_output(output)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip() and not any(ch.isspace() for ch in value):
        return value.lower()
    return None


def _output_atoms(output: str) -> set[str]:
    """The values a read returned (lower-cased leaves); a bare message carries none."""
    value = _decode_output(output)
    if isinstance(value, str) and any(ch.isspace() for ch in value.strip()):
        return set()
    return {leaf for leaf in _leaves(value) if leaf}


def _argument_leaves(call: ToolCall) -> list[str]:
    if call.parse_error is not None:
        return [(call.raw_arguments or "").lower()]
    return list(_leaves(call.arguments))


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, float):
        if math.isfinite(value):
            yield str(int(value)) if value.is_integer() else repr(value)
    elif isinstance(value, int | str):
        yield str(value).strip().lower()
