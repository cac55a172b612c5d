"""Scripted seats as Policies, so scripted and learned seats mix freely: each turn asks the
environment for the scripted seat's next turn (`BaseEnvironment.seat_turn`; the council's kinds,
scripted, oracle, greedy, silent and recovering, are envs/roles/council_seats.py)."""

from __future__ import annotations

from officegym.core import registry
from officegym.core.environment import BaseEnvironment
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams

COUNCIL = "roles/council"  # the environment `officegym council` plays, by its registry name


class ScriptedSeat(Policy):
    """The scripted `kind` at `seat` of `env`, named as the environment names it."""

    def __init__(self, env: BaseEnvironment, seat: str, kind: str, name: str, max_rounds: int | None = None):
        self.env = env
        self.seat = seat
        self.kind = kind
        self.name = name
        self.max_rounds = max_rounds

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [self.env.seat_turn(self.seat, self.kind, r, self.max_rounds) for r in requests]


def scripted_seat(seat: str, spec: str, max_rounds: int | None = None,
                  env: BaseEnvironment | None = None) -> ScriptedSeat | None:
    """The scripted policy `spec` names for `seat` of `env` (the council by default), or None when
    `spec` is no scripted policy that sits there; a ValueError for a seat `env` does not have."""
    env = env if env is not None else registry.make(COUNCIL)
    name = env.seat_baseline(seat, spec)
    return None if name is None else ScriptedSeat(env, seat, spec, name, max_rounds)


__all__ = ["COUNCIL", "ScriptedSeat", "scripted_seat"]
