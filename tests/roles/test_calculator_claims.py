"""The oracle reads every figure it claims off the role's calculator, called on its own plan.

A claimed figure scores 0 when it is more than 0.5% off the verifier's recomputation, which a small
model cannot compute by itself; where a role has a calculator tool, its ground truth calls it on the
chosen plan in a turn of its own and the answer claims exactly what it returned, so SFT on the
oracle teaches copying. These tests replay that trajectory turn by turn and check that the
calculator and the verifier agree, also on plans that are not the optimum.
"""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.scripted import OraclePolicy
from officegym.core.types import ToolCall
from officegym.envs.roles import reconcile, risk

# role -> (calculator, the answer's figure, the calculator's figure, levels that offer the calculator)
CALCULATORS = {
    "roles/cto": ("estimate_tco", "claimed_tco", "tco_12m_usd", range(1, 11)),
    "roles/coo": ("estimate_value", "claimed_value", "net_value_usd", range(1, 11)),
    "roles/cost": ("simulate_bill", "claimed_monthly_cost", "total_usd", range(1, 11)),
    "roles/reconcile": ("evaluate_plan", "claimed_score", "score", range(1, 11)),
    "roles/risk": ("score_register", "overall_score", "overall_score", range(1, 11)),
}


def _plan_args(name: str, answer: dict) -> dict:
    """The part of an answer the calculator takes (the chosen plan; risk: the register without scores)."""
    if name == "roles/risk":
        return {"entries": [{k: v for k, v in e.items() if k != "score"} for e in answer["entries"]]}
    key = {"roles/cto": "selection", "roles/coo": "assignments", "roles/cost": "plan", "roles/reconcile": "plan_id"}[name]
    return {key: answer[key]}


# CTO's, COO's, Cost's and ReconcileGPT's oracles call the solver (constraints in, the best plan and its
# figure out), then copy its plan and figure; estimate_tco, estimate_value, simulate_bill and
# evaluate_plan (given the memos) stay the calculators of any plan.
ORACLE_CHECKS = {**CALCULATORS, "roles/cto": ("find_architecture", "claimed_tco", "tco_12m_usd", range(1, 11)),
                 "roles/coo": ("find_staffing", "claimed_value", "net_value_usd", range(1, 11)),
                 "roles/cost": ("find_plan", "claimed_monthly_cost", "total_usd", range(1, 11)),
                 "roles/reconcile": ("find_agreement", "claimed_score", "score", range(1, 11)),
                 # Risk's oracle calls the rule book (the items' facts in, the scored register out) and copies
                 # its register; score_register stays the calculator of any register
                 "roles/risk": ("assess_risks", "overall_score", "overall_score", range(1, 11))}
SOLVER_PLAN = {"roles/cto": ("selection",), "roles/coo": ("assignments", "unstaffed"), "roles/cost": ("plan",),
               "roles/reconcile": ("plan_id", "conflicts", "binding_vetoes")}


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_the_oracle_claims_what_the_calculator_returned_on_its_plan(envs, name):
    env = envs[name]
    calculator, claim, figure, levels = ORACLE_CHECKS[name]
    tasks = [t for level in (1, 2, 3, 5, 9) for t in env.generate_tasks(12, level, difficulty=(level, level))]
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], OraclePolicy(), LoopConfig()))
    checked = 0
    for task, traj in zip(tasks, trajs):
        assert traj.reward == 1.0, (task.id, traj.verdict)
        s = env.scenario(task)
        calls = [e for turn in traj.turns for e in turn.executions]
        if name in SOLVER_PLAN and s.infeasible:  # the solver says why there is no plan
            assert [c.name for c in s.checks] == [calculator] and s.answer.name == "escalate"
            continue
        if s.infeasible or s.difficulty not in levels:
            assert not s.checks and calculator not in [e.call.name for e in calls]
            continue
        # lookups (if any), then the calculator alone, then the answer alone
        assert task.metadata["oracle_turns"] == [*([len(s.lookups)] if s.lookups else []), 1, 1]
        check, answer = traj.turns[-3].executions, traj.turns[-2].executions
        assert [e.call.name for e in check] == [calculator] and [e.call.name for e in answer] == [s.answer.name]
        returned = json.loads(check[0].output)["output"]
        if name in SOLVER_PLAN:
            assert all(answer[0].call.arguments[k] == returned[k] for k in SOLVER_PLAN[name])
        elif name != "roles/risk":  # risk: the register is compared below
            assert check[0].call.arguments == _plan_args(name, answer[0].call.arguments)
        assert answer[0].call.arguments[claim] == returned[figure]
        if name == "roles/risk":  # every entry's score is copied too
            assert answer[0].call.arguments["entries"] == returned["entries"]
        checked += 1
    assert checked >= 30


@pytest.mark.parametrize("name", sorted(CALCULATORS))
def test_the_calculator_agrees_with_the_verifier_on_any_plan(envs, name):
    """A random plan claiming the calculator's figure passes the claim check; off by 1% it fails."""
    env = envs[name]
    calculator, claim, figure, levels = CALCULATORS[name]
    rng = random.Random(7)
    for level in (min(levels), max(levels)):
        for task in env.generate_tasks(20, 100 + level, difficulty=(level, level)):
            if task.metadata["infeasible"]:  # any answer but escalating scores 0 before its figures count
                continue
            public = env.scenario(task).public
            if name == "roles/cto":
                answer = {"selection": {c["component"]: rng.choice(c["options"]) for c in public["components"]}}
            elif name == "roles/coo":
                people = [None, *(p["id"] for p in public["staff"])]
                pairs = {p["id"]: rng.choice(people) for p in public["projects"]}
                answer = {"assignments": [{"project": p, "staff": sid} for p, sid in pairs.items() if sid],
                          "unstaffed": [p for p, sid in pairs.items() if not sid]}
            elif name == "roles/cost":
                answer = {"plan": {w["id"]: rng.choice(w["options"]) for w in public["workloads"]}}
            elif name == "roles/risk":  # random rows of the dossier at random severities, scored
                rows = [(a, r) for a, rs in public["artifacts"].items() if isinstance(rs, list) for r in rs]
                drafts = [{"risk_type": "single_point_of_failure", "artifact": a, "item": str(next(iter(r.values()))),
                           "likelihood": rng.randint(1, 4), "impact": rng.randint(1, 3), "mitigation": "accept_risk"}
                          for a, r in rng.sample(rows, min(3, len(rows)))]
                answer = risk.scored(drafts)
            else:
                answer = {"plan_id": rng.choice(public["plans"])["id"], "conflicts": [], "binding_vetoes": []}
            session = env.session(task)
            memos = reconcile.arguments_of(public) if name == "roles/reconcile" else {}  # its calculator takes them
            result = session.execute(calculator, {**_plan_args(name, answer), **memos})
            assert result.ok, result.value
            submit = env.answer_tools[0]
            right = env.verify(task, [ToolCall(submit, {**answer, claim: result.value[figure]})])
            assert right.details["components"]["claims_ok"] == 1.0, right.details["evidence"]
            value = result.value[figure]
            off = value + max(0.01 * abs(value), 0.01 if name == "roles/reconcile" else 1)
            if name == "roles/risk":  # an integer within the schema's 0-12
                off = value - 1 if value == 12 else value + 1
            wrong = env.verify(task, [ToolCall(submit, {**answer, claim: off})])
            assert wrong.details["components"]["claims_ok"] == 0.0 and wrong.reward == 0.0


def test_the_coo_calculator_refuses_unknown_or_repeated_projects_and_people(envs):
    env = envs["roles/coo"]
    task = next(t for t in env.generate_tasks(10, 3, difficulty=(2, 2)) if not t.metadata["infeasible"])
    public = env.scenario(task).public
    p, q = public["projects"][0]["id"], public["projects"][1]["id"]
    s1 = public["staff"][0]["id"]
    session = env.session(task)
    for assignments, message in (([{"project": "P99", "staff": s1}], "unknown project"),
                                 ([{"project": p, "staff": "S99"}], "unknown staff id"),
                                 ([{"project": p, "staff": s1}, {"project": p, "staff": s1}], "more than once")):
        result = session.execute("estimate_value", {"assignments": assignments})
        assert result.status == "rejected" and message in result.value
    out = session.execute("estimate_value", {"assignments": [{"project": p, "staff": s1}, {"project": q, "staff": s1}]})
    rows = {x["id"]: x for x in public["projects"]}
    labour = public["staff"][0]["hourly_cost_usd"] * (rows[p]["effort_hours"] + rows[q]["effort_hours"])
    assert out.value == {"net_value_usd": rows[p]["value_usd"] + rows[q]["value_usd"] - labour,
                         "value_usd": rows[p]["value_usd"] + rows[q]["value_usd"], "labour_cost_usd": labour}
    assert session.answer is None  # a calculator call is no answer


def test_the_risk_calculator_scores_every_entry_and_a_wrong_entry_score_fails(envs):
    env = envs["roles/risk"]
    task = next(t for t in env.generate_tasks(20, 5, difficulty=(2, 2)) if not t.metadata["infeasible"])
    s = env.scenario(task)
    assert "score_register" in [spec.name for spec in env.tool_specs(2)]
    assert task.ground_truth == [*s.lookups, *s.checks, s.answer]
    drafts = [{k: v for k, v in e.items() if k != "score"} for e in s.answer.arguments["entries"]]
    out = env.session(task).execute("score_register", {"entries": drafts}).value
    assert all(e["score"] == e["likelihood"] * e["impact"] for e in out["entries"])
    assert out["overall_score"] == max(e["score"] for e in out["entries"])
    assert risk.scored([]) == {"entries": [], "overall_score": 0}
    # a draft submit_register would refuse is refused here, before the answer; a stale score is replaced
    session = env.session(task)
    wrong = [{**drafts[0], "artifact": "crm-db"}]
    refused = session.execute("score_register", {"entries": wrong})
    assert refused.status == "rejected" and "entries[0].artifact" in refused.value and session.answer is None
    stale = [{**e, "score": 1} for e in drafts]
    assert session.execute("score_register", {"entries": stale}).value == out
    # a register that keeps the right overall score but claims one entry's score wrong scores 0
    bad = json.loads(json.dumps(out))
    bad["entries"][0]["score"] += 1
    verdict = env.verify(task, [ToolCall("submit_register", bad)])
    assert verdict.reward == 0.0 and verdict.details["components"]["claims_ok"] == 0.0


def test_the_reconcile_calculator_answers_when_no_plan_can_be_scored(envs):
    """In an infeasible scenario a stakeholder's best admissible utility may equal its status quo,
    so normalised gains are undefined: the calculator says so instead of failing."""
    env = envs["roles/reconcile"]
    undefined = 0
    for task in env.generate_tasks(400, 11, difficulty=(1, 3)):
        if not task.metadata["infeasible"]:
            continue
        session = env.session(task)
        for plan in env.scenario(task).public["plans"]:
            memos = reconcile.arguments_of(env.scenario(task).public)  # the calculator takes the memos
            result = session.execute("evaluate_plan", {"plan_id": plan["id"], **memos})
            assert result.ok, result.value
            if result.value["score"] is None:
                assert "no plan is acceptable" in result.value["note"]
                undefined += 1
    assert undefined
