"""CTO scenarios as numbers: options and their data sheets, requirements that bind, the exact
solver, and what find_architecture answers. The prose layer (cto_brief.py) states the requirements;
cto.py offers the tools and grades.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from officegym.envs.roles.scenario_utils import money
from officegym.envs.roles.solvers import min_cost_choice

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
FAMILIES = ("compliance", "latency", "availability", "skill")  # besides the budget, which every brief states
# Per level 1..10: components, options per component, requirement families besides the budget.
N_COMPONENTS = (2, 2, 3, 3, 4, 5, 6, 7, 8, 9)
N_OPTIONS = (3, 3, 3, 3, 3, 4, 4, 4, 5, 5)
N_FAMILIES = (2, 2, 2, 3, 3, 3, 4, 4, 4, 4)
MIN_FAMILIES = (2, 2, 2, 2, 2, 2, 3, 3, 3, 3)  # left after dropping those that would not bind


def _level(difficulty: int, rng: random.Random) -> tuple[int, int, tuple[str, ...]]:
    i = difficulty - 1
    families = tuple(sorted(rng.sample(FAMILIES, N_FAMILIES[i]), key=FAMILIES.index))
    return N_COMPONENTS[i], N_OPTIONS[i], families


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


def _requirements_at(rng: random.Random, public: dict[str, Any], families: tuple[str, ...], difficulty: int,
                     allowed: dict[str, list[str]]) -> None:
    """Set the latency, availability and skill requirements so that a witness selection (good on
    the technical attributes) meets them while the cheapest selection tends not to, and draw the
    incompatible pairs (half of them touching the cheapest selection)."""
    options, req = public["options"], public["requirements"]
    cheap = _cheapest(public, allowed)
    witness = {c: _witness_option(rng, [options[o] for o in ids]) for c, ids in allowed.items()}
    crit = [c["component"] for c in public["components"] if c["critical_path"]]
    if "latency" in families:
        at_witness = sum(options[witness[c]]["p95_latency_ms"] for c in crit)
        at_cheapest = sum(options[cheap[c]]["p95_latency_ms"] for c in crit)
        req["latency_slo_ms"] = at_witness + math.floor(rng.uniform(0.0, 0.4) * max(0, at_cheapest - at_witness))
    if "availability" in families:
        at_witness = sum(math.log(options[witness[c]]["availability"]) for c in allowed)
        at_cheapest = sum(math.log(options[cheap[c]]["availability"]) for c in allowed)
        target = math.exp(at_witness + rng.uniform(0.0, 0.4) * min(0.0, at_cheapest - at_witness))
        req["availability_slo"] = math.floor(target * 1e4) / 1e4  # four decimals: 99.71% in a sentence
    if "skill" in families:
        at_witness = sum(options[witness[c]]["skill_fit"] for c in allowed) / len(allowed)
        at_cheapest = sum(options[cheap[c]]["skill_fit"] for c in allowed) / len(allowed)
        gap = min(0.0, at_cheapest - at_witness)
        req["min_avg_skill_fit"] = math.floor((at_witness + rng.uniform(0.0, 0.4) * gap) * 100) / 100
    n_pairs = round((difficulty - 1) / 9 * 2 * len(allowed))
    ids = list(options)
    protected = set(witness.values())
    cheap_ids = list(cheap.values())
    for _ in range(n_pairs):
        # half of the pairs touch the cheapest selection, so that they bind; none joins two witness options
        a = rng.choice(cheap_ids) if rng.random() < 0.5 else rng.choice(ids)
        b = rng.choice([o for o in ids if options[o]["component"] != options[a]["component"]])
        if b not in options[a]["incompatible_with"] and not (a in protected and b in protected):
            options[a]["incompatible_with"].append(b)
            options[b]["incompatible_with"].append(a)
    for o in options.values():
        o["incompatible_with"].sort()


REQUIREMENT_KEYS = {"compliance": "required_compliance", "latency": "latency_slo_ms",
                    "availability": "availability_slo", "skill": "min_avg_skill_fit"}


def binds(public: dict[str, Any], family: str, optimum: float) -> bool:
    """Whether leaving `family` out changes the answer: the optimum without it breaks it. Every stated
    requirement binds, so a brief misread on any one of them gives a wrong answer."""
    loose = {**public, "requirements": {k: v for k, v in public["requirements"].items() if k != REQUIREMENT_KEYS[family]}}
    value, selection = solve(loose)
    if selection is None or value >= optimum:
        return False
    return any(f == family for f, _ in evaluate(public, selection)["violations"])


def _tighten_latency(rng: random.Random, public: dict[str, Any]) -> None:
    """Latency set below what the optimum under the other requirements reaches, where that stays
    feasible: the other requirements buy low latency too, so a latency SLO set on its own is often
    met for free (and would not bind)."""
    req = public["requirements"]
    del req["latency_slo_ms"]
    _value, selection = solve(public)
    at = evaluate(public, selection)["latency"] if selection is not None else 0
    cut = rng.randint(1, max(1, at // 4))
    while cut >= 1:
        req["latency_slo_ms"] = at - cut
        if solve(public)[1] is not None:
            return
        cut //= 2
    req["latency_slo_ms"] = at  # cannot bind: the loop in _draw drops it


def _draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    n_comp, n_opt, families = _level(difficulty, rng)
    comps = sorted(rng.sample(COMPONENTS, n_comp), key=COMPONENTS.index)
    if "latency" in families and not any(crit for _, crit in comps):
        return None
    compliance = "compliance" in families
    options = _draw_options(rng, comps, n_opt, 0.4 * (difficulty - 1) / 9, compliance)
    components = [{"component": c, "critical_path": crit, "options": [f"{c}.{v}" for v in vendors]}
                  for (c, crit), vendors in zip(comps, _vendors(options, comps))]
    public: dict[str, Any] = {"components": components, "options": options, "requirements": {"budget_tco_usd": 0}}
    req = public["requirements"]
    victim, tag = None, ""
    if compliance:
        req["required_compliance"] = sorted(rng.sample(TAGS, 2 if difficulty >= 8 else 1))
        for c in components:
            if not any(set(req["required_compliance"]) <= set(options[o]["compliance"]) for o in c["options"]):
                fix = rng.choice(c["options"])
                options[fix]["compliance"] = sorted(set(options[fix]["compliance"]) | set(req["required_compliance"]))
    tags = set(req.get("required_compliance", ()))
    allowed = {c["component"]: [o for o in c["options"] if tags <= set(options[o]["compliance"])] for c in components}
    _requirements_at(rng, public, families, difficulty, allowed)
    if "latency" in families:
        _tighten_latency(rng, public)
    families = list(families)
    while True:  # a requirement that does not bind is dropped from the brief (it would be free to misread)
        best_value, best_sel = solve(public)
        if best_sel is None:
            return None
        loose = [f for f in families if not binds(public, f, best_value)]
        if not loose:
            break
        families.remove(loose[0])
        del req[REQUIREMENT_KEYS[loose[0]]]
    if len(families) < MIN_FAMILIES[difficulty - 1]:
        return None
    cheap_all = _cheapest(public, {c["component"]: c["options"] for c in components})
    if infeasible and "compliance" in families and rng.random() < 0.4:
        victim = rng.choice(components)
        tag = rng.choice(req["required_compliance"])
        for o in victim["options"]:
            options[o]["compliance"] = [t for t in options[o]["compliance"] if t != tag]
        req["budget_tco_usd"] = math.ceil(sum(tco(options[o]) for o in cheap_all.values()) * 1.3 / 1000) * 1000 + \
            math.ceil(best_value / 1000) * 1000
        why = f"no {victim['component']} option is certified {tag}"
        return {"public": public, "infeasible": True, "why": why, "optimum": None, "selection": None,
                "families": families}
    if infeasible:
        req["budget_tco_usd"] = math.floor(best_value * rng.uniform(0.82, 0.97) / 1000) * 1000
        if req["budget_tco_usd"] <= 0:
            return None
        why = (f"the cheapest selection meeting the other requirements costs {money(best_value)} over 12 months, "
               f"above the {money(req['budget_tco_usd'])} budget")
        return {"public": public, "infeasible": True, "why": why, "optimum": None, "selection": None,
                "families": families}
    slack = 0.30 - 0.025 * (difficulty - 1)
    req["budget_tco_usd"] = math.ceil(best_value * (1 + slack) / 1000) * 1000
    return {"public": public, "infeasible": False, "why": "", "optimum": best_value, "selection": best_sel,
            "families": families}


def solver_arguments(req: dict[str, Any]) -> dict[str, Any]:
    """The find_architecture arguments that state `req` exactly (what the oracle passes)."""
    out: dict[str, Any] = {"budget_usd": req["budget_tco_usd"]}
    for key in ("required_compliance", "latency_slo_ms", "availability_slo", "min_avg_skill_fit"):
        if key in req:
            out[key] = list(req[key]) if key == "required_compliance" else req[key]
    return out


def find(public: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """What find_architecture answers: the cheapest selection meeting the constraints given (the
    data sheets' incompatibilities always hold), with its figures, or why there is none."""
    req: dict[str, Any] = {"budget_tco_usd": math.inf}
    if "required_compliance" in args:
        req["required_compliance"] = sorted(set(args["required_compliance"]))
    for key, scale in (("latency_slo_ms", None), ("availability_slo", 1.0), ("min_avg_skill_fit", 1.0)):
        if key in args:
            value = float(args[key])
            # a percentage (99.9, 62) is read as the fraction it states
            req[key] = value / 100 if scale is not None and value > scale else value
    value, selection = solve({**public, "requirements": req})
    if selection is None:
        return {"selection": None, "result": "no selection meets these constraints"}
    figures = evaluate({**public, "requirements": req}, selection)
    out = {"selection": selection, **estimate(public, selection), "critical_path_p95_ms": figures["latency"],
           "availability": round(figures["availability"], 6), "avg_skill_fit": round(figures["skill"], 4)}
    budget = args.get("budget_usd")
    if budget is not None and value > budget:
        return {"selection": None, "result": f"the cheapest selection meeting the other constraints costs "
                                             f"{money(value)} over 12 months, above the budget of {money(budget)}"}
    return out
