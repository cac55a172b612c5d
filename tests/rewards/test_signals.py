"""One meaning per training signal: "binary" and "outcome", what an invalid call is, and the
reward a trainer logs being the one it trained on."""

from __future__ import annotations

import json

import pytest

from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall, Verdict
from officegym.rewards import (
    BinaryOutcome,
    InvalidCallPenalty,
    VerifierScore,
    WeightedSum,
    count_calls,
    invalid_calls,
    make_reward,
    training_reward,
    trajectory_calls,
)

TASK = Task(id=0, input=[{"role": "user", "content": "do it"}], ground_truth=[])
GRADED = Verdict(reward=0.318, matched=False, mode="outcome")  # a feasible, suboptimal role answer


def ex(status: str) -> ToolExecution:
    return ToolExecution(ToolCall("email_forward_email", {"email_id": "x"}), json.dumps({"output": status}), status)


def traj(*statuses: str, fragments: int = 0) -> Trajectory:
    return Trajectory(task_id=0, turns=[Turn(text="", executions=[ex(s) for s in statuses],
                                             invalid=["bad json: <tool_call>{</tool_call>"] * fragments)])


def test_binary_is_the_match_and_outcome_the_verifiers_score_everywhere():
    assert BinaryOutcome()(TASK, traj(), GRADED).total == 0.0
    assert VerifierScore()(TASK, traj(), GRADED).total == 0.318
    # inside a weighted sum each name keeps its meaning
    mix = make_reward({"binary": 1.0, "outcome": 1.0})
    assert isinstance(mix, WeightedSum)
    assert mix(TASK, traj(), GRADED).components == {"binary/total": 0.0, "binary/outcome": 0.0,
                                                    "outcome/total": 0.318, "outcome/outcome": 0.318}
    # the trainer's "outcome" (None: the loop reads the verdict) and "binary" differ the same way
    assert training_reward("outcome") is None
    assert isinstance(training_reward("binary"), BinaryOutcome)


def test_an_invalid_call_is_any_call_that_did_not_run_as_asked():
    for status in ("rejected", "error", "invalid"):
        assert invalid_calls(traj("ok", status)) == 1
    assert invalid_calls(traj("ok", "ok")) == 0
    assert trajectory_calls(traj("ok", "rejected", fragments=2)) == (3, 4)
    assert count_calls(["ok", "rejected"], ["frag"]) == (2, 3)
    assert count_calls([], []) == (0, 0)


def test_the_penalty_is_part_of_the_reward_the_trainer_logs():
    penalised = training_reward("outcome", invalid_call_penalty=0.5)
    assert isinstance(penalised, InvalidCallPenalty)
    matched = Verdict(reward=1.0, matched=True, mode="outcome")
    clean = penalised(TASK, traj("ok"), matched)
    junk = penalised(TASK, traj("ok", "rejected"), matched)
    assert (clean.total, clean.components) == (1.0, {"outcome": 1.0, "invalid_call_penalty": 0.0})
    assert (junk.total, junk.components) == (0.5, {"outcome": 1.0, "invalid_call_penalty": -0.5})
    with pytest.raises(ValueError, match="penalty"):
        InvalidCallPenalty(BinaryOutcome(), -1.0)
