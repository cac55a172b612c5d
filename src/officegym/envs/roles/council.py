"""The Platform Plan Council: CTO, Cost and Risk hold private facts; ReconcileGPT mediates and commits.

The decision is an architecture (one option per component). The CTO knows latencies,
availabilities, incompatibilities and the SLOs; Cost knows prices and the 12-month budget; Risk knows
vendor risk scores, compliance tags, the risk ceiling and the required certifications. The generator
solves the full-information problem (minimum 12-month TCO under every seat's constraints) and records
which private facts bind.

Acts are structured and checkable: `share` (typed fact records), `propose` (which returns the plan's
12-month TCO from the prices shared so far: the council's calculator, whose figure a commit copies),
`object` (citing a reason code and a fact), `accept`, and the mediator's `commit` or `escalate`.
`CouncilState` holds them; `score_council` turns a finished council into the team reward:

    R = clamp((feasible x optimum / TCO + 0.2 consensus - 0.1 unresolved - 0.05 extra_rounds) / 1.2, 0, 1)

consensus (every seat accepted the committed plan) counts only for a feasible plan; an objection is
valid when its cited fact really shows the objected plan breaking a constraint, and unresolved when
its seat did not accept the committed plan; rounds beyond the minimum (one to share, one to review
a proposal) cost 0.05 each; an infeasible commit scores 0 whatever the consensus, and escalation is
right only when no plan satisfies everyone. Per-seat credit (+0.1 for disclosing a binding fact,
-0.05 per false objection) is reported alongside.

`CouncilEnvironment` is the single-agent form (`roles/council`): the model is the mediator and the
other seats are the scripted members below, so the agent loop and trainer run it unchanged.
`CouncilEnvironment.episode` (council_episode.py) gives every seat its own policy: the agent loop
plays all four.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from officegym.core.episode import Episode
from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolResult, ToolSpec
from officegym.envs.roles.base import (
    ESCALATE,
    ESCALATE_SPEC,
    Grade,
    RoleEnvironment,
    RoleSession,
    Scenario,
    claim_matches,
    draw_scenario,
    infeasible_seed,
    money,
    tidy,
    tool,
)
from officegym.envs.roles.cto import AVAILABILITIES, COMPONENTS, TAGS, VENDORS
from officegym.envs.roles.names import company_and_product
from officegym.envs.roles.solvers import min_cost_choice

ROLE = "council"
MEMBERS = ("cto", "cost", "risk")
MEDIATOR = "reconcile"
SEATS = (*MEMBERS, MEDIATOR)
COMMIT = "commit_plan"
N_COMPONENTS = (2, 2, 3, 3, 4, 4, 5, 5, 6, 6)
N_OPTIONS = (2, 2, 2, 3, 3, 3, 3, 4, 4, 4)
AVAILABILITY_FROM, INCOMPATIBLE_FROM, COMPLIANCE_FROM = 5, 3, 4
MIN_ROUNDS = 2  # one round to share facts, one to review a proposal
CONSENSUS_BONUS, UNRESOLVED_PENALTY, ROUND_PENALTY, SCALE = 0.2, 0.1, 0.05, 1.2
DISCLOSURE_CREDIT, FALSE_OBJECTION_PENALTY = 0.1, 0.05
REASONS = ("latency_slo", "availability_slo", "incompatible", "over_budget", "risk_ceiling", "compliance")


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


# --- the shared state of one council


@dataclass
class Objection:
    seat: str
    plan_id: str
    reason: str
    fact_id: str
    valid: bool


@dataclass
class CouncilState:
    """Every act of a council, checked as it happens."""

    scenario: Scenario
    shared: dict[str, set[str]] = field(default_factory=lambda: {s: set() for s in MEMBERS})
    proposals: dict[str, dict[str, str]] = field(default_factory=dict)  # plan id -> selection
    proposers: dict[str, str] = field(default_factory=dict)
    responses: dict[str, dict[str, str]] = field(default_factory=dict)  # plan id -> seat -> accept | object
    objections: list[Objection] = field(default_factory=list)
    outcome: tuple[str, Any, Any] | None = None  # ("commit", plan id, claimed) | ("escalate", reason, None)
    rounds: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def full(self) -> dict[str, Any]:
        """Every seat's facts together (the mediator sees only what is shared)."""
        return self.scenario.private["full"]

    @property
    def facts(self) -> dict[str, dict[str, Any]]:
        return self.scenario.private["facts"]

    def _log(self, seat: str, act: str, **details: Any) -> dict[str, Any]:
        event = {"round": self.rounds, "seat": seat, "act": act, **details}
        self.events.append(event)
        return event

    def share(self, seat: str, fact_ids: Sequence[str]) -> ToolResult:
        mine = {fid for fid, f in self.facts.items() if f["owner"] == seat}
        wanted = sorted(mine) if list(fact_ids) == ["all"] else list(dict.fromkeys(fact_ids))
        unknown = [f for f in wanted if f not in mine]
        if unknown:
            return ToolResult(f"not your facts: {', '.join(unknown[:5])}", "rejected")
        self.shared[seat].update(wanted)
        records = [self.facts[f] for f in wanted]
        self._log(seat, "share", facts=records)
        return ToolResult({"shared": len(records), "facts": records})

    def propose(self, seat: str, selection: dict[str, str]) -> ToolResult:
        problems = check_selection(self.full, selection)
        if problems:
            return ToolResult("; ".join(problems), "rejected")
        plan_id = f"PLAN-{len(self.proposals) + 1}"
        self.proposals[plan_id] = dict(selection)
        self.proposers[plan_id] = seat
        self.responses[plan_id] = {}
        # the council's calculator: a commit copies this figure instead of doing the sum itself
        figure = self.shared_tco(selection)
        self._log(seat, "propose", plan_id=plan_id, selection=dict(selection), tco_12m_usd=figure)
        return ToolResult({"plan_id": plan_id, "tco_12m_usd": figure})

    def shared_tco(self, selection: dict[str, str]) -> int | None:
        """A plan's 12-month TCO (12 x monthly + migration) from the Cost facts shared so far, computed
        as the verifier does; None while a price of one of its options is not shared."""
        shared = self.shared["cost"]
        ids = [f"cost/{kind}/{o}" for o in selection.values() for kind in ("monthly", "migration")]
        if not all(i in shared for i in ids):
            return None
        return sum(tco({"monthly_usd": self.facts[f"cost/monthly/{o}"]["value"],
                        "migration_usd": self.facts[f"cost/migration/{o}"]["value"]}) for o in selection.values())

    def respond(self, seat: str, plan_id: str, reason: str | None = None, fact_id: str | None = None) -> ToolResult:
        if plan_id not in self.proposals:
            return ToolResult(f"unknown plan {plan_id!r}", "rejected")
        if reason is None:
            self.responses[plan_id][seat] = "accept"
            self._log(seat, "accept", plan_id=plan_id)
            return ToolResult({"accepted": plan_id})
        if reason not in REASONS:
            return ToolResult(f"reason_code must be one of {', '.join(REASONS)}", "rejected")
        valid = objection_valid(self.full, self.facts, self.proposals[plan_id], reason, fact_id or "")
        self.objections.append(Objection(seat, plan_id, reason, fact_id or "", valid))
        self.responses[plan_id][seat] = "object"
        self._log(seat, "object", plan_id=plan_id, reason_code=reason, fact_id=fact_id)
        return ToolResult({"objected": plan_id})

    def commit(self, plan_id: str, claimed_tco: float) -> ToolResult:
        if plan_id not in self.proposals:
            return ToolResult(f"unknown plan {plan_id!r}: commit a proposed plan", "rejected")
        self.outcome = ("commit", plan_id, claimed_tco)
        self._log(MEDIATOR, "commit", plan_id=plan_id, claimed_tco=claimed_tco)
        return ToolResult({"committed": plan_id})

    def escalate(self, reason: str) -> ToolResult:
        self.outcome = ("escalate", reason, None)
        self._log(MEDIATOR, "escalate", reason=reason)
        return ToolResult({"escalated": True})


def check_selection(public: dict[str, Any], selection: Any) -> list[str]:
    comps = {c["component"]: c["options"] for c in public["components"]}
    if not isinstance(selection, dict):
        return ["selection must map every component to an option id"]
    problems = [f"no option chosen for {c}" for c in comps if c not in selection]
    problems += [f"{c!r} is not a component" for c in selection if c not in comps]
    problems += [f"{o!r} is not a {c} option" for c, o in selection.items() if c in comps and o not in comps[c]]
    return problems


def score_council(state: CouncilState) -> Grade:
    """The team reward of a finished (or abandoned) council, with per-seat credit as components."""
    scenario = state.scenario
    credit = _credit(state)
    extra_rounds = max(0, state.rounds - MIN_ROUNDS)
    base = {"rounds": float(state.rounds), "extra_rounds": float(extra_rounds), **credit}
    if state.outcome is None:
        return Grade(0.0, False, "no_commit", {**base, "feasible": 0.0}, ["the council ended without a commit"])
    kind, what, claimed = state.outcome
    if kind == "escalate":
        if scenario.infeasible:
            reward = max(0.0, min(1.0, (1.0 + CONSENSUS_BONUS - ROUND_PENALTY * extra_rounds) / SCALE))
            return Grade(reward, reward >= 1.0 - 1e-9, "correct_escalation", {**base, "escalation_correct": 1.0},
                         [f"correctly escalated: {scenario.private['why_infeasible']}"])
        return Grade(0.0, False, "wrong_escalation", {**base, "escalation_correct": 0.0},
                     [f"escalated, but the scenario is feasible: {scenario.private['optimum_note']}"])
    selection = state.proposals[what]
    figures = evaluate(state.full, selection)
    feasible = not figures["violations"]
    claims_ok = claim_matches(claimed, figures["tco"])
    consensus = all(state.responses[what].get(s) == "accept" for s in MEMBERS)
    unresolved = [o for o in state.objections if o.valid and state.responses[what].get(o.seat) != "accept"]
    optimum = scenario.private["optimum"]
    quality = optimum / figures["tco"] if feasible and optimum and figures["tco"] > 0 else 0.0
    components = {**base, "feasible": float(feasible), "quality_ratio": quality, "consensus": float(consensus),
                  "unresolved_objections": float(len(unresolved)), "claims_ok": float(claims_ok),
                  "tco": float(figures["tco"]), "optimum_tco": float(optimum or 0.0)}
    evidence = [text for _, text in figures["violations"]]
    evidence.append(f"committed {what} with TCO {money(figures['tco'])}"
                    + (f" vs optimum {money(optimum)}" if optimum else "") + f"; consensus {consensus}; "
                    f"{len(unresolved)} unresolved valid objection(s); {state.rounds} round(s)")
    if scenario.infeasible:
        evidence.append(f"no plan satisfies everyone ({scenario.private['why_infeasible']}): the right act was to escalate")
        return Grade(0.0, False, "missed_escalation", components, evidence)
    if not claims_ok:
        evidence.append(f"claimed TCO {claimed} but the plan's TCO is {figures['tco']}")
        return Grade(0.0, False, "hallucinated_number", components, evidence)
    if not feasible:
        return Grade(0.0, False, "infeasible", components, evidence)
    raw = quality + CONSENSUS_BONUS * consensus - UNRESOLVED_PENALTY * len(unresolved) - ROUND_PENALTY * extra_rounds
    reward = max(0.0, min(1.0, raw / SCALE))
    matched = reward >= 1.0 - 1e-9
    label = "correct" if matched else ("suboptimal" if quality < 1 - 1e-9 else "process")
    return Grade(reward, matched, label, components, evidence)


def _credit(state: CouncilState) -> dict[str, float]:
    binding = state.scenario.private["binding"]
    out = {}
    for seat in MEMBERS:
        disclosed = bool(set(binding.get(seat, ())) & state.shared[seat])
        false = sum(1 for o in state.objections if o.seat == seat and not o.valid)
        out[f"credit/{seat}"] = DISCLOSURE_CREDIT * disclosed - FALSE_OBJECTION_PENALTY * false
    return out


# --- the single-agent environment: the model mediates, the members are scripted


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


SELECTION = {"type": "object", "description": "component -> option id", "additionalProperties": {"type": "string"}}
MEDIATOR_SPECS = (
    tool("request_facts", "Ask a council member (cto, cost or risk) to share its private facts; returns the typed "
         "fact records it shares.", {"seat": {"type": "string", "enum": list(MEMBERS)}}, ["seat"]),
    tool("propose_plan", "Put a plan to the council; every member accepts it or objects, citing a reason code and a "
         "fact. Returns the plan id, its 12-month TCO from the prices shared so far (null while one is not) and "
         "the responses.", {"selection": SELECTION}, ["selection"]),
    tool(COMMIT, "Commit a proposed plan. Ends the council.", {
        "plan_id": {"type": "string"},
        "claimed_tco": {"type": "number", "description": "the plan's 12-month TCO in dollars"},
    }, ["plan_id", "claimed_tco"]),
    ESCALATE_SPEC,
)
MEDIATOR_SYSTEM = (
    "You are ReconcileGPT, the mediator of an executive council. The members (cto, cost, risk) hold private facts "
    "as typed records. Gather what you need, propose plans, and commit the plan with the lowest 12-month TCO "
    "(12 x monthly + migration) that satisfies every member's requirements. A commit earns a consensus bonus "
    "when every member accepted the plan; valid objections left unresolved and review rounds beyond the first "
    "cost reward; an infeasible commit scores 0. claimed_tco is recomputed and a wrong figure scores 0: claim the "
    "tco_12m_usd that proposing the plan returned. If no plan "
    "can satisfy everyone, call {escalate}(reason). Finish with exactly one call: {commit}(plan_id, claimed_tco) "
    "or {escalate}(reason)."
)


class CouncilSession(RoleSession):
    """The mediator's episode: requests and proposals are answered by truthful scripted members."""

    def __init__(self, env: RoleEnvironment, scenario: Scenario | None, specs: Sequence[ToolSpec],
                 problem: str | None = None):
        super().__init__(env, scenario, specs, problem)
        self.state = CouncilState(scenario) if scenario is not None else None
        if self.state is not None:
            self.state.rounds = 1  # facts are gathered in the first round

    def execute(self, name: Any, arguments: Any = None) -> ToolResult:
        if self.state is not None and self.answer is not None and name in ("request_facts", "propose_plan"):
            return ToolResult("the council has ended", "rejected")
        if self.state is None or self.answer is not None or name not in ("request_facts", "propose_plan", COMMIT):
            return self._finish(super().execute(name, arguments), name)
        checked = self._checked(name, arguments)
        if isinstance(checked, ToolResult):
            return checked
        state, args = self.state, checked
        if name == "request_facts":
            return state.share(args["seat"], ["all"])
        if name == "propose_plan":
            result = state.propose(MEDIATOR, args["selection"])
            if not result.ok:
                return result
            plan_id = result.value["plan_id"]
            state.rounds += 1
            replies = []
            for seat in MEMBERS:
                reason, fact_id = member_review(state.full, state.facts, seat, args["selection"])
                if reason == "accept":
                    state.respond(seat, plan_id)
                    replies.append({"seat": seat, "act": "accept"})
                else:
                    state.respond(seat, plan_id, reason, fact_id)
                    replies.append({"seat": seat, "act": "object", "reason_code": reason, "fact_id": fact_id})
            return ToolResult({**result.value, "responses": replies})
        if args["plan_id"] not in state.proposals:
            return ToolResult(f"unknown plan {args['plan_id']!r}: commit a proposed plan", "rejected")
        return self._finish(super().execute(name, args), name)

    def _checked(self, name: str, arguments: Any) -> ToolResult | dict[str, Any]:
        """Arguments decoded and schema-checked the way RoleSession does, without running the call."""
        import json

        from officegym.envs.roles.schema import schema_error

        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError) as exc:
                return ToolResult(f"arguments are not valid JSON: {exc}", "error")
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            return ToolResult("arguments must be a JSON object", "error")
        spec = self.specs.get(name)
        if spec is None:
            return ToolResult(f"unknown tool {name!r}; available: {', '.join(self.specs)}", "error")
        error = schema_error(arguments, spec.parameters)
        return ToolResult(f"{name}: {error}", "error") if error else arguments

    def _finish(self, result: ToolResult, name: Any) -> ToolResult:
        if self.state is not None and self.answer is not None and self.state.outcome is None:
            args = self.answer.arguments
            if self.answer.name == COMMIT:
                self.state.commit(args["plan_id"], args["claimed_tco"])
            else:
                self.state.escalate(args["reason"])
        return result


class CouncilEnvironment(RoleEnvironment):
    """The council with the model as mediator and scripted members; `episode` gives the multi-agent
    form, every seat a policy of its own (council_episode.py)."""

    seats = SEATS

    role = ROLE
    name = "roles/council"
    answer_tools = (COMMIT, ESCALATE)
    generator = staticmethod(generate)
    specs = tuple(MEDIATOR_SPECS)

    def system_prompt(self, scenario: Scenario) -> str:
        return MEDIATOR_SYSTEM.format(commit=COMMIT, escalate=ESCALATE)

    def oracle_turns(self, scenario: Scenario) -> list[int]:
        # facts first, then the proposal (its plan id comes back), then the commit
        return [len(MEMBERS), 1] if scenario.infeasible else [len(MEMBERS), 1, 1]

    def make_session(self, scenario: Scenario | None, specs: Sequence[ToolSpec], problem: str | None = None) -> RoleSession:
        return CouncilSession(self, scenario, specs, problem)

    def grade_session(self, session: RoleSession) -> Grade:
        assert isinstance(session, CouncilSession) and session.state is not None
        return score_council(session.state)

    def grade(self, scenario: Scenario, answer: ToolCall) -> Grade:
        raise TypeError("the council is graded from its whole session (grade_session)")

    def episode(self, task: Task, *, max_rounds: int | None = None) -> Episode:
        """The council over `task` with every seat played by its own policy (a CouncilEpisode)."""
        # council_episode builds on this module's state and scoring, so it is imported here
        from officegym.envs.roles.council_episode import DEFAULT_ROUNDS, CouncilEpisode

        return CouncilEpisode(task, self.scenario(task), max_rounds or DEFAULT_ROUNDS)
