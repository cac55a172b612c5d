"""ReconcileGPT: choose the plan a stated governance rule prefers among stakeholders who disagree.

Each stakeholder's utility for a plan is the weighted sum of the plan's five scores; it has a status
quo utility, possibly vetoes (hard constraints) and, under Nash bargaining, a bargaining weight. The
governance rule (utilitarian, max-min or weighted Nash bargaining) and every memo figure are stated in
prose (reconcile_brief.py), over the brief and documents read with `read_document`; the plans' data is
served by list_plans. The search is a tool: `find_agreement` takes the rule and the memos as arguments
and returns the best acceptable plan with its score, the conflicting pairs and the binding vetoes;
`evaluate_plan` scores any plan under given memos and `calculate` does arithmetic. So the agent's skill
is to read the memos right. The verifier is exact and unchanged: acceptable x (0.8 (0.5 [best] + 0.5
score / best score) + 0.2 conflict-detection F1), with 0 for a vetoed, Pareto-dominated or
unacceptable plan and for a wrong claimed score; no acceptable plan means the right answer is to
escalate.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from officegym.core.types import ToolCall
from officegym.envs.roles.base import (
    ESCALATE,
    ESCALATE_SPEC,
    Grade,
    RoleEnvironment,
    Scenario,
    ToolRefusal,
    calculate_tool,
    claim_matches,
    escalation_grade,
    read_tool,
    tool,
)
from officegym.envs.roles.prose import TRAINED
from officegym.envs.roles.reconcile_brief import compose
from officegym.envs.roles.reconcile_draw import draw
from officegym.envs.roles.reconcile_model import (  # noqa: F401  (re-exported: baselines and tests use reconcile.*)
    ATTRIBUTES,
    EPS,
    FOCUS,
    OBJECTIVES,
    RULE_NAMES,
    SCOPE,
    SCORE_TOLERANCE,
    STAKEHOLDERS,
    TIMELINES,
    VENDORS,
    Table,
    arguments_of,
    labels,
    normalised_gain,
    solve,
    utility,
    veto_text,
    vetoes,
)
from officegym.envs.roles.scenario_utils import draw_scenario

ROLE = "reconcile"
SUBMIT = "submit_resolution"
EVALUATE = "evaluate_plan"  # the calculator of any plan's utilities and rule score under given memos
SOLVE = "find_agreement"  # the solver: rule and memos in, the best acceptable plan out
READ = "read_document"
CALCULATE = "calculate"
CONFLICT_WEIGHT = 0.2
FIELDS = ("vendor", "timeline_weeks", "budget_k_usd", *ATTRIBUTES)

SYSTEM = (
    "You are ReconcileGPT, the neutral decision engine of an executive council. Stakeholders disagree about a "
    "delivery plan. The governance rule and each stakeholder's memo (weights, status quo utility, vetoes, "
    "bargaining weight) are written in the brief and in the documents it names (read_document): use what was "
    "decided, not superseded figures, rumours, soft preferences or figures that belong to no memo. A "
    "stakeholder's utility u for a plan is the sum over the plan's five scores (list_plans) of score x the "
    "stakeholder's weight for it (a weight not stated is 0). A veto is a hard constraint: a plan it names is "
    "inadmissible; a preference that is not a veto bars nothing. A plan is acceptable when it is admissible and "
    "gives every stakeholder a utility strictly above its status quo. Rules: utilitarian maximises the sum of "
    "normalised gains (u - status_quo) / (best - status_quo), where best is the stakeholder's highest utility "
    "over admissible plans; max-min maximises the smallest normalised gain; Nash bargaining maximises the product "
    "of (u - status_quo) raised to each stakeholder's bargaining weight (1 unless stated). "
    "find_agreement(rule, stakeholders) returns the best acceptable plan for the memos you pass, with its score, "
    "the conflicting pairs and the binding vetoes; evaluate_plan scores one plan; calculate does arithmetic. "
    "Finish with exactly one call: {submit}(plan_id, claimed_score, conflicts, binding_vetoes, tradeoff_note), "
    "where claimed_score is the plan's score under the rule (recomputed; a wrong figure scores 0), conflicts "
    "lists the pairs of stakeholders whose favourite admissible plans differ, and binding_vetoes the stakeholders "
    "whose vetoes change the outcome. Pareto-dominated plans are never acceptable answers. If no plan is "
    "acceptable, call {escalate}(reason) instead. The first answer is final."
)


# -- the tools' arguments as memos


def _key(text: Any) -> str:
    return "_".join(str(text).lower().replace("-", " ").split())


def memos_from_arguments(public: dict[str, Any], args: dict[str, Any]) -> list[dict[str, Any]]:
    """The solver's `stakeholders` (schema-checked) as memos in the council's order; ToolRefusal for an
    unknown or repeated stakeholder, an unknown score or field, or a veto that is not one condition."""
    known = {n.lower(): n for n in public["stakeholders"]}
    memos: dict[str, dict[str, Any]] = {}
    for item in args["stakeholders"]:
        name = known.get(" ".join(item["name"].lower().split()))
        if name is None:
            raise ToolRefusal(f"unknown stakeholder {item['name'][:60]!r}; the council: {', '.join(public['stakeholders'])}")
        if name in memos:
            raise ToolRefusal(f"{name} is given twice")
        weights = dict.fromkeys(ATTRIBUTES, 0)
        for attr, w in item.get("weights", {}).items():
            if _key(attr) not in weights:
                raise ToolRefusal(f"unknown score {attr[:60]!r}; scores: {', '.join(ATTRIBUTES)}")
            weights[_key(attr)] = w
        memos[name] = {"agent": name, "weights": weights, "status_quo_utility": item["status_quo"],
                       "bargaining_weight": item.get("bargaining_weight", 1),
                       "vetoes": [_veto(v, name) for v in item.get("vetoes", ())]}
    return [memos[n] for n in public["stakeholders"] if n in memos]


def _veto(v: dict[str, Any], name: str) -> dict[str, Any]:
    field = _key(v["field"])
    if field not in FIELDS:
        raise ToolRefusal(f"{name}: unknown veto field {v['field'][:60]!r}; fields: {', '.join(FIELDS)}")
    sides = [s for s in ("equals", "below", "above") if s in v]
    if len(sides) != 1:
        raise ToolRefusal(f"{name}: a veto takes exactly one of equals, below, above")
    side = sides[0]
    if (field == "vendor") != (side == "equals"):
        raise ToolRefusal(f"{name}: a vendor veto takes equals (a vendor); a {field} veto takes below or above")
    if side == "equals":
        vendor = _key(v["equals"]).replace("_", "-")
        if vendor not in VENDORS:
            raise ToolRefusal(f"{name}: unknown vendor {v['equals'][:60]!r}; vendors: {', '.join(VENDORS)}")
        return {"field": field, "equals": vendor}
    if not isinstance(v[side], int | float) or isinstance(v[side], bool):
        raise ToolRefusal(f"{name}: {side} takes a number")
    return {"field": field, side: v[side]}


def _public_of(s: Scenario, a: dict[str, Any]) -> dict[str, Any]:
    memos = memos_from_arguments(s.public, a)
    return {"stakeholders": [m["agent"] for m in memos], "rule": a["rule"], "plans": s.public["plans"], "memos": memos}


def find(public: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """What find_agreement answers for a scenario's public facts and the tool's arguments."""
    memos = memos_from_arguments(public, args)
    return solve(public["plans"], args["rule"], memos)


def evaluate(public: dict[str, Any], i: int) -> dict[str, Any]:
    """Every stakeholder's utility for plan `i` and the plan's score under the rule (6 decimals), which
    the verifier recomputes. A normalised gain needs every stakeholder's best admissible utility above
    its status quo (true whenever some plan is acceptable); otherwise the score is null and the output
    says why."""
    table = Table(public)
    out: dict[str, Any] = {"utilities": dict(zip(table.names, table.u[i])), "rule": public["rule"]}
    stuck = [n for n, b, d in zip(table.names, table.best, table.status_quo) if not b > d]
    if public["rule"] != "nash" and stuck:
        out["score"] = None
        out["note"] = f"no admissible plan gives {', '.join(stuck)} more than its status quo: no plan is acceptable"
    else:
        out["score"] = round(table.score(i), 6)
    out["vetoed_by"] = table.vetoed_by[i]
    return out


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int, subset: str = TRAINED) -> Scenario:
    """The scenario of (seed, difficulty); `subset` picks the brief's wording pool (trained or held
    out): the numbers, and so the answer, are the same for both."""
    drawn, rng = draw_scenario(ROLE, seed, difficulty, draw)
    brief, documents, features = compose(rng, drawn, difficulty, subset)
    public = {**drawn["public"], "documents": documents}
    found = drawn["labels"]
    lookups = tuple(ToolCall(READ, {"doc_id": d}) for d in documents)
    solver_call = ToolCall(SOLVE, arguments_of(public))
    result = find(public, solver_call.arguments)
    if drawn["infeasible"]:
        answer = ToolCall(ESCALATE, {"reason": result["result"]})
        note = ""
    else:  # the claimed score and the labels are what the solver returned
        plan = result["plan_id"]
        answer = ToolCall(SUBMIT, {
            "plan_id": plan, "claimed_score": result["score"], "conflicts": result["conflicts"],
            "binding_vetoes": result["binding_vetoes"],
            "tradeoff_note": f"{plan} maximises the {public['rule']} score among acceptable plans",
        })
        note = f"{plan} is acceptable with {public['rule']} score {found['best_score']:.4f}"
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=drawn["infeasible"], inline=not documents,
        public=public,
        private={**found, "why_infeasible": drawn["why"], "optimum_note": note, "decoys": drawn["decoys"],
                 "updates": sorted(drawn["updates"].items())},
        brief=brief, lookups=lookups, answer=answer,
        template=f"{ROLE}/{public['rule']}/{'inline' if not documents else 'documents'}"
                 + ("/escalate" if drawn["infeasible"] else ""),
        checks=(solver_call,), subset=subset, wording=tuple(features),
    )


def _plan(s: Scenario, plan_id: Any) -> dict[str, Any]:
    for p in s.public["plans"]:
        if p["id"] == plan_id:
            return p
    raise ToolRefusal(f"unknown plan {str(plan_id)[:60]!r}")


def _evaluate(s: Scenario, a: dict[str, Any]) -> Any:
    plan = _plan(s, a["plan_id"])
    return evaluate(_public_of(s, a), s.public["plans"].index(plan))


PLAN_FIELDS = ("id", "vendor", "timeline_weeks", "budget_k_usd", "scope", "scores")
READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    "list_plans": lambda s, a: [{k: p[k] for k in PLAN_FIELDS} for p in s.public["plans"]],
    "get_plan": lambda s, a: {k: _plan(s, a["plan_id"])[k] for k in PLAN_FIELDS},
    READ: read_tool, SOLVE: lambda s, a: find(s.public, a), EVALUATE: _evaluate, CALCULATE: calculate_tool,
}
VETO = {"type": "object", "properties": {
    "field": {"type": "string", "maxLength": 40, "description": "vendor, timeline_weeks, budget_k_usd or a score"},
    "equals": {"type": "string", "maxLength": 40, "description": "vendor vetoes: the vendor"},
    "below": {"type": "number", "description": "plans with the field below this are vetoed"},
    "above": {"type": "number", "description": "plans with the field above this are vetoed"},
}, "required": ["field"], "additionalProperties": False}
STAKEHOLDER = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 60},
    "weights": {"type": "object", "description": "score -> weight (scores left out weigh 0)",
                "additionalProperties": {"type": "number", "minimum": 0, "maximum": 100}},
    "status_quo": {"type": "number", "minimum": -100000, "maximum": 100000},
    "bargaining_weight": {"type": "integer", "minimum": 1, "maximum": 5},
    "vetoes": {"type": "array", "items": VETO, "maxItems": 10},
}, "required": ["name", "status_quo"], "additionalProperties": False}
MEMOS = {
    "rule": {"type": "string", "enum": list(RULE_NAMES)},
    "stakeholders": {"type": "array", "items": STAKEHOLDER, "minItems": 1, "maxItems": 10},
}
SPECS = (
    tool("list_plans", "Every candidate plan with its levers (vendor, timeline, budget in $k, scope) and its five "
         "scores (0-10)."),
    tool("get_plan", "One plan.", {"plan_id": {"type": "string", "maxLength": 60}}, ["plan_id"]),
    tool(READ, "The text of a document (e-mail, meeting notes, ticket) by its id.",
         {"doc_id": {"type": "string", "maxLength": 60}}, ["doc_id"]),
    tool(SOLVE, "Solver: the acceptable plan with the best score under the rule for the memos passed, with its "
         "score, every stakeholder's utility, the conflicting pairs and the binding vetoes; or that no plan is "
         "acceptable. Pass every stakeholder's decided figures and vetoes; leave out what no memo states.",
         MEMOS, ["rule", "stakeholders"]),
    tool(EVALUATE, "Calculator: every stakeholder's utility for one plan and the plan's score under the rule, for "
         "the memos passed.", {"plan_id": {"type": "string", "maxLength": 60}, **MEMOS},
         ["plan_id", "rule", "stakeholders"]),
    tool(CALCULATE, "Arithmetic: + - * / ** and parentheses on numbers, e.g. (52 - 40) / (70 - 40).",
         {"expression": {"type": "string", "maxLength": 500}}, ["expression"]),
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
    worded = True
    # 2: the rule and the memos in prose over documents, the solver as a tool, every stated veto mattering
    generator_version = 2

    generator = staticmethod(generate)
    specs = tuple(SPECS)
    reader_table = READERS
    system_template = SYSTEM
    grader = staticmethod(grade)
