"""The recovering mediator, an SFT teacher whose councils show an objection answered by a new
proposal, and council SFT data drawn from several teachers."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from officegym.agent.council import CouncilConfig, run_councils
from officegym.agent.council_seats import scripted_seat
from officegym.core.registry import make
from officegym.envs.roles.council_seats import by_price, prices
from officegym.train.config import CouncilTrainConfig
from officegym.train.sft_data import BuildReport, council_conversations


@pytest.fixture(scope="module")
def tasks():
    return make("roles/council").generate_tasks(40, 3, difficulty=(1, 3))


def test_the_recovering_mediator_opens_cheap_and_commits_only_what_everyone_accepted(tasks):
    env = make("roles/council")
    scripted = asyncio.run(run_councils(tasks, {}, CouncilConfig(max_rounds=4)))
    recovering = asyncio.run(run_councils(tasks, {"reconcile": scripted_seat("reconcile", "recovering")}, CouncilConfig(max_rounds=4)))
    recovered = 0
    for task, base, out in zip(tasks, scripted, recovering):
        assert out.state.outcome is not None and out.state.outcome[0] == base.state.outcome[0]
        mine = [e for e in out.state.events if e["act"] == "propose" and e["seat"] == "reconcile"]
        if out.state.outcome[0] == "escalate":
            continue
        # the same plan committed as the scripted mediator's, with every member's acceptance
        theirs = [e for e in base.state.events if e["act"] == "propose"][-1]
        assert mine[-1]["selection"] == theirs["selection"] and out.state.outcome[2] == base.state.outcome[2]
        answers = {e["seat"]: e["act"] for e in out.state.events if e.get("plan_id") == mine[-1]["plan_id"]
                   and e["act"] in ("accept", "object")}
        assert answers == {"cto": "accept", "cost": "accept", "risk": "accept"}
        if len(mine) == 2:
            recovered += 1
            first = mine[0]["plan_id"]
            assert any(e["act"] == "object" and e.get("plan_id") == first for e in out.state.events)
            # the opening plan is the cheapest on the prices shared before it
            shared = [f for e in out.state.events[:out.state.events.index(mine[0])] if e["act"] == "share"
                      for f in e["facts"]]
            comps = env.scenario(task).public["components"]
            assert tuple(mine[0]["selection"][c["component"]] for c in comps) == by_price(
                comps, prices(shared))[0]
            assert out.reward < 1.0 and out.reward >= 0.95  # one extra round, nothing else lost
        else:
            assert len(mine) == 1 and out.reward == 1.0
    assert recovered >= len(tasks) // 3


def test_by_price_orders_plans_by_their_summed_tco():
    comps = [{"component": "db", "options": ["db.a", "db.b"]}, {"component": "cache", "options": ["c.x", "c.y"]}]
    ranked = by_price(comps, {"db.a": 30, "db.b": 10, "c.x": 5, "c.y": 1})
    assert ranked[0] == ("db.b", "c.y") and ranked[-1] == ("db.a", "c.x") and len(ranked) == 4


def test_council_sft_data_from_two_teachers(tasks):
    some = tasks[:12]
    one = council_conversations(some, ["reconcile"], {}, 4, 0.95, BuildReport())
    two = council_conversations(some, ["reconcile"], {}, 4, 0.95, BuildReport(), teachers=("scripted", "recovering"))
    assert len(two) == 2 * len(one)
    tagged = [c for c in two if c.source.endswith(":recovering")]
    assert len(tagged) == len(one)
    # some recovering conversation answers an objection with a second proposal
    def proposals(c):
        return sum(1 for m in c.messages if m["role"] == "assistant"
                   for call in m.get("tool_calls") or [] if call["function"]["name"] == "propose_plan")
    assert any(proposals(c) == 2 for c in tagged) and all(proposals(c) <= 1 for c in one)
    # at full reward only, the recovering councils (one extra round) are dropped
    strict = council_conversations(some, ["reconcile"], {}, 4, 1.0, BuildReport(), teachers=("recovering",))
    assert len(strict) < len(one)


def test_teachers_are_checked():
    assert CouncilTrainConfig(teachers=["scripted", "recovering"]).teachers == ["scripted", "recovering"]
    with pytest.raises(ValidationError, match="unknown teacher"):
        CouncilTrainConfig(teachers=["greedy-ish"])
    with pytest.raises(ValidationError, match="mediator"):
        CouncilTrainConfig(train_seats=["cto"], teachers=["recovering"])
    assert scripted_seat("cto", "recovering") is None
    assert scripted_seat("reconcile", "recovering").name == "recovering-mediator"
