"""The rollout row: one episode as NeMo Gym records it, and officegym's exchange format.

A rollout row is the task row it was played from (see `Task.to_row`) plus three keys:

    response    the Responses-API response: {"output": [items], "usage": {...}}; the items are
                the model's messages, its `function_call`s and their `function_call_output`s
    reward      the reward the verifier (or the trainer's reward function) gave, a number
    officegym   officegym's own record, absent from NeMo Gym's rows: task_id, sample_index, policy,
                reward_components, verdict, stop_reason, error, error_source, turns, invalid_fragments,
                call_status, tokens, seconds, env_seconds (a trainer adds step, group_id, ...)

`officegym eval`, the trainers and the server write rows with the writer here (`rollout_row`,
`make_row`); `officegym verify`, reports, metrics, the review queue and SFT read them with the
reader (`RolloutRow`, `parse`). Rows are read-only data: the reader never copies or changes a
row (a `RolloutRow` is a view of it) and the writer never changes the rows it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from officegym.core.task import Task
from officegym.core.toolcalls import function_calls_from_output
from officegym.core.trajectory import Trajectory
from officegym.core.types import ToolCall

# Keys a rollout row adds to its task row.
ROLLOUT_KEYS = ("response", "reward", "officegym")


class RolloutRowError(ValueError):
    """A row that cannot be read as a rollout row; the message says what is wrong with it."""


# -- writing ----------------------------------------------------------------------------------------

def response_output(traj: Trajectory) -> list[dict[str, Any]]:
    """The episode as Responses-API output items, in the order NeMo Gym's simple agent writes them:
    each turn's message and function calls, then the calls' outputs."""
    items: list[dict[str, Any]] = []
    for turn in traj.turns:
        if turn.text:
            items.append({
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            })
        for ex in turn.executions:
            items.append({
                "type": "function_call",
                "name": ex.call.name,
                "arguments": ex.call.arguments_json if ex.call.parse_error is None else (ex.call.raw_arguments or ""),
                "call_id": ex.call.call_id or "",
                "status": "completed",
            })
        for ex in turn.executions:
            items.append({"type": "function_call_output", "call_id": ex.call.call_id or "", "output": ex.output})
    return items


def response_of(traj: Trajectory) -> dict[str, Any]:
    """The row's `response`: the output items and the token usage."""
    return {
        "output": response_output(traj),
        "usage": {
            "input_tokens": sum(t.prompt_tokens for t in traj.turns),
            "output_tokens": sum(t.completion_tokens for t in traj.turns),
        },
    }


def officegym_record(task: Task, traj: Trajectory) -> dict[str, Any]:
    """The row's `officegym` block: the verdict, reward components and the episode's statistics."""
    return {
        "task_id": task.id,
        "sample_index": traj.sample_index,
        "policy": traj.policy,
        "reward_components": traj.reward_components,
        "verdict": traj.verdict,
        "stop_reason": traj.stop_reason,
        "error": traj.error,
        "error_source": traj.error_source,
        "turns": len(traj.turns),
        "invalid_fragments": [x for t in traj.turns for x in t.invalid],
        "call_status": [e.status for t in traj.turns for e in t.executions],
        "tokens": traj.tokens,
        "seconds": traj.seconds,
        "env_seconds": traj.env_seconds,
    }


def make_row(task_row: dict[str, Any], response: dict[str, Any], reward: Any,
             officegym: dict[str, Any] | None = None) -> dict[str, Any]:
    """A rollout row: the task row's keys in their order, then `response`, `reward` and (when given)
    `officegym`. The task row is not changed; the new row shares its values."""
    row = {**task_row, "response": response, "reward": reward}
    if officegym is not None:
        row["officegym"] = officegym
    return row


def rollout_row(task: Task, traj: Trajectory) -> dict[str, Any]:
    """The row `officegym eval` and the trainers write for one episode of `task`. The row is the
    caller's: it shares nothing with the task, so a trainer may add to its `officegym` block."""
    return make_row(task.to_row(), response_of(traj), traj.reward, officegym_record(task, traj))


# -- reading ----------------------------------------------------------------------------------------

def task_row(row: dict[str, Any]) -> dict[str, Any]:
    """The task row a rollout row was played from (its keys without ROLLOUT_KEYS; values shared)."""
    return {k: v for k, v in row.items() if k not in ROLLOUT_KEYS}


def officegym_of(row: Any) -> dict[str, Any]:
    """The row's `officegym` block, or {} when it is missing or not an object (NeMo Gym's rows)."""
    og = row.get("officegym") if isinstance(row, dict) else None
    return og if isinstance(og, dict) else {}


def is_rollout_row(row: Any) -> bool:
    """A task row with a response: what sets rollout rows apart from task and verdict rows."""
    return isinstance(row, dict) and isinstance(row.get("response"), dict) and "responses_create_params" in row


@dataclass(frozen=True)
class RolloutRow:
    """A view of one rollout row. Properties never raise: a missing or damaged part reads as absent
    (`output` [], `reward` None, ...); `parse` is the strict way in, with errors that say what is wrong."""

    row: dict[str, Any]

    @property
    def officegym(self) -> dict[str, Any]:
        return officegym_of(self.row)

    @property
    def response(self) -> dict[str, Any]:
        response = self.row.get("response")
        return response if isinstance(response, dict) else {}

    @property
    def output(self) -> list[Any]:
        """The response's output items ([] when there are none or they are not a list)."""
        output = self.response.get("output")
        return output if isinstance(output, list) else []

    @property
    def function_call_items(self) -> list[dict[str, Any]]:
        return [i for i in self.output if isinstance(i, dict) and i.get("type") == "function_call"]

    @property
    def reward(self) -> float | None:
        """The reward as a float; None when it is missing, not a number, a bool or NaN."""
        r = self.row.get("reward")
        if isinstance(r, bool) or not isinstance(r, int | float) or r != r:  # r != r: NaN
            return None
        return float(r)

    @property
    def task_id(self) -> str:
        """The task's id as text: officegym's `task_id`, else the row's `id`."""
        return str(self.officegym.get("task_id", self.row.get("id")))

    @property
    def sample_index(self) -> int | None:
        idx = self.officegym.get("sample_index")
        return None if isinstance(idx, bool) or not isinstance(idx, int) else idx

    @property
    def key(self) -> tuple[str, int]:
        """(task id, sample index): which sample of which task this row is."""
        return self.task_id, self.sample_index or 0

    @property
    def step(self) -> Any:
        """The training step a trainer's row was sampled at (None for evaluation rows)."""
        return self.officegym.get("step", self.row.get("step"))

    @property
    def verdict(self) -> dict[str, Any] | None:
        v = self.officegym.get("verdict")
        return v if isinstance(v, dict) else None

    @property
    def matched(self) -> bool:
        """Whether the outcome matched: the verdict's word when it has one, else reward 1."""
        v = self.verdict
        if v is not None and isinstance(v.get("matched"), bool):
            return v["matched"]
        return self.reward == 1.0

    @property
    def has_ground_truth(self) -> bool:
        return "ground_truth" in self.row

    def calls(self) -> list[ToolCall]:
        """The function calls the model made, in order, as the verifier replays them."""
        return function_calls_from_output(self.output)

    def task(self) -> Task:
        """The task this rollout was played from (TaskFormatError when the task part is damaged)."""
        return Task.from_row(task_row(self.row))


def parse(row: Any) -> RolloutRow:
    """Read a rollout row strictly: RolloutRowError when it is not an object or its response has
    no output list (a missing output is an empty one, as NeMo Gym reads it)."""
    if not isinstance(row, dict):
        raise RolloutRowError(f"a rollout row must be a JSON object, got {type(row).__name__}")
    response = row.get("response")
    if not isinstance(response, dict) or not isinstance(response.get("output", []), list):
        raise RolloutRowError("rollout row has no response.output list")
    return RolloutRow(row)


def error_source(row: Any) -> str | None:
    """Who failed when the rollout ended in an error: "backend", "policy" or "environment" (see
    `Trajectory.error_source`); None when it did not. Rows written before sources were recorded only
    had backend errors."""
    og = officegym_of(row)
    if og.get("stop_reason") != "error" or not og.get("error"):
        return None
    return og.get("error_source") or "backend"


def retryable(row: Any) -> bool:
    """Whether a resumed run should play the rollout again: only when the model backend failed (a
    transient fault). An error of a scripted policy or of the environment is deterministic, so the
    row stays as it is, an error row with its cause, instead of failing the same way on every resume."""
    return error_source(row) == "backend"


def row_key(row: dict[str, Any]) -> tuple[str, int]:
    """(task id, sample index) of a row; `officegym eval` resumes by it."""
    return RolloutRow(row).key
