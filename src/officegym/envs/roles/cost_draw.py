"""Cost scenarios drawn: option pools and benchmarks, negotiated prices, requirements tightened until
each binds, and the infeasible variants (cost_model.py holds the numbers' meaning and the solver)."""

from __future__ import annotations

import math
import random
from typing import Any

from officegym.envs.roles.cost_model import (
    AGGREGATE_FROM,
    COMMIT_FROM,
    COMPUTE_JOBS,
    DISCOUNT_FROM,
    FAMILIES,
    HOURS_PER_MONTH,
    LATENCY_FROM,
    LLM_STEPS,
    LLM_TIERS,
    LOCAL_MODELS,
    MIN_ITEMS,
    N_OPTIONS,
    N_WORKLOADS,
    PIPELINE_FROM,
    PRICING,
    PROVIDERS,
    RATE_FROM,
    SPOT_CAP_FROM,
    SPOT_PENALTY,
    bill,
    binds,
    figures,
    items_of,
    model_of,
    price,
    requirements_of,
    solve,
    without,
)


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


def _negotiate(rng: random.Random, public: dict[str, Any], plan: dict[str, str]) -> None:
    """A contract price below list on an option the current optimum passes over, under the price of
    the option it chose for that workload: stated, it tends to move the optimum."""
    bench = public["benchmarks"]
    candidates = [(w, s) for w in public["workloads"] for s in w["options"]
                  if s != plan[w["id"]] and s not in public["negotiated"]
                  and bench[w["id"]][s]["quality"] >= w["quality_floor"]
                  and (w["latency_limit_ms"] is None or bench[w["id"]][s]["latency_ms"] <= w["latency_limit_ms"])]
    if not candidates:
        return
    w, s = rng.choice(candidates)
    sku = public["skus"][s]
    digits = 2 if sku["kind"] == "llm" else 4
    new = round(min(sku["unit_price_usd"], price(public, plan[w["id"]])) * rng.uniform(0.6, 0.95), digits)
    if 0 < new < sku["unit_price_usd"]:
        public["negotiated"][s] = new


def draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
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
    used = sorted({s for w in workloads for s in w["options"]})
    public: dict[str, Any] = {"workloads": workloads, "benchmarks": bench, "policy": {}, "terms": {},
                              "skus": {s: skus[s] for s in used}, "negotiated": {}}
    # A witness plan of good options: every constraint admits it, while the cheapest plan tends to break them.
    witness = {}
    for w in workloads:
        ranked = sorted(w["options"], key=lambda s, w=w: (-bench[w["id"]][s]["quality"], s))
        witness[w["id"]] = ranked[0] if rng.random() < 0.7 else rng.choice(ranked)
    cheap = {w["id"]: min(w["options"], key=lambda s, w=w: (skus[s]["unit_price_usd"] * w["demand"], s))
             for w in workloads}
    for w in workloads:
        qw, qc = bench[w["id"]][witness[w["id"]]]["quality"], bench[w["id"]][cheap[w["id"]]]["quality"]
        w["quality_floor"] = qw - int(rng.uniform(0.0, 0.7) * max(0, qw - qc))
        w["latency_limit_ms"] = None
    spend = bill(public, cheap)["providers"]
    for p in sorted({skus[s]["provider"] for s in used} - {"self-hosted"}):
        terms: dict[str, Any] = {}
        if difficulty >= DISCOUNT_FROM:  # a threshold below what the provider would bill, so the rate counts
            usage = spend.get(p, {}).get("usage_usd", 0.0)
            terms["discount_threshold_usd"] = 500 * max(1, int(usage * rng.uniform(0.1, 0.6) / 500)) if usage \
                else 500 * rng.randint(2, 20)
            terms["discount_rate"] = rng.choice((0.10, 0.15, 0.20, 0.25, 0.30))
        if difficulty >= COMMIT_FROM:  # whole half-dollars an hour: exact in hourly, monthly and yearly terms
            terms["reserved_commitment_usd"] = HOURS_PER_MONTH // 2 * rng.randint(1, 11)
        if terms:
            public["terms"][p] = terms
    if not _tighten(rng, public, witness, difficulty):
        return None
    if difficulty >= RATE_FROM:
        for _ in range(1 if difficulty < COMMIT_FROM else 2):
            _value, plan = solve(public)
            if plan is None:
                return None
            _negotiate(rng, public, plan)
    public = _binding(rng, public)
    if public is None:
        return None
    value, plan = solve(public)
    items = items_of(requirements_of(public))
    if plan is None or len(items) < MIN_ITEMS[i]:
        return None
    if not infeasible:
        return {"public": public, "why": "", "optimum": value, "plan": plan}
    return _make_infeasible(rng, public, difficulty)


def _tighten(rng: random.Random, public: dict[str, Any], witness: dict[str, str], difficulty: int) -> bool:
    """Latency limits, the mean-quality floor, the spot cap and the LLM latency budget, each set
    between what the witness plan reaches and what the optimum under the requirements so far
    reaches, where there is a gap (so that it binds); the witness keeps every one of them."""
    bench, policy, workloads = public["benchmarks"], public["policy"], public["workloads"]

    def optimum() -> dict[str, str] | None:
        return solve(public)[1]

    if difficulty >= LATENCY_FROM:
        plan = optimum()
        if plan is None:
            return False
        for w in workloads:
            at_witness, at_optimum = (bench[w["id"]][x[w["id"]]]["latency_ms"] for x in (witness, plan))
            w["latency_limit_ms"] = (rng.randint(at_witness, at_optimum - 1) if at_optimum > at_witness
                                     else at_witness + 10 * rng.randint(0, 3))
    stages = [("mean", AGGREGATE_FROM), ("spot", SPOT_CAP_FROM), ("pipeline", PIPELINE_FROM)]
    for kind, level in stages:
        if difficulty < level or (kind == "pipeline" and not any(w["kind"] == "llm" for w in workloads)):
            continue
        plan = optimum()
        if plan is None:
            return False
        at_witness, at_optimum = (figures(public, x) for x in (witness, plan))
        if kind == "mean":  # a floor: the witness is above it
            hi, lo = at_witness["mean_quality"], at_optimum["mean_quality"]
            policy["min_mean_quality"] = (math.floor(rng.uniform(lo, hi)) + 1 if hi > lo + 1
                                          else math.floor(hi - rng.uniform(0.0, 3.0)))
            policy["min_mean_quality"] = min(policy["min_mean_quality"], math.floor(hi))
        elif kind == "spot":
            lo, hi = at_witness["spot_workloads"], at_optimum["spot_workloads"]
            policy["max_spot_workloads"] = rng.randint(lo, hi - 1) if hi > lo else lo + rng.randint(0, 1)
        else:  # below the optimum's, as far as a plan still meets it (the witness, of large models, is slow)
            at = at_optimum["llm_pipeline_latency_ms"]
            cut = 10 * rng.randint(1, max(1, at // 50))
            while cut >= 10:
                policy["llm_pipeline_latency_ms"] = at - cut
                if optimum() is not None:
                    break
                cut = cut // 20 * 10
            else:
                policy["llm_pipeline_latency_ms"] = at  # cannot bind: _binding drops it
    return True


def _binding(rng: random.Random, public: dict[str, Any]) -> dict[str, Any] | None:
    """The scenario without the requirements and terms that do not bind (each would be free to
    misread), dropped one at a time, in a random order, until every one left binds."""
    while True:
        value, plan = solve(public)
        if plan is None:
            return None
        items = items_of(requirements_of(public))
        rng.shuffle(items)
        dropped = False
        for item in items:
            if not binds(public, item, value):
                public = model_of(public, without(requirements_of(public), item))
                value = solve(public)[0]
                dropped = True
        if not dropped:
            return public


def _make_infeasible(rng: random.Random, public: dict[str, Any], difficulty: int) -> dict[str, Any] | None:
    """A stated floor above what any option of its workload reaches, or a mean-quality floor above
    what any plan reaches: find_plan answers that no plan meets the constraints."""
    bench, workloads = public["benchmarks"], public["workloads"]
    args = requirements_of(public)
    if difficulty >= AGGREGATE_FROM and rng.random() < 0.5:
        best_mean = sum(max(bench[w["id"]][s]["quality"] for s in w["options"]) for w in workloads) / len(workloads)
        args["min_mean_quality"] = math.floor(best_mean) + rng.randint(1, 3)
        why = (f"the highest mean quality any plan reaches is {best_mean:.2f}, below the required "
               f"{args['min_mean_quality']}")
    else:
        victim = rng.choice(workloads)
        top = max(bench[victim["id"]][s]["quality"] for s in victim["options"])
        if top >= 99:
            return None
        floor = top + rng.randint(1, min(5, 100 - top))
        args.setdefault("quality_floors", {})[victim["id"]] = floor
        why = f"no option for {victim['id']} reaches its quality floor {floor} (best is {top})"
    public = model_of(public, args)
    if solve(public)[1] is not None:
        return None
    return {"public": public, "why": why, "optimum": None, "plan": None}
