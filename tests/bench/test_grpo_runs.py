"""benchmarks/grpo_runs.py: the training table's time and memory columns, read from a run folder."""

from __future__ import annotations

import json
from pathlib import Path


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_blocks_show_median_step_time_and_largest_memory(tmp_path: Path, benchmark_script) -> None:
    mod = benchmark_script("grpo_runs")
    rollouts = [{"officegym": {"step": s, "verdict": {"matched": s % 2 == 0}, "call_status": ["ok"]}} for s in (1, 2, 3, 4)]
    _write(tmp_path / "rollouts.jsonl", rollouts)
    metrics = [{"step": s, "train/reward_mean": 0.5, "train/zero_variance_groups": 0.5, "train/reward_std": 0.4,
                "train/entropy": 0.1, "time/step_s": t, "mem/rss_gb": rss, "mem/children_rss_gb": kids}
               for s, t, rss, kids in ((1, 60.0, 10.0, 2.0), (2, 70.0, 12.5, 2.5), (3, 80.0, 14.0, 1.0), (4, 65.0, 13.0, 3.0))]
    _write(tmp_path / "metrics.jsonl", metrics)
    rows = mod.training_table(tmp_path, every=2)
    assert [r[0] for r in rows] == ["1-2", "3-4"]
    assert [r[-2:] for r in rows] == [["65.0", "12.5 (2.5)"], ["72.5", "14.0 (3.0)"]]


def test_runs_logged_before_memory_show_dashes(tmp_path: Path, benchmark_script) -> None:
    mod = benchmark_script("grpo_runs")
    _write(tmp_path / "rollouts.jsonl", [{"officegym": {"step": 1, "verdict": {"matched": True}}}])
    _write(tmp_path / "metrics.jsonl", [{"step": 1, "train/reward_mean": 1.0}])
    assert mod.training_table(tmp_path, every=5)[0][-3:] == ["-", "-", "-"]


def test_blocks_show_the_policy_gradient_against_the_sft_term(tmp_path: Path, benchmark_script) -> None:
    mod = benchmark_script("grpo_runs")
    _write(tmp_path / "rollouts.jsonl", [{"officegym": {"step": s, "verdict": {"matched": True}}} for s in (1, 2)])
    _write(tmp_path / "metrics.jsonl", [{"step": s, "train/reward_mean": 1.0, "train/pg_grad_norm": pg,
                                         "train/sft_grad_norm": 0.5, "train/pg_sft_grad_cos": cos}
                                        for s, pg, cos in ((1, 0.0, 0.0), (2, 0.1, -0.2))])
    assert mod.training_table(tmp_path, every=2)[0][-3] == "0.050 / 0.500, cos -0.10"


def test_validation_per_template_and_step(tmp_path: Path, benchmark_script) -> None:
    mod = benchmark_script("grpo_runs")
    rows = [{"template": t, "officegym": {"step": s, "verdict": {"matched": ok}}}
            for s, t, ok in ((0, "mail", True), (0, "mail", True), (0, "cal", False), (5, "mail", False), (5, "mail", True),
                             (5, "cal", True))]
    _write(tmp_path / "val_rollouts.jsonl", rows)
    header, table = mod.validation_by_template(tmp_path)
    assert header == ["template", "0", "5"]
    assert table == [["cal", "0/1", "1/1"], ["mail", "2/2", "1/2"]]
    assert mod.validation_by_template(tmp_path / "none") == (["template"], [])
