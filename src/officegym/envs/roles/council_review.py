"""The council in the review queue (CouncilEnvironment's review hooks; review/council.py reads the
rows): its logged acts made again in a fresh state and re-scored, the seats' disagreements, and a
corrected mediator decision in the single-agent form.

Disagreement between seats (each rule says who and about what):
- commit_without_consensus: the mediator committed a plan that not every member accepted (a member
  objected, or never answered).
- unresolved_objection: objections standing at the commit (their seat did not accept the committed
  plan), or, when the council ended without a commit, objections to its last proposal. The verifier
  deducts 0.1 for each valid one; invalid ones are listed too (is the validity check right?).
- accepted_over_objection: a member accepted a plan after seeing another member's objection to it
  (made in an earlier round and never withdrawn); the objection's validity says which seat erred.
The single-agent form (roles/council rollouts: the model mediates, scripted members answer) gets
the same rules from its replayed session.

A correction of a council is the mediator's decision: `commit_plan` with a `selection` (component ->
option) or a `plan_id` the council proposed, and `claimed_tco`; or `escalate` with a reason. It is
played in roles/council's single-agent form: facts from every member, the plan proposed to truthful
members, then committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from officegym.core.environment import EpisodeReplay
from officegym.core.task import Task
from officegym.core.types import ToolCall, Verdict
from officegym.envs.roles.base import ESCALATE, Grade
from officegym.envs.roles.council_episode import act
from officegym.envs.roles.council_model import COMMIT, MEMBERS, evaluate
from officegym.envs.roles.council_state import CouncilState, score_council
from officegym.envs.roles.review_rules import Found

if TYPE_CHECKING:
    from officegym.envs.roles.council import CouncilEnvironment

ROLE = "council"


def act_call(event: Mapping[str, Any]) -> ToolCall | None:
    """The tool call that makes a logged act again."""
    kind = event.get("act")
    if kind == "share":
        return ToolCall("share_facts", {"fact_ids": [f.get("id") for f in event.get("facts") or [] if isinstance(f, dict)]})
    if kind == "propose":
        return ToolCall("propose_plan", {"selection": event.get("selection")})
    if kind == "accept":
        return ToolCall("accept_plan", {"plan_id": event.get("plan_id")})
    if kind == "object":
        return ToolCall("object_plan", {"plan_id": event.get("plan_id"), "reason_code": event.get("reason_code"),
                                        "fact_id": event.get("fact_id") or ""})
    if kind == "commit":
        return ToolCall(COMMIT, {"plan_id": event.get("plan_id"), "claimed_tco": event.get("claimed_tco")})
    if kind == "escalate":
        return ToolCall(ESCALATE, {"reason": event.get("reason")})
    return None


def replay_acts(env: CouncilEnvironment, task: Task, acts: Sequence[Any], rounds: Any) -> tuple[CouncilState, Grade, list[str]]:
    """A fresh council state with the logged acts made again in order (each in its round), its
    grade, and any act the state refused (ScenarioError when the task names no scenario)."""
    state = CouncilState(env.scenario(task))
    problems = []
    for i, event in enumerate(acts, 1):
        call = act_call(event) if isinstance(event, dict) else None
        if call is None:
            problems.append(f"act {i} is not an act ({str(event)[:80]})")
            continue
        if isinstance(event.get("round"), int):
            state.rounds = event["round"]
        seat = str(event.get("seat"))
        result = act(state, seat, call)
        if not result.ok:
            problems.append(f"act {i} ({seat} {event.get('act')}) is refused on replay: {result.text}")
    if isinstance(rounds, int):
        state.rounds = rounds
    return state, score_council(state), problems


def grade_verdict(grade: Grade) -> Verdict:
    return Verdict(grade.reward, grade.matched, "exact", details={
        "role": ROLE, "label": grade.label, "graded": True, "components": grade.components, "evidence": grade.evidence})


def _objection(o: Any) -> str:
    valid = "valid" if o.valid else "not valid by the verifier's check"
    return f"{o.seat} objected to {o.plan_id} ({o.reason}, citing {o.fact_id or 'no fact'}; {valid})"


def disagreement_findings(state: CouncilState) -> Found:
    """The seats' disagreements in a council state (see the module docstring)."""
    out: Found = []
    outcome = state.outcome
    if outcome is not None and outcome[0] == "commit":
        plan = outcome[1]
        responses = state.responses.get(plan, {})
        missing = [s for s in MEMBERS if responses.get(s) != "accept"]
        if missing:
            parts = [f"{s} {'objected' if responses.get(s) == 'object' else 'never answered'}" for s in missing]
            out.append(("commit_without_consensus", f"{plan} was committed without every member's acceptance: "
                                                     + ", ".join(parts)))
        standing = [o for o in state.objections if responses.get(o.seat) != "accept"]
        if standing:
            valid = sum(o.valid for o in standing)
            out.append(("unresolved_objection", f"standing at the commit of {plan}: " + "; ".join(map(_objection, standing))
                        + f" ({valid} valid: the verifier deducts 0.1 for each)"))
    elif outcome is None and state.proposals:
        last = list(state.proposals)[-1]
        responses = state.responses.get(last, {})
        standing = [o for o in state.objections if o.plan_id == last and responses.get(o.seat) == "object"]
        if standing:
            out.append(("unresolved_objection", f"the council ended without a commit; standing against its last "
                                                f"proposal {last}: " + "; ".join(map(_objection, standing))))
    objection_events = [(i, e) for i, e in enumerate(state.events) if e.get("act") == "object"]
    by_event = {i: o for (i, _), o in zip(objection_events, state.objections)}
    notes = []
    for j, e in enumerate(state.events):
        if e.get("act") != "accept":
            continue
        plan, seat = e.get("plan_id"), e.get("seat")
        for i, oe in objection_events:
            o = by_event.get(i)
            if (o is not None and i < j and oe.get("plan_id") == plan and o.seat != seat
                    and oe.get("round", 0) < e.get("round", 0) and state.responses.get(plan, {}).get(o.seat) == "object"):
                notes.append(f"{seat} accepted {plan} in round {e.get('round')} after {_objection(o)} in round {oe.get('round')}")
    if notes:
        out.append(("accepted_over_objection", "; ".join(dict.fromkeys(notes))))
    return out


def state_view(state: CouncilState, acts: Sequence[Any]) -> dict[str, Any]:
    """What the review page shows of a replayed council whose acts are `acts`: the acts, rounds and
    proposals, each objection's validity (in order), the verifier's figures for each proposal among
    `acts` (by index) and the scenario's optimum."""
    truths: dict[int, dict[str, Any] | None] = {}
    for i, a in enumerate(acts):
        if isinstance(a, dict) and a.get("act") == "propose" and isinstance(a.get("selection"), dict):
            try:
                figures = evaluate(state.full, a["selection"])
                truths[i] = {"tco": figures["tco"], "violations": [text for _, text in figures["violations"]]}
            except (KeyError, TypeError):
                truths[i] = None
    private = state.scenario.private
    return {"acts": list(acts), "rounds": state.rounds, "proposals": dict(state.proposals),
            "objections_valid": [o.valid for o in state.objections], "truths": truths,
            "optimum": {"tco": private.get("optimum"), "note": private.get("optimum_note"),
                        "infeasible": state.scenario.infeasible, "why": private.get("why_infeasible")}}


def replay_episode(env: CouncilEnvironment, task: Task, calls: Sequence[ToolCall] | None, acts: Sequence[Any] | None,
                   rounds: Any) -> EpisodeReplay | None:
    """The council's logged `acts` made again and re-scored, or a roles/council rollout's `calls`
    replayed in its session (None when the task names no scenario)."""
    if acts is not None:
        state, grade, problems = replay_acts(env, task, acts, rounds)
        return EpisodeReplay(state_view(state, acts), grade_verdict(grade), problems, disagreement_findings(state))
    session = env.session(task)
    if session.state is None:  # type: ignore[attr-defined]
        return None
    session.replay(calls or [])
    state = session.state  # type: ignore[attr-defined]
    return EpisodeReplay(state_view(state, state.events), None, [], disagreement_findings(state))


def decision_answer(acts: Sequence[Any]) -> tuple[ToolCall | None, dict[str, Any]]:
    """A council's decision (its first commit or escalation) as the mediator's answer call, and the
    figures it claims."""
    decided = next((a for a in acts if isinstance(a, dict) and a.get("act") in ("commit", "escalate")), None)
    if decided is None:
        return None, {}
    answer = act_call(decided)
    return answer, ({"claimed_tco": decided.get("claimed_tco")} if decided.get("act") == "commit" else {})


USAGE = ('a correction of a council is the mediator\'s decision: one commit_plan call with {"selection": {component: '
         'option, ...}, "claimed_tco": N} (or a "plan_id" the council proposed), or one escalate call with a reason')


def mediator_plan(decision: ToolCall, proposals: Mapping[str, Any]) -> list[ToolCall]:
    """The decision in roles/council's single-agent form: every member's facts, then the plan
    proposed and committed (or the escalation); a ValueError says why not."""
    plan = [ToolCall("request_facts", {"seat": s}) for s in MEMBERS]
    args = decision.arguments if isinstance(decision.arguments, dict) else {}
    if decision.name == ESCALATE:
        return [*plan, ToolCall(ESCALATE, {"reason": args.get("reason")})]
    selection = args.get("selection")
    if selection is None and "plan_id" in args:
        selection = proposals.get(str(args["plan_id"]))
        if selection is None:
            known = ", ".join(proposals) or "none"
            raise ValueError(f"the council proposed no plan {args['plan_id']!r} (its plans: {known})")
    if not isinstance(selection, dict):
        raise ValueError(USAGE)
    claimed = args.get("claimed_tco")
    if isinstance(claimed, bool) or not isinstance(claimed, int | float):
        raise ValueError("commit_plan needs claimed_tco, the plan's 12-month TCO in dollars (it is recomputed)")
    return [*plan, ToolCall("propose_plan", {"selection": selection}), ToolCall(COMMIT, {"plan_id": "PLAN-1", "claimed_tco": claimed})]


def decision_plan(calls: Sequence[ToolCall], proposals: Mapping[str, Any]) -> tuple[list[ToolCall], list[int]]:
    """A corrected decision (one commit_plan or escalate call) as mediator_plan's calls and turns."""
    if len(calls) != 1 or calls[0].name not in (COMMIT, ESCALATE):
        raise ValueError(USAGE)
    plan = mediator_plan(calls[0], proposals)
    return plan, ([len(MEMBERS), 1] if calls[0].name == ESCALATE else [len(MEMBERS), 1, 1])
