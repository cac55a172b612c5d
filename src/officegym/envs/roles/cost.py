"""Cost: the cheapest monthly plan (one option per workload) that keeps every quality floor.

Workloads are compute jobs (instance families on on-demand, reserved or spot pricing; spot carries an
interruption penalty in the benchmarks) and LLM steps (large, mini or self-hosted models priced per
million tokens). Constraints grow with the level: quality floors per workload (always), latency
limits, a floor on mean quality, provider volume discounts (marginal tiers), a cap on spot workloads,
reserved-commitment minimums and a latency budget over the LLM pipeline. The optimum is exact
(branch and bound with discount-aware bounds); quality is a hard gate: any broken floor gives 0;
otherwise reward = 0.5 [optimal] + 0.5 optimum / cost, and 0 when the claimed cost is wrong. The
oracle reads the claimed cost off the simulate_bill calculator, called on its plan.
"""

from __future__ import annotations

import math
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
    claim_matches,
    draw_scenario,
    escalation_grade,
    infeasible_seed,
    optimality_reward,
    tool,
)
from officegym.envs.roles.names import company_and_product
from officegym.envs.roles.solvers import min_cost_choice

ROLE = "cost"
SUBMIT = "submit_plan"
SIMULATE = "simulate_bill"  # the calculator whose total the answer claims
PROVIDERS = ("nimbus", "stratus", "cirrus")
FAMILIES = ("general", "compute", "arm")
PRICING = ("on_demand", "reserved", "spot")
LLM_TIERS = ("large", "mini")
LOCAL_MODELS = ("local-8b", "local-70b")
COMPUTE_JOBS = ("checkout-api", "search-indexer", "image-resizer", "etl-nightly", "recommendation-batch",
                "notification-worker", "video-transcode", "report-builder")
LLM_STEPS = ("support-triage", "ticket-summary", "code-review", "contract-extraction", "faq-answer", "email-draft",
             "sql-assistant")
N_WORKLOADS = (2, 2, 3, 3, 4, 5, 6, 7, 8, 9)
N_OPTIONS = (2, 3, 3, 3, 4, 4, 4, 5, 5, 5)
SPOT_PENALTY = 15
LATENCY_FROM, AGGREGATE_FROM, DISCOUNT_FROM, SPOT_CAP_FROM, COMMIT_FROM, PIPELINE_FROM = 3, 4, 5, 6, 7, 8
TOOLS_FROM_LEVEL = 4

SYSTEM = (
    "You are the Cost agent of an executive decision system. Choose one option for every workload so that the "
    "monthly bill is as low as possible while every quality and policy constraint holds. A workload's cost with an "
    "option is its monthly demand x the option's unit price. Per provider, the bill adds a top-up when reserved "
    "spend is below the provider's reserved commitment minimum (if any reserved option of that provider is used), "
    "then applies the volume discount: the discount rate on the provider's spend above its threshold. Quality is a "
    "hard gate. Finish with exactly one call: {submit}(plan, claimed_monthly_cost), where plan maps every workload "
    "id to an option id and claimed_monthly_cost is the plan's bill in dollars (recomputed; a wrong figure scores "
    "0). If no plan meets every constraint, call {escalate}(reason) instead. The first answer is final."
)


def bill(public: dict[str, Any], plan: dict[str, str]) -> dict[str, Any]:
    """The monthly bill of a (possibly partial) plan: per provider spend, top-up, discount and total."""
    skus = public["skus"]
    demand = {w["id"]: w["demand"] for w in public["workloads"]}
    spend: dict[str, float] = {}
    reserved: dict[str, float] = {}
    for wid, sku_id in plan.items():
        sku = skus[sku_id]
        cost = demand[wid] * sku["unit_price_usd"]
        spend[sku["provider"]] = spend.get(sku["provider"], 0.0) + cost
        if sku.get("pricing") == "reserved":
            reserved[sku["provider"]] = reserved.get(sku["provider"], 0.0) + cost
    lines = {}
    total = 0.0
    for provider, amount in sorted(spend.items()):
        terms = public["terms"].get(provider, {})
        top_up = max(0.0, terms.get("reserved_commitment_usd", 0) - reserved[provider]) if provider in reserved else 0.0
        gross = amount + top_up
        discount = terms.get("discount_rate", 0.0) * max(0.0, gross - terms.get("discount_threshold_usd", math.inf))
        net = gross - discount
        lines[provider] = {"usage_usd": round(amount, 2), "commitment_top_up_usd": round(top_up, 2),
                           "discount_usd": round(discount, 2), "net_usd": round(net, 2)}
        total += net
    return {"providers": lines, "total_usd": round(total, 2), "exact_total": total}


def violations(public: dict[str, Any], plan: dict[str, str]) -> list[str]:
    policy = public["policy"]
    out = []
    qualities = []
    for w in public["workloads"]:
        bench = public["benchmarks"][w["id"]][plan[w["id"]]]
        qualities.append(bench["quality"])
        if bench["quality"] < w["quality_floor"]:
            out.append(f"{w['id']}: quality {bench['quality']} is below its floor {w['quality_floor']}")
        if w.get("latency_limit_ms") is not None and bench["latency_ms"] > w["latency_limit_ms"]:
            out.append(f"{w['id']}: latency {bench['latency_ms']} ms is over its {w['latency_limit_ms']} ms limit")
    if "min_mean_quality" in policy and sum(qualities) / len(qualities) < policy["min_mean_quality"] - 1e-9:
        out.append(f"mean quality {sum(qualities) / len(qualities):.2f} is below {policy['min_mean_quality']}")
    if "max_spot_workloads" in policy:
        spot = sum(public["skus"][s].get("pricing") == "spot" for s in plan.values())
        if spot > policy["max_spot_workloads"]:
            out.append(f"{spot} workloads on spot, over the cap of {policy['max_spot_workloads']}")
    if "llm_pipeline_latency_ms" in policy:
        total = sum(public["benchmarks"][w["id"]][plan[w["id"]]]["latency_ms"] for w in public["workloads"]
                    if w["kind"] == "llm")
        if total > policy["llm_pipeline_latency_ms"]:
            out.append(f"LLM pipeline latency {total} ms is over the {policy['llm_pipeline_latency_ms']} ms budget")
    return out


def solve(public: dict[str, Any]) -> tuple[float, dict[str, str] | None]:
    """The exact cheapest plan: unary limits filter options, the rest are resources or the exact bill."""
    workloads, skus, bench, policy = public["workloads"], public["skus"], public["benchmarks"], public["policy"]
    groups = []
    for w in workloads:
        ok = [s for s in w["options"] if bench[w["id"]][s]["quality"] >= w["quality_floor"]
              and (w.get("latency_limit_ms") is None or bench[w["id"]][s]["latency_ms"] <= w["latency_limit_ms"])]
        groups.append(ok)
    best_rate = {p: public["terms"].get(p, {}).get("discount_rate", 0.0) for p in (*PROVIDERS, "self-hosted")}
    costs = [[w["demand"] * skus[s]["unit_price_usd"] * (1 - best_rate[skus[s]["provider"]]) for s in g]
             for w, g in zip(workloads, groups)]
    resources = []
    if "min_mean_quality" in policy:
        resources.append(([[policy["min_mean_quality"] - bench[w["id"]][s]["quality"] for s in g]
                           for w, g in zip(workloads, groups)], 1e-9))
    if "max_spot_workloads" in policy:
        resources.append(([[1 if skus[s].get("pricing") == "spot" else 0 for s in g] for g in groups],
                          policy["max_spot_workloads"]))
    if "llm_pipeline_latency_ms" in policy:
        resources.append(([[bench[w["id"]][s]["latency_ms"] if w["kind"] == "llm" else 0 for s in g]
                           for w, g in zip(workloads, groups)], policy["llm_pipeline_latency_ms"]))

    def plan_of(choice: tuple[int, ...]) -> dict[str, str]:
        return {w["id"]: g[j] for w, g, j in zip(workloads, groups, choice)}

    # The exact bill per leaf, on flat tables (bill() itself builds the itemised statement).
    terms = public["terms"]
    row_cost = [[w["demand"] * skus[s]["unit_price_usd"] for s in g] for w, g in zip(workloads, groups)]
    row_provider = [[skus[s]["provider"] for s in g] for g in groups]
    row_reserved = [[skus[s].get("pricing") == "reserved" for s in g] for g in groups]

    def exact(choice: tuple[int, ...]) -> float:
        spend: dict[str, float] = {}
        reserved: dict[str, float] = {}
        for k, j in enumerate(choice):
            p, c = row_provider[k][j], row_cost[k][j]
            spend[p] = spend.get(p, 0.0) + c
            if row_reserved[k][j]:
                reserved[p] = reserved.get(p, 0.0) + c
        total = 0.0
        for p, amount in spend.items():
            t = terms.get(p)
            if not t:
                total += amount
                continue
            if p in reserved:
                amount += max(0.0, t.get("reserved_commitment_usd", 0) - reserved[p])
            total += amount - t.get("discount_rate", 0.0) * max(0.0, amount - t.get("discount_threshold_usd", math.inf))
        return total

    value, choice = min_cost_choice(costs, resources, exact=exact)
    return (value, plan_of(choice)) if choice is not None else (math.inf, None)


def _sku_pool(rng: random.Random) -> dict[str, dict[str, Any]]:
    skus: dict[str, dict[str, Any]] = {}
    for provider in PROVIDERS:
        level = rng.uniform(0.85, 1.15)
        for family in FAMILIES:
            base = round(rng.uniform(0.04, 0.12) * level, 4)
            for pricing, factor in zip(PRICING, (1.0, 0.6, 0.35)):
                skus[f"{provider}.{family}.{pricing}"] = {
                    "id": f"{provider}.{family}.{pricing}", "provider": provider, "kind": "compute", "family": family,
                    "pricing": pricing, "unit": "vCPU-hour", "unit_price_usd": round(base * factor, 4)}
        for tier, (lo, hi) in zip(LLM_TIERS, ((5.0, 15.0), (0.3, 1.5))):
            skus[f"{provider}.{tier}"] = {"id": f"{provider}.{tier}", "provider": provider, "kind": "llm", "tier": tier,
                                         "unit": "1M tokens", "unit_price_usd": round(rng.uniform(lo, hi) * level, 2)}
    for model in LOCAL_MODELS:
        skus[f"self-hosted.{model}"] = {"id": f"self-hosted.{model}", "provider": "self-hosted", "kind": "llm",
                                        "tier": "local", "unit": "1M tokens",
                                        "unit_price_usd": round(rng.uniform(0.2, 0.8) * (2 if "70b" in model else 1), 2)}
    return skus


def _bench(rng: random.Random, sku: dict[str, Any]) -> dict[str, Any]:
    if sku["kind"] == "compute":
        quality = rng.randint(60, 95) - (SPOT_PENALTY if sku["pricing"] == "spot" else 0)
        latency = {"general": 40, "compute": 25, "arm": 45}[sku["family"]] + rng.randint(0, 20)
    else:
        lo, hi = {"large": (85, 98), "mini": (65, 85), "local": (50, 80)}[sku["tier"]]
        quality = rng.randint(lo, hi)
        latency = {"large": 900, "mini": 350, "local": 500}[sku["tier"]] + 10 * rng.randint(0, 40)
    return {"quality": quality, "latency_ms": latency}


def _cheapest(public: dict[str, Any], w: dict[str, Any], options: list[str]) -> str:
    return min(options, key=lambda s: (public["skus"][s]["unit_price_usd"] * w["demand"], s))


def _draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    i = difficulty - 1
    n_w, n_opt = N_WORKLOADS[i], N_OPTIONS[i]
    skus = _sku_pool(rng)
    n_llm = max(1, n_w // 3) if difficulty >= 2 else 0
    workloads, bench = [], {}
    names = rng.sample(COMPUTE_JOBS, n_w - n_llm) + rng.sample(LLM_STEPS, n_llm)
    for k, name in enumerate(names):
        kind = "compute" if k < n_w - n_llm else "llm"
        pool = [s for s in skus if skus[s]["kind"] == kind]
        options = sorted(rng.sample(pool, n_opt))
        demand = 500 * rng.randint(4, 80) if kind == "compute" else 10 * rng.randint(1, 200)
        workloads.append({"id": name, "kind": kind, "demand": demand,
                          "unit": "vCPU-hours/month" if kind == "compute" else "M tokens/month", "options": options})
        bench[name] = {s: _bench(rng, skus[s]) for s in options}
    public: dict[str, Any] = {"workloads": workloads, "benchmarks": bench, "policy": {}, "terms": {}}
    used = sorted({s for w in workloads for s in w["options"]})
    public["skus"] = {s: skus[s] for s in used}
    # A witness plan of good options: every constraint admits it, while the cheapest plan tends to break them.
    witness = {}
    for w in workloads:
        ranked = sorted(w["options"], key=lambda s, w=w: (-bench[w["id"]][s]["quality"], s))
        witness[w["id"]] = ranked[0] if rng.random() < 0.7 else rng.choice(ranked)
    cheap = {w["id"]: _cheapest(public, w, w["options"]) for w in workloads}
    for w in workloads:
        qw, qc = bench[w["id"]][witness[w["id"]]]["quality"], bench[w["id"]][cheap[w["id"]]]["quality"]
        w["quality_floor"] = qw - int(rng.uniform(0.0, 0.7) * max(0, qw - qc))
        if difficulty >= LATENCY_FROM:
            lw = bench[w["id"]][witness[w["id"]]]["latency_ms"]
            w["latency_limit_ms"] = lw + 10 * rng.randint(0, 10)
        else:
            w["latency_limit_ms"] = None
    policy = public["policy"]
    if difficulty >= AGGREGATE_FROM:
        mean_w = sum(bench[w["id"]][witness[w["id"]]]["quality"] for w in workloads) / n_w
        policy["min_mean_quality"] = math.floor(mean_w - rng.uniform(0.0, 3.0))
    if difficulty >= SPOT_CAP_FROM:
        spot_w = sum(skus[witness[w["id"]]].get("pricing") == "spot" for w in workloads)
        policy["max_spot_workloads"] = spot_w + rng.randint(0, 1)
    if difficulty >= PIPELINE_FROM and n_llm:
        lat = sum(bench[w["id"]][witness[w["id"]]]["latency_ms"] for w in workloads if w["kind"] == "llm")
        policy["llm_pipeline_latency_ms"] = lat + 50 * rng.randint(0, 6)
    providers = sorted({skus[s]["provider"] for s in used} - {"self-hosted"})
    for p in providers:
        terms: dict[str, Any] = {}
        if difficulty >= DISCOUNT_FROM:
            terms["discount_threshold_usd"] = 500 * rng.randint(2, 20)
            terms["discount_rate"] = rng.choice((0.05, 0.10, 0.15, 0.20))
        if difficulty >= COMMIT_FROM:
            terms["reserved_commitment_usd"] = 250 * rng.randint(2, 16)
        public["terms"][p] = terms
    why = ""
    if infeasible:
        victim = rng.choice(workloads)
        top = max(bench[victim["id"]][s]["quality"] for s in victim["options"])
        if difficulty >= AGGREGATE_FROM and rng.random() < 0.5:
            best_mean = sum(max(bench[w["id"]][s]["quality"] for s in w["options"]) for w in workloads) / n_w
            policy["min_mean_quality"] = math.floor(best_mean) + rng.randint(1, 3)
            why = (f"the highest mean quality any plan reaches is {best_mean:.2f}, below the required "
                   f"{policy['min_mean_quality']}")
        else:
            victim["quality_floor"] = top + rng.randint(1, 5)
            why = f"no option for {victim['id']} reaches its quality floor {victim['quality_floor']} (best is {top})"
    value, plan = solve(public)
    if infeasible:
        return None if plan is not None else {"public": public, "why": why, "optimum": None, "plan": None}
    if plan is None:
        return None
    return {"public": public, "why": "", "optimum": value, "plan": plan}


def _brief(rng: random.Random, public: dict[str, Any], difficulty: int) -> str:
    company, _ = company_and_product(rng)
    policy = public["policy"]
    lines = [f"{company}'s cloud and AI bill is under review. Choose one option for each of the "
             f"{len(public['workloads'])} workloads ({', '.join(w['id'] for w in public['workloads'])}) to minimise "
             "the monthly bill.", "Constraints:",
             "- Each workload's benchmark quality with its option must reach the workload's quality floor."]
    if difficulty >= LATENCY_FROM:
        lines.append("- Each workload's benchmark latency must be within its latency limit.")
    if "min_mean_quality" in policy:
        lines.append(f"- The mean quality over all workloads must be at least {policy['min_mean_quality']}.")
    if "max_spot_workloads" in policy:
        lines.append(f"- At most {policy['max_spot_workloads']} workload(s) may run on spot pricing.")
    if "llm_pipeline_latency_ms" in policy:
        lines.append(f"- The LLM steps' latencies must add up to at most {policy['llm_pipeline_latency_ms']} ms.")
    if any(public["terms"].values()):
        lines.append("- Provider terms (volume discounts, reserved commitments) are in the price lists.")
    if difficulty < TOOLS_FROM_LEVEL:
        lines.append("Workloads (demand, floor, latency limit; options with unit price, quality, latency):")
        for w in public["workloads"]:
            limit = f", latency limit {w['latency_limit_ms']} ms" if w["latency_limit_ms"] is not None else ""
            lines.append(f"- {w['id']}: {w['demand']} {w['unit']}, quality floor {w['quality_floor']}{limit}")
            for s in w["options"]:
                b = public["benchmarks"][w["id"]][s]
                lines.append(f"    {s}: ${public['skus'][s]['unit_price_usd']} per {public['skus'][s]['unit']}, "
                             f"quality {b['quality']}, latency {b['latency_ms']} ms")
    else:
        lines.append("Usage, price lists and quality benchmarks are available through the tools.")
    return "\n".join(lines)


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int) -> Scenario:
    infeasible = infeasible_seed(seed)
    drawn, rng = draw_scenario(ROLE, seed, difficulty, _draw)
    public = drawn["public"]
    inline = difficulty < TOOLS_FROM_LEVEL
    providers = sorted({s["provider"] for s in public["skus"].values()})
    lookups = () if inline else (
        ToolCall("get_usage_report", {}), *(ToolCall("get_price_list", {"provider": p}) for p in providers),
        ToolCall("get_quality_benchmarks", {}),
    )
    checks: tuple[ToolCall, ...] = ()
    if infeasible:
        answer = ToolCall(ESCALATE, {"reason": drawn["why"]})
        note = ""
    else:
        # the claimed cost is what the calculator returns for the chosen plan
        checks = (ToolCall(SIMULATE, {"plan": drawn["plan"]}),)
        total = simulate(public, drawn["plan"])["total_usd"]
        answer = ToolCall(SUBMIT, {"plan": drawn["plan"], "claimed_monthly_cost": total})
        note = f"e.g. {drawn['plan']} at ${total:,.2f} a month"
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=infeasible, inline=inline, public=public,
        private={"optimum": drawn["optimum"], "plan": drawn["plan"], "why_infeasible": drawn["why"],
                 "optimum_note": note},
        brief=_brief(rng, public, difficulty), lookups=lookups, answer=answer,
        template=f"{ROLE}/{'inline' if inline else 'tools'}" + ("/escalate" if infeasible else ""),
        checks=checks,
    )


def _usage(s: Scenario, a: dict[str, Any]) -> Any:
    return {"workloads": s.public["workloads"], "policy": s.public["policy"]}


def _prices(s: Scenario, a: dict[str, Any]) -> Any:
    provider = a["provider"]
    rows = [sku for sku in s.public["skus"].values() if sku["provider"] == provider]
    if not rows:
        known = sorted({sku["provider"] for sku in s.public["skus"].values()})
        raise ToolRefusal(f"no price list for {provider!r}; providers: {', '.join(known)}")
    return {"provider": provider, "terms": s.public["terms"].get(provider, {}), "skus": rows}


def _simulate(s: Scenario, a: dict[str, Any]) -> Any:
    plan = a["plan"]
    workloads = {w["id"]: w for w in s.public["workloads"]}
    for wid, sku in plan.items():
        if wid not in workloads:
            raise ToolRefusal(f"unknown workload {wid!r}")
        if sku not in workloads[wid]["options"]:
            raise ToolRefusal(f"{sku!r} is not an option for {wid}")
    return simulate(s.public, plan)


def simulate(public: dict[str, Any], plan: dict[str, str]) -> dict[str, Any]:
    """What the simulate_bill calculator returns for a plan of known ids: the itemised bill, whose
    total (to the cent) the verifier recomputes."""
    out = bill(public, plan)
    out.pop("exact_total")
    return out


READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    "get_usage_report": _usage, "get_price_list": _prices, SIMULATE: _simulate,
    "get_quality_benchmarks": lambda s, a: s.public["benchmarks"],
}
PLAN = {"type": "object", "description": "workload id -> option id", "additionalProperties": {"type": "string"}}
SPECS = (
    tool("get_usage_report", "Workloads (kind, monthly demand, quality floor, latency limit, option ids) and the "
         "spend policy."),
    tool("get_price_list", "One provider's options with unit prices, and its terms (volume discount threshold and "
         "rate, reserved commitment minimum).", {"provider": {"type": "string"}}, ["provider"]),
    tool("get_quality_benchmarks", "Benchmark quality and latency of every option on every workload (spot prices "
         "include the interruption penalty)."),
    tool(SIMULATE, "Calculator: the monthly bill of a plan (all or some workloads).", {"plan": PLAN}, ["plan"]),
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

    generator = staticmethod(generate)
    specs = tuple(SPECS)
    reader_table = READERS
    system_template = SYSTEM
    grader = staticmethod(grade)
