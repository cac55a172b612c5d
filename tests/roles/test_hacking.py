"""Reward-hacking probes: none of these pay more than an honest answer."""

from __future__ import annotations

import copy
import itertools
import random

from officegym.core.types import ToolCall
from officegym.envs.roles import cto, risk
from officegym.envs.roles.baseline_answers import random_answer

SINGLE = ("roles/cto", "roles/coo", "roles/reconcile", "roles/risk", "roles/cost")


def gt_answer(task):
    return copy.deepcopy(task.ground_truth[-1])


def test_answering_with_everything_does_not_pay(envs, task_sets):
    # risk: every type on every row of its artifact
    env = envs["roles/risk"]
    for task in task_sets["roles/risk"]:
        s = env.scenario(task)
        if s.infeasible or task.metadata["difficulty"] < 5:
            continue
        entries = [{"risk_type": t.name, "artifact": t.artifact, "item": row[risk.ARTIFACTS[t.artifact][1]],
                    "likelihood": 4, "impact": 3, "score": 12, "mitigation": t.acceptable[0]}
                   for t in risk.TYPES for row in s.public["artifacts"].get(t.artifact, ())]
        verdict = env.verify(task, [ToolCall(risk.SUBMIT, {"entries": entries, "overall_score": 12})])
        assert verdict.reward < 0.75 and verdict.details["components"]["precision"] < 0.6
    # reconcile: every pair in conflict and every stakeholder's veto binding
    env = envs["roles/reconcile"]
    for task in task_sets["roles/reconcile"]:
        s = env.scenario(task)
        if s.infeasible:
            continue
        ans = gt_answer(task)
        names = s.public["stakeholders"]
        ans.arguments["conflicts"] = [list(p) for p in itertools.combinations(names, 2)]
        ans.arguments["binding_vetoes"] = list(names)
        verdict = env.verify(task, [ans])
        assert verdict.reward < 1.0 and verdict.details["components"]["conflict_f1"] < 1.0


def test_structurally_greedy_answers_are_refused(envs, task_sets):
    cto_task = next(t for t in task_sets["roles/cto"] if not t.metadata["infeasible"])
    ans = gt_answer(cto_task)
    every = {c["component"]: c["options"] for c in envs["roles/cto"].scenario(cto_task).public["components"]}
    ans.arguments["selection"] = every  # lists instead of one option each
    verdict = envs["roles/cto"].verify(cto_task, [ans])
    assert verdict.reward == 0.0 and verdict.details["label"] == "format" and verdict.invalid_calls
    ans.arguments["selection"] = {**gt_answer(cto_task).arguments["selection"], "mainframe": "mainframe.ibm"}
    assert envs["roles/cto"].verify(cto_task, [ans]).details["label"] == "invalid_answer"
    coo_task = next(t for t in task_sets["roles/coo"] if not t.metadata["infeasible"])
    ans = gt_answer(coo_task)
    staff = [x["id"] for x in envs["roles/coo"].scenario(coo_task).public["staff"]]
    projects = [a["project"] for a in ans.arguments["assignments"]] + ans.arguments["unstaffed"]
    ans.arguments["assignments"] = [{"project": p, "staff": x} for p in projects for x in staff]
    ans.arguments["unstaffed"] = []
    verdict = envs["roles/coo"].verify(coo_task, [ans])
    assert verdict.reward == 0.0 and any("more than once" in e for e in verdict.details["evidence"])


def bad_answer(env, task):
    s = env.scenario(task)
    ans = gt_answer(task)
    if env.role == "cto":
        sel = {c["component"]: c["options"][0] for c in s.public["components"]}
        if sel == ans.arguments["selection"]:
            sel = {c["component"]: c["options"][-1] for c in s.public["components"]}
        return ToolCall(cto.SUBMIT, {"selection": sel, "claimed_tco": cto.evaluate(s.public, sel)["tco"]})
    return ToolCall("escalate", {"reason": "unsure"})


def test_submitting_twice_keeps_the_first_answer(envs, task_sets):
    for name in SINGLE:
        env = envs[name]
        for task in [t for t in task_sets[name] if not t.metadata["infeasible"]][:10]:
            wrong = bad_answer(env, task)
            first_wrong = env.verify(task, [*task.ground_truth[:-1], wrong, task.ground_truth[-1]])
            alone = env.verify(task, [*task.ground_truth[:-1], wrong])
            assert first_wrong.reward == alone.reward < 1.0
            assert first_wrong.details["extra_answers"] == 1
            assert any("already submitted" in c.error for c in first_wrong.invalid_calls)
            first_right = env.verify(task, [*task.ground_truth, wrong])
            assert first_right.reward == 1.0 and first_right.details["extra_answers"] == 1


def test_escalating_a_feasible_scenario_scores_zero(envs, task_sets):
    for name in (*SINGLE, "roles/council"):
        env = envs[name]
        task = next(t for t in task_sets[name] if not t.metadata["infeasible"])
        verdict = env.verify(task, [ToolCall("escalate", {"reason": "too hard"})])
        assert verdict.reward == 0.0 and verdict.details["label"] == "wrong_escalation"
        assert "feasible" in verdict.details["evidence"][0]


def test_not_escalating_an_infeasible_scenario_scores_zero(envs):
    for name in (*SINGLE, "roles/council"):
        env = envs[name]
        task = next(t for t in env.generate_tasks(200, 77) if t.metadata["infeasible"])
        s = env.scenario(task)
        if name == "roles/council":
            full = s.private["full"]
            sel = {c["component"]: c["options"][0] for c in full["components"]}
            calls = [*task.ground_truth[:-1], ToolCall("propose_plan", {"selection": sel}),
                     ToolCall("commit_plan", {"plan_id": "PLAN-1", "claimed_tco": 1.0})]
        elif name == "roles/cto":
            sel = {c["component"]: c["options"][0] for c in s.public["components"]}
            calls = [ToolCall(cto.SUBMIT, {"selection": sel, "claimed_tco": cto.evaluate(s.public, sel)["tco"]})]
        else:
            ans = random_answer(s, random.Random(1))
            while ans.name == "escalate":
                ans = random_answer(s, random.Random(ans.arguments["reason"] + "x"))
            calls = [ans]
        verdict = env.verify(task, calls)
        assert verdict.reward == 0.0 and verdict.details["label"] == "missed_escalation", verdict.to_dict()
        assert verdict.details["infeasible_scenario"]


def test_claiming_the_optimum_for_another_plan_scores_zero(envs, task_sets):
    env = envs["roles/cto"]
    for task in [t for t in task_sets["roles/cto"] if not t.metadata["infeasible"]][:20]:
        wrong = bad_answer(env, task)
        if wrong.name != cto.SUBMIT:
            continue
        true_tco = wrong.arguments["claimed_tco"]
        wrong.arguments["claimed_tco"] = gt_answer(task).arguments["claimed_tco"]
        verdict = env.verify(task, [wrong])
        if abs(true_tco - wrong.arguments["claimed_tco"]) > 0.005 * true_tco + 0.5:
            assert verdict.reward == 0.0 and verdict.details["label"] == "hallucinated_number"


def test_malformed_and_unknown_calls_never_crash(envs, task_sets):
    for name in (*SINGLE, "roles/council"):
        env = envs[name]
        task = task_sets[name][0]
        junk = [ToolCall("nope", {}), ToolCall(task.ground_truth[-1].name, None, "{not json", parse_error="bad JSON"),
                ToolCall(task.ground_truth[-1].name, {"unexpected": 1}), ToolCall("escalate", {"reason": 3})]
        verdict = env.verify(task, junk)
        assert verdict.reward == 0.0 and verdict.details["label"] == "format" and len(verdict.invalid_calls) == 4
        session = env.session(task)
        assert '"error"' in session.call("nope", {})
        assert "not valid JSON" in session.call(task.ground_truth[-1].name, "{oops")
        assert "JSON object" in session.call(task.ground_truth[-1].name, [1, 2])
        assert env.verify(task, task.ground_truth).reward == 1.0
