"""The council: scripted seats reach the expected team reward; the scoring rules, act by act."""

from __future__ import annotations

import asyncio

import pytest

from officegym.agent.council import CouncilConfig, run_council, run_councils
from officegym.agent.council_seats import scripted_seat
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.types import ToolCall
from officegym.envs.roles.council_seats import agreed
from officegym.envs.roles.council_state import CouncilState, score_council


@pytest.fixture(scope="module")
def council_tasks(envs):
    return envs["roles/council"].generate_tasks(40, 2024)


def test_scripted_council_reaches_the_full_information_optimum(council_tasks):
    outcomes = asyncio.run(run_councils(council_tasks, {}))
    for task, out in zip(council_tasks, outcomes):
        assert out.reward == 1.0, out.grade
        if task.metadata["infeasible"]:
            assert out.grade.label == "correct_escalation" and out.state.outcome[0] == "escalate"
        else:
            assert out.grade.label == "correct" and out.state.rounds == 2
            assert out.grade.components["consensus"] == 1.0 and out.grade.components["quality_ratio"] == 1.0
            committed = out.state.proposals[out.state.outcome[1]]
            assert committed == out.state.scenario.private["selection"]
        # every seat kept its conversation, with the team reward
        assert set(out.trajectories) == {"cto", "cost", "risk", "reconcile"}
        assert all(t.reward == out.reward and t.turns for t in out.trajectories.values())
    assert any(t.metadata["infeasible"] for t in council_tasks)


def test_greedy_mediator_scores_less_than_the_scripted_one(council_tasks):
    greedy = asyncio.run(run_councils(council_tasks, {"reconcile": scripted_seat("reconcile", "greedy")}))
    mean = sum(o.reward for o in greedy) / len(greedy)
    assert mean < 0.8
    labels = {o.grade.label for o in greedy}
    assert "missed_escalation" in labels and ({"infeasible", "process", "suboptimal"} & labels)


def test_a_member_that_shares_nothing_stalls_the_council(council_tasks):
    seats = {"cto": scripted_seat("cto", "silent")}
    out = asyncio.run(run_council(council_tasks[0], seats, CouncilConfig(max_rounds=3)))
    assert out.reward == 0.0 and out.grade.label == "no_commit" and out.state.rounds == 3


class Obstructor(Policy):
    """A member that objects to every proposal citing the budget, whatever the plan costs."""

    name = "obstructor"

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        out = []
        for r in requests:
            news = [line for m in r.messages[-1:] for line in str(m.get("content")).splitlines() if '"propose"' in line]
            calls = [ToolCall("share_facts", {"fact_ids": ["all"]})] if r.turn == 0 else []
            for line in news:
                plan = line.split('"plan_id": "')[1].split('"')[0]
                calls.append(ToolCall("object_plan", {"plan_id": plan, "reason_code": "over_budget",
                                                      "fact_id": "cost/budget"}))
            out.append(Completion(tool_calls=calls))
        return out


def test_false_objections_cost_the_objector_and_block_consensus(council_tasks):
    task = next(t for t in council_tasks if not t.metadata["infeasible"])
    honest = asyncio.run(run_council(task, {}))
    out = asyncio.run(run_council(task, {"cost": Obstructor()}))
    false = sum(1 for o in out.state.objections if o.seat == "cost")
    assert false >= 1
    assert out.grade.components["credit/cost"] == pytest.approx(honest.grade.components["credit/cost"] - 0.05 * false)
    assert all(not o.valid for o in out.state.objections)
    assert out.reward == 0.0  # the mediator never gets consensus and escalates a feasible scenario


def fresh_state(envs, feasible=True):
    env = envs["roles/council"]
    task = next(t for t in env.generate_tasks(60, 5, difficulty=(3, 6)) if t.metadata["infeasible"] != feasible)
    return CouncilState(env.scenario(task))


def bad_plan(state):
    from officegym.envs.roles.council_model import evaluate, member_review

    full = state.full
    for c in full["components"]:
        for o in c["options"]:
            sel = {**state.scenario.private["selection"], c["component"]: o}
            if evaluate(full, sel)["violations"]:
                for seat in ("cto", "cost", "risk"):
                    reason, fact = member_review(full, state.facts, seat, sel)
                    if reason != "accept":
                        return sel, seat, reason, fact
    return None


def test_scoring_rules_consensus_unresolved_objections_and_rounds(envs):
    state = fresh_state(envs)
    best = state.scenario.private["selection"]
    optimum = state.scenario.private["optimum"]
    found = bad_plan(state)
    assert found is not None
    sel, seat, reason, fact = found
    state.rounds = 1
    for s in ("cto", "cost", "risk"):
        state.share(s, ["all"])
    state.rounds = 2
    first = state.propose("reconcile", sel).value["plan_id"]
    state.respond(seat, first, reason, fact)
    assert state.objections[-1].valid
    state.rounds = 3
    second = state.propose("reconcile", best).value["plan_id"]
    for s in ("cto", "cost", "risk"):
        if s != seat:
            state.respond(s, second)
    state.commit(second, optimum)
    grade = score_council(state)  # no consensus, one unresolved valid objection, one extra round
    assert grade.components["consensus"] == 0.0 and grade.components["unresolved_objections"] == 1.0
    assert grade.reward == pytest.approx((1.0 - 0.1 - 0.05) / 1.2)
    state.outcome = None
    state.respond(seat, second)
    state.commit(second, optimum)
    assert score_council(state).reward == pytest.approx((1.0 + 0.2 - 0.05) / 1.2)
    state.rounds = 2
    assert score_council(state).reward == 1.0


def test_an_infeasible_commit_scores_zero_whatever_the_consensus(envs):
    state = fresh_state(envs)
    sel = bad_plan(state)[0]
    state.rounds = 2
    plan = state.propose("reconcile", sel).value["plan_id"]
    for s in ("cto", "cost", "risk"):
        state.respond(s, plan)  # everybody accepts a plan that breaks a constraint
    from officegym.envs.roles.council_model import evaluate

    state.commit(plan, evaluate(state.full, sel)["tco"])
    grade = score_council(state)
    assert grade.reward == 0.0 and grade.label == "infeasible" and grade.components["consensus"] == 1.0


def test_acts_are_checked(envs):
    state = fresh_state(envs)
    assert state.share("cto", ["cost/budget"]).status == "rejected"
    assert state.propose("reconcile", {"nope": "x"}).status == "rejected"
    assert state.respond("risk", "PLAN-9").status == "rejected"
    assert state.commit("PLAN-9", 1.0).status == "rejected"
    plan = state.propose("reconcile", state.scenario.private["selection"]).value["plan_id"]
    assert state.respond("cto", plan, "not_a_reason", "x").status == "rejected"
    state.respond("cto", plan, "latency_slo", "cto/latency_slo")
    assert not state.objections[-1].valid  # the optimum meets the SLO


def test_mediator_environment_counts_proposal_rounds(envs):
    env = envs["roles/council"]
    task = next(t for t in env.generate_tasks(60, 5, difficulty=(3, 6)) if not t.metadata["infeasible"])
    state = CouncilState(env.scenario(task))
    sel = bad_plan(state)[0]
    gt = task.ground_truth
    calls = [*gt[:3], ToolCall("propose_plan", {"selection": sel}), gt[3],
             ToolCall("commit_plan", {"plan_id": "PLAN-2", "claimed_tco": gt[-1].arguments["claimed_tco"]})]
    verdict = env.verify(task, calls)
    assert verdict.reward == pytest.approx((1.0 + 0.2 - 0.05) / 1.2)
    assert verdict.details["label"] == "process"
    session = env.session(task)
    for c in calls[:4]:
        out = session.call(c.name, c.arguments)
    assert '"object"' in out  # the members answered the bad plan with an objection
    assert "unknown plan" in session.call("commit_plan", {"plan_id": "PLAN-7", "claimed_tco": 1})
    rejected = env.verify(task, [*gt[:3], ToolCall("commit_plan", {"plan_id": "PLAN-1", "claimed_tco": 5})])
    assert rejected.details["label"] == "format" and rejected.invalid_calls


def test_council_file_appends_rows_and_resumes(council_tasks, tmp_path):
    from officegym.agent.council import run_council_file

    out = tmp_path / "councils.jsonl"
    seats = {"reconcile": scripted_seat("reconcile", "greedy")}
    first = run_council_file(council_tasks[:3], seats, out)
    assert len(first) == 3 and len(out.read_text().splitlines()) == 3
    with open(out, "a") as fh:
        fh.write('{"task_id": "torn')  # an interrupted write
    seen = []
    rows = run_council_file(council_tasks[:5], seats, out, progress=seen.append)
    assert sorted(r["task_id"] for r in rows) == sorted(t.id for t in council_tasks[:5])
    assert len(out.read_text().splitlines()) == 5 and sum(seen) == 5
    assert rows[0]["seats"]["reconcile"] == "greedy-mediator" and rows[0]["trajectories"]["cto"]["turns"]
    assert scripted_seat("cto", "greedy").name == "greedy-cto" and scripted_seat("risk", "silent").name == "silent-risk"
    assert scripted_seat("reconcile", "silent") is None and scripted_seat("cto", "hf:model") is None


def test_a_proposal_returns_its_tco_from_the_shared_prices_and_committing_it_passes(envs):
    from officegym.envs.roles.council_model import evaluate

    state = fresh_state(envs)
    sel = state.scenario.private["selection"]
    # before Cost shares its prices the proposal cannot be priced
    early = state.propose("reconcile", sel).value
    assert early["tco_12m_usd"] is None and state.events[-1]["tco_12m_usd"] is None
    state.share("cost", ["all"])
    out = state.propose("reconcile", sel).value
    assert out["tco_12m_usd"] == evaluate(state.full, sel)["tco"] == state.events[-1]["tco_12m_usd"]
    for seat in ("cto", "cost", "risk"):
        state.respond(seat, out["plan_id"])
    state.commit(out["plan_id"], out["tco_12m_usd"])
    grade = score_council(state)
    assert grade.components["claims_ok"] == 1.0 and grade.label != "hallucinated_number"
    # one price missing: no figure
    partial = fresh_state(envs)
    partial.share("cost", [f for f in partial.facts if f.startswith("cost/monthly/")])
    assert partial.propose("reconcile", sel).value["tco_12m_usd"] is None


def test_the_scripted_mediator_commits_the_figure_its_proposal_returned(council_tasks):
    outcomes = asyncio.run(run_councils(council_tasks[:12], {}))
    checked = 0
    for out in outcomes:
        if out.state.outcome is None or out.state.outcome[0] != "commit":
            continue
        plan, claimed = out.state.outcome[1], out.state.outcome[2]
        shown = [e["tco_12m_usd"] for e in out.state.events if e["act"] == "propose" and e["plan_id"] == plan]
        assert shown == [claimed]
        checked += 1
    assert checked >= 5


def test_a_scripted_mediator_claims_the_figure_the_proposal_event_carries():
    """The event's figure is the source (what a trained seat copies); the shared prices only when it is null."""
    facts = [{"id": "cost/monthly/db.a", "owner": "cost", "kind": "monthly_usd", "value": 100, "option": "db.a"}]
    proposals = {"p1": {"db": "db.a"}}
    responses = {"p1": {"cto": "accept", "cost": "accept", "risk": "accept"}}
    shown = [{"act": "propose", "seat": "reconcile", "plan_id": "p1", "selection": {"db": "db.a"}, "tco_12m_usd": 4321}]
    done = agreed(facts, proposals, responses, ["p1"], shown)
    assert done is not None and done.tool_calls[0].arguments == {"plan_id": "p1", "claimed_tco": 4321}
    shown[0]["tco_12m_usd"] = None
    done = agreed(facts, proposals, responses, ["p1"], shown)
    assert done.tool_calls[0].arguments["claimed_tco"] == 1200
    assert agreed(facts, proposals, {"p1": {"cto": "accept"}}, ["p1"], shown) is None
