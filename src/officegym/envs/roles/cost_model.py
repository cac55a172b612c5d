"""Cost scenarios as numbers: workloads and their options, benchmarks, provider terms, negotiated
prices, requirements and whether one binds, the bill, the exact solver and what find_plan answers.
cost_draw.py draws scenarios; the prose layer (cost_brief.py) states the requirements and terms;
cost.py offers the tools and grades.

A scenario's requirements and terms live where version 1 kept them (each workload's quality_floor and
latency_limit_ms, `policy`, `terms`) plus `negotiated` (option id -> contract unit price), so the
baselines that read a scenario keep working. `requirements_of` writes them as find_plan's arguments
and `model_of` reads such arguments back into a scenario: the solver, the bill and the verifier are
one code path whether the figures come from the generator or from the agent.
"""

from __future__ import annotations

import math
from typing import Any

from officegym.envs.roles.solvers import min_cost_choice

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
LATENCY_FROM, RATE_FROM, AGGREGATE_FROM, DISCOUNT_FROM, SPOT_CAP_FROM, COMMIT_FROM, PIPELINE_FROM = 3, 3, 4, 5, 6, 7, 8
MIN_ITEMS = (1, 2, 3, 3, 4, 4, 5, 5, 6, 6)  # stated requirements and terms per level, after dropping loose ones
HOURS_PER_MONTH = 730  # the billing convention the system prompt states: a year is 12 months
# find_plan's arguments, by kind of statement; the first five are map entries (keyed by id)
ARGUMENT = {"floor": "quality_floors", "latency": "latency_limits_ms", "discount": "volume_discounts",
            "commitment": "reserved_minimums_usd", "rate": "negotiated_prices", "mean": "min_mean_quality",
            "spot": "max_spot_workloads", "pipeline": "llm_pipeline_latency_ms"}
POLICY_KINDS = ("mean", "spot", "pipeline")
Item = tuple[str, str]  # (kind, workload / provider / option id, or "" for a policy)


def price(public: dict[str, Any], sku: str) -> float:
    """The unit price the bill uses: the negotiated one where a contract sets it, else the list price."""
    negotiated = public.get("negotiated")
    if negotiated and sku in negotiated:
        return negotiated[sku]
    return public["skus"][sku]["unit_price_usd"]


def bill(public: dict[str, Any], plan: dict[str, str]) -> dict[str, Any]:
    """The monthly bill of a (possibly partial) plan: per provider spend, top-up, discount and total."""
    skus = public["skus"]
    demand = {w["id"]: w["demand"] for w in public["workloads"]}
    spend: dict[str, float] = {}
    reserved: dict[str, float] = {}
    for wid, sku_id in plan.items():
        sku = skus[sku_id]
        cost = demand[wid] * price(public, sku_id)
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


def figures(public: dict[str, Any], plan: dict[str, str]) -> dict[str, Any]:
    """Mean quality, spot workloads and summed LLM latency of a complete plan."""
    bench, skus = public["benchmarks"], public["skus"]
    qualities = [bench[w["id"]][plan[w["id"]]]["quality"] for w in public["workloads"]]
    return {"mean_quality": sum(qualities) / len(qualities),
            "spot_workloads": sum(skus[s].get("pricing") == "spot" for s in plan.values()),
            "llm_pipeline_latency_ms": sum(bench[w["id"]][plan[w["id"]]]["latency_ms"]
                                           for w in public["workloads"] if w["kind"] == "llm")}


def violations(public: dict[str, Any], plan: dict[str, str]) -> list[str]:
    policy = public["policy"]
    out = []
    for w in public["workloads"]:
        bench = public["benchmarks"][w["id"]][plan[w["id"]]]
        if bench["quality"] < w["quality_floor"]:
            out.append(f"{w['id']}: quality {bench['quality']} is below its floor {w['quality_floor']}")
        if w.get("latency_limit_ms") is not None and bench["latency_ms"] > w["latency_limit_ms"]:
            out.append(f"{w['id']}: latency {bench['latency_ms']} ms is over its {w['latency_limit_ms']} ms limit")
    f = figures(public, plan)
    if "min_mean_quality" in policy and f["mean_quality"] < policy["min_mean_quality"] - 1e-9:
        out.append(f"mean quality {f['mean_quality']:.2f} is below {policy['min_mean_quality']}")
    if "max_spot_workloads" in policy and f["spot_workloads"] > policy["max_spot_workloads"]:
        out.append(f"{f['spot_workloads']} workloads on spot, over the cap of {policy['max_spot_workloads']}")
    if "llm_pipeline_latency_ms" in policy and f["llm_pipeline_latency_ms"] > policy["llm_pipeline_latency_ms"]:
        out.append(f"LLM pipeline latency {f['llm_pipeline_latency_ms']} ms is over the "
                   f"{policy['llm_pipeline_latency_ms']} ms budget")
    return out


def solve(public: dict[str, Any]) -> tuple[float, dict[str, str] | None]:
    """The exact cheapest plan: unary limits filter options, the rest are resources or the exact bill."""
    workloads, skus, bench, policy = public["workloads"], public["skus"], public["benchmarks"], public["policy"]
    groups = []
    for w in workloads:
        ok = [s for s in w["options"] if bench[w["id"]][s]["quality"] >= w["quality_floor"]
              and (w.get("latency_limit_ms") is None or bench[w["id"]][s]["latency_ms"] <= w["latency_limit_ms"])]
        groups.append(ok)
    terms = public["terms"]
    unit = [[price(public, s) for s in g] for g in groups]
    # a lower bound per option: its usage at the provider's discount rate (top-ups only add)
    costs = [[w["demand"] * p * (1 - terms.get(skus[s]["provider"], {}).get("discount_rate", 0.0))
              for s, p in zip(g, prices)] for w, g, prices in zip(workloads, groups, unit)]
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
    # The exact bill per leaf, on flat tables (bill() itself builds the itemised statement).
    row_cost = [[w["demand"] * p for p in prices] for w, prices in zip(workloads, unit)]
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
    if choice is None:
        return math.inf, None
    return value, {w["id"]: g[j] for w, g, j in zip(workloads, groups, choice)}


# -- requirements as find_plan's arguments, and back


def requirements_of(public: dict[str, Any]) -> dict[str, Any]:
    """The find_plan arguments that state a scenario's requirements and terms exactly (what the oracle
    passes): only what is stated, so an empty map or a missing policy is left out."""
    out: dict[str, Any] = {}
    floors = {w["id"]: w["quality_floor"] for w in public["workloads"] if w["quality_floor"] > 0}
    limits = {w["id"]: w["latency_limit_ms"] for w in public["workloads"] if w.get("latency_limit_ms") is not None}
    discounts = {p: {"threshold_usd": t["discount_threshold_usd"], "rate": t["discount_rate"]}
                 for p, t in sorted(public["terms"].items()) if "discount_rate" in t}
    minimums = {p: t["reserved_commitment_usd"] for p, t in sorted(public["terms"].items())
                if "reserved_commitment_usd" in t}
    for kind, value in (("floor", floors), ("latency", limits), ("discount", discounts), ("commitment", minimums),
                        ("rate", dict(sorted(public.get("negotiated", {}).items())))):
        if value:
            out[ARGUMENT[kind]] = value
    for kind in POLICY_KINDS:
        if ARGUMENT[kind] in public["policy"]:
            out[ARGUMENT[kind]] = public["policy"][ARGUMENT[kind]]
    return out


def model_of(public: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """The scenario with its requirements and terms replaced by (normalised, known-id) arguments."""
    floors, limits = args.get("quality_floors", {}), args.get("latency_limits_ms", {})
    workloads = [{**w, "quality_floor": floors.get(w["id"], 0), "latency_limit_ms": limits.get(w["id"])}
                 for w in public["workloads"]]
    terms: dict[str, dict[str, Any]] = {}
    for p, d in args.get("volume_discounts", {}).items():
        terms.setdefault(p, {}).update(discount_threshold_usd=d["threshold_usd"], discount_rate=d["rate"])
    for p, m in args.get("reserved_minimums_usd", {}).items():
        terms.setdefault(p, {})["reserved_commitment_usd"] = m
    policy = {ARGUMENT[k]: args[ARGUMENT[k]] for k in POLICY_KINDS if ARGUMENT[k] in args}
    return {**public, "workloads": workloads, "policy": policy, "terms": terms,
            "negotiated": dict(args.get("negotiated_prices", {}))}


def items_of(args: dict[str, Any]) -> list[Item]:
    """One item per stated requirement or term: what a sentence of the brief states."""
    out: list[Item] = []
    for kind, key in ARGUMENT.items():
        if key not in args:
            continue
        out += [(kind, "")] if kind in POLICY_KINDS else [(kind, k) for k in args[key]]
    return out


def without(args: dict[str, Any], item: Item) -> dict[str, Any]:
    kind, key = item
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in args.items()}
    if kind in POLICY_KINDS:
        del out[ARGUMENT[kind]]
    else:
        del out[ARGUMENT[kind]][key]
        if not out[ARGUMENT[kind]]:
            del out[ARGUMENT[kind]]
    return out


def binds(public: dict[str, Any], item: Item, optimum: float) -> bool:
    """Whether leaving `item` out changes the answer: the plan found without it, billed and checked
    under the true terms, breaks a requirement or costs more than the optimum."""
    _value, plan = solve(model_of(public, without(requirements_of(public), item)))
    if plan is None:
        return True
    return bool(violations(public, plan)) or bill(public, plan)["exact_total"] > optimum * (1 + 1e-9) + 1e-9


def find(public: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """What find_plan answers for normalised, known-id arguments: the cheapest plan meeting them,
    with its bill under the terms passed, or why there is none."""
    model = model_of(public, args)
    _value, plan = solve(model)
    if plan is None:
        return {"plan": None, "result": "no plan meets these constraints"}
    statement = bill(model, plan)
    f = figures(model, plan)
    return {"plan": plan, "total_usd": statement["total_usd"], "providers": statement["providers"],
            "mean_quality": round(f["mean_quality"], 2), "spot_workloads": f["spot_workloads"],
            "llm_pipeline_latency_ms": f["llm_pipeline_latency_ms"]}
