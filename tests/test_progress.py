"""Without a terminal, progress is a few plain lines, not thousands of redraws."""

from __future__ import annotations

import io

from rich.console import Console

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

    class Policy:
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

