"""What an invalid call is: one definition for the reward, the trainer, evaluation and review.

An attempted call is invalid when it did not run as asked: a malformed `<tool_call>` fragment (the
turn's `invalid` lines), a call that could not be parsed, an unknown tool or bad arguments (status
"error" or "invalid"), or a call the tool refused with its own message (status "rejected": "Email
not found." for an id the model made up). From the policy's side every one of them is a wasted
call; refusals count too because a model that guesses ids and names is rewarded for it otherwise
(GRPO on the quickstart learned to append a refused `email_forward_email` to successful sends).

Two rates follow, and they are never given the same name:
- `invalid_call_rate`: invalid calls / attempted calls (fragments count as attempted calls);
- `rollouts_with_invalid_call`: the share of rollouts with at least one invalid call.
"""

from __future__ import annotations

from collections.abc import Iterable

from officegym.core.trajectory import Trajectory


def is_invalid_status(status: str) -> bool:
    """A tool call's status ("ok", "rejected", "error", "invalid") marks an invalid call unless "ok"."""
    return status != "ok"


def count_calls(statuses: Iterable[str], fragments: Iterable[object] = ()) -> tuple[int, int]:
    """(invalid, attempted) from call statuses and malformed fragments: the rollout row's
    `call_status` and `invalid_fragments`, or a trajectory's executions and `Turn.invalid`."""
    statuses = list(statuses)
    n_fragments = sum(1 for _ in fragments)
    invalid = sum(1 for s in statuses if is_invalid_status(s)) + n_fragments
    return invalid, len(statuses) + n_fragments


def trajectory_calls(traj: Trajectory) -> tuple[int, int]:
    """(invalid, attempted) calls of a trajectory."""
    return count_calls((e.status for t in traj.turns for e in t.executions), (x for t in traj.turns for x in t.invalid))


def invalid_calls(traj: Trajectory) -> int:
    """The number of invalid calls in a trajectory (see the module docstring)."""
    return trajectory_calls(traj)[0]
