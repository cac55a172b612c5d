"""Policy specs for the role environments (greedy, role-random) and the oracle's planned turns."""

from __future__ import annotations

import asyncio

import pytest

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import PolicySpecError, make_policy
from officegym.agent.scripted import OraclePolicy, plan_turns
from officegym.core import registry
from officegym.core.policy import PolicyRequest, SamplingParams
from officegym.core.task import Task


@pytest.fixture(scope="module")
def cost_tasks():
    return registry.make("roles/cost").generate_tasks(12, 5)


def test_greedy_and_role_random_specs():
    assert make_policy("greedy").name == "greedy"
    assert make_policy("role-random").seed == 0
    assert make_policy("role-random:9", environment="roles/cto").seed == 9
    assert make_policy("greedy", environment="roles/council").name == "greedy"
    for bad in ("greedy:2", "role-random:x"):
        with pytest.raises(PolicySpecError):
            make_policy(bad)
    with pytest.raises(PolicySpecError, match="baseline of the role environments"):
        make_policy("greedy", environment="workplace")
    with pytest.raises(PolicySpecError, match="role-random"):
        make_policy("smart")


def test_random_takes_the_seed_option_or_zero():
    assert make_policy("random", seed=None).seed == 0
    assert make_policy("random", seed=4).seed == 4
    assert make_policy("random:7", seed=4).seed == 7


def test_baselines_through_the_loop_rank_below_the_oracle(cost_tasks):
    env = registry.make("roles/cost")

    def mean(spec):
        trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in cost_tasks], make_policy(spec), LoopConfig()))
        return sum(t.reward for t in trajs) / len(trajs)

    oracle, greedy, rand = mean("oracle"), mean("greedy"), mean("role-random:1")
    assert oracle == 1.0 and rand < greedy <= oracle


def test_plan_turns_accepts_only_a_plan_that_covers_the_calls():
    assert plan_turns(4, [3, 1]) == [3, 1]
    assert plan_turns(4, [2, 1]) == [4]  # does not add up
    assert plan_turns(4, [4, 0]) == [4]  # empty turn
    assert plan_turns(2, [True, 1]) == [2]  # booleans are not counts
    assert plan_turns(3, "3") == [3] and plan_turns(3, None) == [3]
    assert plan_turns(0, None) == [] and plan_turns(0, []) == []


def test_oracle_replays_oracle_turns_turn_by_turn(cost_tasks):
    task = next(t for t in cost_tasks if len(t.metadata["oracle_turns"]) == 2)
    lookups, answers = task.metadata["oracle_turns"]
    oracle = OraclePolicy()

    def turn(k):
        request = PolicyRequest(messages=[], tools=[], task=task, turn=k)
        return asyncio.run(oracle.complete([request], SamplingParams()))[0]

    first, second, third = turn(0), turn(1), turn(2)
    assert [c.name for c in first.tool_calls] == [c.name for c in task.ground_truth[:lookups]]
    assert [c.name for c in second.tool_calls] == [task.ground_truth[-1].name] and answers == 1
    assert [c.call_id for c in second.tool_calls] == ["call_1_0"]
    assert not third.tool_calls and third.text == "Done."

    env = registry.make("roles/cost")
    traj = asyncio.run(run_rollouts(env, [(task, 0)], oracle, LoopConfig()))[0]
    assert [len(t.executions) for t in traj.turns] == [lookups, 1, 0]
    assert traj.reward == 1.0


def test_oracle_without_a_plan_puts_every_call_in_the_first_turn(cost_tasks):
    row = cost_tasks[0].to_row()
    del row["oracle_turns"]
    task = Task.from_row(row)
    request = PolicyRequest(messages=[], tools=[], task=task, turn=0)
    calls = asyncio.run(OraclePolicy().complete([request], SamplingParams()))[0].tool_calls
    assert len(calls) == len(task.ground_truth) > 1
