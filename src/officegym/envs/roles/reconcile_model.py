"""ReconcileGPT scenarios as numbers: plans with five scores, the stakeholders' memos (weights, status
quo, vetoes, bargaining weights), the governance rule, the scoring table and the exact solver under
any memos. reconcile_draw.py draws the scenarios, the prose layer (reconcile_brief.py) states the
memos; reconcile.py offers the tools and grades.

A veto is {"field": f, "equals": x} (a vendor), {"field": f, "below": n} or {"field": f, "above": n}
(a plan lever or score).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from officegym.envs.roles.base import claim_matches

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
RULE_NAMES = ("utilitarian", "maxmin", "nash")
BARGAINING_FROM = 4  # levels that state bargaining weights (under every rule, so they do not give it away)
SCORE_TOLERANCE = 1e-3
EPS = 1e-12


def utility(memo: dict[str, Any], plan: dict[str, Any]) -> int:
    return sum(memo["weights"].get(a, 0) * plan["scores"][a] for a in ATTRIBUTES)


def lever(plan: dict[str, Any], field: str) -> Any:
    return plan[field] if field in plan else plan["scores"][field]


def vetoes(memo: dict[str, Any], plan: dict[str, Any]) -> bool:
    for v in memo["vetoes"]:
        value = lever(plan, v["field"])
        if (("equals" in v and value == v["equals"]) or ("below" in v and value < v["below"])
                or ("above" in v and value > v["above"])):
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
    if "equals" in v:
        return f"no plan with {v['field']} = {v['equals']}"
    side = "below" if "below" in v else "above"
    return f"no plan with {v['field']} {side} {v[side]}"


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


# -- the solver tool's core: the best acceptable plan under any memos


def solve(plans: list[dict[str, Any]], rule: str, memos: list[dict[str, Any]]) -> dict[str, Any]:
    """The best acceptable plan under `rule` for `memos` (stakeholders in the council's order), with
    its score (6 decimals), the utilities, conflicting pairs and binding vetoes; or why there is none."""
    public = {"stakeholders": [m["agent"] for m in memos], "rule": rule, "plans": plans, "memos": memos}
    found = labels(public)
    table = Table(public)
    if found["best"] is None:
        stuck = [n for n, b, d in zip(table.names, table.best, table.status_quo) if not b > d]
        if not any(table.admissible):
            why = "every plan is vetoed"
        elif stuck:
            why = f"no admissible plan gives {', '.join(stuck)} more than its status quo"
        else:
            why = "no admissible plan beats every status quo at once"
        return {"plan_id": None, "result": f"no plan is acceptable: {why}"}
    i = found["best"]
    return {"plan_id": plans[i]["id"], "score": round(found["best_score"], 6), "rule": rule,
            "utilities": dict(zip(table.names, table.u[i])),
            "conflicts": [pair.split("|") for pair in found["conflicts"]], "binding_vetoes": found["binding_vetoes"]}


def arguments_of(public: dict[str, Any]) -> dict[str, Any]:
    """The solver tool's arguments that state the memos exactly (what the oracle passes)."""
    stakeholders = []
    for m in public["memos"]:
        item: dict[str, Any] = {"name": m["agent"], "weights": {a: w for a, w in m["weights"].items() if w},
                                "status_quo": m["status_quo_utility"]}
        if "bargaining_weight" in m:
            item["bargaining_weight"] = m["bargaining_weight"]
        if m["vetoes"]:
            item["vetoes"] = [dict(v) for v in m["vetoes"]]
        stakeholders.append(item)
    return {"rule": public["rule"], "stakeholders": stakeholders}


# -- readings of a scenario: the answer under other memos, to check what matters


def judge(public: dict[str, Any]) -> Any:
    """A test of readings against the truth `public`: whether the answer the solver gives for a reading
    (other memos, same plans) would score below 1, by the verifier's own tests (an acceptable, undominated
    plan at the best score, the claimed score within tolerance, the same conflicts and binding vetoes)."""
    truth, table = labels(public), Table(public)

    def misread(reading: dict[str, Any]) -> bool:
        found = labels(reading)
        if truth["best"] is None or found["best"] is None:
            return (truth["best"] is None) != (found["best"] is None)
        if (found["conflicts"], found["binding_vetoes"]) != (truth["conflicts"], truth["binding_vetoes"]):
            return True
        i = found["best"]
        if not table.acceptable[i] or table.dominated(i):
            return True
        score = table.score(i)
        optimal = score >= truth["best_score"] * (1 - 1e-9) - EPS
        return not (optimal and claim_matches(found["best_score"], score, SCORE_TOLERANCE))

    return misread


def variant(public: dict[str, Any], agent: str, change: Any) -> dict[str, Any]:
    """`public` with one memo changed by `change(memo_copy)` (the others shared)."""
    memos = []
    for m in public["memos"]:
        if m["agent"] == agent:
            m = {**m, "weights": dict(m["weights"]), "vetoes": list(m["vetoes"])}
            change(m)
        memos.append(m)
    return {**public, "memos": memos}


def with_figure(public: dict[str, Any], ref: tuple, value: Any) -> dict[str, Any]:
    """A figure ("weight", agent, attribute) / ("status_quo", agent) / ("bargaining", agent) set to `value`."""
    key = {"status_quo": "status_quo_utility", "bargaining": "bargaining_weight"}.get(ref[0])
    return variant(public, ref[1], lambda m: m["weights"].__setitem__(ref[2], value) if key is None
                   else m.__setitem__(key, value))


def figure_of(public: dict[str, Any], ref: tuple) -> Any:
    memo = next(m for m in public["memos"] if m["agent"] == ref[1])
    if ref[0] == "weight":
        return memo["weights"][ref[2]]
    return memo["status_quo_utility"] if ref[0] == "status_quo" else memo["bargaining_weight"]
