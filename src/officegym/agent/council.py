"""The council through the one agent loop: a policy per seat, the team reward, many councils.

`run_council` plays a roles/council task's episode (envs/roles/council_episode.py) with
`agent.loop.play`, each seat's turns sent to its policy (seats sharing a policy object are batched
together, across councils too); seats left out are scripted (agent/council_seats.py asks the
environment for their turns).
`run_council_file` runs many into a resumable councils.jsonl (its format: agent/council_file.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.agent.batching import Batcher
from officegym.agent.council_file import outcome_row, task_key
from officegym.agent.council_seats import COUNCIL, scripted_seat
from officegym.agent.loop import LoopConfig, Submit, play, submitter
from officegym.core import registry
from officegym.core.environment import BaseEnvironment
from officegym.core.policy import Policy, SamplingParams
from officegym.core.resumable import ResumableRows
from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import Verdict
from officegym.envs.roles.base import Grade
from officegym.envs.roles.council_episode import DEFAULT_ROUNDS, CouncilEpisode
from officegym.envs.roles.council_model import MEDIATOR, SEATS
from officegym.envs.roles.council_state import CouncilState


@dataclass
class CouncilConfig:
    max_rounds: int = DEFAULT_ROUNDS
    params: SamplingParams = field(default_factory=SamplingParams)
    max_batch: int = 32


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


def full_seats(seats: Mapping[str, Policy]) -> dict[str, Policy]:
    """`seats` with the missing ones scripted."""
    env = registry.make(COUNCIL)
    made = {s: seats.get(s) or scripted_seat(s, "scripted", env=env) for s in SEATS}
    return {s: p for s, p in made.items() if p is not None}  # "scripted" sits at every seat


def _name(policy: Policy) -> str:
    return policy.name


class Seating:
    """How each seat's turns reach its policy: one submit per distinct policy object (a Batcher
    gathers the concurrent turns of every seat and council it plays). Close it when done."""

    def __init__(self, seats: Mapping[str, Policy], config: CouncilConfig):
        self.policies = full_seats(seats)
        made: dict[int, Submit] = {}
        self._batchers: list[Batcher] = []
        for policy in self.policies.values():
            if id(policy) not in made:
                submit, batcher = submitter(policy, config.params, config.max_batch)
                made[id(policy)] = submit
                if batcher is not None:
                    self._batchers.append(batcher)
        self.submit = {s: made[id(p)] for s, p in self.policies.items()}
        self.names = {s: _name(p) for s, p in self.policies.items()}

    async def close(self) -> None:
        for batcher in self._batchers:
            await batcher.close()


async def play_council(task: Task, seating: Seating, config: CouncilConfig, env: BaseEnvironment) -> CouncilOutcome:
    """One council over `task` through the agent loop."""
    start = time.perf_counter()
    episode = env.episode(task, max_rounds=config.max_rounds)
    assert isinstance(episode, CouncilEpisode)
    loop_config = LoopConfig(max_steps=config.max_rounds, max_tool_output_chars=None, params=config.params)
    trajs, verdict = await play(episode, seating.submit, loop_config, task, seating.names)
    # no grade when the council's own code raised: the loop made every seat an error row, and so is this
    grade = episode.grade or Grade(verdict.reward, False, "error", {}, [str(verdict.details.get("error"))])
    return CouncilOutcome(task.id, episode.state, grade, verdict, trajs, time.perf_counter() - start)


async def run_council(task: Task, seats: Mapping[str, Policy], config: CouncilConfig | None = None,
                      env: BaseEnvironment | None = None) -> CouncilOutcome:
    """One council over `task` (a roles/council task). Seats missing from `seats` are scripted."""
    config = config or CouncilConfig()
    seating = Seating(seats, config)
    try:
        return await play_council(task, seating, config, env or registry.make(COUNCIL))
    finally:
        await seating.close()


async def run_councils(tasks: Sequence[Task], seats: Mapping[str, Policy], config: CouncilConfig | None = None,
                       concurrency: int = 32) -> list[CouncilOutcome]:
    """Many councils concurrently (results in task order)."""
    config = config or CouncilConfig()
    gate = asyncio.Semaphore(max(1, concurrency))
    env = registry.make(COUNCIL)
    seating = Seating(seats, config)

    async def one(task: Task) -> CouncilOutcome:
        async with gate:
            return await play_council(task, seating, config, env)

    try:
        return list(await asyncio.gather(*(one(t) for t in tasks)))
    finally:
        await seating.close()


def run_council_file(tasks: Sequence[Task], seats: Mapping[str, Policy], out: Path,
                     config: CouncilConfig | None = None, concurrency: int = 8,
                     progress: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Run a council per task and append each row to `out` (JSONL) as it finishes. Tasks whose id is
    already in the file are skipped (a torn last line from an interrupted run is dropped), so an
    interrupted run resumes where it stopped. Returns every row, old and new."""
    store = ResumableRows(out, lambda r: task_key(r.get("task_id")))
    config = config or CouncilConfig()
    seats = full_seats(seats)
    names = {s: _name(p) for s, p in seats.items()}
    other = next((r.get("seats") for r in store.old if isinstance(r.get("seats"), dict) and r.get("seats") != names), None)
    if other is not None:
        raise ValueError(f"{out} holds councils played by other seats ({other}); write to another file")
    todo = store.todo(tasks, lambda t: task_key(t.id))
    if progress is not None and len(tasks) > len(todo):
        progress(len(tasks) - len(todo))

    async def main() -> None:
        gate = asyncio.Semaphore(max(1, concurrency))
        env = registry.make(COUNCIL)
        seating = Seating(seats, config)
        with store.appending(default=str) as append:

            async def one(task: Task) -> None:
                async with gate:
                    outcome = await play_council(task, seating, config, env)
                append(outcome_row(outcome, seats))
                if progress is not None:
                    progress(1)

            try:
                await asyncio.gather(*(one(t) for t in todo))
            finally:  # backends hold HTTP clients bound to this event loop
                await seating.close()
                for policy in {id(p): p for p in seats.values()}.values():
                    await policy.aclose()

    asyncio.run(main())
    return store.rows


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


__all__ = ["CouncilConfig", "CouncilOutcome", "Seating", "full_seats", "parse_seats", "play_council", "run_council",
           "run_council_file", "run_councils"]
