"""benchmarks/transfer_report.py on a pipeline run with subsets: every subset and family is printed,
and consecutive stages are compared per subset."""

from __future__ import annotations

import json
import shutil
import sys

from officegym.core.rollout_row import RolloutRow
from officegym.pipeline import Pipeline, PipelineConfig
from officegym.train.config_files import build_config


def test_transfer_report_prints_subsets_families_and_paired_tests(tmp_path, benchmark_script, capsys, monkeypatch):
    out = tmp_path / "run"
    Pipeline(build_config(PipelineConfig, {
        "out_dir": str(out), "model": "oracle", "stages": ["world", "tasks", "eval_base"],
        "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 120, "seed": 0, "holdout_templates": 3, "holdout_wordings": 5, "fractions": [0.6, 0.1, 0.3],
                  "templates": ["email.send_to_address", "email.send_to_person", "calendar.cancel_next_with",
                                "project_management.cond_overdue_review", "analytics.plot_since",
                                "customer_relationship_manager.cond_lead_qualified"]},
        "eval": {"split": "test", "per_subset": 4, "max_steps": 3}}, [])).run()
    # a second "stage": the same rollouts with every held-out task failed
    shutil.copytree(out / "eval_base", out / "eval_sft")
    tasks = {json.loads(x)["id"]: json.loads(x) for x in (out / "tasks" / "test.jsonl").read_text().splitlines()}
    rows = [json.loads(x) for x in (out / "eval_sft" / "rollouts.jsonl").read_text().splitlines()]
    for r in rows:
        if tasks[RolloutRow(r).task_id]["subset"] != "trained":
            r["reward"] = 0.0
            r["officegym"]["verdict"]["matched"] = False
    (out / "eval_sft" / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    module = benchmark_script("transfer_report")
    monkeypatch.setattr(sys, "argv", ["transfer_report.py", str(out), "--templates"])
    assert module.main() == 0
    text = capsys.readouterr().out
    for words in ("held-out templates: accuracy", "held-out wordings: accuracy", "Accuracy per family",
                  "Failure kinds per subset", "Accuracy per template"):
        assert words in text
    assert "after SFT vs untrained, held-out templates + wordings" in text and "lost" in text
    n_heldout = sum(1 for r in rows if tasks[RolloutRow(r).task_id]["subset"] != "trained")

    # another run over the same tasks: its stages side by side, each against its own stage here
    other = tmp_path / "other"
    other.mkdir()
    shutil.copytree(out / "eval_sft", other / "eval_sft")
    shutil.copytree(out / "eval_base", other / "eval_base")
    monkeypatch.setattr(sys, "argv", ["transfer_report.py", str(out), "--against", str(other)])
    assert module.main() == 0
    text = capsys.readouterr().out
    assert "other: after SFT" in text
    assert "after SFT vs other: after SFT, held-out templates + wordings" in text
    assert f"0 gained, 0 lost, {n_heldout} tasks" in text.split("after SFT vs other: after SFT, held-out templates + wordings")[1]
    assert "after SFT vs other: untrained" not in text
