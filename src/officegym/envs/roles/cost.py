"""Cost: the cheapest monthly plan (one option per workload) that keeps every requirement.

Workloads are compute jobs (instance families on on-demand, reserved or spot pricing; spot carries an
interruption penalty in the benchmarks) and LLM steps (large, mini or self-hosted models priced per
million tokens). The requirements (quality floors and latency limits per workload, a floor on mean
quality, a cap on spot workloads, a latency budget over the LLM steps) and the contract terms (volume
discounts, reserved-commitment minimums, negotiated prices) are stated in prose (cost_brief.py), over
the brief and documents read with `read_document`; usage, list prices and benchmarks come from tools.
The search is a tool: `find_plan` takes the requirements and terms as arguments and returns the
cheapest plan under them, so the agent's skill is to read them right. Every stated requirement and
term binds. The verifier is exact: quality is a hard gate (any broken requirement gives 0); otherwise
0.5 [optimal] + 0.5 optimum / cost, and 0 when the claimed cost is wrong. In 7.5% of scenarios no plan
meets every requirement: escalate.
"""

from __future__ import annotations

import random
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
    optimality_reward,
    read_tool,
    tool,
)
from officegym.envs.roles.cost_brief import compose
from officegym.envs.roles.cost_draw import draw
from officegym.envs.roles.cost_model import (  # noqa: F401  (re-exported: baselines and tests use cost.*)
    COMPUTE_JOBS,
    FAMILIES,
    LLM_STEPS,
    PRICING,
    PROVIDERS,
    bill,
    binds,
    find,
    items_of,
    requirements_of,
    solve,
    violations,
)
from officegym.envs.roles.prose import TRAINED
from officegym.envs.roles.scenario_utils import draw_scenario

ROLE = "cost"
SUBMIT = "submit_plan"
SIMULATE = "simulate_bill"  # the calculator of a plan's bill under the contracts in force
SOLVE = "find_plan"  # the solver: requirements and terms in, the cheapest plan under them out
READ = "read_document"
CALCULATE = "calculate"

SYSTEM = (
    "You are the Cost agent of an executive decision system. Choose one option for every workload so that the "
    "monthly bill is as low as possible while every requirement holds. A workload's cost with an option is its "
    "monthly demand x the option's unit price (the negotiated contract price where one exists, else the list "
    "price). Per provider, the bill adds a top-up when reserved spend is below the provider's reserved commitment "
    "minimum (if any reserved option of that provider is used), then applies the volume discount: the discount rate "
    "on the provider's spend above its threshold. A month counts 730 hours and a year 12 months. The requirements "
    "and contract terms are written in the brief and in the documents it names (read_document): use the figures that "
    "were decided, not superseded ones, rumours or figures that belong to nothing. Usage, list prices and "
    "benchmarks come from the tools. find_plan(quality_floors, latency_limits_ms, min_mean_quality, "
    "max_spot_workloads, llm_pipeline_latency_ms, volume_discounts, reserved_minimums_usd, negotiated_prices) "
    "returns the cheapest plan under the requirements and terms you pass, with its bill under those terms; "
    "simulate_bill bills a plan under the contracts in force; calculate does arithmetic. Finish with exactly one "
    "call: {submit}(plan, claimed_monthly_cost), where plan maps every workload id to an option id and "
    "claimed_monthly_cost is the plan's bill in dollars (recomputed; a wrong figure scores 0). If no plan meets "
    "every requirement, call {escalate}(reason) instead. The first answer is final."
)


@lru_cache(maxsize=4096)
def _drawn(seed: int, difficulty: int) -> tuple[dict[str, Any], Any]:
    """The numbers of (seed, difficulty) and the rng state the prose goes on from: one draw serves
    both wordings."""
    drawn, rng = draw_scenario(ROLE, seed, difficulty, draw)
    return drawn, rng.getstate()


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int, subset: str = TRAINED) -> Scenario:
    """The scenario of (seed, difficulty); `subset` picks the brief's wording pool (trained or held
    out): the numbers, and so the answer, are the same for both."""
    drawn, state = _drawn(seed, difficulty)
    rng = random.Random()
    rng.setstate(state)
    public = drawn["public"]
    infeasible = drawn["plan"] is None
    args = requirements_of(public)
    brief, documents, features = compose(rng, public, items_of(args), difficulty, subset)
    public = {**public, "documents": documents}
    lookups = tuple(ToolCall(READ, {"doc_id": d}) for d in documents)
    solver_call = ToolCall(SOLVE, args)
    result = find(public, args)
    if infeasible:
        answer = ToolCall(ESCALATE, {"reason": result["result"]})
        note = ""
    else:
        # the claimed cost is what the solver billed for its plan, under the terms in force
        answer = ToolCall(SUBMIT, {"plan": result["plan"], "claimed_monthly_cost": result["total_usd"]})
        note = f"e.g. {drawn['plan']} at ${drawn['optimum']:,.2f} a month"
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=infeasible, inline=not documents, public=public,
        private={"optimum": drawn["optimum"], "plan": drawn["plan"], "why_infeasible": drawn["why"],
                 "optimum_note": note},
        brief=brief, lookups=lookups, answer=answer,
        template=f"{ROLE}/{'inline' if not documents else 'documents'}" + ("/escalate" if infeasible else ""),
        checks=(solver_call,), subset=subset, wording=tuple(features),
    )


def simulate(public: dict[str, Any], plan: dict[str, str]) -> dict[str, Any]:
    """What the simulate_bill calculator returns for a plan of known ids: the itemised bill, whose
    total (to the cent) the verifier recomputes."""
    out = bill(public, plan)
    out.pop("exact_total")
    return out


def normalised(args: dict[str, Any]) -> dict[str, Any]:
    """find_plan's arguments as the model reads them: provider keys in lower case, a discount rate
    above 1 read as the percentage it states."""
    out = dict(args)
    if "volume_discounts" in args:
        out["volume_discounts"] = {p.strip().lower(): {"threshold_usd": d["threshold_usd"],
                                                       "rate": d["rate"] / 100 if d["rate"] > 1 else d["rate"]}
                                   for p, d in args["volume_discounts"].items()}
    if "reserved_minimums_usd" in args:
        out["reserved_minimums_usd"] = {p.strip().lower(): m for p, m in args["reserved_minimums_usd"].items()}
    return out


def unknown_ids(public: dict[str, Any], args: dict[str, Any]) -> str | None:
    """Why normalised arguments name something this scenario lacks, or None."""
    workloads = [w["id"] for w in public["workloads"]]
    providers = sorted({s["provider"] for s in public["skus"].values()} - {"self-hosted"})
    for key, known, what in (("quality_floors", workloads, "workload"), ("latency_limits_ms", workloads, "workload"),
                             ("volume_discounts", providers, "provider with contract terms"),
                             ("reserved_minimums_usd", providers, "provider with contract terms"),
                             ("negotiated_prices", list(public["skus"]), "option id")):
        for k in args.get(key, {}):
            if k not in known:
                return f"{key}: {k!r} is not a {what} of this brief; known: {', '.join(known) or 'none'}"
    return None


def _usage(s: Scenario, a: dict[str, Any]) -> Any:
    keep = ("id", "kind", "demand", "unit", "options")
    return {"workloads": [{k: w[k] for k in keep} for w in s.public["workloads"]]}


def _prices(s: Scenario, a: dict[str, Any]) -> Any:
    provider = a["provider"].strip().lower()
    rows = [sku for sku in s.public["skus"].values() if sku["provider"] == provider]
    if not rows:
        known = sorted({sku["provider"] for sku in s.public["skus"].values()})
        raise ToolRefusal(f"no price list for {a['provider']!r}; providers: {', '.join(known)}")
    return {"provider": provider, "skus": rows,
            "note": "list prices; contract terms and negotiated prices are in the brief and its documents"}


def _simulate(s: Scenario, a: dict[str, Any]) -> Any:
    plan = a["plan"]
    workloads = {w["id"]: w for w in s.public["workloads"]}
    for wid, sku in plan.items():
        if wid not in workloads:
            raise ToolRefusal(f"unknown workload {wid!r}")
        if sku not in workloads[wid]["options"]:
            raise ToolRefusal(f"{sku!r} is not an option for {wid}")
    return simulate(s.public, plan)


def _find(s: Scenario, a: dict[str, Any]) -> Any:
    args = normalised(a)
    problem = unknown_ids(s.public, args)
    if problem:
        raise ToolRefusal(problem)
    return find(s.public, args)


READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    "get_usage_report": _usage, "get_price_list": _prices, "get_quality_benchmarks": lambda s, a: s.public["benchmarks"],
    SIMULATE: _simulate, READ: read_tool, SOLVE: _find, CALCULATE: calculate_tool,
}
PLAN = {"type": "object", "description": "workload id -> option id", "additionalProperties": {"type": "string"}}
MONEY = {"type": "number", "minimum": 0, "maximum": 1e9}


def _by_id(what: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "description": what, "additionalProperties": value}


SPECS = (
    tool("get_usage_report", "Workloads: kind, monthly demand (vCPU-hours or millions of tokens) and option ids."),
    tool("get_price_list", "One provider's options with their list prices (per vCPU-hour or per 1M tokens).",
         {"provider": {"type": "string", "maxLength": 100}}, ["provider"]),
    tool("get_quality_benchmarks", "Benchmark quality (0-100) and latency (ms) of every option on every workload "
         "(spot prices include the interruption penalty)."),
    tool(READ, "The text of a document (e-mail, meeting notes, ticket) by its id.",
         {"doc_id": {"type": "string", "maxLength": 100}}, ["doc_id"]),
    tool(SOLVE, "Solver: the cheapest plan meeting the requirements and under the contract terms passed, with its "
         "monthly bill under those terms, or why there is none. Pass every requirement and term the brief states; "
         "leave out what it does not.", {
             "quality_floors": _by_id("workload id -> minimum benchmark quality (0-100)",
                                      {"type": "number", "minimum": 0, "maximum": 100}),
             "latency_limits_ms": _by_id("workload id -> maximum benchmark latency in ms",
                                         {"type": "number", "minimum": 0, "maximum": 1e7}),
             "min_mean_quality": {"type": "number", "minimum": 0, "maximum": 100,
                                  "description": "minimum mean benchmark quality over all workloads"},
             "max_spot_workloads": {"type": "integer", "minimum": 0, "maximum": 1000,
                                    "description": "most workloads that may run on spot pricing"},
             "llm_pipeline_latency_ms": {"type": "number", "minimum": 0, "maximum": 1e7,
                                         "description": "max sum of the LLM steps' latencies, in ms"},
             "volume_discounts": _by_id("provider -> its volume discount", {
                 "type": "object", "additionalProperties": False, "required": ["threshold_usd", "rate"],
                 "properties": {"threshold_usd": {**MONEY, "description": "monthly spend above which it applies"},
                                "rate": {"type": "number", "minimum": 0, "maximum": 100,
                                         "description": "e.g. 0.15 (or 15) for 15%"}}}),
             "reserved_minimums_usd": _by_id("provider -> monthly reserved-commitment minimum in dollars", MONEY),
             "negotiated_prices": _by_id("option id -> contract unit price in the price list's unit "
                                         "(dollars per vCPU-hour or per 1M tokens)", MONEY),
         }),
    tool(SIMULATE, "Calculator: the monthly bill of a plan (all or some workloads) under the contracts in force.",
         {"plan": PLAN}, ["plan"]),
    tool(CALCULATE, "Arithmetic: + - * / ** and parentheses on numbers, e.g. 0.00045 * 1000.",
         {"expression": {"type": "string", "maxLength": 500}}, ["expression"]),
    tool(SUBMIT, "Submit the final plan. Ends the episode.", {
        "plan": PLAN, "claimed_monthly_cost": {"type": "number", "description": "the plan's monthly bill in dollars"},
    }, ["plan", "claimed_monthly_cost"]),
    ESCALATE_SPEC,
)


def grade(scenario: Scenario, answer: ToolCall) -> Grade:
    decided = escalation_grade(scenario, answer)
    if decided is not None:
        return decided
    public = scenario.public
    plan, claimed = answer.arguments["plan"], answer.arguments["claimed_monthly_cost"]
    workloads = {w["id"]: w for w in public["workloads"]}
    problems = [f"no option chosen for {w}" for w in workloads if w not in plan]
    problems += [f"{w!r} is not a workload" for w in plan if w not in workloads]
    problems += [f"{s!r} is not an option for {w}" for w, s in plan.items() if w in workloads and s not in workloads[w]["options"]]
    if problems:
        return Grade(0.0, False, "invalid_answer", {"feasible": 0.0}, problems)
    cost = bill(public, plan)["exact_total"]
    broken = violations(public, plan)
    optimum = scenario.private["optimum"]
    feasible = not broken
    claims_ok = claim_matches(claimed, cost)
    quality = optimum / cost if cost > 0 else 0.0
    optimal = feasible and cost <= optimum * (1 + 1e-9) + 1e-9
    components = {"feasible": float(feasible), "optimal": float(optimal), "quality_ratio": quality if feasible else 0.0,
                  "claims_ok": float(claims_ok), "cost": cost, "optimum_cost": optimum}
    evidence = [*broken, f"monthly cost ${cost:,.2f} vs optimum ${optimum:,.2f} (ratio {quality:.4f})"]
    if not claims_ok:
        evidence.append(f"claimed ${claimed} but the plan's bill is ${cost:,.2f}")
        return Grade(0.0, False, "hallucinated_number", components, evidence)
    if not feasible:
        return Grade(0.0, False, "infeasible", components, evidence)
    return Grade(optimality_reward(True, quality, optimal), optimal, "correct" if optimal else "suboptimal",
                 components, evidence)


class CostEnvironment(RoleEnvironment):
    """Cloud and LLM spend optimisation under quality floors and provider terms."""

    role = ROLE
    name = "roles/cost"
    answer_tools = (SUBMIT, ESCALATE)
    worded = True
    # 2: the requirements and contract terms in prose over documents, the solver as a tool, every one binding
    generator_version = 2

    generator = staticmethod(generate)
    specs = tuple(SPECS)
    reader_table = READERS
    system_template = SYSTEM
    grader = staticmethod(grade)
