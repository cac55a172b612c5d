"""The review queue's environment hooks: defaults that mean "nothing role-specific", the roles'
rules (envs/roles/review_rules.py) and the council's replay and decision plan
(envs/roles/council_review.py), asked through the environment as review/ does."""

from __future__ import annotations

import pytest

from officegym.core.environment import BaseEnvironment, EnvironmentWrapper
from officegym.core.registry import make
from officegym.core.types import ToolCall
from officegym.envs.roles.council_model import COMMIT, MEMBERS

BANDS = {"ratio": (0.98, 1.0), "claim": (0.5, 2.0), "detection": (0.8, 1.0), "satisfaction": (0.9, 1.0),
         "partial": (0.4, 0.6)}


class Plain(BaseEnvironment):
    name = "plain"


def test_the_defaults_say_nothing_role_specific():
    env = EnvironmentWrapper(Plain())
    assert env.graded_answers == frozenset()
    assert env.review_findings(None, {}, [], BANDS) == [] and env.decision_key([]) is None
    assert env.replay_episode(None, calls=[]) is None and env.act_call({"act": "commit"}) is None
    with pytest.raises(ValueError, match="plain has no multi-agent decision"):
        env.decision_plan([], {})


def test_a_role_grades_its_answer_tools_and_compares_decisions_without_free_text():
    env = EnvironmentWrapper(make("roles/cto"))
    assert env.graded_answers == env.write_tools and "escalate" in env.graded_answers
    submit = next(iter(env.graded_answers - {"escalate"}))
    a = ToolCall(submit, {"selection": {"db": "x"}, "rationale": "cheap", "claimed_tco": 10})
    b = ToolCall(submit, {"selection": {"db": "x"}, "rationale": "fast", "claimed_tco": 11})
    read = ToolCall("read_document", {"doc_id": "brief"})
    assert env.decision_key([(read, "ok"), (a, "ok")]) == env.decision_key([(b, None)])
    assert env.decision_key([(a, "rejected")]) == '["null"]'


def test_role_findings_escalations_and_margins():
    env = make("roles/cto")
    task = env.generate_tasks(40, 3)[0]
    task.metadata["infeasible"] = False
    escalate = ToolCall("escalate", {"reason": "no plan fits"})
    verdict = {"label": "wrong_escalation", "evidence": ["a feasible plan exists"], "matched": False}
    found = env.review_findings(task, verdict, [(escalate, "ok")], BANDS)
    assert [code for code, _ in found] == ["escalation_wrong"] and "no plan fits" in found[0][1]
    submit = next(iter(env.graded_answers - {"escalate"}))
    answer = ToolCall(submit, {"claimed_tco": 1003.0})
    near = {"label": "correct", "matched": True, "reward": 1.0, "components": {"tco": 1000.0}}
    found = dict(env.review_findings(task, near, [(answer, "ok")], BANDS))
    assert "0.60x the tolerance" in found["low_margin"] and "odd_high_reward" in found  # no read before it


def test_the_council_replays_acts_and_plans_a_decision():
    env = EnvironmentWrapper(make("roles/council"))
    task = next(t for t in env.generate_tasks(20, 7) if not t.metadata["infeasible"])
    gt = task.ground_truth
    replayed = env.replay_episode(task, calls=gt)
    assert replayed is not None and replayed.grade is None and replayed.findings == []
    proposals = replayed.state["proposals"]
    assert list(proposals) == ["PLAN-1"] and replayed.state["acts"][-1]["act"] == "commit"
    acts = replayed.state["acts"]
    again = env.replay_episode(task, acts=acts, rounds=replayed.state["rounds"])
    assert again.refused == [] and again.grade.details["role"] == "council"
    assert env.act_call(acts[-1]).name == COMMIT
    plan, turns = env.decision_plan([ToolCall(COMMIT, {"plan_id": "PLAN-1", "claimed_tco": gt[-1].arguments["claimed_tco"]})],
                                    proposals)
    assert turns == [len(MEMBERS), 1, 1] and env.verify(task, plan).matched
    with pytest.raises(ValueError, match="proposed no plan 'PLAN-9'"):
        env.decision_plan([ToolCall(COMMIT, {"plan_id": "PLAN-9", "claimed_tco": 1})], proposals)
    with pytest.raises(ValueError, match="a correction of a council is the mediator's decision"):
        env.decision_plan([ToolCall("propose_plan", {})], proposals)
