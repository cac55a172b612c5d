"""The council's scripted seats as pure functions of the conversation: what
`CouncilEnvironment.seat_turn` answers (agent/council_seats.py is the policy that asks).

The kinds: `scripted`/`oracle` (a truthful member that shares its facts and accepts or objects to
each proposal with a valid reason; the mediator that solves on the shared facts, proposes, commits
on consensus and escalates when nothing is feasible), `greedy` (a member judging proposals on its
headline requirement alone; a mediator proposing plans by price alone), `silent` (a truthful
member that never shares) and `recovering` (an SFT teacher mediator: the cheapest plan first, then
the scripted one). Each reads the council from its conversation, as a model seat does, and the
scenario from the task.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from officegym.core.policy import Completion
from officegym.core.types import ToolCall
from officegym.envs.roles.base import ESCALATE, Scenario
from officegym.envs.roles.council_model import (
    COMMIT,
    MEDIATOR,
    MEMBERS,
    REASONS,
    SEATS,
    member_review,
    plan_from_facts,
)

SEAT_BASELINES = ("scripted", "oracle", "greedy", "silent", "recovering")
# The one requirement a myopic member checks: the first of its own in REASONS order.
HEADLINE = {"cto": "latency_slo", "cost": "over_budget", "risk": "risk_ceiling"}

Messages = Sequence[dict[str, Any]]


def seat_baseline_name(seat: str, kind: str) -> str | None:
    """How runs name the scripted `kind` at `seat`, or None when it does not sit there. A ValueError
    for a seat the council does not have."""
    if seat not in SEATS:
        raise ValueError(f"unknown seat {seat!r}; the seats are {', '.join(SEATS)}")
    if kind in ("scripted", "oracle"):
        return "scripted-mediator" if seat == MEDIATOR else f"scripted-{seat}"
    if kind == "greedy":
        return "greedy-mediator" if seat == MEDIATOR else f"greedy-{seat}"
    if kind == "silent" and seat in MEMBERS:
        return f"silent-{seat}"
    if kind == "recovering" and seat == MEDIATOR:
        return "recovering-mediator"
    return None


def seat_turn(scenario: Scenario, seat: str, kind: str, messages: Messages, turn: int, max_rounds: int) -> Completion:
    """The next turn of the scripted `kind` at `seat` (one `seat_baseline_name` names)."""
    if seat_baseline_name(seat, kind) is None:
        raise ValueError(f"no scripted {kind!r} seat at {seat}")
    if seat in MEMBERS:
        reasons = (HEADLINE.get(seat, ""),) if kind == "greedy" else REASONS
        return member_turn(scenario, seat, messages, share=kind != "silent", reasons=reasons)
    if kind == "greedy":
        return greedy_mediator_turn(scenario, messages, turn, max_rounds)
    return mediator_turn(scenario, messages, cheapest_first=kind == "recovering")


def events(messages: Messages, since_last_turn: bool = False) -> list[dict[str, Any]]:
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


def own_calls(messages: Messages) -> list[str]:
    return [c["function"]["name"] for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls", [])]


# --- members


def member_turn(scenario: Scenario, seat: str, messages: Messages, share: bool = True,
                reasons: Sequence[str] = REASONS) -> Completion:
    """A truthful member: shares all its facts in its first turn (unless `share` is off), then
    accepts each new proposal or objects with the first of `reasons` the plan breaks, citing the
    fact that shows it."""
    full, facts = scenario.private["full"], scenario.private["facts"]
    calls = []
    if share and "share_facts" not in own_calls(messages):
        calls.append(ToolCall("share_facts", {"fact_ids": ["all"]}))
    for e in events(messages, since_last_turn=True):
        if e.get("act") != "propose" or e.get("seat") == seat:
            continue
        reason, fact_id = member_review(full, facts, seat, e["selection"], tuple(reasons))
        if reason == "accept":
            calls.append(ToolCall("accept_plan", {"plan_id": e["plan_id"]}))
        else:
            calls.append(ToolCall("object_plan", {"plan_id": e["plan_id"], "reason_code": reason, "fact_id": fact_id}))
    return Completion(text="" if calls else "Nothing to add.", tool_calls=calls)


# --- the mediator


def read_council(acts: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]],
                                                     dict[str, dict[str, str]], list[str]]:
    """What a mediator reads from the acts: shared facts, proposals, responses, its own plan ids."""
    facts = [f for e in acts if e.get("act") == "share" for f in e.get("facts", [])]
    proposals = {e["plan_id"]: e["selection"] for e in acts if e.get("act") == "propose"}
    mine = [e["plan_id"] for e in acts if e.get("act") == "propose" and e.get("seat") == MEDIATOR]
    responses: dict[str, dict[str, str]] = {}
    for e in acts:
        if e.get("act") in ("accept", "object"):
            responses.setdefault(e["plan_id"], {})[e["seat"]] = e["act"]
    return facts, proposals, responses, mine


def prices(facts: list[dict[str, Any]]) -> dict[str, float]:
    """Option id -> 12-month TCO, from the Cost facts shared so far."""
    price = {f["id"]: f["value"] for f in facts if f["owner"] == "cost"}
    options = {f["option"] for f in facts if f["owner"] == "cost" and "option" in f}
    return {o: 12 * price.get(f"cost/monthly/{o}", 0) + price.get(f"cost/migration/{o}", 0) for o in options}


def by_price(components: Sequence[dict[str, Any]], prices: dict[str, float]) -> list[tuple[str, ...]]:
    """Every plan (one option per component) in order of 12-month TCO on `prices`, ties by name."""
    return sorted(itertools.product(*(c["options"] for c in components)),
                  key=lambda combo: (sum(prices.get(o, 0) for o in combo), combo))


def commit(facts: list[dict[str, Any]], proposals: dict[str, dict[str, str]], plan_id: str,
           acts: list[dict[str, Any]]) -> Completion:
    """Commit `plan_id`, claiming the TCO its proposal returned (what a trained seat learns to copy);
    summed from the shared prices only if the proposal had none."""
    figure = next((e.get("tco_12m_usd") for e in acts if e.get("act") == "propose" and e.get("plan_id") == plan_id), None)
    if figure is None:
        by_option = prices(facts)
        figure = sum(by_option.get(o, 0) for o in proposals[plan_id].values())
    return Completion(tool_calls=[ToolCall(COMMIT, {"plan_id": plan_id, "claimed_tco": figure})])


def agreed(facts: list[dict[str, Any]], proposals: dict[str, dict[str, str]], responses: dict[str, dict[str, str]],
           mine: list[str], acts: list[dict[str, Any]]) -> Completion | None:
    """The commit of the mediator's latest plan once every member accepted it, else None."""
    if mine and all(responses.get(mine[-1], {}).get(s) == "accept" for s in MEMBERS):
        return commit(facts, proposals, mine[-1], acts)
    return None


def mediator_turn(scenario: Scenario, messages: Messages, cheapest_first: bool = False) -> Completion:
    """Solves the full-information problem on the shared facts, proposes it, commits on consensus,
    escalates when the shared facts admit no plan; proposes the next best plan after objections.
    `cheapest_first` (the recovering teacher) opens with the cheapest plan on the shared prices, so
    its conversations show objections answered by a new proposal."""
    acts = events(messages)
    facts, proposals, responses, mine = read_council(acts)
    done = agreed(facts, proposals, responses, mine, acts)
    if done is not None:
        return done
    if mine and len(responses.get(mine[-1], {})) < len(MEMBERS):
        return Completion(text="Waiting for the members' responses.")
    components = scenario.public["components"]
    kind, what = plan_from_facts(components, facts)
    if kind == "wait":
        return Completion(text=f"Waiting for facts from {', '.join(what)}.")
    if kind == "escalate":
        return Completion(tool_calls=[ToolCall(ESCALATE, {"reason": what})])
    _, selection = what
    if any(proposals[p] == selection for p in mine):
        return Completion(tool_calls=[ToolCall(ESCALATE, {"reason": "the members reject every plan the facts allow"})])
    if cheapest_first and not mine:
        selection = dict(zip((c["component"] for c in components), by_price(components, prices(facts))[0]))
    return Completion(tool_calls=[ToolCall("propose_plan", {"selection": selection})])


def greedy_mediator_turn(scenario: Scenario, messages: Messages, turn: int, max_rounds: int) -> Completion:
    """A price-only heuristic: proposes plans in order of 12-month TCO from the Cost facts, skipping
    options named in objections, and commits the first one every member accepts (or, in the last
    round it can still act in, its latest proposal). Never escalates."""
    acts = events(messages)
    facts, proposals, responses, mine = read_council(acts)
    done = agreed(facts, proposals, responses, mine, acts)
    if done is not None:
        return done
    if not any(f["owner"] == "cost" for f in facts):
        return Completion(text="Waiting for prices.")
    if mine and turn + 1 >= max_rounds:
        return commit(facts, proposals, mine[-1], acts)
    banned = {f.split("/")[-1] for e in acts if e.get("act") == "object" for f in [e.get("fact_id") or ""]}
    tried = [proposals[p] for p in mine]
    components = scenario.public["components"]
    for combo in by_price(components, prices(facts)):
        selection = dict(zip((c["component"] for c in components), combo))
        if selection not in tried and not banned & set(combo):
            return Completion(tool_calls=[ToolCall("propose_plan", {"selection": selection})])
    return Completion(text="No plan left to propose.")
