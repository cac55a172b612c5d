"""Council rollouts for training: some seats played by the policy being trained, the others fixed.

Each job (task, sample index) is one council over the task's scenario, played through the one agent
loop (agent/council.py). The trained seats share the trained policy (self-play when there are
several); the other seats are scripted (`scripted`/`oracle`, `greedy`, `silent` members) or any
policy spec (`openai:MODEL`, `hf:PATH`, ...). Every trained seat's conversation becomes a
trajectory: its own turns only, so only they carry loss and its token ledger is exact; its reward
is the team reward (or the run's reward function of it), with the seat's components (consensus,
objections raised and resolved, extra rounds, credit). The jobs of one task are councils on the
same scenario, so GRPO's group baseline compares councils.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from officegym.agent.council import CouncilConfig, CouncilOutcome, Seating, play_council
from officegym.agent.council_file import CouncilRunError
from officegym.agent.council_run import seat_policies
from officegym.agent.council_seats import COUNCIL
from officegym.core import registry
from officegym.core.policy import Policy, SamplingParams
from officegym.core.task import Task
from officegym.core.trajectory import Trajectory


class CouncilSetupError(ValueError):
    """Council training settings that cannot work (an unknown seat, no trained seat, ...)."""


def fixed_seats(trained: Sequence[str], others: Mapping[str, str], max_rounds: int,
                make_model: Any = None) -> dict[str, Policy]:
    """The policies of the seats not trained: scripted by default, else the spec `others` names
    (built as `officegym council` builds its seats: agent/council_run.seat_policies; a model spec by
    `make_model(spec)`, once per spec)."""
    seats = registry.make(COUNCIL).seats
    unknown = sorted((set(trained) | set(others)) - set(seats))
    if unknown:
        raise CouncilSetupError(f"unknown seat(s) {', '.join(unknown)}; the seats are {', '.join(seats)}")
    if not trained:
        raise CouncilSetupError("council training needs at least one trained seat (council.train_seats)")
    both = sorted(set(trained) & set(others))
    if both:
        raise CouncilSetupError(f"seat(s) {', '.join(both)} are trained and also given a fixed policy")

    def model(seat: str, spec: str) -> Policy:
        if make_model is None:
            raise CouncilSetupError(f"{spec!r} cannot sit at {seat}: only scripted seats here")
        return make_model(spec)

    fixed = {seat: others.get(seat, "scripted") for seat in seats if seat not in trained}
    try:
        return seat_policies(fixed, max_rounds, model, seats=tuple(fixed))
    except CouncilRunError as exc:
        raise CouncilSetupError(str(exc)) from None


def play_councils(env: Any, jobs: Sequence[tuple[Task, int]], policy: Policy, trained: Sequence[str],
                  fixed: Mapping[str, Policy], params: SamplingParams, max_rounds: int,
                  reward_fn: Any = None) -> tuple[list[Trajectory], list[CouncilOutcome]]:
    """One council per job; the trained seats' trajectories in job order (seats in `trained`
    order within a job) and the outcomes."""
    seats: dict[str, Policy] = {**fixed, **dict.fromkeys(trained, policy)}
    config = CouncilConfig(max_rounds=max_rounds, params=params, max_batch=max(1, len(jobs) * len(trained)))

    async def main() -> list[CouncilOutcome]:
        seating = Seating(seats, config)
        try:
            return list(await asyncio.gather(*(play_council(task, seating, config, env) for task, _ in jobs)))
        finally:
            await seating.close()
            for other in {id(p): p for p in fixed.values()}.values():
                await other.aclose()  # an API client belongs to this event loop

    outcomes = asyncio.run(main())
    trajs = []
    for (task, k), outcome in zip(jobs, outcomes):
        for seat in trained:
            traj = outcome.trajectories[seat]
            traj.sample_index = k
            if reward_fn is not None:
                result = reward_fn(task, traj, outcome.verdict)
                traj.reward = float(result.total)
                traj.reward_components = {**traj.reward_components, **dict(result.components)}
            trajs.append(traj)
    return trajs, outcomes


def council_metrics(outcomes: Sequence[CouncilOutcome], trained: Sequence[str], prefix: str) -> dict[str, float]:
    """Team figures of the councils and per trained seat: reward, consensus, objections raised,
    valid and resolved, extra rounds, credit."""
    import statistics

    if not outcomes:
        return {}
    out = {
        f"{prefix}/council/team_reward": statistics.fmean(o.reward for o in outcomes),
        f"{prefix}/council/consensus": statistics.fmean(float(o.grade.components.get("consensus", 0.0)) for o in outcomes),
        f"{prefix}/council/commit_rate": statistics.fmean(
            1.0 if o.state.outcome is not None and o.state.outcome[0] == "commit" else 0.0 for o in outcomes),
        f"{prefix}/council/extra_rounds": statistics.fmean(float(o.grade.components.get("extra_rounds", 0.0)) for o in outcomes),
        f"{prefix}/council/unresolved_objections": statistics.fmean(
            float(o.grade.components.get("unresolved_objections", 0.0)) for o in outcomes),
    }
    for seat in trained:
        comps = [o.trajectories[seat].reward_components for o in outcomes]
        for key in ("objections_raised", "objections_valid", "objections_resolved", "credit", "acts"):
            out[f"{prefix}/council/{seat}/{key}"] = statistics.fmean(float(c.get(key, 0.0)) for c in comps)
    return out


__all__ = ["CouncilSetupError", "council_metrics", "fixed_seats", "play_councils"]
