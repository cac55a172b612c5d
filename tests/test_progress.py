"""Without a terminal, progress is a few plain lines, not thousands of redraws."""

from __future__ import annotations

import io

from rich.console import Console

from officegym.core.policy import Policy as BasePolicy
from officegym.progress import LineProgress, progress


def test_a_log_gets_lines_at_most_every_interval_and_the_last_one():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=200)
    bar = progress(console, every=3600.0)
    assert isinstance(bar, LineProgress)
    with bar:
        job = bar.add_task("eval_sft", total=100)
        for _ in range(100):
            bar.advance(job, 1)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2  # the first update, then the finish
    assert lines[-1].startswith("eval_sft: 100/100")


def test_a_trainer_log_gets_one_line_per_step_with_its_info():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=200)
    with progress(console, every=0.0) as bar:
        job = bar.add_task("grpo", total=3, completed=0, info="")
        for step in range(1, 4):
            bar.update(job, completed=step, info=f"reward {step / 10:.3f}")
    lines = buf.getvalue().splitlines()
    assert len(lines) == 3 and lines[1].startswith("grpo: 2/3") and lines[1].endswith("reward 0.200")


def test_a_terminal_gets_a_rich_bar():
    console = Console(file=io.StringIO(), force_terminal=True)
    assert type(progress(console)).__name__ == "Progress"


def test_a_heartbeat_shows_the_policys_work_while_no_rollout_has_finished():
    import time

    from officegym.progress import heartbeat, policy_activity

    class Policy(BasePolicy):
        def __init__(self):
            self.stats = {"calls": 0, "completion_tokens": 0}

    policy = Policy()
    assert policy_activity(policy) is None  # nothing to say before the first call
    buf = io.StringIO()
    bar = progress(Console(file=buf, force_terminal=False, width=200), every=0.0)
    with bar:
        job = bar.add_task("eval_base", total=100, info="")
        with heartbeat(bar, job, lambda: policy_activity(policy), every=0.01):
            policy.stats = {"calls": 37, "completion_tokens": 2150}
            deadline = time.monotonic() + 5
            while "37 model calls, 2.1k tokens" not in buf.getvalue() and time.monotonic() < deadline:
                time.sleep(0.01)
    assert "eval_base: 0/100" in buf.getvalue()
    assert "37 model calls, 2.1k tokens" in buf.getvalue()


def test_a_heartbeat_survives_a_failing_reader_and_stops_with_its_block():
    import threading

    from officegym.progress import heartbeat

    def broken():
        raise RuntimeError("stats went away")

    bar = progress(Console(file=io.StringIO(), force_terminal=False), every=0.0)
    with bar:
        job = bar.add_task("x", total=1, info="")
        with heartbeat(bar, job, broken, every=0.01):
            threading.Event().wait(0.05)
    assert not any(t.name == "officegym-heartbeat" for t in threading.enumerate())


def test_a_log_gets_a_line_at_once_for_each_new_step_and_throttled_lines_within_one():
    buf = io.StringIO()
    with progress(Console(file=buf, force_terminal=False, width=200), every=3600.0) as bar:
        job = bar.add_task("rollouts", total=2, info="")
        for info, step in [("loading m (0 s)", "loading m"), ("loading m (1 s)", "loading m"),
                           ("prefill: 8 prompts (0 s)", "prefill: 8 prompts"), ("prefill: 8 prompts (1 s)", "prefill: 8 prompts"),
                           ("1 model calls, 5 tokens", "model calls"), ("2 model calls, 9 tokens", "model calls")]:
            bar.update(job, info=info, step=step)
    assert [line.split(", ", 1)[1] for line in buf.getvalue().splitlines()] == [
        "loading m (0 s)", "prefill: 8 prompts (0 s)", "1 model calls, 5 tokens"]


class SlowPolicy(BasePolicy):
    """A model that takes its time to load and to answer, saying what it is doing as HFPolicy does."""

    name = "slow"

    def __init__(self):
        self.stats = {"calls": 0, "completion_tokens": 0}
        self.phase = None

    async def _spend(self, what: str, seconds: float = 0.4) -> None:
        import asyncio
        import time

        self.phase = (what, time.perf_counter())
        await asyncio.sleep(seconds)

    async def preflight(self):
        await self._spend("loading slow-model")
        self.phase = None
        return None

    async def complete(self, requests, params):
        from officegym.core.policy import Completion

        await self._spend("prefill: 1 prompts, up to 900 tokens")
        await self._spend("generating: 1 rows, up to 256 tokens")
        self.stats["calls"] += 1
        self.stats["completion_tokens"] += 5
        self.phase = None
        return [Completion(text="nothing to do") for _ in requests]


def test_eval_shows_a_slow_model_loading_and_its_first_call_before_any_rollout_ends(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from officegym import progress as progress_module
    from officegym.agent import policies
    from officegym.cli import app

    runner = CliRunner()
    world, tasks = tmp_path / "world", tmp_path / "tasks"
    assert runner.invoke(app, ["generate", "world", "--seed", "1", "--size", "small", "--out", str(world)]).exit_code == 0
    assert runner.invoke(app, ["generate", "tasks", "--world", str(world), "--n", "2", "--out", str(tasks)]).exit_code == 0
    monkeypatch.setattr(progress_module, "HEARTBEAT_POLL", 0.05)
    monkeypatch.setattr(policies, "make_policy", lambda spec, **options: SlowPolicy())
    res = runner.invoke(app, ["eval", "--policy", "slow", "--tasks", str(tasks / "train.jsonl"), "--world", str(world),
                              "--limit", "1", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.output.splitlines() if line.startswith("rollouts: ")]
    seen = [next(i for i, line in enumerate(lines) if what in line) for what in
            ("starting slow (0 s)", "loading slow-model", "waiting for the first model answer", "prefill: 1 prompts",
             "generating: 1 rows", "1 model calls, 5 tokens")]
    assert seen == sorted(seen) and all(line.startswith("rollouts: 0/1") for line in lines[:seen[-1]])
