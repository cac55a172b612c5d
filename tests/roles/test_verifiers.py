"""Verifiers: the oracle scores 1, perturbed answers less, wrong claimed figures 0; evidence says why."""

from __future__ import annotations

import copy

import pytest

from officegym.core.types import ToolCall
from officegym.envs.roles import coo, cost, cto, reconcile

ROLE_ENVS = ("roles/cto", "roles/coo", "roles/reconcile", "roles/risk", "roles/cost", "roles/council")


def answer_of(task):
    return copy.deepcopy(task.ground_truth[-1])


def with_answer(task, answer):
    return [*task.ground_truth[:-1], answer]


@pytest.mark.parametrize("name", ROLE_ENVS)
def test_the_oracle_scores_one(envs, task_sets, name):
    for task in task_sets[name]:
        verdict = envs[name].verify(task, task.ground_truth)
        assert verdict.reward == 1.0 and verdict.matched, verdict.to_dict()
        assert verdict.details["label"] in ("correct", "correct_escalation")
        assert not verdict.invalid_calls


def feasible(task_sets, name):
    return [t for t in task_sets[name] if not t.metadata["infeasible"]]


def test_cto_perturbed_selection_scores_less(envs, task_sets):
    env, checked = envs["roles/cto"], 0
    for task in feasible(task_sets, "roles/cto"):
        s = env.scenario(task)
        ans = answer_of(task)
        sel = ans.arguments["selection"]
        comp = next((c for c in s.public["components"]
                     if any(cto.tco(s.public["options"][o]) > cto.tco(s.public["options"][sel[c["component"]]])
                            for o in c["options"])), None)
        if comp is None:
            continue
        dearer = max(comp["options"], key=lambda o: cto.tco(s.public["options"][o]))
        sel[comp["component"]] = dearer
        figures = cto.evaluate(s.public, sel)
        ans.arguments["claimed_tco"] = figures["tco"]
        verdict = env.verify(task, with_answer(task, ans))
        assert verdict.reward < 1.0 and not verdict.matched
        if not figures["violations"]:
            ratio = s.private["optimum"] / figures["tco"]
            assert verdict.reward == pytest.approx(0.5 * ratio)
            assert verdict.details["label"] == "suboptimal"
        else:
            assert verdict.reward == 0.0 and verdict.details["label"] == "infeasible"
            assert verdict.details["evidence"][0] == figures["violations"][0][1]
        checked += 1
    assert checked >= 20


def test_coo_dropping_a_profitable_project_scores_less(envs, task_sets):
    env, checked = envs["roles/coo"], 0
    for task in feasible(task_sets, "roles/coo"):
        s = env.scenario(task)
        ans = answer_of(task)
        projects = {p["id"]: p for p in s.public["projects"]}
        staff = {x["id"]: x for x in s.public["staff"]}
        gains = {a["project"]: projects[a["project"]]["value_usd"]
                 - staff[a["staff"]]["hourly_cost_usd"] * projects[a["project"]]["effort_hours"]
                 for a in ans.arguments["assignments"]}
        drop = next((p for p, g in gains.items() if g > 0), None)
        if drop is None:
            continue
        ans.arguments["assignments"] = [a for a in ans.arguments["assignments"] if a["project"] != drop]
        ans.arguments["unstaffed"].append(drop)
        mapping = {a["project"]: a["staff"] for a in ans.arguments["assignments"]} | dict.fromkeys(ans.arguments["unstaffed"])
        ans.arguments["claimed_value"] = coo.check(s.public, mapping)["value"]
        verdict = env.verify(task, with_answer(task, ans))
        assert verdict.reward < 1.0
        checked += 1
    assert checked >= 20


def test_reconcile_second_best_plan_and_missed_conflict_score_less(envs, task_sets):
    env, checked = envs["roles/reconcile"], 0
    for task in feasible(task_sets, "roles/reconcile"):
        s = env.scenario(task)
        table = reconcile.Table(s.public)
        others = [i for i, ok in enumerate(table.acceptable) if ok and i != s.private["best"]]
        if others:
            ans = answer_of(task)
            i = others[0]
            ans.arguments.update(plan_id=s.public["plans"][i]["id"], claimed_score=table.score(i))
            assert env.verify(task, with_answer(task, ans)).reward < 1.0
            checked += 1
        if s.private["conflicts"]:
            ans = answer_of(task)
            ans.arguments["conflicts"] = ans.arguments["conflicts"][1:]
            verdict = env.verify(task, with_answer(task, ans))
            assert verdict.reward < 1.0 and verdict.details["label"] == "conflicts_wrong"
            assert "missed" in verdict.details["evidence"][-1]
    assert checked >= 10


def test_risk_wrong_severity_and_missed_risk_score_less(envs, task_sets):
    env = envs["roles/risk"]
    for task in feasible(task_sets, "roles/risk"):
        ans = answer_of(task)
        entry = ans.arguments["entries"][0]
        entry["likelihood"] = 2 if entry["likelihood"] != 2 else 3
        entry["score"] = entry["likelihood"] * entry["impact"]
        ans.arguments["overall_score"] = max(e["score"] for e in ans.arguments["entries"])
        verdict = env.verify(task, with_answer(task, ans))
        assert verdict.reward < 1.0 and verdict.details["components"]["scoring_accuracy"] < 1.0
        assert verdict.details["components"]["f1"] == 1.0
        dropped = answer_of(task)
        dropped.arguments["entries"] = dropped.arguments["entries"][1:]
        dropped.arguments["overall_score"] = max((e["score"] for e in dropped.arguments["entries"]), default=0)
        verdict = env.verify(task, with_answer(task, dropped))
        assert verdict.details["components"]["recall"] < 1.0 and verdict.reward < 1.0


def test_cost_other_plans_never_beat_the_optimum(envs, task_sets):
    env, worse = envs["roles/cost"], 0
    for task in feasible(task_sets, "roles/cost"):
        s = env.scenario(task)
        for w in s.public["workloads"]:
            for option in w["options"]:
                ans = answer_of(task)
                if ans.arguments["plan"][w["id"]] == option:
                    continue
                ans.arguments["plan"][w["id"]] = option
                ans.arguments["claimed_monthly_cost"] = cost.bill(s.public, ans.arguments["plan"])["total_usd"]
                verdict = env.verify(task, with_answer(task, ans))
                assert verdict.reward <= 1.0
                if verdict.reward < 1.0:
                    worse += 1
                    assert verdict.details["label"] in ("infeasible", "suboptimal")
    assert worse > 50


@pytest.mark.parametrize("name", ROLE_ENVS)
def test_a_wrong_claimed_figure_scores_zero(envs, task_sets, name):
    env = envs[name]
    key = {"roles/cto": "claimed_tco", "roles/coo": "claimed_value", "roles/reconcile": "claimed_score",
           "roles/cost": "claimed_monthly_cost", "roles/council": "claimed_tco", "roles/risk": "overall_score"}[name]
    for task in feasible(task_sets, name):
        ans = answer_of(task)
        value = ans.arguments[key]
        ans.arguments[key] = value - 1 if name == "roles/risk" else value * 1.1 + 1
        verdict = env.verify(task, with_answer(task, ans))
        assert verdict.reward == 0.0 and verdict.details["label"] == "hallucinated_number", verdict.to_dict()
        assert verdict.details["components"]["claims_ok"] == 0.0


def test_risk_entry_score_must_be_likelihood_times_impact(envs, task_sets):
    env = envs["roles/risk"]
    task = feasible(task_sets, "roles/risk")[0]
    ans = answer_of(task)
    entry = ans.arguments["entries"][0]
    entry["score"] = entry["likelihood"] * entry["impact"] % 12 + 1
    verdict = env.verify(task, with_answer(task, ans))
    assert verdict.reward == 0.0 and any("is not" in e for e in verdict.details["evidence"])


def test_claims_within_half_a_percent_are_accepted(envs, task_sets):
    env = envs["roles/cto"]
    task = feasible(task_sets, "roles/cto")[0]
    ans = answer_of(task)
    ans.arguments["claimed_tco"] *= 1.004
    assert env.verify(task, with_answer(task, ans)).reward == 1.0


def test_verify_only_judges_the_calls_it_is_given(envs, task_sets):
    env = envs["roles/cto"]
    task = feasible(task_sets, "roles/cto")[-1]
    noise = [ToolCall("estimate_tco", {"selection": {}}), ToolCall("list_components", {})]
    assert env.verify(task, [*noise, *task.ground_truth]).reward == 1.0
    assert env.verify(task, noise).details["label"] == "no_answer"
