from __future__ import annotations

import json

import pytest

from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall, Verdict
from officegym.rewards import CallMatch, make_reward

WRITES = frozenset({"calendar_create_event", "analytics_create_plot", "email_send_email"})
LOOKUP = ("company_directory_find_email_address", {"name": "Emil"})
CREATE = ("calendar_create_event", {"event_name": "Retro", "participant_email": "emil@x.com",
                                    "event_start": "2024-08-22 16:30:00", "duration": "60"})


def ex(tool: str, status: str = "ok", /, **arguments) -> ToolExecution:
    return ToolExecution(ToolCall(tool, arguments), json.dumps({"output": "done"}), status)


def run(*executions: ToolExecution) -> Trajectory:
    return Trajectory(task_id=0, turns=[Turn(executions=[e]) for e in executions])


def task(*ground_truth: tuple[str, dict]) -> Task:
    return Task(id=0, input=[{"role": "user", "content": "do it"}], ground_truth=[ToolCall(n, a) for n, a in ground_truth])


WRONG = Verdict(reward=0.0, matched=False, mode="outcome")
reward = CallMatch(writes=WRITES)


def test_the_reference_calls_score_one():
    r = reward(task(LOOKUP, CREATE), run(ex(LOOKUP[0], **LOOKUP[1]), ex(CREATE[0], **CREATE[1])), WRONG)
    assert r.total == 1.0 and r.components == {"matched": 1.0, "surplus_writes": 0.0}


def test_one_wrong_argument_costs_its_share_of_that_call():
    wrong_time = {**CREATE[1], "event_start": "2024-08-22 04:30:00"}
    r = reward(task(LOOKUP, CREATE), run(ex(LOOKUP[0], **LOOKUP[1]), ex(CREATE[0], **wrong_time)), WRONG)
    assert r.total == pytest.approx((1 + 3 / 4) / 2)


def test_values_match_as_text_and_the_best_call_is_paired():
    as_number = {**CREATE[1], "duration": 60}
    bad = {**CREATE[1], "participant_email": "nobody", "duration": "30"}
    r = reward(task(CREATE), run(ex(CREATE[0], "error", **bad), ex(CREATE[0], **as_number)), WRONG)
    assert r.total == 1.0  # the failed attempt is neither paired nor a surplus write


def test_surplus_writes_are_penalised_and_missing_calls_score_nothing():
    twice = run(ex(CREATE[0], **CREATE[1]), ex(CREATE[0], **CREATE[1]))
    assert reward(task(CREATE), twice, WRONG).total == pytest.approx(0.75)
    assert CallMatch(writes=WRITES, surplus_penalty=1.0)(task(CREATE), twice, WRONG).total == 0.0
    assert reward(task(LOOKUP, CREATE), run(ex("email_send_email", recipient="emil")), WRONG).total == 0.0


def test_an_empty_ground_truth_scores_doing_nothing():
    assert reward(task(), run(ex(LOOKUP[0], **LOOKUP[1])), WRONG).total == 1.0
    assert reward(task(), run(ex(CREATE[0], **CREATE[1])), WRONG).total == 0.0


def test_it_combines_with_the_outcome_by_name():
    combined = make_reward({"binary": 1.0, "call_match": {"weight": 0.5, "surplus_penalty": 0.5}}, writes=WRITES)
    right = Verdict(reward=1.0, matched=True, mode="outcome")
    t, traj = task(CREATE), run(ex(CREATE[0], **CREATE[1]))
    assert combined(t, traj, right).total == 1.5
    assert combined(t, traj, WRONG).total == 0.5
    with pytest.raises(ValueError, match="surplus_penalty"):
        make_reward("call_match", bogus=1)
