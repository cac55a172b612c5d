"""Council rollouts for training: trained seats' own turns, the team reward, per-seat figures."""

from __future__ import annotations

import pytest

from officegym.agent.council_seats import scripted_seat
from officegym.core.policy import Policy, SamplingParams
from officegym.core.registry import make
from officegym.train.council_rollouts import CouncilSetupError, council_metrics, fixed_seats, play_councils


@pytest.fixture(scope="module")
def env():
    return make("roles/council")


class Counting(Policy):
    """A trained seat that plays like the scripted mediator and counts the requests it got."""

    name = "counting"

    def __init__(self, inner):
        self.inner, self.requests = inner, 0

    async def complete(self, requests, params):
        self.requests += len(requests)
        return await self.inner.complete(requests, params)


def test_trained_seats_get_their_own_turns_and_the_team_reward(env):
    tasks = env.generate_tasks(4, 11)
    jobs = [(t, k) for t in tasks for k in range(2)]
    policy = Counting(scripted_seat("reconcile", "scripted"))
    fixed = fixed_seats(["reconcile"], {"cost": "greedy"}, max_rounds=4)
    assert fixed["cost"].name == "greedy-cost" and fixed["cto"].name == "scripted-cto"
    trajs, outcomes = play_councils(env, jobs, policy, ["reconcile"], fixed, SamplingParams(), 4)
    assert len(trajs) == len(jobs) == len(outcomes)
    for (task, k), traj, out in zip(jobs, trajs, outcomes):
        assert traj.task_id == task.id and traj.sample_index == k
        assert traj.reward == out.reward and traj.verdict["role"] == "council"
        assert len(traj.turns) == out.state.rounds  # the mediator's turns alone
        assert traj.messages[0]["content"].startswith("You are ReconcileGPT")
    assert policy.requests == sum(len(t.turns) for t in trajs)
    metrics = council_metrics(outcomes, ["reconcile"], "train")
    assert metrics["train/council/team_reward"] == pytest.approx(sum(o.reward for o in outcomes) / len(outcomes))
    assert "train/council/reconcile/acts" in metrics


def test_self_play_gives_every_trained_seat_a_trajectory(env):
    tasks = env.generate_tasks(2, 5)
    jobs = [(t, 0) for t in tasks]

    class Members(Policy):
        name = "members"

        def __init__(self):
            self.seats = {s: scripted_seat(s, "scripted") for s in ("cto", "risk")}

        async def complete(self, requests, params):
            out = []
            for r in requests:
                seat = "cto" if "the CTO" in r.messages[0]["content"] else "risk"
                out += await self.seats[seat].complete([r], params)
            return out

    trajs, outcomes = play_councils(env, jobs, Members(), ["cto", "risk"], fixed_seats(["cto", "risk"], {}, 4),
                                    SamplingParams(), 4)
    assert len(trajs) == 2 * len(jobs)
    assert [t.reward for t in trajs] == [o.reward for o in outcomes for _ in range(2)]
    assert all(o.reward == 1.0 for o in outcomes if not o.state.scenario.infeasible)
    comps = trajs[0].reward_components
    assert comps["objections_raised"] >= comps["objections_valid"] >= 0 and comps["acts"] >= 1


@pytest.mark.parametrize("trained, others, message", [
    ([], {}, "at least one trained seat"),
    (["ceo"], {}, "unknown seat"),
    (["cto"], {"cto": "greedy"}, "trained and also given"),
    (["cto"], {"reconcile": "silent"}, "cannot sit at reconcile"),
])
def test_bad_council_settings_get_a_message(trained, others, message):
    with pytest.raises(CouncilSetupError, match=message):
        fixed_seats(trained, others, 4)
