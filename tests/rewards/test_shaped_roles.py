"""The shaped reward on the role environments: graded correctness, planned reads are not waste."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest

from officegym.agent.baseline_policy import make_baseline_policy
from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.scripted import OraclePolicy
from officegym.core import registry
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall, Verdict
from officegym.rewards import ShapedReward, find_unnecessary_steps
from officegym.rewards.shaped import graded_correctness, planned_reads

SINGLE = ("roles/cto", "roles/coo", "roles/reconcile", "roles/risk", "roles/cost")
CLAIMS = {"roles/cost": "claimed_monthly_cost", "roles/cto": "claimed_tco"}


class Replay(Policy):
    """Plays fixed turns of calls, then a closing message."""

    name = "replay"

    def __init__(self, turns: list[list[ToolCall]]):
        self.turns = turns

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [Completion(tool_calls=[copy.copy(c) for c in self.turns[r.turn]]) if r.turn < len(self.turns)
                else Completion(text="Done.") for r in requests]


def run(env, tasks, policy, reward):
    return asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], policy, LoopConfig(), reward))


@pytest.fixture(scope="module")
def role_tasks():
    return {name: registry.make(name).generate_tasks(40, 11) for name in (*SINGLE, "roles/council")}


@pytest.mark.parametrize("name", (*SINGLE, "roles/council"))
def test_the_oracle_gets_the_top_shaped_reward(role_tasks, name):
    env = registry.make(name)
    reward = ShapedReward(writes=env.write_tools)
    for traj in run(env, role_tasks[name][:15], OraclePolicy(), reward):
        assert traj.reward == pytest.approx(reward.max_total)
        assert traj.reward_components["unnecessary_steps"] == 0 and traj.reward_components["correctness"] == 1.0
    normalized = ShapedReward(writes=env.write_tools, normalize=True)
    assert [t.reward for t in run(env, role_tasks[name][:3], OraclePolicy(), normalized)] == pytest.approx([1.0] * 3)


@pytest.mark.parametrize("name", SINGLE)
def test_a_feasible_but_suboptimal_answer_lands_between(role_tasks, name):
    env = registry.make(name)
    reward = ShapedReward(writes=env.write_tools)
    trajs = run(env, role_tasks[name], make_baseline_policy("role-random:2"), reward)
    trajs += run(env, role_tasks[name], make_baseline_policy("greedy"), reward)
    between = [t for t in trajs if 0.0 < t.verdict["reward"] < 1.0]
    assert between, f"no partly right answer among {len(trajs)} baseline rollouts of {name}"
    for t in between:
        assert 0.0 < t.reward < reward.max_total
        assert t.reward_components["correctness"] == pytest.approx(t.verdict["reward"])
        # the same process as the oracle's (its lookups, one answer): only the grade scales it
        assert t.reward == pytest.approx(t.verdict["reward"] * reward.max_total)


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_wrong_claims_get_nothing(role_tasks, name):
    env = registry.make(name)
    reward = ShapedReward(writes=env.write_tools)
    task = next(t for t in role_tasks[name] if not t.metadata["infeasible"])
    *lookups, answer = task.ground_truth
    args = dict(answer.arguments)
    args[CLAIMS[name]] = args[CLAIMS[name]] * 1.5 + 100
    traj = run(env, [task], Replay([lookups, [ToolCall(answer.name, args)]]), reward)[0]
    assert traj.verdict["label"] == "hallucinated_number" and traj.reward == 0.0
    assert traj.reward_components["correctness"] == 0.0


def test_extra_and_repeated_reads_still_cost(role_tasks):
    env = registry.make("roles/cost")
    reward = ShapedReward(writes=env.write_tools)
    task = next(t for t in role_tasks["roles/cost"] if not t.metadata["infeasible"])
    *lookups, answer = task.ground_truth  # the lookups (if any) and the bill of the plan, then the answer
    plan = answer.arguments["plan"]
    first = next(iter(plan))
    extra = ToolCall("simulate_bill", {"plan": {first: plan[first]}})  # not the oracle's own bill call
    clean = run(env, [task], Replay([lookups, [answer]]), reward)[0]
    padded = run(env, [task], Replay([[*lookups, lookups[0]], [answer], [extra]]), reward)[0]
    assert clean.reward == pytest.approx(reward.max_total)
    assert padded.verdict["reward"] == 1.0  # still the right answer...
    assert padded.reward_components["duplicate_calls"] == 1  # ...but the repeated lookup is waste
    assert padded.reward_components["unused_reads"] == 1  # and so is the bill read after answering
    assert padded.reward < clean.reward


def _read_then_answer(read_args: dict) -> Trajectory:
    traj = Trajectory(task_id="t")
    traj.turns = [
        Turn(executions=[ToolExecution(ToolCall("get_budget", read_args), json.dumps({"output": {"budget": 91234}}))]),
        Turn(executions=[ToolExecution(ToolCall("submit", {"choice": "a"}), json.dumps({"output": "recorded"}))]),
        Turn(text="Done."),
    ]
    return traj


def test_planned_reads_are_exempt_from_the_unused_read_rule():
    task = Task.from_row({"id": "t", "responses_create_params": {"input": "q"}, "ground_truth": [
        {"name": "get_budget", "arguments": json.dumps({"year": 2024})},
        {"name": "submit", "arguments": json.dumps({"choice": "a"})}]})
    is_write = {"submit"}.__contains__
    planned = planned_reads(task, is_write)
    assert planned == {("get_budget", '{"year": 2024}')}
    assert planned_reads(task, None) == frozenset()  # without the write tools, nothing is planned
    # the budget figure never reappears, so without the plan the read looks unused
    assert [w.reason for w in find_unnecessary_steps(_read_then_answer({"year": 2024}), is_write)] == ["unused_read"]
    assert find_unnecessary_steps(_read_then_answer({"year": 2024}), is_write, planned=planned) == []
    # a read with other arguments than the plan's is not exempt
    other = find_unnecessary_steps(_read_then_answer({"year": 2023}), is_write, planned=planned)
    assert [w.reason for w in other] == ["unused_read"]


def test_graded_correctness_and_the_binary_default():
    assert graded_correctness(Verdict(1.0, True, "outcome")) == 1.0
    assert graded_correctness(Verdict(0.0, False, "outcome")) == 0.0
    assert graded_correctness(Verdict(0.7, False, "outcome")) == 0.0  # ungraded: matched decides
    assert graded_correctness(Verdict(0.7, False, "exact", details={"graded": True})) == 0.7
    assert graded_correctness(Verdict(1.5, True, "exact", details={"graded": True})) == 1.0
    assert graded_correctness(Verdict(float("nan"), False, "exact", details={"graded": True})) == 0.0
    assert graded_correctness(Verdict(0.7, False, "exact", details={"graded": "yes"})) == 0.0

    task = Task.from_row({"id": "t", "responses_create_params": {"input": "q"},
                          "ground_truth": [{"name": "submit", "arguments": "{}"}]})
    traj = Trajectory(task_id="t")
    traj.turns = [Turn(executions=[ToolExecution(ToolCall("submit", {}), '{"output": "ok"}')]), Turn(text="Done.")]
    reward = ShapedReward(writes={"submit"})
    full = reward(task, traj, Verdict(1.0, True, "outcome")).total
    half = reward(task, traj, Verdict(0.5, False, "exact", details={"graded": True})).total
    assert full == pytest.approx(1.4) and half == pytest.approx(0.7)
    assert reward(task, traj, Verdict(0.5, False, "outcome")).total == 0.0
