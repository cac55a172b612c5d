"""The Platform Plan Council as an environment: CTO, Cost and Risk hold private facts; ReconcileGPT
mediates and commits (the decision problem: council_model.py; the state and team reward:
council_state.py).

`CouncilEnvironment` is the single-agent form (`roles/council`): the model is the mediator and the
other seats are truthful scripted members (`member_review`), so the agent loop and trainer run it
unchanged. `CouncilEnvironment.episode` (council_episode.py) gives every seat its own policy: the
agent loop plays all four; `seat_turn` plays the scripted seats (council_seats.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from officegym.core.environment import EpisodeReplay
from officegym.core.episode import Episode
from officegym.core.policy import Completion, PolicyRequest
from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolResult, ToolSpec
from officegym.envs.roles import council_review, council_seats, review_rules
from officegym.envs.roles.base import (
    ESCALATE,
    ESCALATE_SPEC,
    Grade,
    RoleEnvironment,
    RoleSession,
    Scenario,
    tool,
)
from officegym.envs.roles.council_episode import DEFAULT_ROUNDS, CouncilEpisode
from officegym.envs.roles.council_model import (
    COMMIT,
    MEDIATOR,
    MEMBERS,
    ROLE,
    SEATS,
    SELECTION,
    generate,
    member_review,
)
from officegym.envs.roles.council_state import CouncilState, score_council

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
        return CouncilEpisode(task, self.scenario(task), max_rounds or DEFAULT_ROUNDS)

    def seat_baseline(self, seat: str, kind: str) -> str | None:
        return council_seats.seat_baseline_name(seat, kind)

    def seat_turn(self, seat: str, kind: str, request: PolicyRequest, max_rounds: int | None = None) -> Completion:
        if request.task is None:
            raise ValueError("scripted council seats need the task")
        return council_seats.seat_turn(self.scenario(request.task), seat, kind, request.messages, request.turn,
                                       max_rounds or DEFAULT_ROUNDS)

    # -- the review queue's hooks (council_review.py)
    def review_findings(self, task: Task, verdict: dict[str, Any], calls: Sequence[tuple[ToolCall, str | None]],
                        bands: Mapping[str, tuple[float, float]], acts: Sequence[Any] | None = None) -> list[tuple[str, str]]:
        """A rollout's findings as every role's; a council's (its `acts`): escalations and low margins
        of its decision."""
        if acts is None:
            return super().review_findings(task, verdict, calls, bands)
        answer, claims = council_review.decision_answer(acts)
        return review_rules.answer_findings(task, verdict, answer, claims, bands)

    def replay_episode(self, task: Task, *, calls: Sequence[ToolCall] | None = None, acts: Sequence[Any] | None = None,
                       rounds: Any = None) -> EpisodeReplay | None:
        return council_review.replay_episode(self, task, calls, acts, rounds)

    def act_call(self, act: Mapping[str, Any]) -> ToolCall | None:
        return council_review.act_call(act)

    def decision_plan(self, calls: Sequence[ToolCall], proposals: Mapping[str, Any]) -> tuple[list[ToolCall], list[int]]:
        return council_review.decision_plan(calls, proposals)
