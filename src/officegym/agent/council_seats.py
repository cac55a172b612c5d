"""Scripted council seats, Policies like any model so scripted and learned seats mix freely.

`ScriptedMember` (truthful: shares its facts, accepts or objects to each proposal with a valid
reason), `GreedyMember` (judges proposals on its headline requirement alone), `ScriptedMediator`
(solves on the shared facts, proposes, commits on consensus, escalates when nothing is feasible)
and `GreedyMediator` (cheapest plan on prices alone, then the next one after each objection), and
`RecoveringMediator` (an SFT teacher: the cheapest plan first, then the scripted one). They
read the council from their conversation, as a model seat does, and the scenario from the task.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.types import ToolCall
from officegym.envs.roles.base import ESCALATE, Scenario
from officegym.envs.roles.council import CouncilEnvironment
from officegym.envs.roles.council_episode import DEFAULT_ROUNDS
from officegym.envs.roles.council_model import (
    COMMIT,
    MEDIATOR,
    MEMBERS,
    REASONS,
    SEATS,
    member_review,
    plan_from_facts,
)


def _events(messages: Sequence[dict[str, Any]], since_last_turn: bool = False) -> list[dict[str, Any]]:
    """The council acts a seat has been shown (JSON lines of its user messages)."""
    start = 0
    if since_last_turn:
        for i, m in enumerate(messages):
            if m.get("role") == "assistant":
                start = i + 1
    out = []
    for m in messages[start:]:
        if m.get("role") != "user" or not isinstance(m.get("content"), str):
            continue
        for line in m["content"].splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    return out


def _own_calls(messages: Sequence[dict[str, Any]]) -> list[str]:
    return [c["function"]["name"] for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls", [])]


def _scenario(request: PolicyRequest) -> Scenario:
    if request.task is None:
        raise ValueError("scripted council seats need the task")
    return CouncilEnvironment().scenario(request.task)


class ScriptedMember(Policy):
    """A truthful member: shares all its facts in its first turn, then accepts each new proposal or
    objects with the first of its own constraints the plan breaks, citing the fact that shows it.
    `reasons` limits the constraints it checks (GreedyMember checks only its headline one)."""

    def __init__(self, seat: str, share: bool = True, reasons: Sequence[str] = REASONS):
        if seat not in MEMBERS:
            raise ValueError(f"seat must be one of {', '.join(MEMBERS)}")
        self.seat = seat
        self.share = share
        self.reasons = tuple(reasons)
        self.name = f"{'scripted' if share else 'silent'}-{seat}"

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [self._one(r) for r in requests]

    def _one(self, r: PolicyRequest) -> Completion:
        scenario = _scenario(r)
        full, facts = scenario.private["full"], scenario.private["facts"]
        calls = []
        if self.share and "share_facts" not in _own_calls(r.messages):
            calls.append(ToolCall("share_facts", {"fact_ids": ["all"]}))
        for e in _events(r.messages, since_last_turn=True):
            if e.get("act") != "propose" or e.get("seat") == self.seat:
                continue
            reason, fact_id = member_review(full, facts, self.seat, e["selection"], self.reasons)
            if reason == "accept":
                calls.append(ToolCall("accept_plan", {"plan_id": e["plan_id"]}))
            else:
                calls.append(ToolCall("object_plan", {"plan_id": e["plan_id"], "reason_code": reason, "fact_id": fact_id}))
        return Completion(text="" if calls else "Nothing to add.", tool_calls=calls)


# The one requirement a myopic member checks: the first of its own in REASONS order.
HEADLINE = {"cto": "latency_slo", "cost": "over_budget", "risk": "risk_ceiling"}


class GreedyMember(ScriptedMember):
    """A myopic member: shares all its facts, then judges each proposal on its headline requirement
    alone (CTO: the latency SLO; Cost: the budget; Risk: the risk ceiling) and accepts otherwise,
    so a plan that breaks availability, compatibility or compliance gets through. Cost has no other
    requirement, so its greedy seat plays like the scripted one."""

    def __init__(self, seat: str):
        super().__init__(seat, share=True, reasons=(HEADLINE.get(seat, ""),))
        self.name = f"greedy-{seat}"


class _MediatorBase(Policy):
    """What both scripted mediators read from the council: shared facts, proposals, responses."""

    name = "mediator"

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [self._one(r) for r in requests]

    @staticmethod
    def _read(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]],
                                                      dict[str, dict[str, str]], list[str]]:
        facts = [f for e in events if e.get("act") == "share" for f in e.get("facts", [])]
        proposals = {e["plan_id"]: e["selection"] for e in events if e.get("act") == "propose"}
        mine = [e["plan_id"] for e in events if e.get("act") == "propose" and e.get("seat") == MEDIATOR]
        responses: dict[str, dict[str, str]] = {}
        for e in events:
            if e.get("act") in ("accept", "object"):
                responses.setdefault(e["plan_id"], {})[e["seat"]] = e["act"]
        return facts, proposals, responses, mine

    @staticmethod
    def _prices(facts: list[dict[str, Any]]) -> dict[str, float]:
        """Option id -> 12-month TCO, from the Cost facts shared so far."""
        price = {f["id"]: f["value"] for f in facts if f["owner"] == "cost"}
        options = {f["option"] for f in facts if f["owner"] == "cost" and "option" in f}
        return {o: 12 * price.get(f"cost/monthly/{o}", 0) + price.get(f"cost/migration/{o}", 0) for o in options}

    @classmethod
    def _tco(cls, facts: list[dict[str, Any]], selection: dict[str, str]) -> float:
        prices = cls._prices(facts)
        return sum(prices.get(o, 0) for o in selection.values())

    def _one(self, r: PolicyRequest) -> Completion:
        raise NotImplementedError

    def _commit_if_agreed(self, facts: list[dict[str, Any]], proposals: dict[str, dict[str, str]],
                          responses: dict[str, dict[str, str]], mine: list[str],
                          events: list[dict[str, Any]]) -> Completion | None:
        if mine and all(responses.get(mine[-1], {}).get(s) == "accept" for s in MEMBERS):
            return self._commit(facts, proposals, mine[-1], events)
        return None

    def _commit(self, facts: list[dict[str, Any]], proposals: dict[str, dict[str, str]], plan_id: str,
                events: list[dict[str, Any]]) -> Completion:
        """Commit `plan_id`, claiming the TCO its proposal returned (what a trained seat learns to copy);
        summed from the shared prices only if the proposal had none."""
        figure = next((e.get("tco_12m_usd") for e in events if e.get("act") == "propose" and e.get("plan_id") == plan_id),
                      None)
        claimed = figure if figure is not None else self._tco(facts, proposals[plan_id])
        return Completion(tool_calls=[ToolCall(COMMIT, {"plan_id": plan_id, "claimed_tco": claimed})])


class ScriptedMediator(_MediatorBase):
    """Solves the full-information problem on the shared facts, proposes it, commits on consensus,
    escalates when the shared facts admit no plan; proposes the next best plan after objections."""

    name = "scripted-mediator"

    def _one(self, r: PolicyRequest) -> Completion:
        scenario = _scenario(r)
        events = _events(r.messages)
        facts, proposals, responses, mine = self._read(events)
        agreed = self._commit_if_agreed(facts, proposals, responses, mine, events)
        if agreed is not None:
            return agreed
        if mine and len(responses.get(mine[-1], {})) < len(MEMBERS):
            return Completion(text="Waiting for the members' responses.")
        kind, what = plan_from_facts(scenario.public["components"], facts)
        if kind == "wait":
            return Completion(text=f"Waiting for facts from {', '.join(what)}.")
        if kind == "escalate":
            return Completion(tool_calls=[ToolCall(ESCALATE, {"reason": what})])
        _, selection = what
        if any(proposals[p] == selection for p in mine):
            return Completion(tool_calls=[ToolCall(ESCALATE, {"reason": "the members reject every plan the facts allow"})])
        selection = self._opening(scenario.public["components"], facts, selection) if not mine else selection
        return Completion(tool_calls=[ToolCall("propose_plan", {"selection": selection})])

    def _opening(self, components: list[dict[str, Any]], facts: list[dict[str, Any]],
                 best: dict[str, str]) -> dict[str, str]:
        """The first proposal, given the best plan on the shared facts: that plan."""
        return best


class RecoveringMediator(ScriptedMediator):
    """A teacher for SFT: opens with the cheapest plan on the shared prices (the greedy mediator's
    first proposal) when that is not the scripted plan, then plays as the scripted mediator, so its
    conversations show objections answered by a new proposal and a commit only after every member
    accepted; the scripted mediator's own conversations never meet an objection."""

    name = "recovering-mediator"

    def _opening(self, components: list[dict[str, Any]], facts: list[dict[str, Any]],
                 best: dict[str, str]) -> dict[str, str]:
        """The cheapest plan on the shared prices; the best one follows the objection it meets."""
        return dict(zip((c["component"] for c in components), by_price(components, self._prices(facts))[0]))


def by_price(components: Sequence[dict[str, Any]], prices: dict[str, float]) -> list[tuple[str, ...]]:
    """Every plan (one option per component) in order of 12-month TCO on `prices`, ties by name."""
    return sorted(itertools.product(*(c["options"] for c in components)),
                  key=lambda combo: (sum(prices.get(o, 0) for o in combo), combo))


class GreedyMediator(_MediatorBase):
    """A price-only heuristic: proposes plans in order of 12-month TCO from the Cost facts, skipping
    options named in objections, and commits the first one every member accepts (or, in the last
    round it can still act in, its latest proposal). Never escalates."""

    name = "greedy-mediator"

    def __init__(self, max_rounds: int = DEFAULT_ROUNDS):
        self.max_rounds = max_rounds

    def _one(self, r: PolicyRequest) -> Completion:
        scenario = _scenario(r)
        events = _events(r.messages)
        facts, proposals, responses, mine = self._read(events)
        agreed = self._commit_if_agreed(facts, proposals, responses, mine, events)
        if agreed is not None:
            return agreed
        if not any(f["owner"] == "cost" for f in facts):
            return Completion(text="Waiting for prices.")
        if mine and r.turn + 1 >= self.max_rounds:
            return self._commit(facts, proposals, mine[-1], events)
        banned = {f.split("/")[-1] for e in events if e.get("act") == "object" for f in [e.get("fact_id") or ""]}
        tried = [proposals[p] for p in mine]
        comps = scenario.public["components"]
        for combo in by_price(comps, self._prices(facts)):
            selection = dict(zip((c["component"] for c in comps), combo))
            if selection not in tried and not banned & set(combo):
                return Completion(tool_calls=[ToolCall("propose_plan", {"selection": selection})])
        return Completion(text="No plan left to propose.")


def team_of(mediator: Policy | None = None, **members: Policy) -> dict[str, Policy]:
    """A seat map: scripted members unless given, and the given (or scripted) mediator."""
    seats: dict[str, Policy] = {s: members.get(s) or ScriptedMember(s) for s in MEMBERS}
    seats[MEDIATOR] = mediator or ScriptedMediator()
    return seats


SCRIPTED_SEATS = ("scripted", "oracle", "greedy", "silent", "recovering")


def scripted_seat(seat: str, spec: str, max_rounds: int = DEFAULT_ROUNDS) -> Policy | None:
    """The scripted policy `spec` names for `seat`, or None when `spec` is not a scripted one:
    "scripted" or "oracle" (a truthful member; the mediator that solves on the shared facts),
    "greedy" (GreedyMember; GreedyMediator), "silent" (a member that never shares), "recovering"
    (RecoveringMediator)."""
    if seat not in SEATS:
        raise ValueError(f"unknown seat {seat!r}; the seats are {', '.join(SEATS)}")
    if spec in ("scripted", "oracle"):
        return ScriptedMediator() if seat == MEDIATOR else ScriptedMember(seat)
    if spec == "greedy":
        return GreedyMediator(max_rounds) if seat == MEDIATOR else GreedyMember(seat)
    if spec == "silent" and seat in MEMBERS:
        return ScriptedMember(seat, share=False)
    if spec == "recovering" and seat == MEDIATOR:
        return RecoveringMediator()
    return None


__all__ = ["SCRIPTED_SEATS", "GreedyMediator", "GreedyMember", "RecoveringMediator", "ScriptedMediator", "ScriptedMember",
           "by_price", "scripted_seat", "team_of"]
