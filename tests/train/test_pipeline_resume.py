"""A run folder resumed with another config: the stages done there are refused, not reported as the new config's."""

from __future__ import annotations

import pytest
import yaml

from officegym.pipeline import Pipeline, PipelineConfig, load_pipeline_config
from officegym.pipeline.config import PipelineError
from officegym.pipeline.resume import depends_on, stale_stages
from officegym.train.config import build_config

DONE = ["world", "tasks", "eval_base", "sft", "eval_sft", "grpo", "eval_grpo"]


def _dump(*overrides: str) -> dict:
    return load_pipeline_config(None, ["out_dir=runs/x", *overrides]).model_dump(mode="json")


def test_a_stage_depends_on_its_own_sections_and_its_inputs():
    assert depends_on("world") == ("env", "world")
    assert set(depends_on("eval_grpo")) == {"eval", "bfcl", "model", "grpo", "sft", "sft_data", "tasks", "env", "world"}
    assert "grpo" not in depends_on("eval_sft") and "eval" not in depends_on("grpo")


def test_only_the_stages_a_change_reaches_are_stale():
    saved = _dump()
    assert stale_stages(saved, _dump(), DONE) == []
    assert stale_stages(saved, _dump("grpo.seed=1"), DONE) == [("grpo", ["grpo.seed"]), ("eval_grpo", ["grpo.seed"])]
    tasks = stale_stages(saved, _dump("tasks.n=7"), DONE)
    assert [s for s, _ in tasks] == DONE[1:] and all(keys == ["tasks.n"] for _, keys in tasks)
    # a default written out is no change; only the stages already done are looked at
    assert stale_stages(saved, _dump("grpo.grpo.max_steps=30"), ["world", "tasks"]) == []
    assert stale_stages(_dump("sft.seed=0"), _dump(), DONE) == []


def test_how_a_stage_runs_is_not_a_change():
    how = _dump("eval.backend=vllm", "eval.threads=1", "eval.batch_size=3", "grpo.model.device=cpu",
                "grpo.grpo.micro_batch_tokens=1536", "sft.model.threads=1", "grpo.vllm.max_model_len=4096",
                "grpo.logging.tensorboard=false", "out_dir=elsewhere", "stages=[world, tasks]")
    assert stale_stages(_dump(), how, DONE) == []
    assert stale_stages(_dump(), _dump("grpo.grpo.micro_batch_size=3", "grpo.optim.lr=0.1"), ["grpo"]) == [
        ("grpo", ["grpo.optim.lr"])]


def test_a_section_another_version_saved_is_not_compared():
    saved = _dump()
    saved["grpo"] = {"no_such_section": {"x": 1}}
    assert stale_stages(saved, _dump(), ["grpo"]) == []


def _tasks_cfg(out, *extra):
    data = {"out_dir": str(out), "stages": ["world", "tasks"], "world": {"seed": 3, "size": "small"},
            "tasks": {"n": 40, "seed": 0, "templates": ["email.send_to_address", "email.send_to_person"]}}
    return build_config(PipelineConfig, data, list(extra))


def test_resuming_with_another_recipe_is_refused_and_the_folder_kept(tmp_path):
    out = tmp_path / "run"
    assert Pipeline(_tasks_cfg(out)).run() == ["world", "tasks"]
    saved = (out / "config.yaml").read_text()
    with pytest.raises(PipelineError) as err:
        Pipeline(_tasks_cfg(out, "tasks.n=30")).run()
    message = str(err.value)
    assert "holds stages run with another config" in message and "tasks.n: 40 -> 30" in message
    assert "world:" not in message and "another out_dir" in message
    assert (out / "config.yaml").read_text() == saved  # the folder still says what its stages ran with
    # the same recipe, run another way, resumes; a later stage's settings do not reach done stages
    again = Pipeline(_tasks_cfg(out, "eval.backend=vllm", "grpo.optim.lr=0.5"))
    assert again.run() == [] and again.skipped == ["world", "tasks"]
    assert yaml.safe_load((out / "config.yaml").read_text())["grpo"]["optim"]["lr"] == 0.5


def test_a_folder_without_a_readable_config_resumes_as_before(tmp_path):
    out = tmp_path / "run"
    Pipeline(_tasks_cfg(out)).run()
    (out / "config.yaml").write_text("tasks: [not, a, mapping]\n")
    assert Pipeline(_tasks_cfg(out, "tasks.n=30")).run() == []
