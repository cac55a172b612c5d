"""A failure in one rollout stays in that rollout: it becomes an error row that names its cause and
who failed (the model backend, a scripted policy, the environment), the batch's other rollouts are
scored, and a resumed eval retries only the backend's failures (issue 45)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from officegym.agent.baseline_policy import make_baseline_policy
from officegym.agent.council import run_councils
from officegym.agent.loop import LoopConfig, rollout, run_rollouts
from officegym.agent.scripted import OraclePolicy
from officegym.core.policy import Completion, Policy
from officegym.core.rollout_row import error_source, officegym_of, retryable
from officegym.envs.roles import baseline_answers
from officegym.envs.roles.council import CouncilEnvironment
from officegym.envs.roles.council_episode import CouncilEpisode
from officegym.envs.roles.reconcile import ReconcileEnvironment
from officegym.eval.run import backend_failed, run_eval
from officegym.rewards import ShapedReward

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "roles_reconcile.yaml"
TASKS = ReconcileEnvironment().generate_tasks(6, 5)
BAD = TASKS[2].id


class FaultyScorer(ReconcileEnvironment):
    """ReconcileGPT whose scorer divides by zero on one task; counts how often it is asked."""

    def __init__(self, where: str = "verify"):
        super().__init__()
        self.where, self.asked = where, 0

    def verify(self, task, calls, mode=None):
        if self.where == "verify" and task.id == BAD:
            self.asked += 1
            return 1 / 0
        return super().verify(task, calls, mode)

    def session(self, task=None):
        if self.where == "session" and task is not None and task.id == BAD:
            raise RuntimeError("scenario store unavailable")
        session = super().session(task)
        if self.where == "tool" and task is not None and task.id == BAD:
            def broken(name, arguments=None):
                raise KeyError(name)
            session.execute = broken
        return session


def play(env, policy, tasks=TASKS, **kw):
    """Every task once through the agent loop, in one batch."""
    return asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], policy, LoopConfig(), **kw))


def test_a_scorer_that_raises_fails_its_rollout_alone(tmp_path):
    env = FaultyScorer()
    result = run_eval(env, TASKS, OraclePolicy(), tmp_path)
    bad = next(r for r in result.rows if officegym_of(r)["task_id"] == BAD)
    og = officegym_of(bad)
    assert (og["stop_reason"], og["error_source"], bad["reward"]) == ("error", "environment", 0.0)
    assert og["error"].startswith("ZeroDivisionError: division by zero (at test_isolation.py:")
    assert og["verdict"]["label"] == "error" and og["verdict"]["error"] == og["error"]
    assert error_source(bad) == "environment" and not retryable(bad) and not backend_failed(bad)
    others = [r for r in result.rows if r is not bad]
    assert len(others) == len(TASKS) - 1 and all(r["reward"] == 1.0 and error_source(r) is None for r in others)
    # resuming keeps the error row: the same scenario would fail the same way
    again = run_eval(env, TASKS, OraclePolicy(), tmp_path)
    assert (again.new, again.skipped, env.asked) == (0, len(TASKS), 1)
    assert [officegym_of(r)["error"] for r in again.rows if error_source(r)] == [og["error"]]


def test_a_session_or_tool_that_raises_fails_its_rollout_alone():
    for where, cause in (("session", "RuntimeError: scenario store unavailable"), ("tool", "KeyError: ")):
        trajs = play(FaultyScorer(where), OraclePolicy())
        bad = next(t for t in trajs if t.task_id == BAD)
        assert bad.stop_reason == "error" and bad.error_source == "environment" and bad.error.startswith(cause)
        assert bad.reward == 0.0 and bad.reward_components == {"outcome": 0.0}
        assert all(t.reward == 1.0 and t.error is None for t in trajs if t is not bad)


def test_a_remote_session_is_closed_when_the_rollout_fails():
    closed = []

    class Remote(FaultyScorer):
        def session(self, task=None):
            session = super().session(task)
            session.aclose = lambda: asyncio.sleep(0, closed.append(task.id))
            return session

    play(Remote("tool"), OraclePolicy())  # a tool raises mid-episode: finish, which closes it, never runs
    assert sorted(closed) == sorted(t.id for t in TASKS)


def test_a_reward_function_that_raises_fails_its_rollout_alone():
    reward = ShapedReward(writes=ReconcileEnvironment.write_tools)

    def shaped(task, traj, verdict):
        if task.id == BAD:
            raise ValueError("no components")
        return reward(task, traj, verdict)

    trajs = play(ReconcileEnvironment(), OraclePolicy(), reward_fn=shaped)
    bad = next(t for t in trajs if t.task_id == BAD)
    assert (bad.stop_reason, bad.error_source, bad.reward) == ("error", "environment", 0.0)
    assert bad.error.startswith("reward function: ValueError: no components")
    assert all(t.error is None and t.reward > 0 for t in trajs if t is not bad)


def test_a_scripted_policy_that_raises_fails_that_rollout_as_its_own_error(monkeypatch, tmp_path):
    def answer(s, rng):
        if s.seed == bad_seed:
            raise ZeroDivisionError("division by zero")
        return real(s, rng)

    real, bad_seed = baseline_answers.random_answer, TASKS[2].metadata["scenario"]["seed"]
    monkeypatch.setattr(baseline_answers, "random_answer", answer)
    result = run_eval(ReconcileEnvironment(), TASKS, make_baseline_policy("role-random:0"), tmp_path)
    bad = next(r for r in result.rows if officegym_of(r)["task_id"] == BAD)
    assert error_source(bad) == "policy" and not retryable(bad)
    assert officegym_of(bad)["error"].startswith("ZeroDivisionError: division by zero (at test_isolation.py:")
    assert sum(error_source(r) is None for r in result.rows) == len(TASKS) - 1  # one batch, one failure


class FlakyBackend(Policy):
    """A model backend whose call fails the first time it is asked to continue one task."""

    name = "flaky"

    def __init__(self):
        self.failed = False

    async def complete(self, requests, params):
        if any(r.task.id == BAD for r in requests) and not self.failed:
            self.failed = True
            raise ConnectionError("backend went away")
        return await OraclePolicy().complete(requests, params)


def test_a_backend_failure_is_retried_on_resume(tmp_path):
    env, backend = ReconcileEnvironment(), FlakyBackend()
    first = run_eval(env, TASKS[:1] + TASKS[2:3], backend, tmp_path, max_batch=1)
    bad = next(r for r in first.rows if officegym_of(r)["task_id"] == BAD)
    assert error_source(bad) == "backend" and retryable(bad) and backend_failed(bad)
    assert officegym_of(bad)["error"].startswith("ConnectionError: backend went away")
    again = run_eval(env, TASKS[:1] + TASKS[2:3], backend, tmp_path)
    assert again.new == 1 and all(r["reward"] == 1.0 for r in again.rows)


def test_rows_before_error_sources_read_as_backend_failures():
    old = {"officegym": {"stop_reason": "error", "error": "HTTP 500"}}
    assert error_source(old) == "backend" and retryable(old)
    assert error_source({"officegym": {"stop_reason": "answered", "error": None}}) is None


def test_a_council_tool_that_raises_fails_that_council_alone():
    env = CouncilEnvironment()
    tasks = env.generate_tasks(3, 1)
    real = env.session

    def session(task=None):
        s = real(task)
        if task.id == tasks[1].id:
            s.execute = lambda name, arguments=None: {}["no such fact"]
        return s

    env.session = session
    trajs = play(env, OraclePolicy(), tasks)
    assert [t.error_source for t in trajs] == [None, "environment", None]
    assert trajs[1].error.startswith("KeyError: 'no such fact'") and trajs[1].stop_reason == "error"


def test_a_multi_agent_council_whose_act_raises_fails_every_seat(monkeypatch):
    env = CouncilEnvironment()
    tasks = env.generate_tasks(2, 1)
    real = CouncilEpisode.execute

    def execute(self, seat, call):
        if self.task.id == tasks[0].id and seat == "cost":
            raise IndexError("fact list is empty")
        return real(self, seat, call)

    monkeypatch.setattr(CouncilEpisode, "execute", execute)
    bad, good = asyncio.run(run_councils(tasks, {}))
    assert bad.grade.label == "error" and bad.reward == 0.0
    assert {t.error_source for t in bad.trajectories.values()} == {"environment"}
    assert all(t.error.startswith("IndexError: fact list is empty") for t in bad.trajectories.values())
    assert good.grade.label != "error" and all(t.error is None for t in good.trajectories.values())


def test_a_submit_that_raises_is_a_backend_error_of_that_turn():
    async def submit(request):
        raise TimeoutError("no answer in 60 s")

    traj = asyncio.run(rollout(ReconcileEnvironment(), TASKS[0], submit, LoopConfig()))
    assert (traj.stop_reason, traj.error_source) == ("error", "backend")
    assert traj.error.startswith("TimeoutError: no answer in 60 s") and traj.verdict["label"] != "error"


def test_completions_say_the_backend_failed_unless_told_otherwise():
    assert Completion(error="x").error_source == "backend"


class Console:
    def __init__(self):
        self.said: list[str] = []

    def print(self, text, **_):
        self.said.append(str(text))


def test_the_pipeline_baselines_stage_finishes_when_the_scorer_raises_on_one_task(monkeypatch, tmp_path):
    from officegym.envs.roles import reconcile
    from officegym.pipeline import Pipeline, load_pipeline_config

    def grade(scenario, answer):
        if scenario.seed == bad_seed:
            raise ZeroDivisionError("division by zero")
        return real(scenario, answer)

    cfg = load_pipeline_config(str(CONFIG), [f"out_dir={tmp_path}", "stages=[tasks,baselines]"])
    console = Console()
    pipeline = Pipeline(cfg, console)
    pipeline.run()  # the tasks, then every baseline scored: a first, clean run
    tasks = pipeline.eval_tasks()
    bad_seed, real = tasks[3].metadata["scenario"]["seed"], reconcile.grade
    monkeypatch.setattr(ReconcileEnvironment, "grader", staticmethod(grade))
    for spec in pipeline.baseline_specs():
        (pipeline.baseline_dir(spec) / "metrics.json").unlink()
        (pipeline.baseline_dir(spec) / "rollouts.jsonl").unlink()
    Pipeline(cfg, console).run()
    for spec in pipeline.baseline_specs():
        rows = [json.loads(line) for line in (pipeline.baseline_dir(spec) / "rollouts.jsonl").read_text().splitlines()]
        assert (pipeline.baseline_dir(spec) / "metrics.json").exists() and len(rows) == len(tasks)
        assert [officegym_of(r)["task_id"] for r in rows if error_source(r) == "environment"] == [tasks[3].id]
    warned = [line for line in console.said if "not the model backend" in line]
    assert len(warned) == len(pipeline.baseline_specs()) and "ZeroDivisionError" in warned[0]
