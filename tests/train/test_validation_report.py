"""The pipeline report's validation curve: each point with its 95% Wilson interval, n taken from
`val/rollouts` or, for runs from before it, counted in val_rollouts.jsonl."""

from __future__ import annotations

import json

import pytest

from officegym.eval.stats import wilson_interval
from officegym.pipeline.report import write_pipeline_report
from officegym.pipeline.run_results import validation_series


def _metrics(run, records):
    (run / "grpo").mkdir(parents=True)
    (run / "grpo" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_intervals_use_the_logged_number_of_validation_rollouts(tmp_path):
    _metrics(tmp_path, [{"step": 0, "val/accuracy": 11 / 24, "val/rollouts": 24.0},
                        {"step": 1, "train/reward_mean": 0.5},
                        {"step": 5, "val/accuracy": 0.75, "val/rollouts": 24.0}])
    series = validation_series(tmp_path)
    assert [s[0] for s in series] == [0, 5]
    assert series[1][2:] == pytest.approx(wilson_interval(18, 24))
    assert series[0][2] < series[0][1] < series[0][3]


def test_older_runs_count_their_validation_rollouts_and_skip_torn_lines(tmp_path):
    _metrics(tmp_path, [{"step": 0, "val/accuracy": 0.5}, {"step": 5, "val/accuracy": 1.0}, {"step": 10, "val/accuracy": 0.0}])
    rows = [{"officegym": {"step": 0}}] * 4 + [{"officegym": {"step": 5}}] * 2 + [{"no": "step"}]
    text = "".join(json.dumps(r) + "\n" for r in rows) + '{"officegym": {"st'  # a run still appending
    (tmp_path / "grpo" / "val_rollouts.jsonl").write_text(text)
    series = validation_series(tmp_path)
    assert series[0][2:] == pytest.approx(wilson_interval(2, 4))
    assert series[1][2:] == pytest.approx(wilson_interval(2, 2))
    assert series[2][2:] == (None, None)  # no rollouts kept for step 10: no interval, not a made-up one


def test_the_report_shows_the_validation_table_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    _metrics(tmp_path, [{"step": 0, "val/accuracy": 0.5, "val/rollouts": 4.0},
                        {"step": 5, "val/accuracy": 0.25}])
    md, page = write_pipeline_report(tmp_path)
    text = md.read_text()
    lo, hi = wilson_interval(2, 4)
    assert f"| 0 | 50.0% [{100 * lo:.1f}, {100 * hi:.1f}] |" in text
    assert "| 5 | 25.0% |" in text  # n unknown: the value alone
    assert "Validation during GRPO" in page.read_text()
    assert (tmp_path / "plots" / "grpo_validation_accuracy.png").stat().st_size > 0


def test_no_grpo_run_no_validation_section(tmp_path):
    md, _ = write_pipeline_report(tmp_path)
    assert validation_series(tmp_path) == [] and "Validation during GRPO" not in md.read_text()
