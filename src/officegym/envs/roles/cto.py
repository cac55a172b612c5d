"""CTO: pick one technology per component at the lowest 12-month cost that meets every requirement.

Requirements (more of them as the level rises): a budget on 12-month TCO (12 x monthly + one-time
migration), compliance tags every option must carry, a p95 latency SLO summed over the critical
path, an availability SLO on the product of availabilities, a minimum average skill fit, and option
pairs that cannot be combined. The optimum is exact (branch and bound at generation time); the
reward is feasibility x (0.5 [optimal] + 0.5 optimum / TCO), and 0 when the claimed TCO is wrong.
The oracle reads the claimed TCO off the estimate_tco calculator, called on its selection.
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
    money,
    optimality_reward,
    tool,
)
from officegym.envs.roles.names import company_and_product
from officegym.envs.roles.solvers import min_cost_choice

ROLE = "cto"
SUBMIT = "submit_architecture"
ESTIMATE = "estimate_tco"  # the calculator whose figure the answer claims
COMPONENTS = (  # (component, on the critical path)
    ("database", True), ("compute", True), ("cache", True), ("auth", True), ("queue", False),
    ("cdn", True), ("storage", False), ("observability", False), ("search", True),
)
VENDORS = {
    "database": ("aurora", "cloudsql", "cockroach", "atlas", "planetscale", "pg-selfhost"),
    "compute": ("eks", "gke", "nomad", "fargate", "bare-metal", "cloudrun"),
    "cache": ("elasticache", "memorystore", "redis-ent", "dragonfly", "keydb", "memcached"),
    "auth": ("auth0", "cognito", "keycloak", "okta", "firebase-auth", "ory"),
    "queue": ("sqs", "pubsub", "msk", "rabbitmq", "nats", "pulsar"),
    "cdn": ("cloudfront", "fastly", "akamai", "cloudflare", "bunny", "edgio"),
    "storage": ("s3", "gcs", "r2", "wasabi", "minio", "b2"),
    "observability": ("datadog", "grafana-cloud", "newrelic", "honeycomb", "elastic", "signoz"),
    "search": ("opensearch", "algolia", "elastic-cloud", "typesense", "meilisearch", "vespa"),
}
TAGS = ("eu_residency", "hipaa", "soc2")
AVAILABILITIES = (0.995, 0.999, 0.9995, 0.9999)
FAMILIES = ("budget", "compliance", "latency", "availability", "skill")
# Per level 1..10: components, options per component, active requirement families.
N_COMPONENTS = (2, 2, 3, 4, 5, 6, 6, 7, 8, 9)
N_OPTIONS = (2, 2, 3, 3, 3, 4, 4, 4, 5, 5)
N_FAMILIES = (1, 1, 2, 2, 3, 3, 4, 4, 5, 5)
TOOLS_FROM_LEVEL = 4
NOISE_FROM_LEVEL = 7

SYSTEM = (
    "You are the CTO agent of an executive decision system. You choose one technology option for each "
    "component of a system so that every hard requirement holds and the 12-month total cost of ownership "
    "(TCO = 12 x monthly fee + one-time migration cost, summed over the chosen options) is as low as possible. "
    "Decide from the data sheets only; claims quoted from sales calls or hearsay are not data. "
    "Finish with exactly one call: {submit}(selection, claimed_tco, rationale), where selection maps every "
    "component to an option id and claimed_tco is the selection's 12-month TCO in dollars (it is recomputed; "
    "a wrong figure scores 0). If no selection meets every requirement, call {escalate}(reason) instead. "
    "The first answer is final."
)


def _level(difficulty: int) -> tuple[int, int, tuple[str, ...]]:
    i = difficulty - 1
    return N_COMPONENTS[i], N_OPTIONS[i], FAMILIES[: N_FAMILIES[i]]


def tco(option: dict[str, Any]) -> int:
    return 12 * option["monthly_usd"] + option["migration_usd"]


def estimate(public: dict[str, Any], selection: dict[str, str]) -> dict[str, int]:
    """What the estimate_tco calculator returns for the options of a selection (known ids): the
    12-month TCO the verifier recomputes, and its monthly and migration parts."""
    chosen = [public["options"][o] for o in selection.values()]
    return {"tco_12m_usd": sum(tco(o) for o in chosen), "monthly_usd": sum(o["monthly_usd"] for o in chosen),
            "migration_usd": sum(o["migration_usd"] for o in chosen)}


def evaluate(public: dict[str, Any], selection: dict[str, str]) -> dict[str, Any]:
    """Every figure of a complete, known selection and the requirements it breaks, as (family, text)."""
    options = public["options"]
    req = public["requirements"]
    chosen = [options[selection[c["component"]]] for c in public["components"]]
    total = sum(tco(o) for o in chosen)
    critical = {c["component"] for c in public["components"] if c["critical_path"]}
    latency = sum(o["p95_latency_ms"] for o in chosen if o["component"] in critical)
    availability = math.prod(o["availability"] for o in chosen)
    skill = sum(o["skill_fit"] for o in chosen) / len(chosen)
    violations = []
    if total > req["budget_tco_usd"]:
        violations.append(("budget", f"12-month TCO {money(total)} is over the {money(req['budget_tco_usd'])} budget"))
    for tag in req.get("required_compliance", ()):
        for o in chosen:
            if tag not in o["compliance"]:
                violations.append(("compliance", f"{o['id']} is not certified {tag}"))
    if "latency_slo_ms" in req and latency > req["latency_slo_ms"]:
        violations.append(("latency", f"critical-path p95 latency {latency} ms exceeds the {req['latency_slo_ms']} ms SLO"))
    if "availability_slo" in req and availability < req["availability_slo"] * (1 - 1e-12):
        violations.append(("availability", f"availability {availability:.6f} is below the {req['availability_slo']} SLO"))
    if "min_avg_skill_fit" in req and skill < req["min_avg_skill_fit"] - 1e-9:
        violations.append(("skill", f"average skill fit {skill:.3f} is below the required {req['min_avg_skill_fit']}"))
    ids = {o["id"] for o in chosen}
    for o in chosen:
        for other in o["incompatible_with"]:
            if other in ids and o["id"] < other:
                violations.append(("compatibility", f"{o['id']} is incompatible with {other}"))
    return {"tco": total, "latency": latency, "availability": availability, "skill": skill, "violations": violations}


def solve(public: dict[str, Any]) -> tuple[float, dict[str, str] | None]:
    """The exact minimum-TCO selection under every requirement but the budget."""
    comps = public["components"]
    options = public["options"]
    req = public["requirements"]
    tags = set(req.get("required_compliance", ()))
    groups = [[o for o in c["options"] if tags <= set(options[o]["compliance"])] for c in comps]
    costs = [[tco(options[o]) for o in g] for g in groups]
    resources = []
    if "latency_slo_ms" in req:
        usage = [[options[o]["p95_latency_ms"] if c["critical_path"] else 0 for o in g] for c, g in zip(comps, groups)]
        resources.append((usage, req["latency_slo_ms"]))
    if "availability_slo" in req:
        usage = [[-math.log(options[o]["availability"]) for o in g] for g in groups]
        resources.append((usage, -math.log(req["availability_slo"]) + 1e-12))
    if "min_avg_skill_fit" in req:
        floor = req["min_avg_skill_fit"]
        resources.append(([[floor - options[o]["skill_fit"] for o in g] for g in groups], 1e-9))
    index = {o: (k, j) for k, g in enumerate(groups) for j, o in enumerate(g)}
    conflicts = []
    for o, (k, j) in index.items():
        for other in options[o]["incompatible_with"]:
            if other in index and o < other:
                conflicts.append(((k, j), index[other]))

    def availability_ok(choice: tuple[int, ...]) -> bool:
        # the log rows prune; the product decides, exactly as evaluate() does
        slo = req["availability_slo"]
        return math.prod(options[g[j]]["availability"] for g, j in zip(groups, choice)) >= slo * (1 - 1e-12)

    value, choice = min_cost_choice(costs, resources, conflicts,
                                    leaf_ok=availability_ok if "availability_slo" in req else None)
    if choice is None:
        return math.inf, None
    return value, {c["component"]: groups[k][j] for k, (c, j) in enumerate(zip(comps, choice))}


def draw_option(r: Callable[[], float], comp: str, vendor: str, critical: bool) -> dict[str, Any]:
    """One option. Price follows a hidden grade that also buys latency and availability, so cheap
    options tend to be slow and fragile, while the team knows the simpler (cheaper) tools best:
    requirements pull in different directions and force trade-offs across components."""
    grade = r()
    return {
        "id": f"{comp}.{vendor}", "component": comp, "vendor": vendor,
        "monthly_usd": 200 + 50 * min(76, int((0.15 + 0.85 * grade) * (0.6 + 0.8 * r()) * 60)),
        "migration_usd": 1000 * int(r() * 31),
        "p95_latency_ms": 2 + int((1 - grade) * 28 + r() * 10) if critical else None,
        "availability": AVAILABILITIES[min(3, int(grade * 3 + r() * 1.2))],
        "compliance": [t for t in TAGS if r() < 0.6],
        "skill_fit": round(0.3 + 0.7 * (1 - grade) ** 0.5 * (0.6 + 0.4 * r()), 2), "lock_in": r() < 0.3,
        "incompatible_with": [],
    }


def _draw_options(rng: random.Random, comps: list[tuple[str, bool]], n_opt: int, trap_share: float,
                  compliance: bool) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {}
    for comp, critical in comps:
        group = []
        r = rng.random  # plain random() draws: randrange costs several times more per call
        for vendor in rng.sample(VENDORS[comp], n_opt):
            group.append(draw_option(r, comp, vendor, critical))
        cheapest = min(tco(x) for x in group)
        for o in group[1:]:
            if rng.random() < trap_share:
                if compliance:  # the cheapest on paper, and not certified for anything
                    o["monthly_usd"] = max(50, (cheapest // 12) * 6 // 10 // 50 * 50)
                    o["migration_usd"] = 0
                    o["compliance"] = []
                else:  # dominated: dearer than another option and worse on every attribute
                    base = group[0]
                    o.update(monthly_usd=base["monthly_usd"] + rng.randrange(50, 501, 50),
                             migration_usd=base["migration_usd"] + 1000,
                             p95_latency_ms=None if base["p95_latency_ms"] is None else base["p95_latency_ms"] + rng.randint(1, 8),
                             availability=min(base["availability"], 0.999), compliance=list(base["compliance"]),
                             skill_fit=round(max(0.3, base["skill_fit"] - 0.1), 2))
        options.update({o["id"]: o for o in group})
    return options


def _vendors(options: dict[str, dict[str, Any]], comps: list[tuple[str, bool]]) -> list[list[str]]:
    by_comp: dict[str, list[str]] = {c: [] for c, _ in comps}
    for o in options.values():
        by_comp[o["component"]].append(o["vendor"])
    return [by_comp[c] for c, _ in comps]


def _cheapest(public: dict[str, Any], allowed: dict[str, list[str]]) -> dict[str, str]:
    return {comp: min(ids, key=lambda o: (tco(public["options"][o]), o)) for comp, ids in allowed.items()}


def _witness_option(rng: random.Random, group: list[dict[str, Any]]) -> str:
    if rng.random() < 0.6:
        return rng.choice(group)["id"]
    return min(group, key=lambda o: ((o["p95_latency_ms"] or 0) / 40 - (o["availability"] - 0.995) * 200
                                     - o["skill_fit"], o["id"]))["id"]


def _draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    n_comp, n_opt, families = _level(difficulty)
    comps = sorted(rng.sample(COMPONENTS, n_comp), key=COMPONENTS.index)
    compliance = "compliance" in families
    options = _draw_options(rng, comps, n_opt, 0.4 * (difficulty - 1) / 9, compliance)
    components = [{"component": c, "critical_path": crit, "options": [f"{c}.{v}" for v in vendors]}
                  for (c, crit), vendors in zip(comps, _vendors(options, comps))]
    public: dict[str, Any] = {"components": components, "options": options, "requirements": {"budget_tco_usd": 0}}
    req = public["requirements"]
    kind = "budget"
    if compliance:
        req["required_compliance"] = sorted(rng.sample(TAGS, 2 if difficulty >= 8 else 1))
        for c in components:
            if not any(set(req["required_compliance"]) <= set(options[o]["compliance"]) for o in c["options"]):
                fix = rng.choice(c["options"])
                options[fix]["compliance"] = sorted(set(options[fix]["compliance"]) | set(req["required_compliance"]))
        if infeasible and rng.random() < 0.4:
            kind = "compliance"
            victim = rng.choice(components)
            tag = rng.choice(req["required_compliance"])
            for o in victim["options"]:
                options[o]["compliance"] = [t for t in options[o]["compliance"] if t != tag]
    tags = set(req.get("required_compliance", ()))
    allowed = {c["component"]: [o for o in c["options"] if tags <= set(options[o]["compliance"])] or c["options"]
               for c in components}
    cheap = _cheapest(public, allowed)
    # A witness selection that is good on the technical attributes: every requirement is set so that
    # the witness meets it (the scenario is feasible by construction) while the cheapest selection
    # tends not to (the requirement binds).
    witness = {c: _witness_option(rng, [options[o] for o in ids]) for c, ids in allowed.items()}
    crit = [c["component"] for c in components if c["critical_path"]]
    if "latency" in families and crit:
        at_witness = sum(options[witness[c]]["p95_latency_ms"] for c in crit)
        at_cheapest = sum(options[cheap[c]]["p95_latency_ms"] for c in crit)
        req["latency_slo_ms"] = at_witness + math.floor(rng.uniform(0.0, 0.4) * max(0, at_cheapest - at_witness))
    if "availability" in families:
        at_witness = sum(math.log(options[witness[c]]["availability"]) for c in allowed)
        at_cheapest = sum(math.log(options[cheap[c]]["availability"]) for c in allowed)
        target = math.exp(at_witness + rng.uniform(0.0, 0.4) * min(0.0, at_cheapest - at_witness))
        req["availability_slo"] = math.floor(target * 1e5) / 1e5
    if "skill" in families:
        at_witness = sum(options[witness[c]]["skill_fit"] for c in allowed) / len(allowed)
        at_cheapest = sum(options[cheap[c]]["skill_fit"] for c in allowed) / len(allowed)
        gap = min(0.0, at_cheapest - at_witness)
        req["min_avg_skill_fit"] = math.floor((at_witness + rng.uniform(0.0, 0.4) * gap) * 100) / 100
    n_pairs = round((difficulty - 1) / 9 * 2 * n_comp)
    ids = list(options)
    protected = set(witness.values())
    cheap_ids = list(cheap.values())
    elsewhere = {c["component"]: [o for o in ids if options[o]["component"] != c["component"]] for c in components}
    for _ in range(n_pairs):
        # half of the pairs touch the cheapest selection, so that they bind; none joins two witness options
        a = rng.choice(cheap_ids) if rng.random() < 0.5 else rng.choice(ids)
        b = rng.choice(elsewhere[options[a]["component"]])
        if b not in options[a]["incompatible_with"] and not (a in protected and b in protected):
            options[a]["incompatible_with"].append(b)
            options[b]["incompatible_with"].append(a)
    for o in options.values():
        o["incompatible_with"].sort()
    best_value, best_sel = solve(public)
    if kind == "compliance":
        if best_sel is not None:
            return None
        req["budget_tco_usd"] = math.ceil(sum(tco(options[o]) for o in cheap.values()) * 1.3 / 1000) * 1000
        why = f"no {victim['component']} option is certified {tag}"
        return {"public": public, "infeasible": True, "why": why, "optimum": None, "selection": None}
    if best_sel is None:
        return None
    if infeasible:
        req["budget_tco_usd"] = math.floor(best_value * rng.uniform(0.82, 0.97) / 100) * 100
        why = (f"the cheapest selection meeting the other requirements costs {money(best_value)} over 12 months, "
               f"above the {money(req['budget_tco_usd'])} budget")
        return {"public": public, "infeasible": True, "why": why, "optimum": None, "selection": None}
    slack = 0.30 - 0.025 * (difficulty - 1)
    req["budget_tco_usd"] = math.ceil(best_value * (1 + slack) / 1000) * 1000
    return {"public": public, "infeasible": False, "why": "", "optimum": best_value, "selection": best_sel}


def _sheet_line(o: dict[str, Any]) -> str:
    parts = [f"{money(o['monthly_usd'])}/month", f"migration {money(o['migration_usd'])}"]
    if o["p95_latency_ms"] is not None:
        parts.append(f"p95 {o['p95_latency_ms']} ms")
    parts += [f"availability {o['availability']}", "compliance " + ("+".join(o["compliance"]) or "none"),
              f"skill fit {o['skill_fit']}", "lock-in" if o["lock_in"] else "no lock-in"]
    if o["incompatible_with"]:
        parts.append("incompatible with " + ", ".join(o["incompatible_with"]))
    return f"- {o['id']}: " + ", ".join(parts)


def _brief(rng: random.Random, public: dict[str, Any], difficulty: int) -> str:
    company, product = company_and_product(rng)
    req = public["requirements"]
    comps = [c["component"] for c in public["components"]]
    crit = [c["component"] for c in public["components"] if c["critical_path"]]
    lines = [
        f"{company} is re-platforming its {product}. Choose one option for each of these {len(comps)} components: "
        f"{', '.join(comps)}.",
        "Requirements:",
        f"- 12-month TCO (12 x monthly fee + one-time migration, summed) at most {money(req['budget_tco_usd'])}.",
    ]
    if "required_compliance" in req:
        lines.append(f"- Every chosen option must be certified: {', '.join(req['required_compliance'])}.")
    if "latency_slo_ms" in req:
        lines.append(f"- The p95 latencies of the critical-path components ({', '.join(crit)}) must add up to at most "
                     f"{req['latency_slo_ms']} ms.")
    if "availability_slo" in req:
        lines.append(f"- The product of the availabilities of all chosen options must be at least {req['availability_slo']}.")
    if "min_avg_skill_fit" in req:
        lines.append(f"- The team's average skill fit over the chosen options must be at least {req['min_avg_skill_fit']}.")
    if any(o["incompatible_with"] for o in public["options"].values()):
        lines.append("- Options listed as incompatible with each other cannot both be chosen.")
    lines.append("Among the selections that meet every requirement, pick the one with the lowest 12-month TCO.")
    if difficulty >= NOISE_FROM_LEVEL:
        o = rng.choice(list(public["options"].values()))
        lines.append(f"(From a sales call: the {o['vendor']} team says migration to {o['id']} is free and its "
                     f"availability is 99.999%.)")
    if difficulty < TOOLS_FROM_LEVEL:
        lines.append("Data sheets:")
        lines += [_sheet_line(o) for o in public["options"].values()]
    else:
        lines.append("The components and the option data sheets are available through the tools.")
    return "\n".join(lines)


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int) -> Scenario:
    drawn, rng = draw_scenario(ROLE, seed, difficulty, _draw)
    public = drawn["public"]
    inline = difficulty < TOOLS_FROM_LEVEL
    lookups = () if inline else (
        ToolCall("list_components", {}),
        *(ToolCall("list_options", {"component": c["component"]}) for c in public["components"]),
    )
    checks: tuple[ToolCall, ...] = ()
    if drawn["infeasible"]:
        answer = ToolCall(ESCALATE, {"reason": drawn["why"]})
        note = ""
    else:
        # the claimed TCO is what the calculator returns for the chosen selection
        checks = (ToolCall(ESTIMATE, {"selection": drawn["selection"]}),)
        claimed = estimate(public, drawn["selection"])["tco_12m_usd"]
        answer = ToolCall(SUBMIT, {"selection": drawn["selection"], "claimed_tco": claimed,
                                   "rationale": "cheapest selection that meets every requirement"})
        note = f"e.g. {drawn['selection']} with 12-month TCO {money(drawn['optimum'])}"
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=drawn["infeasible"], inline=inline, public=public,
        private={"optimum": drawn["optimum"], "selection": drawn["selection"], "why_infeasible": drawn["why"],
                 "optimum_note": note},
        brief=_brief(rng, public, difficulty), lookups=lookups, answer=answer,
        template=f"{ROLE}/{'inline' if inline else 'tools'}" + ("/escalate" if drawn["infeasible"] else ""),
        checks=checks,
    )


SELECTION = {"type": "object", "description": "component -> option id, one entry per component",
             "additionalProperties": {"type": "string"}}
SPECS = (
    tool("list_components", "The components to choose for, whether each is on the latency critical path, "
         "and their option ids."),
    tool("list_options", "The data sheets of every option for one component.",
         {"component": {"type": "string"}}, ["component"]),
    tool("get_option", "The data sheet of one option.", {"option_id": {"type": "string"}}, ["option_id"]),
    tool("check_compatibility", "Whether two options can be combined.",
         {"option_a": {"type": "string"}, "option_b": {"type": "string"}}, ["option_a", "option_b"]),
    tool(ESTIMATE, "Calculator: the 12-month TCO (12 x monthly + migration) of some options.",
         {"selection": SELECTION}, ["selection"]),
    tool(SUBMIT, "Submit the final architecture. Ends the episode.", {
        "selection": SELECTION,
        "claimed_tco": {"type": "number", "description": "the selection's 12-month TCO in dollars"},
        "rationale": {"type": "string", "maxLength": 2000},
    }, ["selection", "claimed_tco"]),
    ESCALATE_SPEC,
)


def _option(scenario: Scenario, option_id: Any) -> dict[str, Any]:
    option = scenario.public["options"].get(option_id)
    if option is None:
        raise ToolRefusal(f"unknown option {option_id!r}")
    return option


def _list_components(s: Scenario, a: dict[str, Any]) -> Any:
    return s.public["components"]


def _list_options(s: Scenario, a: dict[str, Any]) -> Any:
    for c in s.public["components"]:
        if c["component"] == a["component"]:
            return [s.public["options"][o] for o in c["options"]]
    known = ", ".join(c["component"] for c in s.public["components"])
    raise ToolRefusal(f"unknown component {a['component']!r}; components: {known}")


def _check(s: Scenario, a: dict[str, Any]) -> Any:
    first, second = _option(s, a["option_a"]), _option(s, a["option_b"])
    return {"compatible": second["id"] not in first["incompatible_with"]}


def _estimate(s: Scenario, a: dict[str, Any]) -> Any:
    for o in a["selection"].values():
        _option(s, o)  # an unknown id is refused
    return estimate(s.public, a["selection"])


READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    "list_components": _list_components, "list_options": _list_options,
    "get_option": lambda s, a: _option(s, a["option_id"]), "check_compatibility": _check, ESTIMATE: _estimate,
}


def grade(scenario: Scenario, answer: ToolCall) -> Grade:
    decided = escalation_grade(scenario, answer)
    if decided is not None:
        return decided
    public = scenario.public
    selection, claimed = answer.arguments["selection"], answer.arguments["claimed_tco"]
    comps = [c["component"] for c in public["components"]]
    problems = [f"no option chosen for {c}" for c in comps if c not in selection]
    problems += [f"{c!r} is not a component" for c in selection if c not in comps]
    for c, o in selection.items():
        if c in comps and (o not in public["options"] or public["options"][o]["component"] != c):
            problems.append(f"{o!r} is not a {c} option")
    if problems:
        return Grade(0.0, False, "invalid_answer", {"feasible": 0.0}, problems)
    figures = evaluate(public, selection)
    optimum = scenario.private["optimum"]
    feasible = not figures["violations"]
    claims_ok = claim_matches(claimed, figures["tco"])
    quality = optimum / figures["tco"] if figures["tco"] > 0 else 0.0
    optimal = feasible and figures["tco"] <= optimum * (1 + 1e-9)
    components = {"feasible": float(feasible), "optimal": float(optimal), "quality_ratio": quality if feasible else 0.0,
                  "claims_ok": float(claims_ok), "tco": float(figures["tco"]), "optimum_tco": float(optimum)}
    evidence = [text for _, text in figures["violations"]]
    evidence.append(f"TCO {money(figures['tco'])} vs optimum {money(optimum)} (ratio {quality:.4f})")
    if not claims_ok:
        evidence.append(f"claimed TCO {claimed} but the selection's TCO is {figures['tco']}")
        return Grade(0.0, False, "hallucinated_number", components, evidence)
    if not feasible:
        return Grade(0.0, False, "infeasible", components, evidence)
    reward = optimality_reward(feasible, quality, optimal)
    return Grade(reward, optimal, "correct" if optimal else "suboptimal", components, evidence)


class CTOEnvironment(RoleEnvironment):
    """Architecture selection under budget, compliance, latency, availability and skill requirements."""

    role = ROLE
    name = "roles/cto"
    answer_tools = (SUBMIT, ESCALATE)

    generator = staticmethod(generate)
    specs = tuple(SPECS)
    reader_table = READERS
    system_template = SYSTEM
    grader = staticmethod(grade)
