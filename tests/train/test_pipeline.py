"""`officegym pipeline` end to end with a tiny random model: every stage, the report, and resume."""

from __future__ import annotations

import json

import pytest

from officegym.pipeline import STAGES, Pipeline, PipelineConfig, load_pipeline_config
from officegym.train.config import build_config


def _cfg(out, model, *extra):
    train = {"model": {"device": "cpu", "threads": 1}, "logging": {"tensorboard": False},
             "validation": {"every": 0, "accuracy": False}, "checkpoint": {"every": 1, "keep_top_k": 1}}
    data = {
        "out_dir": str(out), "model": str(model),
        "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 40, "seed": 0, "tools": "domain", "templates": ["email.send_to_address", "email.send_to_person",
                                                                      "analytics.plot_since", "calendar.cancel_next_with"]},
        "eval": {"max_tasks": 3, "max_steps": 2, "max_new_tokens": 12, "batch_size": 4, "threads": 1},
        "sft": {**train, "sft": {"max_steps": 2, "batch_size": 2, "micro_batch_size": 1, "max_length": 6000}},
        "grpo": {**train, "rollout": {"max_steps": 2, "max_new_tokens_per_turn": 12, "max_new_tokens_per_episode": 24},
                 "grpo": {"max_steps": 1, "num_prompts_per_step": 2, "num_generations_per_prompt": 2, "micro_batch_size": 2}},
    }
    return build_config(PipelineConfig, data, list(extra))


def test_pipeline_runs_every_stage_then_resumes_by_skipping_them(tmp_path, tiny_model_dir):
    out = tmp_path / "run"
    first = Pipeline(_cfg(out, tiny_model_dir, "stages=[world, tasks, eval_base, sft]"))
    assert first.run() == ["world", "tasks", "eval_base", "sft"]
    # an "interrupted" pipeline: rerunning the whole thing skips what is done and finishes the rest
    second = Pipeline(_cfg(out, tiny_model_dir))
    ran = second.run()
    assert second.skipped == ["world", "tasks", "eval_base", "sft"]
    assert ran == ["eval_sft", "grpo", "eval_grpo", "report"]
    for name in ("eval_base", "eval_sft", "eval_grpo"):
        metrics = json.loads((out / name / "metrics.json").read_text())
        assert metrics["tasks"] == 3
    report = (out / "report.md").read_text()
    assert "| accuracy |" in report and "untrained" in report and "after SFT" in report and "after GRPO" in report
    assert (out / "report.html").exists() and (out / "config.yaml").exists()
    assert (out / "grpo" / "model").exists()


def test_configs_in_the_repo_load(tmp_path):
    from pathlib import Path

    from officegym.pipeline import _merge
    from officegym.train.config import GRPORunConfig, SFTRunConfig

    root = Path(__file__).resolve().parents[2] / "configs"
    for name in ("quickstart", "single_gpu", "nemotron_nano_9b"):
        cfg = load_pipeline_config(str(root / f"{name}.yaml"), [])
        assert set(cfg.stages) <= set(STAGES)
        if cfg.sft:
            build_config(SFTRunConfig, _merge(cfg.sft, {"out_dir": str(tmp_path)}))
        build_config(GRPORunConfig, _merge(cfg.grpo, {"out_dir": str(tmp_path)}))


def test_a_bad_override_names_the_key():
    from officegym.train.config import ConfigError

    with pytest.raises(ConfigError, match=r"tasks\.m"):
        build_config(PipelineConfig, {}, ["tasks.m=3"])
