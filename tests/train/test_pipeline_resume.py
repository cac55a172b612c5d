"""A run folder resumed with other settings: the stages done there are refused, not reported as the new config's."""

from __future__ import annotations

import json
import shutil

import pytest

from officegym.pipeline import Pipeline, PipelineConfig, load_pipeline_config
from officegym.pipeline.config import PipelineError
from officegym.pipeline.resume import RECORD, stage_inputs, stale
from officegym.train.config_files import build_config, save_config


def _p(*overrides: str) -> Pipeline:
    return Pipeline(load_pipeline_config(None, ["out_dir=runs/x", *overrides]))


def test_a_stage_records_its_own_settings_and_those_it_builds_on():
    p = _p()
    world, tasks, sft = (stage_inputs(p, s) for s in ("world", "tasks", "sft"))
    assert set(world) < set(tasks) < set(sft) and "grpo.seed" not in sft and "eval.max_tasks" not in sft
    grpo = stage_inputs(p, "grpo")
    assert set(sft) < set(grpo) and grpo["eval.max_steps"] == p.cfg.eval.max_steps  # validation's limits
    assert "tasks.demonstrated" not in tasks and "tasks.demonstrated" in sft
    assert stage_inputs(_p("eval.base_max_tasks=5"), "eval_base")["eval.max_tasks"] == 5
    assert stage_inputs(_p("eval.base_max_tasks=5"), "eval_sft") == stage_inputs(p, "eval_sft")


def test_how_a_stage_runs_and_what_the_pipeline_fills_in_are_not_recorded():
    how = _p("eval.backend=vllm", "eval.threads=1", "eval.batch_size=3", "grpo.model.device=cpu",
             "grpo.grpo.micro_batch_tokens=1536", "sft.model.threads=1", "grpo.vllm.max_model_len=4096",
             "grpo.logging.tensorboard=false", "grpo.grpo.share_prefix=false", "grpo.validation.overlap=false",
             "grpo.model.name=elsewhere", "grpo.data.tasks=x.jsonl", "sft.checkpoint.resume=false")
    p = _p()
    for stage in ("world", "tasks", "eval_base", "sft", "eval_sft", "grpo", "eval_grpo"):
        assert stage_inputs(how, stage) == stage_inputs(p, stage), stage
    assert stage_inputs(_p("grpo.seed=0"), "grpo") == stage_inputs(p, "grpo")  # a default written out
    assert stage_inputs(_p("grpo.optim.lr=0.1"), "grpo") != stage_inputs(p, "grpo")
    assert stage_inputs(_p("bfcl={stages: [eval_grpo]}"), "eval_sft") == stage_inputs(p, "eval_sft")
    assert stage_inputs(_p("bfcl={stages: [eval_grpo]}"), "eval_grpo") != stage_inputs(p, "eval_grpo")


def test_where_grpo_starts_is_part_of_what_it_ran_with():
    assert stage_inputs(_p("stages=[world, tasks, grpo]"), "grpo") != stage_inputs(_p(), "grpo")


def _cfg(out, *extra):
    data = {"out_dir": str(out), "stages": ["world", "tasks"], "world": {"seed": 3, "size": "small"},
            "tasks": {"n": 40, "seed": 0, "templates": ["email.send_to_address", "email.send_to_person"]}}
    return build_config(PipelineConfig, data, list(extra))


def test_resuming_with_other_settings_is_refused_and_the_folder_kept(tmp_path):
    out = tmp_path / "run"
    assert Pipeline(_cfg(out)).run() == ["world", "tasks"]
    assert json.loads((out / "tasks" / RECORD).read_text())["tasks.n"] == 40
    saved = (out / "config.yaml").read_text()
    with pytest.raises(PipelineError) as err:
        Pipeline(_cfg(out, "tasks.n=30")).run()
    message = str(err.value)
    assert "holds stages run with other settings" in message and "tasks.n: 40 -> 30" in message
    assert "world:" not in message and "another out_dir" in message
    assert (out / "config.yaml").read_text() == saved  # nothing written before the refusal
    # the same settings, run another way, resume; later stages' settings do not reach done ones
    again = Pipeline(_cfg(out, "eval.backend=vllm", "grpo.optim.lr=0.5", "sft.optim.lr=0.5"))
    assert again.run() == [] and again.skipped == ["world", "tasks"]


def test_a_run_of_fewer_stages_does_not_rewrite_what_the_others_ran_with(tmp_path):
    """The record lives with each stage: a run of the world stage alone under tasks.n=30 leaves the
    tasks stage's record as it was (in the config file of the run folder it would not)."""
    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()
    assert Pipeline(_cfg(out, "stages=[world]", "tasks.n=30")).run() == []
    with pytest.raises(PipelineError, match=r"tasks\.n: 40 -> 30"):
        Pipeline(_cfg(out, "tasks.n=30")).run()
    assert Pipeline(_cfg(out)).run() == []


def test_a_stage_without_a_record_or_with_a_broken_one_resumes_as_before(tmp_path):
    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()
    (out / "tasks" / RECORD).write_text("[not, json")
    found, backfill = stale(Pipeline(_cfg(out, "tasks.n=30")), ["tasks"], ["tasks"])
    assert found and list(backfill) == [out / "tasks" / RECORD]  # a broken record: config.yaml speaks instead
    (out / "tasks" / RECORD).unlink()
    (out / "config.yaml").write_text("a: [\n")  # unparsable: the environment check passes over it too
    assert Pipeline(_cfg(out, "tasks.n=30")).run() == []
    assert not (out / "tasks" / RECORD).exists()  # nothing to say what it ran with: nothing recorded


def test_a_copied_stage_carries_its_record(tmp_path):
    """benchmarks/quickstart_seeds.py copies the shared stages into each seed's folder."""
    first, second = tmp_path / "seed0", tmp_path / "seed1"
    Pipeline(_cfg(first)).run()
    second.mkdir()
    for stage in ("world", "tasks"):
        shutil.copytree(first / stage, second / stage)
    assert Pipeline(_cfg(second, "grpo.seed=1")).run() == []
    with pytest.raises(PipelineError, match=r"world\.seed: 3 -> 4"):
        Pipeline(_cfg(second, "world.seed=4")).run()


def test_a_world_the_user_named_gets_no_record(tmp_path):
    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()
    named = tmp_path / "their_world"
    shutil.copytree(out / "world", named)
    (named / RECORD).unlink()
    Pipeline(_cfg(tmp_path / "run2", f"world.path={named}")).run()
    assert not (named / RECORD).exists()


def test_a_folder_from_before_records_is_checked_against_its_config_and_then_recorded(tmp_path):
    """An older version's run folder (runs/quickstart of the previous recipe) has config.yaml only."""
    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()
    for stage in ("world", "tasks"):
        (out / stage / RECORD).unlink()
    with pytest.raises(PipelineError, match=r"tasks\.n: 40 -> 30"):
        Pipeline(_cfg(out, "tasks.n=30")).run()
    assert not (out / "tasks" / RECORD).exists()
    assert Pipeline(_cfg(out)).run() == []  # it matches: recorded from now on
    assert json.loads((out / "tasks" / RECORD).read_text())["tasks.n"] == 40


def test_a_run_of_fewer_stages_cannot_launder_a_folder_from_before_records(tmp_path):
    """The old config.yaml is recorded for every done stage before a run of fewer stages rewrites it."""
    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()
    for stage in ("world", "tasks"):
        (out / stage / RECORD).unlink()
    assert Pipeline(_cfg(out, "stages=[world]", "tasks.n=30")).run() == []
    assert json.loads((out / "tasks" / RECORD).read_text())["tasks.n"] == 40
    with pytest.raises(PipelineError, match=r"tasks\.n: 40 -> 30"):
        Pipeline(_cfg(out, "tasks.n=30")).run()


def test_a_setting_added_or_removed_since_is_not_a_change(tmp_path):
    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()
    path = out / "tasks" / RECORD
    kept = json.loads(path.read_text())
    path.write_text(json.dumps({**{k: v for k, v in kept.items() if k != "tasks.fractions"}, "tasks.gone": 1}))
    assert Pipeline(_cfg(out)).run() == []


def test_an_evaluation_with_rows_is_not_finished_under_other_settings(tmp_path, monkeypatch):
    """An evaluation resumes row by row: one stopped under eval.max_steps=2 is not finished under 3."""
    import officegym.eval.run as eval_run

    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()

    def stopped(env, tasks, policy, folder, **kwargs):
        (folder / "rollouts.jsonl").write_text('{"id": "x"}\n')
        raise KeyboardInterrupt

    monkeypatch.setattr(eval_run, "run_eval", stopped)
    evaluate = ("model=oracle", "stages=[world, tasks, eval_base]")
    with pytest.raises(KeyboardInterrupt):
        Pipeline(_cfg(out, *evaluate, "eval.max_steps=2")).run()
    assert json.loads((out / "eval_base" / RECORD).read_text())["eval.max_steps"] == 2
    with pytest.raises(PipelineError, match=r"eval_base: eval\.max_steps: 2 -> 3"):
        Pipeline(_cfg(out, *evaluate, "eval.max_steps=3")).run()
    (out / "eval_base" / "rollouts.jsonl").write_text("")  # no rows yet: nothing to finish, nothing refused
    with pytest.raises(KeyboardInterrupt):
        Pipeline(_cfg(out, *evaluate, "eval.max_steps=3")).run()


def test_an_evaluation_that_could_not_start_leaves_nothing_to_refuse(tmp_path):
    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()
    with pytest.raises(PipelineError, match="cannot run"):
        Pipeline(_cfg(out, "model=/no/such/model", "eval.backend=hf", "stages=[world, tasks, eval_base]")).run()
    assert not (out / "eval_base" / RECORD).exists()


def test_a_config_left_by_a_run_of_other_stages_says_nothing_of_this_one(tmp_path):
    out = tmp_path / "run"
    Pipeline(_cfg(out)).run()
    (out / "tasks" / RECORD).unlink()
    # config.yaml as a world-only run of an older version would have left it
    save_config(_cfg(out, "stages=[world]", "tasks.n=30"), out / "config.yaml")
    found, backfill = stale(Pipeline(_cfg(out, "tasks.n=30")), ["tasks"], ["world", "tasks"])
    assert found == [] and out / "tasks" / RECORD not in backfill


def test_roles_tasks_do_not_depend_on_a_world_they_never_use():
    p, q = _p("env=roles/cost"), _p("env=roles/cost", "world.seed=7")
    assert stage_inputs(p, "tasks") == stage_inputs(q, "tasks")
    assert stage_inputs(_p(), "tasks") != stage_inputs(_p("world.seed=7"), "tasks")


def test_grpo_records_the_evaluation_limits_only_where_its_validation_takes_them():
    own = "grpo.validation={max_steps: 3, max_new_tokens_per_turn: 50}"
    assert stage_inputs(_p(own), "grpo") == stage_inputs(_p(own, "eval.max_steps=9"), "grpo")
    assert stage_inputs(_p(), "grpo") != stage_inputs(_p("eval.max_steps=9"), "grpo")
    assert stage_inputs(_p("eval.max_tasks=10", "eval.base_max_tasks=24"), "eval_base")["eval.max_tasks"] == 10
