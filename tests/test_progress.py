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
