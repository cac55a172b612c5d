"""The council as a multi-agent episode: CTO, Cost, Risk and ReconcileGPT each hold a seat.

A round: the three members act on the same snapshot of the council, then the mediator acts. Acts
are tool calls checked against a shared `CouncilState`; each seat sees the others' acts as JSON
lines in its next user message. The episode ends at the mediator's commit or escalation, or after
`max_rounds`; `score_council` gives the team reward and each seat's credit. The agent loop
(agent/loop.py `play`) drives it; the seats' scripted turns are council_seats.py's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from officegym.core.episode import Episode
from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolResult, ToolSpec, Verdict
from officegym.envs.roles.base import ESCALATE, ESCALATE_SPEC, MODE, Grade, Scenario, tool
from officegym.envs.roles.council_model import COMMIT, MEDIATOR, MEMBERS, REASONS, SEATS, SELECTION
from officegym.envs.roles.council_state import CouncilState, score_council
from officegym.envs.roles.schema import schema_error

if TYPE_CHECKING:
    from officegym.core.trajectory import Trajectory

DEFAULT_ROUNDS = 4

MEMBER_SPECS = (
    tool("share_facts", "Disclose some of your private facts to the council (fact ids, or [\"all\"]).",
         {"fact_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1}}, ["fact_ids"]),
    tool("propose_plan", "Put a plan to the council.", {"selection": SELECTION}, ["selection"]),
    tool("object_plan", "Object to a proposed plan, citing the fact that shows it breaking one of your requirements.",
         {"plan_id": {"type": "string"}, "reason_code": {"type": "string", "enum": list(REASONS)},
          "fact_id": {"type": "string"}}, ["plan_id", "reason_code", "fact_id"]),
    tool("accept_plan", "Accept a proposed plan.", {"plan_id": {"type": "string"}}, ["plan_id"]),
)
MEDIATOR_LOOP_SPECS = (
    tool("propose_plan", "Put a plan to the council; members answer in the next round. Returns the plan id and its "
         "12-month TCO from the prices shared so far (null while one is not).", {"selection": SELECTION},
         ["selection"]),
    tool(COMMIT, "Commit a proposed plan. Ends the council.", {
        "plan_id": {"type": "string"}, "claimed_tco": {"type": "number", "description": "its 12-month TCO in dollars"}},
        ["plan_id", "claimed_tco"]),
    ESCALATE_SPEC,
)
ROLE_TEXT = {
    "cto": "the CTO: you hold the latencies, availabilities and incompatibilities of the options, and the SLOs",
    "cost": "the Cost agent: you hold the monthly and migration prices of the options, and the 12-month budget",
    "risk": "the Risk agent: you hold the vendor risk scores and certifications of the options, the risk ceiling "
            "and the required certifications",
}
MEMBER_SYSTEM = (
    "You sit on an executive council as {role}. The council must choose one option per component with the lowest "
    "12-month TCO (12 x monthly + migration) that satisfies every member's requirements; the ReconcileGPT "
    "mediator commits the plan. Each round you may share facts (the mediator sees only what is shared), propose a "
    "plan, and accept or object to proposed plans. Object only when a fact shows the plan breaking one of your "
    "requirements, and cite that fact: false objections cost you. Your private facts, one JSON record per line:\n"
    "{facts}"
)
MEDIATOR_LOOP_SYSTEM = (
    "You are ReconcileGPT, the mediator of an executive council (cto, cost, risk). Members share typed fact "
    "records, propose plans, and accept or object to proposals; you see their acts each round. Propose a plan, "
    "and commit the plan with the lowest 12-month TCO (12 x monthly + migration) that satisfies every member once "
    "all members accepted it. A commit earns a consensus bonus when every member accepted the plan; valid "
    "objections left unresolved and extra rounds cost reward; an infeasible commit scores 0; claimed_tco is "
    "recomputed and a wrong figure scores 0: claim the tco_12m_usd that proposing the plan returned. If no plan "
    "can satisfy everyone, call {escalate}(reason)."
)


def seat_specs(seat: str) -> list[ToolSpec]:
    return list(MEDIATOR_LOOP_SPECS if seat == MEDIATOR else MEMBER_SPECS)


def seat_messages(scenario: Scenario, seat: str) -> list[dict[str, Any]]:
    """The opening conversation of a seat: its system prompt (with its private facts) and the brief."""
    if seat == MEDIATOR:
        system = MEDIATOR_LOOP_SYSTEM.format(escalate=ESCALATE)
    else:
        facts = [f for f in scenario.private["facts"].values() if f["owner"] == seat]
        system = MEMBER_SYSTEM.format(role=ROLE_TEXT[seat], facts="\n".join(json.dumps(f) for f in facts))
    return [{"role": "system", "content": system}, {"role": "user", "content": scenario.brief + "\n\nRound 1."}]


def act(state: CouncilState, seat: str, call: ToolCall) -> ToolResult:
    """Run one seat's act against the council; never raises on model input."""
    specs = {s.name: s for s in seat_specs(seat)}
    if call.parse_error is not None:
        return ToolResult(call.parse_error, "error")
    spec = specs.get(call.name)
    if spec is None:
        return ToolResult(f"unknown act {call.name!r}; available: {', '.join(specs)}", "error")
    args = call.arguments if call.arguments is not None else {}
    error = schema_error(args, spec.parameters) if isinstance(args, dict) else "arguments must be a JSON object"
    if error:
        return ToolResult(f"{call.name}: {error}", "error")
    if state.outcome is not None:
        return ToolResult("the council has ended", "rejected")
    if call.name == "share_facts":
        return state.share(seat, args["fact_ids"])
    if call.name == "propose_plan":
        return state.propose(seat, args["selection"])
    if call.name == "accept_plan":
        return state.respond(seat, args["plan_id"])
    if call.name == "object_plan":
        return state.respond(seat, args["plan_id"], args["reason_code"], args["fact_id"])
    if call.name == COMMIT:
        return state.commit(args["plan_id"], args["claimed_tco"])
    return state.escalate(args["reason"])


class CouncilEpisode(Episode):
    """One council over a roles/council scenario: members act together, then the mediator, for at
    most `max_rounds` rounds or until the mediator commits or escalates."""

    seats = SEATS

    def __init__(self, task: Task, scenario: Scenario, max_rounds: int = DEFAULT_ROUNDS):
        self.task = task
        self.scenario = scenario
        self.max_rounds = max(1, int(max_rounds))
        self.state = CouncilState(scenario)
        self.grade: Grade | None = None
        self._seen = dict.fromkeys(SEATS, 0)
        self._next_members = True  # the members open each round

    def opening(self, seat: str) -> list[dict[str, Any]]:
        return seat_messages(self.scenario, seat)

    def tools(self, seat: str) -> list[ToolSpec]:
        return seat_specs(seat)

    def next_group(self) -> tuple[str, ...]:
        if self.state.outcome is not None:
            return ()
        if self._next_members:
            if self.state.rounds >= self.max_rounds:
                return ()
            self.state.rounds += 1
            self._next_members = False
            return MEMBERS
        self._next_members = True
        return (MEDIATOR,)

    def news(self, seat: str) -> str | None:
        new = self.state.events[self._seen[seat]:]
        self._seen[seat] = len(self.state.events)
        rnd = self.state.rounds
        if rnd == 1 and not new:
            return None
        lines = "\n".join(json.dumps(e, default=str) for e in new) or "(no new council messages)"
        return f"Round {rnd}. Council messages:\n{lines}"

    def execute(self, seat: str, call: ToolCall) -> ToolResult:
        return act(self.state, seat, call)

    def finish(self, trajectories: Mapping[str, Trajectory]) -> Verdict:
        grade = self.grade = score_council(self.state)
        grade.components.setdefault("reward", grade.reward)
        return Verdict(grade.reward, grade.matched, MODE, details={
            "role": "council", "label": grade.label, "graded": True, "difficulty": self.scenario.difficulty,
            "infeasible_scenario": self.scenario.infeasible, "components": grade.components,
            "evidence": grade.evidence, "acts": len(self.state.events)})

    def stop_reason(self, seat: str) -> str:
        return "answered" if self.state.outcome is not None else "max_steps"

    def components(self, seat: str, verdict: Verdict) -> dict[str, float]:
        """The team's components, the seat's own credit (disclosed binding facts, false objections)
        and its acts: objections raised, those valid, those resolved (the committed plan is one the
        seat accepted), acts in all."""
        comps = self.grade.components if self.grade is not None else {}
        state = self.state
        committed = state.outcome[1] if state.outcome is not None and state.outcome[0] == "commit" else None
        mine = [o for o in state.objections if o.seat == seat]
        accepted = committed is not None and state.responses[committed].get(seat) == "accept"
        return {**{k: v for k, v in comps.items() if not k.startswith("credit/")},
                "credit": comps.get(f"credit/{seat}", 0.0),
                "objections_raised": float(len(mine)),
                "objections_valid": float(sum(o.valid for o in mine)),
                "objections_resolved": float(len(mine)) if accepted else 0.0,
                "acts": float(sum(e.get("seat") == seat for e in state.events))}


__all__ = ["DEFAULT_ROUNDS", "MEDIATOR_LOOP_SPECS", "MEMBER_SPECS", "CouncilEpisode", "act", "seat_messages", "seat_specs"]
