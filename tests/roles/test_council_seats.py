"""The council's scripted seats: pure turns in envs/roles/council_seats.py, played as policies
through the environment's hooks (agent/council_seats.py)."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from officegym.agent.council import CouncilConfig, run_councils
from officegym.agent.council_file import outcome_row
from officegym.agent.council_seats import ScriptedSeat, scripted_seat
from officegym.core.environment import BaseEnvironment, EnvironmentSetupError, EnvironmentWrapper
from officegym.core.policy import PolicyRequest
from officegym.core.registry import make

# A digest of the councils' rows (timings left out) for each team below on make("roles/council")
# .generate_tasks(8, 3): any change to what a scripted seat does changes it. Recorded when the seats
# moved from agent/ to envs/roles/ (issue 48), equal to the old policies' rows on 22 tasks x 18 teams.
TEAMS = {
    "scripted": ({}, 4),
    "greedy": ({"cto": "greedy", "cost": "greedy", "risk": "greedy", "reconcile": "greedy"}, 4),
    "silent": ({"cto": "silent"}, 3),
    "recovering": ({"reconcile": "recovering", "risk": "greedy"}, 5),
}
DIGESTS = {
    "greedy": "fba78b08fbbb14a0",
    "recovering": "0d0ee6833ef32279",
    "scripted": "093a501825527d0c",
    "silent": "522726ad3437a640",
}


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in ("seconds", "env_seconds")}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def team_digest(name: str) -> str:
    env = make("roles/council")
    specs, rounds = TEAMS[name]
    seats = {s: scripted_seat(s, specs.get(s, "scripted"), rounds) for s in env.seats}
    outcomes = asyncio.run(run_councils(env.generate_tasks(8, 3), seats, CouncilConfig(max_rounds=rounds)))
    rows = [_strip(outcome_row(o, seats)) for o in outcomes]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(TEAMS))
def test_scripted_teams_play_as_recorded(name):
    assert team_digest(name) == DIGESTS[name]


def test_scripted_seats_are_named_by_the_environment():
    env = make("roles/council")
    assert [scripted_seat(s, "oracle", env=env).name for s in env.seats] == [
        "scripted-cto", "scripted-cost", "scripted-risk", "scripted-mediator"]
    assert scripted_seat("reconcile", "greedy").name == "greedy-mediator"
    assert scripted_seat("cto", "role-random") is None and scripted_seat("reconcile", "silent") is None
    with pytest.raises(ValueError, match="unknown seat"):
        scripted_seat("cfo", "scripted")
    # a wrapper forwards the hooks
    wrapped = scripted_seat("cost", "greedy", env=EnvironmentWrapper(env))
    assert isinstance(wrapped, ScriptedSeat) and wrapped.name == "greedy-cost"


def test_an_environment_without_seats_has_no_scripted_seat():
    class Plain(BaseEnvironment):
        name = "plain"

    with pytest.raises(ValueError, match="unknown seat"):
        Plain().seat_baseline("cto", "scripted")
    with pytest.raises(EnvironmentSetupError):
        Plain().seat_turn("cto", "scripted", PolicyRequest([], []))
    with pytest.raises(ValueError, match="need the task"):
        make("roles/council").seat_turn("cto", "scripted", PolicyRequest([], []))
