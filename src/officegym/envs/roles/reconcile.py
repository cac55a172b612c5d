"""ReconcileGPT: choose the plan a stated governance rule prefers among stakeholders who disagree.

Each stakeholder's utility for a plan is the weighted sum of the plan's five scores (weights in its
memo); it has a status-quo utility and possibly vetoes. A plan is acceptable when nobody vetoes it and
it gives everyone more than their status quo. The rule depends on the level: utilitarian (1-3),
max-min (4-6), weighted Nash bargaining (7-10). The reward is
acceptable x (0.8 (0.5 [best] + 0.5 score / best score) + 0.2 conflict-detection F1), with 0 for a
vetoed, Pareto-dominated or unacceptable plan and for a wrong claimed score; no acceptable plan
means the right answer is to escalate. At levels 1-3 the evaluate_plan calculator gives a plan's
utilities and rule score, and the oracle reads its claimed score off it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from officegym.core.types import ToolCall, ToolSpec
from officegym.envs.roles.base import (
    ESCALATE,
    ESCALATE_SPEC,
    Grade,
    RoleEnvironment,
    Scenario,
    ToolRefusal,
    claim_matches,
    draw_scenario,
    escalation_grade,
    infeasible_seed,
    tool,
)
from officegym.envs.roles.names import company_and_product

ROLE = "reconcile"
SUBMIT = "submit_resolution"
EVALUATE = "evaluate_plan"  # the calculator (offered at levels 1-3) whose score the answer claims
STAKEHOLDERS = ("CTO", "COO", "Cost", "Risk", "Legal")
ATTRIBUTES = ("delivery_speed", "cost_savings", "risk_reduction", "scope_coverage", "compliance")
FOCUS = {  # the attributes each stakeholder weighs most
    "CTO": ("delivery_speed", "scope_coverage"), "COO": ("delivery_speed", "risk_reduction"),
    "Cost": ("cost_savings",), "Risk": ("risk_reduction", "compliance"), "Legal": ("compliance",),
}
OBJECTIVES = {
    "CTO": "ship the platform with the widest useful scope, fast", "COO": "deliver on time without disrupting operations",
    "Cost": "keep spend and run costs down", "Risk": "reduce delivery and security risk",
    "Legal": "stay compliant and avoid contractual exposure",
}
VENDORS = ("in-house", "vendor-a", "vendor-b", "vendor-c")
SCOPE = ("mobile", "reporting", "sso", "api", "analytics")
TIMELINES = (6, 8, 12, 16, 24)
N_STAKEHOLDERS = (2, 2, 3, 3, 3, 4, 4, 5, 5, 5)
N_PLANS = (6, 8, 10, 12, 14, 16, 20, 24, 28, 32)
RULES = ("utilitarian",) * 3 + ("maxmin",) * 3 + ("nash",) * 4
TOOLS_FROM_LEVEL = 4
SCORE_TOLERANCE = 1e-3
CONFLICT_WEIGHT = 0.2
EPS = 1e-12

RULE_TEXT = {
    "utilitarian": "utilitarian: maximise the sum over stakeholders of the normalised gain "
                   "(u - status_quo) / (best - status_quo)",
    "maxmin": "max-min (egalitarian): maximise the smallest normalised gain (u - status_quo) / (best - status_quo) "
              "over stakeholders",
    "nash": "weighted Nash bargaining: maximise the product over stakeholders of (u - status_quo) raised to the "
            "stakeholder's bargaining weight",
}
SYSTEM = (
    "You are ReconcileGPT, the neutral decision engine of an executive council. Stakeholders disagree about a plan. "
    "A stakeholder's utility u for a plan is the sum over the plan's five scores of score x the stakeholder's weight "
    "for it (weights in its memo). A plan is admissible when no stakeholder vetoes it, and acceptable when it is "
    "admissible and gives every stakeholder a utility strictly above its status quo. In normalised gains, 'best' "
    "is the stakeholder's highest utility over admissible plans. Pareto-dominated plans are never acceptable "
    "answers. Finish with exactly one call: {submit}(plan_id, claimed_score, conflicts, binding_vetoes, "
    "tradeoff_note), where claimed_score is the chosen plan's score under the governance rule (recomputed; a "
    "wrong figure scores 0), conflicts lists the pairs of stakeholders whose favourite admissible plans differ, "
    "and binding_vetoes lists the stakeholders whose vetoes change the outcome (with that stakeholder's vetoes "
    "lifted and the scores recomputed, the best plan under the rule would be one it vetoes). If no plan is "
    "acceptable, call {escalate}(reason) instead. The first answer is final."
)


def utility(memo: dict[str, Any], plan: dict[str, Any]) -> int:
    return sum(memo["weights"][a] * plan["scores"][a] for a in ATTRIBUTES)


def vetoes(memo: dict[str, Any], plan: dict[str, Any]) -> bool:
    for v in memo["vetoes"]:
        value = plan[v["field"]] if v["field"] in plan else plan["scores"][v["field"]]
        if ("equals" in v and value == v["equals"]) or ("below" in v and value < v["below"]):
            return True
    return False


def normalised_gain(u: float, best: float, status_quo: float) -> float:
    """(u - status_quo) / (best - status_quo): the share of its achievable gain a plan gives a stakeholder.

    A stakeholder whose best admissible utility does not exceed its status quo can gain nothing (then no
    plan is acceptable and the right answer is to escalate), so the ratio has no range to measure against.
    It gets 1.0 when the plan gives it its best or more, as a plan at `best` does otherwise (all it can
    get), and 0.0 below that: it keeps none of a gain that does not exist. Finite either way, so the
    rule's score of any plan (claimed by a baseline, reported in evidence) is a number.
    """
    span = best - status_quo
    if span > 0:
        return (u - status_quo) / span
    return 1.0 if u >= best else 0.0


def veto_text(v: dict[str, Any]) -> str:
    return f"no plan with {v['field']} = {v['equals']}" if "equals" in v else f"no plan with {v['field']} below {v['below']}"


class Table:
    """Utilities, admissibility and rule scores of every plan, for one set of lifted vetoes."""

    def __init__(self, public: dict[str, Any], lifted: str | None = None, base: Table | None = None):
        self.public = public
        memos, plans = public["memos"], public["plans"]
        self.names = [m["agent"] for m in memos]
        if base is not None:  # same plans and memos: reuse the utilities and vetoes
            self.u, self.vetoed_by = base.u, base.vetoed_by
        else:
            self.u = [[utility(m, p) for m in memos] for p in plans]
            self.vetoed_by = [[m["agent"] for m in memos if vetoes(m, p)] for p in plans]
        self.admissible = [not [s for s in v if s != lifted] for v in self.vetoed_by]
        self.status_quo = [m["status_quo_utility"] for m in memos]
        self.weight = [m.get("bargaining_weight", 1) for m in memos]
        adm = [i for i, ok in enumerate(self.admissible) if ok]
        self.best = [max((self.u[i][k] for i in adm), default=-math.inf) for k in range(len(memos))]
        self.acceptable = [ok and all(u > d for u, d in zip(self.u[i], self.status_quo))
                           for i, ok in enumerate(self.admissible)]

    def score(self, i: int) -> float:
        rule = self.public["rule"]
        gains = [u - d for u, d in zip(self.u[i], self.status_quo)]
        if rule == "nash":
            return math.prod(g ** w for g, w in zip(gains, self.weight))
        normalised = [normalised_gain(u, b, d) for u, b, d in zip(self.u[i], self.best, self.status_quo)]
        return sum(normalised) if rule == "utilitarian" else min(normalised)

    def dominated(self, i: int) -> bool:
        mine = self.u[i]
        return any(self.admissible[j] and j != i and all(a >= b for a, b in zip(self.u[j], mine)) and self.u[j] != mine
                   for j in range(len(self.u)))

    def winner(self, among: Sequence[int] | None = None) -> tuple[float, int | None]:
        """The best acceptable plan (ties: larger utility sum, which is never dominated)."""
        pool = [i for i in (among if among is not None else range(len(self.u))) if self.acceptable[i]]
        if not pool:
            return -math.inf, None
        i = max(pool, key=lambda j: (self.score(j), sum(self.u[j]), -j))
        return self.score(i), i


def labels(public: dict[str, Any]) -> dict[str, Any]:
    """The rule's best plan and score, the conflicting pairs and the binding vetoes."""
    table = Table(public)
    best_score, best = table.winner()
    favourites = []
    adm = [i for i, ok in enumerate(table.admissible) if ok]
    for k in range(len(table.names)):
        top = max((table.u[i][k] for i in adm), default=None)
        favourites.append({i for i in adm if table.u[i][k] == top})
    conflicts = sorted("|".join(sorted((a, b))) for x, a in enumerate(table.names) for y, b in enumerate(table.names)
                       if x < y and not favourites[x] & favourites[y])
    binding = []
    for memo in public["memos"]:
        if not memo["vetoes"]:
            continue
        lifted = Table(public, memo["agent"], table)
        top, _ = lifted.winner()
        kept, _ = lifted.winner([i for i in range(len(lifted.u)) if memo["agent"] not in lifted.vetoed_by[i]])
        if top > kept + EPS * max(1.0, abs(top)):
            binding.append(memo["agent"])
    return {"best": best, "best_score": best_score, "conflicts": conflicts, "binding_vetoes": sorted(binding)}


def _scores(rng: random.Random, vendor: str, timeline: int, budget_k: int, scope: list[str]) -> dict[str, int]:
    def clamp(x: float) -> int:
        return max(0, min(10, round(x + rng.uniform(-1.5, 1.5))))

    # Levers trade off: scope costs speed and money, speed costs risk, cheap vendors cost compliance.
    base = VENDORS.index(vendor)
    return {
        "delivery_speed": clamp(12 - timeline / 2.5 - 0.8 * len(scope)),
        "cost_savings": clamp(12 - budget_k / 80 - 0.6 * len(scope) + (1, 0, 2, -1)[base]),
        "risk_reduction": clamp((3, 7, 5, 8)[base] + (timeline - 12) / 4), "scope_coverage": clamp(2 * len(scope)),
        "compliance": clamp((6, 8, 3, 7)[base] + (budget_k - 500) / 200),
    }


def _draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    i = difficulty - 1
    names = sorted(rng.sample(STAKEHOLDERS, N_STAKEHOLDERS[i]), key=STAKEHOLDERS.index)
    rule = RULES[i]
    plans = []
    for k in range(N_PLANS[i]):
        vendor, timeline = rng.choice(VENDORS), rng.choice(TIMELINES)
        budget_k = 200 + 50 * rng.randrange(13)
        scope = sorted(rng.sample(SCOPE, rng.randint(1, len(SCOPE))))
        plans.append({"id": f"PLAN-{k + 1:02d}", "vendor": vendor, "timeline_weeks": timeline, "budget_k_usd": budget_k,
                      "scope": scope, "scores": _scores(rng, vendor, timeline, budget_k, scope)})
    memos = []
    for name in names:
        weights = {a: (rng.randint(3, 5) if a in FOCUS[name] else rng.randint(0, 2)) for a in ATTRIBUTES}
        memo: dict[str, Any] = {"agent": name, "objective": OBJECTIVES[name], "weights": weights, "vetoes": []}
        if name in ("Risk", "Legal") and difficulty >= 2 and rng.random() < 0.8:
            if name == "Legal":
                memo["vetoes"].append(rng.choice([{"field": "vendor", "equals": rng.choice(VENDORS[1:])},
                                                  {"field": "compliance", "below": rng.randint(4, 6)}]))
            else:
                memo["vetoes"].append(rng.choice([{"field": "timeline_weeks", "below": rng.choice((8, 12))},
                                                  {"field": "risk_reduction", "below": rng.randint(3, 5)}]))
        if rule == "nash":
            memo["bargaining_weight"] = rng.choice((1, 1, 2))
        memos.append(memo)
    for memo in memos:
        utilities = sorted(utility(memo, p) for p in plans)
        # tension rises with the level: the status quo sits higher in the stakeholder's utility range
        memo["status_quo_utility"] = utilities[int(len(utilities) * rng.uniform(0.05, 0.15 + 0.02 * difficulty))]
        memo["constraints"] = [veto_text(v) for v in memo["vetoes"]]
        memo["assumptions"] = ["utilities are additive over the five plan scores"]
    public = {"stakeholders": names, "rule": rule, "plans": plans, "memos": memos}
    found = labels(public)
    why = ""
    if infeasible:
        table = Table(public)
        adm = [k for k, ok in enumerate(table.admissible) if ok]
        if not adm:
            return None
        victim = rng.choice(memos)
        victim["status_quo_utility"] = max(utility(victim, plans[k]) for k in adm) + rng.randint(0, 3)
        found = labels(public)
        if found["best"] is not None:
            return None
        why = (f"no admissible plan gives {victim['agent']} more than its status quo utility "
               f"{victim['status_quo_utility']}")
    elif found["best"] is None:
        return None
    return {"public": public, "labels": found, "why": why}


def _memo_line(memo: dict[str, Any]) -> str:
    weights = ", ".join(f"{a} {w}" for a, w in memo["weights"].items())
    parts = [f"weights: {weights}", f"status quo utility {memo['status_quo_utility']}"]
    if "bargaining_weight" in memo:
        parts.append(f"bargaining weight {memo['bargaining_weight']}")
    if memo["vetoes"]:
        parts.append("vetoes: " + "; ".join(veto_text(v) for v in memo["vetoes"]))
    return f"- {memo['agent']} ({memo['objective']}): " + "; ".join(parts)


def _plan_line(plan: dict[str, Any]) -> str:
    scores = ", ".join(f"{a} {plan['scores'][a]}" for a in ATTRIBUTES)
    return (f"- {plan['id']}: {plan['vendor']}, {plan['timeline_weeks']} weeks, ${plan['budget_k_usd']}k, "
            f"scope {'+'.join(plan['scope'])}; {scores}")


def _brief(rng: random.Random, public: dict[str, Any], difficulty: int) -> str:
    company, product = company_and_product(rng)
    lines = [
        f"The {', '.join(public['stakeholders'])} agents of {company} disagree about the delivery plan for the "
        f"{product}. There are {len(public['plans'])} candidate plans.",
        f"Governance rule: {RULE_TEXT[public['rule']]}.",
        "Choose the acceptable plan with the highest score under this rule, report its score, the conflicting pairs "
        "and the binding vetoes. If no plan is acceptable, escalate.",
    ]
    if difficulty < TOOLS_FROM_LEVEL:
        lines.append("Memos:")
        lines += [_memo_line(m) for m in public["memos"]]
        lines.append("Plans:")
        lines += [_plan_line(p) for p in public["plans"]]
    else:
        lines.append("The stakeholders' memos and the plans are available through the tools.")
    return "\n".join(lines)


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int) -> Scenario:
    infeasible = infeasible_seed(seed)
    drawn, rng = draw_scenario(ROLE, seed, difficulty, _draw)
    public, found = drawn["public"], drawn["labels"]
    inline = difficulty < TOOLS_FROM_LEVEL
    lookups = () if inline else (
        *(ToolCall("get_memo", {"stakeholder": n}) for n in public["stakeholders"]), ToolCall("list_plans", {}),
    )
    checks: tuple[ToolCall, ...] = ()
    if infeasible:
        answer = ToolCall(ESCALATE, {"reason": drawn["why"]})
        note = ""
    else:
        plan = public["plans"][found["best"]]["id"]
        claimed = round(found["best_score"], 6)
        if difficulty < TOOLS_FROM_LEVEL:  # the calculator is offered: the claimed score is what it returns
            checks = (ToolCall(EVALUATE, {"plan_id": plan}),)
            claimed = evaluate(public, found["best"])["score"]
        answer = ToolCall(SUBMIT, {
            "plan_id": plan, "claimed_score": claimed,
            "conflicts": [pair.split("|") for pair in found["conflicts"]], "binding_vetoes": found["binding_vetoes"],
            "tradeoff_note": f"{plan} maximises the {public['rule']} score among acceptable plans",
        })
        note = f"{plan} is acceptable with {public['rule']} score {found['best_score']:.4f}"
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=infeasible, inline=inline, public=public,
        private={**found, "why_infeasible": drawn["why"], "optimum_note": note},
        brief=_brief(rng, public, difficulty), lookups=lookups, answer=answer,
        template=f"{ROLE}/{public['rule']}/{'inline' if inline else 'tools'}" + ("/escalate" if infeasible else ""),
        checks=checks,
    )


def _plan(s: Scenario, plan_id: Any) -> dict[str, Any]:
    for p in s.public["plans"]:
        if p["id"] == plan_id:
            return p
    raise ToolRefusal(f"unknown plan {plan_id!r}")


def _memo(s: Scenario, a: dict[str, Any]) -> Any:
    for m in s.public["memos"]:
        if m["agent"].lower() == str(a["stakeholder"]).lower():
            return m
    raise ToolRefusal(f"no memo from {a['stakeholder']!r}; stakeholders: {', '.join(s.public['stakeholders'])}")


def evaluate(public: dict[str, Any], i: int) -> dict[str, Any]:
    """What the evaluate_plan calculator returns for plan `i`: every stakeholder's utility, and the
    plan's score under the governance rule (to 6 decimals), which the verifier recomputes. A
    normalised gain needs every stakeholder's best admissible utility above its status quo (true
    whenever some plan is acceptable); otherwise the score is null and the output says why."""
    table = Table(public)
    out: dict[str, Any] = {"utilities": dict(zip(table.names, table.u[i])), "rule": public["rule"]}
    stuck = [n for n, b, d in zip(table.names, table.best, table.status_quo) if not b > d]
    if public["rule"] != "nash" and stuck:
        out["score"] = None
        out["note"] = f"no admissible plan gives {', '.join(stuck)} more than its status quo: no plan is acceptable"
    else:
        out["score"] = round(table.score(i), 6)
    return out


def _evaluate(s: Scenario, a: dict[str, Any]) -> Any:
    plan = _plan(s, a["plan_id"])
    return evaluate(s.public, s.public["plans"].index(plan))


READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    "get_memo": _memo, "list_plans": lambda s, a: s.public["plans"], "get_plan": lambda s, a: _plan(s, a["plan_id"]),
    EVALUATE: _evaluate,
}
_CORE = (
    tool("get_memo", "One stakeholder's memo: objective, weights over the five plan scores, status-quo utility, "
         "vetoes and (under Nash bargaining) bargaining weight.", {"stakeholder": {"type": "string"}}, ["stakeholder"]),
    tool("list_plans", "Every candidate plan with its levers and its five scores (0-10)."),
    tool("get_plan", "One plan.", {"plan_id": {"type": "string"}}, ["plan_id"]),
)
_EVALUATE = tool(EVALUATE, "Calculator: every stakeholder's utility for one plan, and the plan's score under the "
                 "governance rule.", {"plan_id": {"type": "string"}}, ["plan_id"])
_ANSWER = (
    tool(SUBMIT, "Submit the resolution. Ends the episode.", {
        "plan_id": {"type": "string"},
        "claimed_score": {"type": "number", "description": "the chosen plan's score under the governance rule"},
        "conflicts": {"type": "array", "items": {"type": "array", "items": {"type": "string"}, "minItems": 2,
                                                 "maxItems": 2}},
        "binding_vetoes": {"type": "array", "items": {"type": "string"}},
        "tradeoff_note": {"type": "string", "maxLength": 2000},
    }, ["plan_id", "claimed_score", "conflicts", "binding_vetoes"]),
    ESCALATE_SPEC,
)


def f1(predicted: set[str], truth: set[str]) -> float:
    if not predicted and not truth:
        return 1.0
    hits = len(predicted & truth)
    return 2 * hits / (len(predicted) + len(truth))


def grade(scenario: Scenario, answer: ToolCall) -> Grade:
    decided = escalation_grade(scenario, answer)
    if decided is not None:
        return decided
    public, private = scenario.public, scenario.private
    args = answer.arguments
    ids = [p["id"] for p in public["plans"]]
    if args["plan_id"] not in ids:
        return Grade(0.0, False, "invalid_answer", {"feasible": 0.0}, [f"unknown plan {args['plan_id']!r}"])
    i = ids.index(args["plan_id"])
    table = Table(public)
    names = {n.lower(): n for n in public["stakeholders"]}
    predicted = {"|".join(sorted(names.get(str(x).lower(), str(x)) for x in pair)) for pair in args["conflicts"]}
    predicted |= {"veto:" + names.get(str(x).lower(), str(x)) for x in args["binding_vetoes"]}
    truth = set(private["conflicts"]) | {"veto:" + x for x in private["binding_vetoes"]}
    detection = f1(predicted, truth)
    score, best = table.score(i), private["best_score"]
    claims_ok = claim_matches(args["claimed_score"], score, SCORE_TOLERANCE)
    quality = score / best if table.acceptable[i] and best > 0 else 0.0
    optimal = table.acceptable[i] and score >= best * (1 - 1e-9) - EPS
    evidence = []
    if table.vetoed_by[i]:
        evidence.append(f"{args['plan_id']} is vetoed by {', '.join(table.vetoed_by[i])}")
    below = [n for n, u, d in zip(table.names, table.u[i], table.status_quo) if u <= d]
    if below:
        evidence.append(f"{args['plan_id']} does not beat the status quo of {', '.join(below)}")
    dominated = table.acceptable[i] and table.dominated(i)
    if dominated:
        evidence.append(f"{args['plan_id']} is Pareto-dominated by another admissible plan")
    feasible = table.acceptable[i] and not dominated
    components = {"feasible": float(feasible), "optimal": float(optimal and feasible),
                  "quality_ratio": quality if feasible else 0.0, "conflict_f1": detection, "claims_ok": float(claims_ok),
                  "stakeholder_satisfaction": _satisfaction(table, i) if feasible else 0.0}
    evidence.append(f"{public['rule']} score {score:.6g} vs best {best:.6g} (ratio {quality:.4f}); "
                    f"conflict F1 {detection:.3f}")
    missing, extra = sorted(truth - predicted), sorted(predicted - truth)
    if missing or extra:
        evidence.append(f"conflicts/vetoes missed: {missing or 'none'}; wrongly claimed: {extra or 'none'}")
    if not claims_ok:
        evidence.append(f"claimed score {args['claimed_score']} but the plan's score is {score:.6g}")
        return Grade(0.0, False, "hallucinated_number", components, evidence)
    if not feasible:
        return Grade(0.0, False, "infeasible", components, evidence)
    reward = (1 - CONFLICT_WEIGHT) * (0.5 * optimal + 0.5 * quality) + CONFLICT_WEIGHT * detection
    matched = optimal and detection == 1.0
    label = "correct" if matched else ("suboptimal" if not optimal else "conflicts_wrong")
    return Grade(reward, matched, label, components, evidence)


def _satisfaction(table: Table, i: int) -> float:
    """The smallest normalised gain over stakeholders (reported, not rewarded)."""
    return min(normalised_gain(u, b, d) for u, b, d in zip(table.u[i], table.best, table.status_quo))


class ReconcileEnvironment(RoleEnvironment):
    """Conflict resolution among stakeholders under a stated governance rule."""

    role = ROLE
    name = "roles/reconcile"
    answer_tools = (SUBMIT, ESCALATE)

    generator = staticmethod(generate)
    reader_table = READERS
    system_template = SYSTEM
    grader = staticmethod(grade)

    def tool_specs(self, difficulty: int | None = None) -> list[ToolSpec]:
        leak = difficulty is not None and difficulty < TOOLS_FROM_LEVEL  # the calculator only while the task is easy
        return [*_CORE, *((_EVALUATE,) if leak else ()), *_ANSWER]
