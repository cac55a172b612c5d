"""The Platform Plan Council's decision problem: the scenario, its facts, and how plans are judged.

The decision is an architecture (one option per component). The CTO knows latencies,
availabilities, incompatibilities and the SLOs; Cost knows prices and the 12-month budget; Risk knows
vendor risk scores, compliance tags, the risk ceiling and the required certifications. The generator
solves the full-information problem (minimum 12-month TCO under every seat's constraints) and records
which private facts bind. `evaluate` gives a plan's figures and broken constraints, `objection_valid`
whether a cited fact shows one, `member_review` a truthful member's answer to a proposal and
`plan_from_facts` what a mediator can conclude from shared facts alone. The council's state and
grade are council_state.py; the environment is council.py.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from officegym.core.types import ToolCall
from officegym.envs.roles.base import ESCALATE, Scenario, tidy
from officegym.envs.roles.cto import AVAILABILITIES, COMPONENTS, TAGS, VENDORS
from officegym.envs.roles.names import company_and_product
from officegym.envs.roles.scenario_utils import draw_scenario, infeasible_seed, money
from officegym.envs.roles.solvers import min_cost_choice

ROLE = "council"
MEMBERS = ("cto", "cost", "risk")
MEDIATOR = "reconcile"
SEATS = (*MEMBERS, MEDIATOR)
COMMIT = "commit_plan"
N_COMPONENTS = (2, 2, 3, 3, 4, 4, 5, 5, 6, 6)
N_OPTIONS = (2, 2, 2, 3, 3, 3, 3, 4, 4, 4)
AVAILABILITY_FROM, INCOMPATIBLE_FROM, COMPLIANCE_FROM = 5, 3, 4
REASONS = ("latency_slo", "availability_slo", "incompatible", "over_budget", "risk_ceiling", "compliance")
# the schema of a plan in the tools that take one
SELECTION = {"type": "object", "description": "component -> option id", "additionalProperties": {"type": "string"}}


# --- the scenario and its facts


def tco(o: dict[str, Any]) -> int:
    return 12 * o["monthly_usd"] + o["migration_usd"]


def evaluate(public: dict[str, Any], selection: dict[str, str]) -> dict[str, Any]:
    """Figures of a complete selection and the (reason code, text) of every constraint it breaks."""
    opts, req = public["options"], public["requirements"]
    chosen = [opts[selection[c["component"]]] for c in public["components"]]
    crit = {c["component"] for c in public["components"] if c["critical_path"]}
    total = sum(tco(o) for o in chosen)
    latency = sum(o["p95_latency_ms"] for o in chosen if o["component"] in crit)
    availability = math.prod(o["availability"] for o in chosen)
    broken: list[tuple[str, str]] = []
    if total > req["budget_tco_usd"]:
        broken.append(("over_budget", f"12-month TCO {money(total)} is over the {money(req['budget_tco_usd'])} budget"))
    if latency > req["latency_slo_ms"]:
        broken.append(("latency_slo", f"critical-path latency {latency} ms is over the {req['latency_slo_ms']} ms SLO"))
    if "availability_slo" in req and availability < req["availability_slo"] * (1 - 1e-12):
        broken.append(("availability_slo", f"availability {availability:.6f} is below {req['availability_slo']}"))
    ids = {o["id"] for o in chosen}
    for o in chosen:
        broken += [("incompatible", f"{o['id']} is incompatible with {x}") for x in o["incompatible_with"]
                   if x in ids and o["id"] < x]
        if o["vendor_risk"] > req["risk_ceiling"]:
            broken.append(("risk_ceiling", f"{o['id']} has vendor risk {o['vendor_risk']} > ceiling {req['risk_ceiling']}"))
        missing = [t for t in req.get("required_compliance", ()) if t not in o["compliance"]]
        if missing:
            broken.append(("compliance", f"{o['id']} lacks {', '.join(missing)}"))
    return {"tco": total, "latency": latency, "availability": availability, "violations": broken}


def solve(public: dict[str, Any], drop: Sequence[str] = ()) -> tuple[float, dict[str, str] | None]:
    """Minimum-TCO selection under every constraint family not in `drop` (reason codes)."""
    comps, opts, req = public["components"], public["options"], public["requirements"]
    groups = []
    for c in comps:
        keep = []
        for o in c["options"]:
            x = opts[o]
            if "risk_ceiling" not in drop and x["vendor_risk"] > req["risk_ceiling"]:
                continue
            if "compliance" not in drop and not set(req.get("required_compliance", ())) <= set(x["compliance"]):
                continue
            keep.append(o)
        groups.append(keep)
    costs = [[tco(opts[o]) for o in g] for g in groups]
    resources = []
    if "latency_slo" not in drop:
        resources.append(([[opts[o]["p95_latency_ms"] if c["critical_path"] else 0 for o in g]
                           for c, g in zip(comps, groups)], req["latency_slo_ms"]))
    if "availability_slo" not in drop and "availability_slo" in req:
        resources.append(([[-math.log(opts[o]["availability"]) for o in g] for g in groups],
                          -math.log(req["availability_slo"]) + 1e-12))
    index = {o: (k, j) for k, g in enumerate(groups) for j, o in enumerate(g)}
    conflicts = [] if "incompatible" in drop else [
        ((k, j), index[x]) for o, (k, j) in index.items() for x in opts[o]["incompatible_with"] if x in index and o < x]

    def sel(choice: tuple[int, ...]) -> dict[str, str]:
        return {c["component"]: g[j] for c, g, j in zip(comps, groups, choice)}

    def availability_ok(choice: tuple[int, ...]) -> bool:
        # the log rows prune; the product decides, exactly as evaluate() does
        slo = req["availability_slo"]
        return math.prod(opts[g[j]]["availability"] for g, j in zip(groups, choice)) >= slo * (1 - 1e-12)

    checked = "availability_slo" in req and "availability_slo" not in drop
    value, choice = min_cost_choice(costs, resources, conflicts, leaf_ok=availability_ok if checked else None)
    return (value, sel(choice)) if choice is not None else (math.inf, None)


def facts_of(public: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every private fact as a typed record, keyed by id (`seat/kind/...`)."""
    opts, req = public["options"], public["requirements"]
    crit = [c["component"] for c in public["components"] if c["critical_path"]]
    out: dict[str, dict[str, Any]] = {}

    def add(fid: str, owner: str, kind: str, value: Any, **extra: Any) -> None:
        out[fid] = {"id": fid, "owner": owner, "kind": kind, "value": value, **extra}

    add("cto/latency_slo", "cto", "latency_slo_ms", req["latency_slo_ms"], critical_path=crit)
    if "availability_slo" in req:
        add("cto/availability_slo", "cto", "availability_slo", req["availability_slo"])
    add("cost/budget", "cost", "budget_tco_usd", req["budget_tco_usd"])
    add("risk/ceiling", "risk", "risk_ceiling", req["risk_ceiling"])
    if "required_compliance" in req:
        add("risk/required_compliance", "risk", "required_compliance", req["required_compliance"])
    for o in opts.values():
        i = o["id"]
        if o["p95_latency_ms"] is not None:
            add(f"cto/latency/{i}", "cto", "p95_latency_ms", o["p95_latency_ms"], option=i)
        if "availability_slo" in req:
            add(f"cto/availability/{i}", "cto", "availability", o["availability"], option=i)
        for x in o["incompatible_with"]:
            if i < x:
                add(f"cto/incompatible/{i}/{x}", "cto", "incompatible", [i, x])
        add(f"cost/monthly/{i}", "cost", "monthly_usd", o["monthly_usd"], option=i)
        add(f"cost/migration/{i}", "cost", "migration_usd", o["migration_usd"], option=i)
        add(f"risk/vendor_risk/{i}", "risk", "vendor_risk", o["vendor_risk"], option=i)
        if "required_compliance" in req:
            add(f"risk/compliance/{i}", "risk", "compliance", o["compliance"], option=i)
    return out


FACT_REASON = {
    "latency_slo_ms": "latency_slo", "p95_latency_ms": "latency_slo", "availability_slo": "availability_slo",
    "availability": "availability_slo", "incompatible": "incompatible", "budget_tco_usd": "over_budget",
    "monthly_usd": "over_budget", "migration_usd": "over_budget", "risk_ceiling": "risk_ceiling",
    "vendor_risk": "risk_ceiling", "required_compliance": "compliance", "compliance": "compliance",
}


def objection_valid(public: dict[str, Any], facts: dict[str, dict[str, Any]], selection: dict[str, str],
                    reason: str, fact_id: str, broken: set[str] | None = None) -> bool:
    """Whether the cited fact shows `selection` breaking the constraint named by `reason` (`broken`:
    the selection's broken reason codes, when the caller has them)."""
    fact = facts.get(fact_id)
    if fact is None or FACT_REASON[fact["kind"]] != reason:
        return False
    if broken is None:
        broken = {code for code, _ in evaluate(public, selection)["violations"]}
    if reason not in broken:
        return False
    chosen = set(selection.values())
    if "option" in fact and fact["option"] not in chosen:
        return False  # the cited option is not part of the plan
    if fact["kind"] == "incompatible":
        return set(fact["value"]) <= chosen
    if fact["kind"] == "vendor_risk":
        return fact["value"] > public["requirements"]["risk_ceiling"]
    if fact["kind"] == "compliance":
        return not set(public["requirements"]["required_compliance"]) <= set(fact["value"])
    return True


def member_review(public: dict[str, Any], facts: dict[str, dict[str, Any]], seat: str,
                  selection: dict[str, str], reasons: Sequence[str] = REASONS) -> tuple[str, str | None]:
    """A truthful member's answer to a proposal: ("accept", None) or (reason, fact id) for the first
    of its own constraints the plan breaks, citing the most specific fact. `reasons` limits which
    constraints are checked (a myopic member checks fewer)."""
    mine = {fid: f for fid, f in facts.items() if f["owner"] == seat}
    broken = {code for code, _ in evaluate(public, selection)["violations"]}
    chosen = sorted(selection.values())
    for reason in REASONS:
        if reason not in broken or reason not in reasons:
            continue
        candidates = []
        if reason == "incompatible":
            candidates = [fid for fid, f in mine.items() if f["kind"] == "incompatible" and set(f["value"]) <= set(chosen)]
        elif reason == "risk_ceiling":
            candidates = [f"risk/vendor_risk/{o}" for o in chosen]
        elif reason == "compliance":
            candidates = [f"risk/compliance/{o}" for o in chosen]
        else:
            candidates = {"latency_slo": ["cto/latency_slo"], "availability_slo": ["cto/availability_slo"],
                          "over_budget": ["cost/budget"]}[reason]
        for fid in candidates:
            if fid in mine and objection_valid(public, facts, selection, reason, fid):
                return reason, fid
    return "accept", None


def _draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    i = difficulty - 1
    comps = sorted(rng.sample(COMPONENTS, N_COMPONENTS[i]), key=COMPONENTS.index)
    if not any(crit for _, crit in comps):
        return None
    r = rng.random
    options: dict[str, dict[str, Any]] = {}
    components = []
    for comp, critical in comps:
        ids = []
        for vendor in rng.sample(VENDORS[comp], N_OPTIONS[i]):
            oid = f"{comp}.{vendor}"
            ids.append(oid)
            options[oid] = {
                "id": oid, "component": comp, "monthly_usd": 200 + 50 * int(r() * 77),
                "migration_usd": 1000 * int(r() * 31), "p95_latency_ms": 2 + int(r() * 39) if critical else None,
                "availability": AVAILABILITIES[int(r() * 4)], "incompatible_with": [],
                "vendor_risk": 1 + int(r() * 10), "compliance": [t for t in TAGS if r() < 0.6],
            }
        components.append({"component": comp, "critical_path": critical, "options": ids})
    req: dict[str, Any] = {}
    public = {"components": components, "options": options, "requirements": req}
    cheap = {c["component"]: min(c["options"], key=lambda o: (tco(options[o]), o)) for c in components}
    # a witness that every seat's constraints admit: they are drawn around it, tighter than the cheapest plan
    witness = {c["component"]: min(c["options"], key=lambda o: (options[o]["vendor_risk"] + (options[o]["p95_latency_ms"] or 0) / 8,
                                                             o)) if r() < 0.7 else rng.choice(c["options"])
               for c in components}
    crit = [c["component"] for c in components if c["critical_path"]]
    lw = sum(options[witness[c]]["p95_latency_ms"] for c in crit)
    lc = sum(options[cheap[c]]["p95_latency_ms"] for c in crit)
    req["latency_slo_ms"] = lw + math.floor(rng.uniform(0.0, 0.6) * max(0, lc - lw))
    if difficulty >= AVAILABILITY_FROM:
        aw = sum(math.log(options[o]["availability"]) for o in witness.values())
        ac = sum(math.log(options[o]["availability"]) for o in cheap.values())
        req["availability_slo"] = math.floor(math.exp(aw + rng.uniform(0.0, 0.6) * min(0.0, ac - aw)) * 1e5) / 1e5
    rw = max(options[o]["vendor_risk"] for o in witness.values())
    rc = max(options[o]["vendor_risk"] for o in cheap.values())
    req["risk_ceiling"] = rw + int(rng.uniform(0.0, 0.6) * max(0, rc - rw))
    if difficulty >= COMPLIANCE_FROM:
        tag = rng.choice(TAGS)
        req["required_compliance"] = [tag]
        for o in witness.values():
            if tag not in options[o]["compliance"]:
                options[o]["compliance"] = sorted({*options[o]["compliance"], tag})
    if difficulty >= INCOMPATIBLE_FROM:
        ids = list(options)
        protected = set(witness.values())
        for _ in range(len(components)):
            a = rng.choice(list(cheap.values()))
            b = rng.choice([o for o in ids if options[o]["component"] != options[a]["component"]])
            if not (a in protected and b in protected) and b not in options[a]["incompatible_with"]:
                options[a]["incompatible_with"].append(b)
                options[b]["incompatible_with"].append(a)
        for o in options.values():
            o["incompatible_with"].sort()
    req["budget_tco_usd"] = 0
    value, selection = solve(public)
    if selection is None:
        return None
    why = ""
    if infeasible:
        req["budget_tco_usd"] = math.floor(value * rng.uniform(0.82, 0.97) / 100) * 100
        why = (f"the cheapest plan that meets the CTO's and Risk's requirements costs {money(value)} over 12 months, "
               f"above the {money(req['budget_tco_usd'])} budget")
    else:
        req["budget_tco_usd"] = math.ceil(value * (1 + 0.3 - 0.025 * i) / 1000) * 1000
    facts = facts_of(public)
    binding = _binding_facts(public, facts, selection, infeasible)
    return {"public": public, "facts": facts, "optimum": None if infeasible else value,
            "selection": None if infeasible else selection, "why": why, "binding": binding}


def _binding_facts(public: dict[str, Any], facts: dict[str, dict[str, Any]], selection: dict[str, str],
                   infeasible: bool) -> dict[str, list[str]]:
    """Per seat, the private facts that decide the outcome: the constraint facts that the optimum
    without that seat's constraints breaks, and for Cost the prices of the chosen plan (or the budget)."""
    out: dict[str, list[str]] = {}
    for seat, codes in (("cto", ("latency_slo", "availability_slo", "incompatible")), ("risk", ("risk_ceiling", "compliance"))):
        _, relaxed = solve(public, codes)
        found = []
        if relaxed is not None and relaxed != selection:
            broken = {code for code, _ in evaluate(public, relaxed)["violations"]}
            for reason in codes:
                if reason in broken:
                    found += [fid for fid, f in facts.items() if f["owner"] == seat
                              and objection_valid(public, facts, relaxed, reason, fid, broken)]
        out[seat] = sorted(set(found))
    out["cost"] = ["cost/budget"] if infeasible else sorted(
        f"cost/{k}/{o}" for o in selection.values() for k in ("monthly", "migration"))
    return out


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int) -> Scenario:
    infeasible = infeasible_seed(seed)
    drawn, rng = draw_scenario(ROLE, seed, difficulty, _draw)
    public = drawn["public"]
    lookups: tuple[ToolCall, ...] = tuple(ToolCall("request_facts", {"seat": s}) for s in MEMBERS)
    if infeasible:
        answer = ToolCall(ESCALATE, {"reason": drawn["why"]})
        note = ""
    else:
        lookups += (ToolCall("propose_plan", {"selection": drawn["selection"]}),)
        answer = ToolCall(COMMIT, {"plan_id": "PLAN-1", "claimed_tco": tidy(drawn["optimum"])})
        note = f"e.g. {drawn['selection']} at {money(drawn['optimum'])}"
    company, product = company_and_product(rng)
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=infeasible, inline=False,
        public={"components": [{"component": c["component"], "options": c["options"]} for c in public["components"]]},
        private={"full": public, "optimum": drawn["optimum"], "selection": drawn["selection"], "facts": drawn["facts"],
                 "binding": drawn["binding"], "why_infeasible": drawn["why"], "optimum_note": note},
        content=public,
        brief=brief(public, company, product), lookups=lookups, answer=answer,
        template=f"{ROLE}/mediator" + ("/escalate" if infeasible else ""),
    )


def brief(public: dict[str, Any], company: str, product: str) -> str:
    lines = [f"{company}'s Platform Plan Council must choose the architecture of its {product}: one option per "
             "component."]
    lines += [f"- {c['component']}: {', '.join(c['options'])}" for c in public["components"]]
    lines.append("The CTO knows latencies, availabilities, incompatibilities and the SLOs; Cost knows prices and the "
                 "12-month budget; Risk knows vendor risk scores, certifications, the risk ceiling and the required "
                 "certifications. The council's goal is the plan with the lowest 12-month TCO (12 x monthly + "
                 "migration) that satisfies every member's requirements, committed once every member accepts it. "
                 "If no plan can satisfy everyone, escalate.")
    return "\n".join(lines)


def check_selection(public: dict[str, Any], selection: Any) -> list[str]:
    comps = {c["component"]: c["options"] for c in public["components"]}
    if not isinstance(selection, dict):
        return ["selection must map every component to an option id"]
    problems = [f"no option chosen for {c}" for c in comps if c not in selection]
    problems += [f"{c!r} is not a component" for c in selection if c not in comps]
    problems += [f"{o!r} is not a {c} option" for c, o in selection.items() if c in comps and o not in comps[c]]
    return problems


def plan_from_facts(components: list[dict[str, Any]], facts: Sequence[dict[str, Any]]) -> tuple[str, Any]:
    """What a mediator can conclude from shared fact records alone: ("plan", (tco, selection)) for the
    cheapest plan consistent with them, ("escalate", reason) when none is, or ("wait", missing seats)."""
    owners = {f["owner"] for f in facts}
    missing = [s for s in MEMBERS if s not in owners]
    if missing:
        return "wait", missing
    by_id = {f["id"]: f for f in facts}
    options: dict[str, dict[str, Any]] = {}
    for c in components:
        for o in c["options"]:
            options[o] = {
                "id": o, "component": c["component"],
                "monthly_usd": by_id.get(f"cost/monthly/{o}", {}).get("value", 0),
                "migration_usd": by_id.get(f"cost/migration/{o}", {}).get("value", 0),
                "p95_latency_ms": by_id.get(f"cto/latency/{o}", {}).get("value"),
                "availability": by_id.get(f"cto/availability/{o}", {}).get("value", 1.0),
                "vendor_risk": by_id.get(f"risk/vendor_risk/{o}", {}).get("value", 0),
                "compliance": by_id.get(f"risk/compliance/{o}", {}).get("value", []),
                "incompatible_with": sorted(x for f in facts if f["kind"] == "incompatible" and o in f["value"]
                                            for x in f["value"] if x != o),
            }
    slo = by_id.get("cto/latency_slo", {"value": math.inf, "critical_path": []})
    req: dict[str, Any] = {"latency_slo_ms": slo["value"],
                           "budget_tco_usd": by_id.get("cost/budget", {}).get("value", math.inf),
                           "risk_ceiling": by_id.get("risk/ceiling", {}).get("value", math.inf)}
    if "cto/availability_slo" in by_id:
        req["availability_slo"] = by_id["cto/availability_slo"]["value"]
    if "risk/required_compliance" in by_id:
        req["required_compliance"] = by_id["risk/required_compliance"]["value"]
    crit = set(slo.get("critical_path", []))
    public = {"components": [{"component": c["component"], "critical_path": c["component"] in crit,
                              "options": c["options"]} for c in components],
              "options": options, "requirements": req}
    for o in options.values():
        if o["component"] in crit and o["p95_latency_ms"] is None:
            o["p95_latency_ms"] = 0
    value, selection = solve(public)
    if selection is None:
        return "escalate", "no plan meets the CTO's and Risk's requirements"
    if value > req["budget_tco_usd"]:
        return "escalate", (f"the cheapest plan meeting every other requirement costs {money(value)}, over the "
                            f"{money(req['budget_tco_usd'])} budget")
    return "plan", (value, selection)
