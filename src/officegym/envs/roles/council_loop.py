"""The council as a multi-agent game: CTO, Cost, Risk and ReconcileGPT each run their own policy.

Every seat is anything implementing `officegym.core.policy.Policy` (scripted, Hugging Face,
OpenAI-compatible). A round: the three members act on the same snapshot of the council (their
requests are batched per policy object), then the mediator acts. Acts are tool calls checked against
a shared `CouncilState`; each seat sees the others' acts as JSON lines in its next user message.
The episode ends at the mediator's commit or escalation, or after `max_rounds`; `score_council`
gives the team reward, and every seat's conversation is kept as a `Trajectory`.

`ScriptedMember` (truthful: shares its facts, accepts or objects to each proposal with a valid
reason), `ScriptedMediator` (solves on the shared facts, proposes, commits on consensus, escalates
when nothing is feasible) and `GreedyMediator` (cheapest plan on prices alone, then the next one
after each objection) are Policies too, so scripted and learned seats mix freely.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.core.files import load_appendable_jsonl
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall, ToolResult, ToolSpec, Verdict
from officegym.envs.roles.base import ESCALATE, ESCALATE_SPEC, MODE, Grade, Scenario, tool
from officegym.envs.roles.council import (
    COMMIT,
    MEDIATOR,
    MEMBERS,
    REASONS,
    SEATS,
    SELECTION,
    CouncilEnvironment,
    CouncilState,
    member_review,
    plan_from_facts,
    score_council,
)
from officegym.envs.roles.schema import schema_error

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
    tool("propose_plan", "Put a plan to the council; members answer in the next round.", {"selection": SELECTION},
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
    "recomputed and a wrong figure scores 0. If no plan can satisfy everyone, call {escalate}(reason)."
)


@dataclass
class CouncilConfig:
    max_rounds: int = 4
    params: SamplingParams = field(default_factory=SamplingParams)


@dataclass
class CouncilOutcome:
    """A finished council: the state with every act, its grade and verdict, each seat's conversation."""

    task_id: Any
    state: CouncilState
    grade: Grade
    verdict: Verdict
    trajectories: dict[str, Trajectory]
    seconds: float = 0.0

    @property
    def reward(self) -> float:
        return self.grade.reward


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


def _assistant(completion: Completion, calls: Sequence[ToolCall]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": completion.text or ""}
    if calls:
        message["tool_calls"] = [{"id": c.call_id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments_json}} for c in calls]
    return message


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


async def run_council(task: Task, seats: Mapping[str, Policy], config: CouncilConfig | None = None,
                      env: CouncilEnvironment | None = None) -> CouncilOutcome:
    """One council over `task` (a roles/council task). Seats missing from `seats` are scripted."""
    config = config or CouncilConfig()
    env = env or CouncilEnvironment()
    start = time.perf_counter()
    scenario = env.scenario(task)
    state = CouncilState(scenario)
    policies = {s: seats.get(s) or (ScriptedMediator() if s == MEDIATOR else ScriptedMember(s)) for s in SEATS}
    convs = {s: seat_messages(scenario, s) for s in SEATS}
    specs = {s: seat_specs(s) for s in SEATS}
    trajs = {s: Trajectory(task_id=task.id, policy=getattr(policies[s], "name", type(policies[s]).__name__))
             for s in SEATS}
    previous: dict[str, Completion | None] = dict.fromkeys(SEATS)
    seen = dict.fromkeys(SEATS, 0)

    async def turn(group: Sequence[str], rnd: int) -> None:
        for seat in group:
            news = state.events[seen[seat]:]
            seen[seat] = len(state.events)
            if rnd > 1 or news:
                lines = "\n".join(json.dumps(e, default=str) for e in news) or "(no new council messages)"
                convs[seat].append({"role": "user", "content": f"Round {rnd}. Council messages:\n{lines}"})
        by_policy: dict[int, list[str]] = {}
        for seat in group:
            by_policy.setdefault(id(policies[seat]), []).append(seat)
        completions: dict[str, Completion] = {}

        async def ask(names: list[str]) -> None:
            requests = [PolicyRequest(list(convs[s]), specs[s], task, rnd - 1, previous[s]) for s in names]
            try:
                got = await policies[names[0]].complete(requests, config.params)
                if len(got) != len(requests):
                    raise RuntimeError(f"policy returned {len(got)} completions for {len(requests)} requests")
            except Exception as exc:  # a failing backend costs its seats this turn, not the council
                got = [Completion(finish_reason="error", error=f"{type(exc).__name__}: {exc}") for _ in names]
            completions.update(zip(names, got))

        await asyncio.gather(*(ask(names) for names in by_policy.values()))
        for seat in group:
            completion = completions[seat]
            previous[seat] = completion
            record = Turn.from_completion(completion)
            trajs[seat].turns.append(record)
            calls = [ToolCall(c.name, c.arguments, c.raw_arguments, c.call_id or f"call_{rnd}_{i}", c.parse_error)
                     for i, c in enumerate(completion.tool_calls)]
            convs[seat].append(_assistant(completion, calls))
            for call in calls:
                result = act(state, seat, call)
                record.executions.append(ToolExecution(call, result.text, result.status))
                convs[seat].append({"role": "tool", "tool_call_id": call.call_id, "content": result.text})

    for rnd in range(1, config.max_rounds + 1):
        state.rounds = rnd
        await turn(MEMBERS, rnd)
        await turn((MEDIATOR,), rnd)
        if state.outcome is not None:
            break
    grade = score_council(state)
    grade.components.setdefault("reward", grade.reward)
    verdict = Verdict(grade.reward, grade.matched, MODE, details={
        "role": "council", "label": grade.label, "graded": True, "difficulty": scenario.difficulty,
        "infeasible_scenario": scenario.infeasible, "components": grade.components, "evidence": grade.evidence,
        "acts": len(state.events)})
    for seat, traj in trajs.items():
        traj.messages = convs[seat]
        traj.verdict = verdict.to_dict()
        traj.reward = grade.reward
        traj.reward_components = {**{k: v for k, v in grade.components.items() if not k.startswith("credit/")},
                                  "credit": grade.components.get(f"credit/{seat}", 0.0)}
        traj.stop_reason = "answered" if state.outcome is not None else "max_steps"
    return CouncilOutcome(task.id, state, grade, verdict, trajs, time.perf_counter() - start)


async def run_councils(tasks: Sequence[Task], seats: Mapping[str, Policy], config: CouncilConfig | None = None,
                       concurrency: int = 32) -> list[CouncilOutcome]:
    """Many councils concurrently (results in task order)."""
    gate = asyncio.Semaphore(max(1, concurrency))
    env = CouncilEnvironment()

    async def one(task: Task) -> CouncilOutcome:
        async with gate:
            return await run_council(task, seats, config, env)

    return list(await asyncio.gather(*(one(t) for t in tasks)))


def outcome_row(outcome: CouncilOutcome, seats: Mapping[str, Policy]) -> dict[str, Any]:
    """A JSON row for a finished council: reward, label, components, evidence, every act, every seat's
    conversation."""
    return {
        "task_id": outcome.task_id, "reward": outcome.reward, "label": outcome.grade.label,
        "components": outcome.grade.components, "evidence": outcome.grade.evidence, "acts": outcome.state.events,
        "rounds": outcome.state.rounds, "seconds": outcome.seconds,
        "seats": {s: getattr(p, "name", type(p).__name__) for s, p in seats.items()},
        "trajectories": {s: t.to_dict() for s, t in outcome.trajectories.items()},
    }


def run_council_file(tasks: Sequence[Task], seats: Mapping[str, Policy], out: Path,
                     config: CouncilConfig | None = None, concurrency: int = 8,
                     progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Run a council per task and append each row to `out` (JSONL) as it finishes. Tasks whose id is
    already in the file are skipped (a torn last line from an interrupted run is dropped), so an
    interrupted run resumes where it stopped. Returns every row, old and new."""
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = load_appendable_jsonl(out)
    seats = {s: seats.get(s) or (ScriptedMediator() if s == MEDIATOR else ScriptedMember(s)) for s in SEATS}
    names = {s: getattr(p, "name", type(p).__name__) for s, p in seats.items()}
    other = next((r.get("seats") for r in rows if isinstance(r.get("seats"), dict) and r.get("seats") != names), None)
    if other is not None:
        raise ValueError(f"{out} holds councils played by other seats ({other}); write to another file")
    done = {json.dumps(r.get("task_id"), default=str) for r in rows}
    todo = [t for t in tasks if json.dumps(t.id, default=str) not in done]
    if progress is not None and len(tasks) > len(todo):
        progress(len(tasks) - len(todo))

    async def main() -> None:
        gate = asyncio.Semaphore(max(1, concurrency))
        env = CouncilEnvironment()
        with open(out, "a", encoding="utf-8") as fh:

            async def one(task: Task) -> None:
                async with gate:
                    outcome = await run_council(task, seats, config, env)
                row = outcome_row(outcome, seats)
                fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
                fh.flush()
                rows.append(row)
                if progress is not None:
                    progress(1)

            try:
                await asyncio.gather(*(one(t) for t in todo))
            finally:  # backends hold HTTP clients bound to this event loop
                for policy in {id(p): p for p in seats.values()}.values():
                    close = getattr(policy, "aclose", None)
                    if close is not None:
                        await close()

    asyncio.run(main())
    return rows


SCRIPTED_SEATS = ("scripted", "oracle", "greedy", "silent")


def scripted_seat(seat: str, spec: str, max_rounds: int = CouncilConfig.max_rounds) -> Policy | None:
    """The scripted policy `spec` names for `seat`, or None when `spec` is not a scripted one:
    "scripted" or "oracle" (a truthful member; the mediator that solves on the shared facts),
    "greedy" (GreedyMember; GreedyMediator), "silent" (a member that never shares)."""
    if seat not in SEATS:
        raise ValueError(f"unknown seat {seat!r}; the seats are {', '.join(SEATS)}")
    if spec in ("scripted", "oracle"):
        return ScriptedMediator() if seat == MEDIATOR else ScriptedMember(seat)
    if spec == "greedy":
        return GreedyMediator(max_rounds) if seat == MEDIATOR else GreedyMember(seat)
    if spec == "silent" and seat in MEMBERS:
        return ScriptedMember(seat, share=False)
    return None


def parse_seats(text: str) -> dict[str, str]:
    """"cto=oracle,cost=greedy,reconcile=hf:PATH" -> {seat: spec}. Seats left out are scripted.
    A spec may itself hold ':' and '=' (only the first '=' of an item splits); commas split items."""
    seats: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        seat, sep, spec = item.partition("=")
        seat, spec = seat.strip(), spec.strip()
        if not sep or not spec:
            raise ValueError(f"bad seat {item!r}: write SEAT=POLICY, e.g. cto=oracle")
        if seat not in SEATS:
            raise ValueError(f"unknown seat {seat!r}; the seats are {', '.join(SEATS)}")
        if seat in seats:
            raise ValueError(f"seat {seat!r} is given twice")
        if spec == "silent" and seat == MEDIATOR:
            raise ValueError("silent is a member policy; the mediator takes scripted, oracle, greedy or a model")
        seats[seat] = spec
    return seats


def summarize_councils(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Team figures of finished councils: mean reward, consensus rate (a commit every member
    accepted), valid objections left unresolved (total and per council), commits, escalations,
    mean rounds and the count of each verdict label."""
    n = len(rows)
    if not n:
        return {"councils": 0}
    comps = [r.get("components") or {} for r in rows]
    labels: dict[str, int] = {}
    for r in rows:
        labels[str(r.get("label"))] = labels.get(str(r.get("label")), 0) + 1
    commits = sum(1 for r in rows if any(a.get("act") == "commit" for a in r.get("acts") or []))
    escalations = sum(1 for r in rows if any(a.get("act") == "escalate" for a in r.get("acts") or []))
    unresolved = sum(float(c.get("unresolved_objections", 0.0)) for c in comps)
    return {
        "councils": n,
        "mean_reward": sum(float(r.get("reward") or 0.0) for r in rows) / n,
        "consensus_rate": sum(float(c.get("consensus", 0.0)) for c in comps) / n,
        "unresolved_objections": unresolved,
        "unresolved_per_council": unresolved / n,
        "commit_rate": commits / n,
        "escalation_rate": escalations / n,
        "mean_rounds": sum(float(r.get("rounds") or 0) for r in rows) / n,
        "labels": dict(sorted(labels.items())),
    }


# --- scripted seats


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


class ScriptedMember:
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


class _MediatorBase:
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
                          responses: dict[str, dict[str, str]], mine: list[str]) -> Completion | None:
        if mine and all(responses.get(mine[-1], {}).get(s) == "accept" for s in MEMBERS):
            claimed = self._tco(facts, proposals[mine[-1]])
            return Completion(tool_calls=[ToolCall(COMMIT, {"plan_id": mine[-1], "claimed_tco": claimed})])
        return None


class ScriptedMediator(_MediatorBase):
    """Solves the full-information problem on the shared facts, proposes it, commits on consensus,
    escalates when the shared facts admit no plan; proposes the next best plan after objections."""

    name = "scripted-mediator"

    def _one(self, r: PolicyRequest) -> Completion:
        scenario = _scenario(r)
        facts, proposals, responses, mine = self._read(_events(r.messages))
        agreed = self._commit_if_agreed(facts, proposals, responses, mine)
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
        return Completion(tool_calls=[ToolCall("propose_plan", {"selection": selection})])


class GreedyMediator(_MediatorBase):
    """A price-only heuristic: proposes plans in order of 12-month TCO from the Cost facts, skipping
    options named in objections, and commits the first one every member accepts (or, in the last
    round it can still act in, its latest proposal). Never escalates."""

    name = "greedy-mediator"

    def __init__(self, max_rounds: int = CouncilConfig.max_rounds):
        self.max_rounds = max_rounds

    def _one(self, r: PolicyRequest) -> Completion:
        scenario = _scenario(r)
        events = _events(r.messages)
        facts, proposals, responses, mine = self._read(events)
        agreed = self._commit_if_agreed(facts, proposals, responses, mine)
        if agreed is not None:
            return agreed
        if not any(f["owner"] == "cost" for f in facts):
            return Completion(text="Waiting for prices.")
        if mine and r.turn + 1 >= self.max_rounds:
            claimed = self._tco(facts, proposals[mine[-1]])
            return Completion(tool_calls=[ToolCall(COMMIT, {"plan_id": mine[-1], "claimed_tco": claimed})])
        banned = {f.split("/")[-1] for e in events if e.get("act") == "object" for f in [e.get("fact_id") or ""]}
        tried = [proposals[p] for p in mine]
        comps = scenario.public["components"]
        prices = self._prices(facts)
        ranked = sorted(itertools.product(*(c["options"] for c in comps)),
                        key=lambda combo: (sum(prices.get(o, 0) for o in combo), combo))
        for combo in ranked:
            selection = dict(zip((c["component"] for c in comps), combo))
            if selection not in tried and not banned & set(combo):
                return Completion(tool_calls=[ToolCall("propose_plan", {"selection": selection})])
        return Completion(text="No plan left to propose.")


def team_of(mediator: Policy | None = None, **members: Policy) -> dict[str, Policy]:
    """A seat map: scripted members unless given, and the given (or scripted) mediator."""
    seats: dict[str, Policy] = {s: members.get(s) or ScriptedMember(s) for s in MEMBERS}
    seats[MEDIATOR] = mediator or ScriptedMediator()
    return seats


__all__ = [
    "CouncilConfig",
    "CouncilOutcome",
    "GreedyMediator",
    "GreedyMember",
    "ScriptedMediator",
    "ScriptedMember",
    "outcome_row",
    "parse_seats",
    "run_council",
    "run_council_file",
    "run_councils",
    "scripted_seat",
    "seat_messages",
    "seat_specs",
    "summarize_councils",
    "team_of",
]
