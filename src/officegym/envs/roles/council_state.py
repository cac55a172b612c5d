"""The shared state of one council and its team reward.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from officegym.core.types import ToolResult
from officegym.envs.roles.base import Grade, Scenario, claim_matches
from officegym.envs.roles.council_model import (
    MEDIATOR,
    MEMBERS,
    REASONS,
    check_selection,
    evaluate,
    objection_valid,
    tco,
)
from officegym.envs.roles.scenario_utils import money

MIN_ROUNDS = 2  # one round to share facts, one to review a proposal
CONSENSUS_BONUS, UNRESOLVED_PENALTY, ROUND_PENALTY, SCALE = 0.2, 0.1, 0.05, 1.2
DISCLOSURE_CREDIT, FALSE_OBJECTION_PENALTY = 0.1, 0.05


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

