"""Every role scorer on generated scenarios: the oracle, baseline, random and adversarial answers are
graded without an exception, with a finite reward in [0, 1] and a verdict that is plain JSON.

The scenarios are a seeded sweep drawn as generate_tasks draws them (every level, 7.5 % infeasible),
each with answers from its own seeded rng; a failure names the case to rerun. The default run grades
FAST scenarios per role, `-m slow` the 10,000 of issue 45. (Hypothesis, tried first, repeats its
favourite seeds: 10,000 examples held 4,712 distinct scenarios; it draws the reconcile tables below.)

Adversarial answers bend the ground truth's calls (lookups, calculator checks, the answer) the way a
careless or hostile model might: ids swapped for other ids of the scenario or unknown ones, keys
dropped or added, lists emptied or duplicated, numbers zeroed, negated or made huge, values of the
wrong type, arguments that are not JSON. Most mutants stay close to a valid call, so they reach the
graders rather than stopping at the schema check.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from officegym.core import registry
from officegym.core.types import ToolCall, Verdict
from officegym.envs.roles import council_model as council
from officegym.envs.roles.base import Scenario
from officegym.envs.roles.baseline_answers import GREEDY, random_answer
from officegym.envs.roles.council_episode import CouncilEpisode, act
from officegym.envs.roles.scenario_utils import INFEASIBLE_MODULUS, INFEASIBLE_RESIDUES, scenario_seed
from officegym.envs.roles.schema import schema_error

FAST, FULL = 250, 10_000  # CI sweeps FAST scenarios per role; -m slow the full 10,000
SINGLE = ("roles/cto", "roles/coo", "roles/reconcile", "roles/risk", "roles/cost")
NASTY = (None, True, 0, -1, 0.5, -0.0, 1e308, -1e308, 10**400, -(10**400), "", "x" * 3000, "PLAN-99",
         "ÄÖ\u202e", [], {}, [[]], {"": None})
ENVS = {name: registry.make(name) for name in (*SINGLE, "roles/council")}


# --- adversarial calls


def strings_of(value: Any, out: set[str]) -> set[str]:
    """Every string (keys included) in a JSON-like value: the scenario's ids and names."""
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            strings_of(k, out)
            strings_of(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            strings_of(v, out)
    return out


def mutate(value: Any, rng: random.Random, pool: list[str], depth: int = 0) -> Any:
    """A mutant of a JSON-like value: usually a small change, now and then a wrong type."""
    if rng.random() < 0.06 or depth > 6:
        return rng.choice(NASTY)
    if isinstance(value, dict):
        out = {k: (mutate(v, rng, pool, depth + 1) if rng.random() < 0.5 else v) for k, v in value.items()}
        if out and rng.random() < 0.15:
            out.pop(rng.choice(list(out)))
        if value and rng.random() < 0.1:
            key = rng.choice(pool) if rng.random() < 0.7 else "unknown_key"
            out[key] = mutate(rng.choice(list(value.values())), rng, pool, depth + 1)
        return out
    if isinstance(value, list):
        out = [mutate(v, rng, pool, depth + 1) if rng.random() < 0.4 else v for v in value]
        roll = rng.random()
        if roll < 0.1:
            return []
        if roll < 0.2 and out:
            out.append(rng.choice(out))  # a duplicate
        elif roll < 0.3 and out:
            out.pop(rng.randrange(len(out)))
        elif roll < 0.35:
            rng.shuffle(out)
        return out
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return rng.choice((0, -value, value + 1, value * 1.004, value * 1.02, value * 1e9, round(value) + 0.5,
                           float(value), math.nextafter(float(value), math.inf)))
    if isinstance(value, str):
        roll = rng.random()
        if roll < 0.5 and pool:
            return rng.choice(pool)
        return value.upper() if roll < 0.65 else (value + " " if roll < 0.8 else value)
    return value


def mutate_call(call: ToolCall, rng: random.Random, pool: list[str], names: list[str]) -> ToolCall:
    """The call with mutated arguments; sometimes another tool's name, undecodable text, a non-object
    or its arguments as a JSON string."""
    roll = rng.random()
    name = rng.choice(names) if roll < 0.1 else call.name
    if roll < 0.13:
        return ToolCall(name, None, raw_arguments="{not json", parse_error="arguments are not valid JSON")
    if roll < 0.16:
        return ToolCall(name, rng.choice(([], "text", 3, None)))
    if roll < 0.19:
        return ToolCall(name, json.dumps(mutate(call.arguments, rng, pool), default=str))
    return ToolCall(name, mutate(call.arguments, rng, pool))


def adversarial(calls: list[ToolCall], public: Any, rng: random.Random, names: list[str]) -> list[ToolCall]:
    """`calls` with some mutated, dropped or repeated (a later answer is refused)."""
    pool = sorted(strings_of(public, set()))
    out = []
    for call in calls:
        roll = rng.random()
        if roll < 0.1:
            continue
        out.append(mutate_call(call, rng, pool, names) if roll < 0.8 else call)
        if rng.random() < 0.05:
            out.append(mutate_call(call, rng, pool, names))
    return out


# --- the properties


def assert_sound(verdict: Verdict) -> None:
    assert 0.0 <= verdict.reward <= 1.0 and math.isfinite(verdict.reward)
    components = verdict.details.get("components", {})
    assert all(math.isfinite(v) for v in components.values()), components
    json.dumps(verdict.to_dict(), allow_nan=False)  # a rollout row is plain JSON


def check_single(name: str, s: Scenario, rng: random.Random) -> None:
    env = ENVS[name]
    task = env.task_from_scenario(s, f"sweep-{s.seed}")
    oracle = env.verify(task, s.ground_truth)
    assert_sound(oracle)
    assert oracle.reward == 1.0, oracle.details
    for answer in (GREEDY[s.role](s), random_answer(s, rng)):
        assert_sound(env.verify(task, [*s.lookups, answer]))
    names = [spec.name for spec in env.tools(task)]
    for gt in (s.ground_truth, [*s.lookups, random_answer(s, rng)]):
        assert_sound(env.verify(task, adversarial(gt, s.public, rng, names)))


def check_council(name: str, s: Scenario, rng: random.Random) -> None:
    env = ENVS[name]
    task = env.task_from_scenario(s, f"sweep-{s.seed}")
    oracle = env.verify(task, s.ground_truth)
    assert_sound(oracle)
    assert oracle.reward == 1.0, oracle.details
    names = [spec.name for spec in env.tools(task)]
    pick = {c["component"]: rng.choice(c["options"]) for c in s.public["components"]}
    tried = [*s.lookups, ToolCall("propose_plan", {"selection": pick}),
             ToolCall(council.COMMIT, {"plan_id": rng.choice(("PLAN-1", "PLAN-2")), "claimed_tco": 1000})]
    assert_sound(env.verify(task, adversarial(tried, s.private["full"], rng, names)))
    # every seat with its own acts (the multi-agent episode), mutated in the same way
    episode = CouncilEpisode(task, s, max_rounds=3)
    facts = sorted(s.private["facts"])
    acts = [("cto", ToolCall("share_facts", {"fact_ids": ["all"]})),
            ("cost", ToolCall("share_facts", {"fact_ids": facts[:3]})),
            ("risk", ToolCall("propose_plan", {"selection": pick})),
            ("cto", ToolCall("object_plan", {"plan_id": "PLAN-1", "reason_code": rng.choice(council.REASONS),
                                              "fact_id": rng.choice(facts)})),
            ("risk", ToolCall("accept_plan", {"plan_id": "PLAN-1"})),
            (council.MEDIATOR, ToolCall(council.COMMIT, {"plan_id": "PLAN-1", "claimed_tco": 1e6}))]
    pool = sorted(strings_of(s.private["full"], set()) | set(facts))
    for seat, call in acts:
        if rng.random() < 0.7:
            call = mutate_call(call, rng, pool, ["share_facts", "propose_plan", council.COMMIT, "escalate"])
        assert act(episode.state, seat, call).status in ("ok", "rejected", "error")
    verdict = episode.finish({})
    assert_sound(verdict)
    for seat in council.SEATS:
        assert all(math.isfinite(v) for v in episode.components(seat, verdict).values())


def sweep(name: str, n: int) -> None:
    """Case i: level 1 + i % 10, infeasible when i % 40 < 3, the scenario seed and the answers drawn
    from an rng seeded with (name, i)."""
    check = check_council if name == "roles/council" else check_single
    for i in range(n):
        rng = random.Random(f"{name}:{i}")
        infeasible = i % INFEASIBLE_MODULUS < INFEASIBLE_RESIDUES
        seed, level = scenario_seed(rng, infeasible), 1 + i % 10
        try:
            check(name, ENVS[name].build(seed, level), rng)
        except Exception as exc:
            raise AssertionError(f"{name} case {i} (scenario seed {seed}, level {level}): "
                                 f"{type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("name", [*SINGLE, "roles/council"])
def test_role_scorers_are_sound(name):
    sweep(name, FAST)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*SINGLE, "roles/council"])
def test_role_scorers_are_sound_on_10000_scenarios(name):
    sweep(name, FULL)


def test_an_integer_beyond_float_range_is_refused_as_a_number():
    # JSON integers have no size limit; one past float's range raised OverflowError in the schema check
    number = {"type": "number"}
    assert schema_error(10**400, number) == "arguments must be a finite number, got " + repr(10**400)[:57] + "..."
    assert schema_error(10**300, number) is None
