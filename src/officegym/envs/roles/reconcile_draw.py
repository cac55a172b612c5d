"""ReconcileGPT scenarios drawn (reconcile_model.py holds the numbers' meaning and the solver).

The numbers are drawn by the original generator, unchanged, so a (seed, level) keeps its plans and
memos; a feasible scenario is then reworked: the governance rule is drawn apart from the level, some
stakeholders gain vetoes of new kinds, and a veto or a weight whose absence would change no answer is
dropped (every stated veto and weight matters). Decoys (vetoes nobody decided) and superseded figures
are chosen so that believing them changes the answer.
"""

from __future__ import annotations

import random
from typing import Any

from officegym.envs.roles.reconcile_model import (
    ATTRIBUTES,
    BARGAINING_FROM,
    FOCUS,
    OBJECTIVES,
    RULE_NAMES,
    SCOPE,
    STAKEHOLDERS,
    TIMELINES,
    VENDORS,
    Table,
    figure_of,
    judge,
    labels,
    lever,
    utility,
    variant,
    veto_text,
    with_figure,
)

BUDGETS = tuple(range(200, 850, 50))  # $k
N_STAKEHOLDERS = (2, 2, 3, 3, 3, 4, 4, 5, 5, 5)
N_PLANS = (6, 8, 10, 12, 14, 16, 20, 24, 28, 32)
RULES = ("utilitarian",) * 3 + ("maxmin",) * 3 + ("nash",) * 4  # the original generator's rule per level
# the vetoes a stakeholder may gain after the original draw: (field, side)
EXTRA_VETOES = {"Cost": ("budget_k_usd", "above"), "COO": ("timeline_weeks", "above"), "CTO": ("scope_coverage", "below")}


def _scores(rng: random.Random, vendor: str, timeline: int, budget_k: int, scope: list[str]) -> dict[str, int]:
    def clamp(x: float) -> int:
        return max(0, min(10, round(x + rng.uniform(-1.5, 1.5))))

    # Levers trade off: scope costs speed and money, speed costs risk, cheap vendors cost compliance.
    base = VENDORS.index(vendor)
    return {
        "delivery_speed": clamp(12 - timeline / 2.5 - 0.8 * len(scope)),
        "cost_savings": clamp(12 - budget_k / 80 - 0.6 * len(scope) + (1, 0, 2, -1)[base]),
        "risk_reduction": clamp((3, 7, 5, 8)[base] + (timeline - 12) / 4), "scope_coverage": clamp(2 * len(scope)),
        "compliance": clamp((6, 8, 3, 7)[base] + (budget_k - 500) / 200),
    }


def _numbers(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    """The original generator's draw (kept as it was: a seed's plans and memos stay the same)."""
    i = difficulty - 1
    names = sorted(rng.sample(STAKEHOLDERS, N_STAKEHOLDERS[i]), key=STAKEHOLDERS.index)
    rule = RULES[i]
    plans = []
    for k in range(N_PLANS[i]):
        vendor, timeline = rng.choice(VENDORS), rng.choice(TIMELINES)
        budget_k = 200 + 50 * rng.randrange(13)
        scope = sorted(rng.sample(SCOPE, rng.randint(1, len(SCOPE))))
        plans.append({"id": f"PLAN-{k + 1:02d}", "vendor": vendor, "timeline_weeks": timeline, "budget_k_usd": budget_k,
                      "scope": scope, "scores": _scores(rng, vendor, timeline, budget_k, scope)})
    memos = []
    for name in names:
        weights = {a: (rng.randint(3, 5) if a in FOCUS[name] else rng.randint(0, 2)) for a in ATTRIBUTES}
        memo: dict[str, Any] = {"agent": name, "objective": OBJECTIVES[name], "weights": weights, "vetoes": []}
        if name in ("Risk", "Legal") and difficulty >= 2 and rng.random() < 0.8:
            if name == "Legal":
                memo["vetoes"].append(rng.choice([{"field": "vendor", "equals": rng.choice(VENDORS[1:])},
                                                  {"field": "compliance", "below": rng.randint(4, 6)}]))
            else:
                memo["vetoes"].append(rng.choice([{"field": "timeline_weeks", "below": rng.choice((8, 12))},
                                                  {"field": "risk_reduction", "below": rng.randint(3, 5)}]))
        if rule == "nash":
            memo["bargaining_weight"] = rng.choice((1, 1, 2))
        memos.append(memo)
    for memo in memos:
        utilities = sorted(utility(memo, p) for p in plans)
        # tension rises with the level: the status quo sits higher in the stakeholder's utility range
        memo["status_quo_utility"] = utilities[int(len(utilities) * rng.uniform(0.05, 0.15 + 0.02 * difficulty))]
        memo["assumptions"] = ["utilities are additive over the five plan scores"]
    public = {"stakeholders": names, "rule": rule, "plans": plans, "memos": memos}
    why = ""
    if infeasible:
        table = Table(public)
        adm = [k for k, ok in enumerate(table.admissible) if ok]
        if not adm:
            return None
        victim = rng.choice(memos)
        victim["status_quo_utility"] = max(utility(victim, plans[k]) for k in adm) + rng.randint(0, 3)
        if labels(public)["best"] is not None:
            return None
        why = (f"no admissible plan gives {victim['agent']} more than its status quo utility "
               f"{victim['status_quo_utility']}")
    elif labels(public)["best"] is None:
        return None
    return {"public": public, "why": why}


def _extra_vetoes(rng: random.Random, public: dict[str, Any]) -> None:
    """Vetoes of the new kinds (a budget or timeline cap, a scope floor) that bar the current winner."""
    for memo in public["memos"]:
        if memo["vetoes"] or memo["agent"] not in EXTRA_VETOES or rng.random() < 0.4:
            continue
        field, side = EXTRA_VETOES[memo["agent"]]
        best = labels(public)["best"]
        value = lever(public["plans"][best], field)
        options = {"budget_k_usd": BUDGETS, "timeline_weeks": TIMELINES, "scope_coverage": range(2, 11)}[field]
        barring = [x for x in options if (x < value if side == "above" else x > value)]
        for x in rng.sample(barring, min(4, len(barring))):
            memo["vetoes"].append({"field": field, side: x})
            if labels(public)["best"] is not None:
                break
            memo["vetoes"].pop()


def _drop_loose(public: dict[str, Any]) -> None:
    """Drop, one at a time, a veto or a weight whose absence changes no answer, until each one matters
    (a reader who misses any one of their sentences gets a different answer)."""
    while True:
        misread = judge(public)
        loose = next(((m, "veto", k) for m in public["memos"] for k in range(len(m["vetoes"]))
                      if not misread(variant(public, m["agent"], lambda x, k=k: x["vetoes"].pop(k)))), None)
        loose = loose or next(((m, "weight", a) for m in public["memos"] for a in ATTRIBUTES if m["weights"][a]
                               and not misread(with_figure(public, ("weight", m["agent"], a), 0))), None)
        if loose is None:
            return
        memo, kind, key = loose
        if kind == "veto":
            memo["vetoes"].pop(key)
        else:
            memo["weights"][key] = 0


def candidate_veto(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(("vendor", "below", "above"))
    if kind == "vendor":
        return {"field": "vendor", "equals": rng.choice(VENDORS[1:])}
    if kind == "below":
        field = rng.choice((*ATTRIBUTES, "timeline_weeks"))
        return {"field": field, "below": rng.choice((8, 12, 16)) if field == "timeline_weeks" else rng.randint(3, 7)}
    field = rng.choice(("budget_k_usd", "timeline_weeks"))
    return {"field": field, "above": rng.choice(BUDGETS[1:-2]) if field == "budget_k_usd" else rng.choice((8, 12, 16))}


def _decoys(rng: random.Random, public: dict[str, Any], feasible: bool, difficulty: int) -> list[tuple[str, dict]]:
    """Vetoes nobody decided, on fields the stakeholder has no veto on; in a feasible scenario each one
    would change the answer if believed."""
    misread = judge(public)
    out: list[tuple[str, dict]] = []
    for _ in range(12):
        if len(out) >= (1 if difficulty < 5 else 2):
            break
        memo = rng.choice(public["memos"])
        veto = candidate_veto(rng)
        if any(v["field"] == veto["field"] for v in memo["vetoes"]) or any(d[1]["field"] == veto["field"] for d in out):
            continue
        if feasible and not misread(variant(public, memo["agent"], lambda m, v=veto: m["vetoes"].append(v))):
            continue
        out.append((memo["agent"], veto))
    return out


def _updates(rng: random.Random, public: dict[str, Any], difficulty: int) -> dict[tuple, Any]:
    """Figures stated as updates, each with the superseded figure, which would change the answer."""
    misread = judge(public)
    refs: list[tuple] = [("status_quo", m["agent"]) for m in public["memos"]]
    refs += [("weight", m["agent"], a) for m in public["memos"] for a in ATTRIBUTES if m["weights"][a]]
    refs += [("bargaining", m["agent"]) for m in public["memos"] if "bargaining_weight" in m]
    out: dict[tuple, Any] = {}
    for ref in rng.sample(refs, min(len(refs), 3 * (difficulty // 3))):
        if len(out) >= difficulty // 3:
            break
        now = figure_of(public, ref)
        if ref[0] == "weight":
            old = rng.choice([w for w in range(1, 6) if w != now])
        elif ref[0] == "status_quo":
            old = now + rng.choice((-1, 1)) * rng.randint(3, 15)
        else:
            old = 3 - now  # bargaining weights are 1 or 2
        if misread(with_figure(public, ref, old)):
            out[ref] = old
    return out


def draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    """One scenario (None: draw again): the public facts with their labels, decoy vetoes, superseded
    figures, and why there is no acceptable plan (infeasible scenarios)."""
    drawn = _numbers(rng, difficulty, infeasible)
    if drawn is None:
        return None
    public = drawn["public"]
    if difficulty >= BARGAINING_FROM:
        for memo in public["memos"]:
            memo.setdefault("bargaining_weight", rng.choice((1, 1, 2)))
    if not infeasible:
        public["rule"] = rng.choice(RULE_NAMES[:2] if difficulty <= 2 else RULE_NAMES)
        if difficulty >= 3:
            _extra_vetoes(rng, public)
        _drop_loose(public)
        if labels(public)["best"] is None:
            return None
    for memo in public["memos"]:
        memo["constraints"] = [veto_text(v) for v in memo["vetoes"]]
    return {"public": public, "labels": labels(public), "why": drawn["why"], "infeasible": infeasible,
            "decoys": _decoys(rng, public, not infeasible, difficulty), "updates": _updates(rng, public, difficulty)}
