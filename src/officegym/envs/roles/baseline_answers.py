"""The role baselines' answers, as pure functions of a scenario: a greedy heuristic per role and a
uniformly random valid answer. Figures they claim are computed honestly, so their rewards measure
decisions, not arithmetic; baselines.py plays them turn by turn.

Heuristics:
- cto: cheapest certified option per component, then single swaps that most reduce the broken
  latency, availability, skill and compatibility requirements at the least extra cost; escalates
  when its plan is over budget.
- coo: must-do projects first, then by gain per hour; each to the eligible person with the best gain
  who still fits every rule; escalates when a must-do project fits nobody.
- reconcile: the acceptable plan with the largest plain sum of utilities (ignoring the stated rule);
  conflicts from the favourite plans, no binding vetoes.
- risk: flags every row that looks risky on its surface (mitigations not checked), likelihood 2,
  impact 2, the first mitigation code of the type.
- cost: cheapest option meeting each workload's own floor and latency limit, then upgrades that fix
  the policy constraints at the least extra cost; provider terms are ignored when choosing.
- council: proposes plans in order of price from the Cost facts, skipping options named in
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from typing import Any

from officegym.core.types import ToolCall
from officegym.envs.roles import coo, cost, cto, reconcile, risk
from officegym.envs.roles.base import ESCALATE, Scenario
from officegym.envs.roles.solvers import allocation_feasible


def escalate(reason: str) -> ToolCall:
    return ToolCall(ESCALATE, {"reason": reason})


# --- greedy answers


def _violation(figures: dict[str, Any], req: dict[str, Any], n: int) -> float:
    """How far a CTO selection is from meeting its coupled requirements (0 when it meets them)."""
    v = 0.0
    if "latency_slo_ms" in req:
        v += max(0.0, figures["latency"] - req["latency_slo_ms"]) / req["latency_slo_ms"]
    if "availability_slo" in req:
        v += max(0.0, math.log(req["availability_slo"]) - math.log(figures["availability"])) * 100
    if "min_avg_skill_fit" in req:
        v += max(0.0, req["min_avg_skill_fit"] - figures["skill"]) * n
    return v + sum(1 for family, _ in figures["violations"] if family == "compatibility")


def greedy_cto(s: Scenario) -> ToolCall:
    public, req = s.public, s.public["requirements"]
    tags = set(req.get("required_compliance", ()))
    allowed = {c["component"]: [o for o in c["options"] if tags <= set(public["options"][o]["compliance"])]
               for c in public["components"]}
    empty = [c for c, ids in allowed.items() if not ids]
    if empty:
        return escalate(f"no certified option for {', '.join(empty)}")
    sel = {c: min(ids, key=lambda o: (cto.tco(public["options"][o]), o)) for c, ids in allowed.items()}
    n = len(sel)
    for _ in range(3 * n):
        figures = cto.evaluate(public, sel)
        now = _violation(figures, req, n)
        if now == 0:
            break
        best = None
        for c, ids in allowed.items():
            for o in ids:
                if o == sel[c]:
                    continue
                trial = {**sel, c: o}
                f = cto.evaluate(public, trial)
                key = (_violation(f, req, n), f["tco"])
                if key[0] < now and (best is None or key < best[0]):
                    best = (key, trial)
        if best is None:
            break
        sel = best[1]
    figures = cto.evaluate(public, sel)
    if figures["tco"] > req["budget_tco_usd"]:
        return escalate(f"the plan found costs {figures['tco']}, over the budget")
    return ToolCall(cto.SUBMIT, {"selection": sel, "claimed_tco": figures["tco"], "rationale": "greedy"})


def greedy_coo(s: Scenario) -> ToolCall:
    public = s.public
    problem = coo.problem_of(public)
    n_staff = len(public["staff"])
    order = sorted(range(len(public["projects"])), key=lambda p: (
        not problem.must[p],
        -max((g for g in problem.gain[p] if g is not None), default=-math.inf) / problem.hours[p]))
    assign: list[int | None] = [None] * len(public["projects"])
    for p in order:
        choices = sorted((e for e in range(n_staff) if problem.gain[p][e] is not None),
                         key=lambda e, p=p: -problem.gain[p][e])  # type: ignore[operator]
        for e in choices:
            if problem.gain[p][e] < 0 and not problem.must[p]:  # type: ignore[operator]
                break
            trial = list(assign)
            trial[p] = e
            if _partial_ok(problem, trial):
                assign = trial
                break
        if assign[p] is None and problem.must[p]:
            return escalate(f"must-do project {public['projects'][p]['id']} fits nobody")
    # drop projects whose prerequisite stayed unstaffed
    for p in range(len(assign)):
        req = problem.requires[p]
        if assign[p] is not None and req is not None and assign[req] is None and not problem.must[p]:
            assign[p] = None
    return _coo_answer(public, assign)


def _partial_ok(problem: Any, assign: list[int | None]) -> bool:
    """Every rule but must-do and prerequisites, on the projects placed so far."""
    relaxed = type(problem)(gain=problem.gain, hours=problem.hours, capacity=problem.capacity,
                            max_projects=problem.max_projects, must=[False] * len(assign),
                            exclusive=problem.exclusive, requires=[None] * len(assign), deadline=problem.deadline,
                            weekly_hours=problem.weekly_hours)
    return allocation_feasible(relaxed, tuple(assign))


def _coo_answer(public: dict[str, Any], assign: list[int | None]) -> ToolCall:
    mapping = {p["id"]: (None if e is None else public["staff"][e]["id"]) for p, e in zip(public["projects"], assign)}
    value = coo.check(public, mapping)["value"]
    return ToolCall(coo.SUBMIT, {
        "assignments": [{"project": p, "staff": sid} for p, sid in mapping.items() if sid is not None],
        "unstaffed": [p for p, sid in mapping.items() if sid is None], "claimed_value": value})


def _reconcile_answer(s: Scenario, table: reconcile.Table, i: int, conflicts: list[list[str]],
                      vetoes: list[str]) -> ToolCall:
    return ToolCall(reconcile.SUBMIT, {"plan_id": s.public["plans"][i]["id"], "claimed_score": table.score(i),
                                       "conflicts": conflicts, "binding_vetoes": vetoes, "tradeoff_note": "baseline"})


def greedy_reconcile(s: Scenario) -> ToolCall:
    table = reconcile.Table(s.public)
    pool = [i for i, ok in enumerate(table.acceptable) if ok]
    if not pool:
        return escalate("no plan beats every status quo")
    i = max(pool, key=lambda j: (sum(table.u[j]), -j))
    found = reconcile.labels(s.public)
    return _reconcile_answer(s, table, i, [p.split("|") for p in found["conflicts"]], [])


def greedy_risk(s: Scenario) -> ToolCall:
    public = s.public
    if public["restricted"] is not None:
        return escalate(f"{public['restricted']} cannot be read")
    entries = []
    for t in risk.TYPES:
        key = risk.ARTIFACTS[t.artifact][1]
        for row in public["artifacts"].get(t.artifact, ()):
            if t.looks_risky(row, public):
                entries.append({"risk_type": t.name, "artifact": t.artifact, "item": row[key], "likelihood": 2,
                                "impact": 2, "score": 4, "mitigation": t.acceptable[0]})
    return ToolCall(risk.SUBMIT, {"entries": entries, "overall_score": 4 if entries else 0})


def _cost_violation(public: dict[str, Any], plan: dict[str, str]) -> float:
    policy, bench = public["policy"], public["benchmarks"]
    v = 0.0
    if "min_mean_quality" in policy:
        mean = sum(bench[w][s]["quality"] for w, s in plan.items()) / len(plan)
        v += max(0.0, policy["min_mean_quality"] - mean)
    if "max_spot_workloads" in policy:
        v += max(0, sum(public["skus"][s].get("pricing") == "spot" for s in plan.values()) - policy["max_spot_workloads"])
    if "llm_pipeline_latency_ms" in policy:
        total = sum(bench[w["id"]][plan[w["id"]]]["latency_ms"] for w in public["workloads"] if w["kind"] == "llm")
        v += max(0.0, total - policy["llm_pipeline_latency_ms"]) / 100
    return v


def greedy_cost(s: Scenario) -> ToolCall:
    public = s.public
    bench, skus = public["benchmarks"], public["skus"]
    allowed = {}
    for w in public["workloads"]:
        ok = [o for o in w["options"] if bench[w["id"]][o]["quality"] >= w["quality_floor"]
              and (w["latency_limit_ms"] is None or bench[w["id"]][o]["latency_ms"] <= w["latency_limit_ms"])]
        if not ok:
            return escalate(f"no option for {w['id']} meets its floor")
        allowed[w["id"]] = ok
    demand = {w["id"]: w["demand"] for w in public["workloads"]}

    def list_price(plan: dict[str, str]) -> float:
        return sum(demand[w] * skus[o]["unit_price_usd"] for w, o in plan.items())

    plan = {w: min(ids, key=lambda o, w=w: (demand[w] * skus[o]["unit_price_usd"], o)) for w, ids in allowed.items()}
    for _ in range(3 * len(plan)):
        now = _cost_violation(public, plan)
        if now == 0:
            break
        trials = [({**plan, w: o}) for w, ids in allowed.items() for o in ids if o != plan[w]]
        better = [(_cost_violation(public, t), list_price(t), sorted(t.items()), t) for t in trials]
        better = [b for b in better if b[0] < now]
        if not better:
            break
        plan = min(better)[3]
    return ToolCall(cost.SUBMIT, {"plan": plan, "claimed_monthly_cost": cost.bill(public, plan)["total_usd"]})


GREEDY: dict[str, Callable[[Scenario], ToolCall]] = {
    "cto": greedy_cto, "coo": greedy_coo, "reconcile": greedy_reconcile, "risk": greedy_risk, "cost": greedy_cost,
}


# --- random answers


def random_answer(s: Scenario, rng: random.Random) -> ToolCall:
    """A structurally valid answer drawn uniformly (figures claimed honestly); 1 in 10 escalates."""
    public = s.public
    if rng.random() < 0.1:
        return escalate("random")
    if s.role == "cto":
        sel = {c["component"]: rng.choice(c["options"]) for c in public["components"]}
        return ToolCall(cto.SUBMIT, {"selection": sel, "claimed_tco": cto.evaluate(public, sel)["tco"]})
    if s.role == "coo":
        n_staff = len(public["staff"])
        return _coo_answer(public, [rng.choice([None, *range(n_staff)]) for _ in public["projects"]])
    if s.role == "reconcile":
        table = reconcile.Table(public)
        names = public["stakeholders"]
        pairs = [list(p) for p in itertools.combinations(names, 2) if rng.random() < 0.5]
        return _reconcile_answer(s, table, rng.randrange(len(public["plans"])), pairs, [])
    if s.role == "risk":
        entries = []
        for artifact, rows in public["artifacts"].items():
            types = [t for t in risk.TYPES if t.artifact == artifact]
            for row in rows:
                if rng.random() < 0.3:
                    t = rng.choice(types)
                    lik, imp = rng.randint(1, 4), rng.randint(1, 3)
                    entries.append({"risk_type": t.name, "artifact": artifact, "item": row[risk.ARTIFACTS[artifact][1]],
                                    "likelihood": lik, "impact": imp, "score": lik * imp,
                                    "mitigation": rng.choice(risk.MITIGATIONS)})
        return ToolCall(risk.SUBMIT, {"entries": entries, "overall_score": max((e["score"] for e in entries), default=0)})
    if s.role == "cost":
        plan = {w["id"]: rng.choice(w["options"]) for w in public["workloads"]}
        return ToolCall(cost.SUBMIT, {"plan": plan, "claimed_monthly_cost": cost.bill(public, plan)["total_usd"]})
    raise ValueError(f"no random answer for role {s.role!r}")

