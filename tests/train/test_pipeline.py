"""`officegym pipeline` end to end with a tiny random model: every stage, the report, and resume."""

from __future__ import annotations

import json

import pytest

from officegym.pipeline import STAGES, Pipeline, PipelineConfig, load_pipeline_config
from officegym.train.config_files import build_config


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
    assert "| accuracy [95% interval] |" in report and "untrained" in report and "after SFT" in report
    assert "after GRPO" in report and "(n=3)" in report
    # each stage is compared with the one before on the same tasks, in plain words
    assert "after SFT vs untrained:" in report and "exact McNemar p =" in report and "after GRPO vs after SFT:" in report
    assert "[after SFT](eval_sft/report.html)" in report
    assert (out / "report.html").exists() and (out / "config.yaml").exists()
    assert (out / "grpo" / "model").exists()
    # GRPO validates under the evaluation's episode limits (eval.max_steps=2, max_new_tokens=12)
    assert "max_steps: 2\n  max_new_tokens_per_turn: 12" in (out / "grpo" / "config.yaml").read_text()
    timings = json.loads((out / "timings.json").read_text())
    # no baselines stage: the workplace has no greedy baseline and the config names none
    assert set(STAGES) - {"review", "baselines"} == set(timings) and all(v >= 0 for v in timings.values())
    assert "## Time per stage" in report


def test_configs_in_the_repo_load(tmp_path):
    from pathlib import Path

    from officegym.train.config import GRPORunConfig, SFTRunConfig
    from officegym.train.config_files import merge_sections

    root = Path(__file__).resolve().parents[2] / "configs"
    for name in ("quickstart", "quickstart_rl", "quickstart_all_demonstrated", "single_gpu", "nemotron_nano_9b",
                 "workplace", "workplace_gpu"):
        cfg = load_pipeline_config(str(root / f"{name}.yaml"), [])
        assert set(cfg.stages) <= set(STAGES)
        if cfg.sft:
            build_config(SFTRunConfig, merge_sections(cfg.sft, {"out_dir": str(tmp_path)}))
        build_config(GRPORunConfig, merge_sections(cfg.grpo, {"out_dir": str(tmp_path)}))


def test_forced_sections_merge_at_every_depth():
    from officegym.train.config_files import merge_sections

    base = {"grpo": {"max_steps": 30, "sft_mix": {"coef": 1.0, "examples": 4}}, "data": {"tasks": "a"}}
    out = merge_sections(base, {"grpo": {"sft_mix": {"templates": ["t"]}}, "data": {"tasks": "b"}, "out_dir": "o"})
    assert out == {"grpo": {"max_steps": 30, "sft_mix": {"coef": 1.0, "examples": 4, "templates": ["t"]}},
                   "data": {"tasks": "b"}, "out_dir": "o"}
    assert base["grpo"]["sft_mix"] == {"coef": 1.0, "examples": 4}  # a copy: the base is left alone


def test_a_bad_override_names_the_key():
    from officegym.train.config_files import ConfigError

    with pytest.raises(ConfigError, match=r"tasks\.m"):
        build_config(PipelineConfig, {}, ["tasks.m=3"])


def test_review_rounds_flag_retrain_and_feed_decisions_back(tmp_path, tiny_model_dir):
    """Round 1 flags the GRPO rollouts and retrains; a reviewer then removes a task in the store;
    rerunning with rounds=2 imports nothing new but exports the decision, so round 2's pool drops it."""
    from officegym.review.store import Filters, Store

    out = tmp_path / "run"
    stages = "stages=[world, tasks, sft, grpo, review, report]"
    review = ["review.rounds=1", "review.audit_share=1.0", "review.grpo.grpo.max_steps=1"]
    first = Pipeline(_cfg(out, tiny_model_dir, stages, *review))
    assert first.run() == ["world", "tasks", "sft", "grpo", "review", "report"]
    r1 = json.loads((out / "review" / "round_001" / "summary.json").read_text())
    assert r1["round"] == 1 and r1["run_dir"].endswith("grpo") and r1["rollouts"] == 4
    assert r1["flagged"] >= 1 and r1["needing_review"] == r1["flagged"]
    assert r1["pool"]["pool"] == r1["pool"]["train"] and r1["pool"]["removed"] == 0
    assert r1["start_model"].endswith("grpo/model") and r1["eval"]["tasks"] == 3
    assert (out / "review" / "round_001" / "grpo" / "model").exists()
    report = (out / "report.md").read_text()
    assert "## Human review per round" in report and "after review round 1" in report

    # a reviewer rejects one flagged task as ill-posed (what the web UI's reject button records)
    with Store(out / "review" / "review.sqlite") as st:
        item = st.list(Filters(round=1))[0]
        st.decide(item["id"], "reject", "tester", reason="task_ill_posed")
    train_ids = {json.loads(line)["id"] for line in (out / "tasks" / "train.jsonl").read_text().splitlines()}
    assert item["task_id"] in train_ids

    # done rounds are skipped; round 2 flags round 1's retraining run and drops the rejected task
    second = Pipeline(_cfg(out, tiny_model_dir, stages, *review[1:], "review.rounds=2"))
    assert second.run() == ["review", "report"]
    r2 = json.loads((out / "review" / "round_002" / "summary.json").read_text())
    assert r2["run_dir"].endswith("round_001/grpo") and r2["start_model"].endswith("round_001/grpo/model")
    assert r2["pool"]["removed"] == 1 and r2["pool"]["pool"] == r1["pool"]["pool"] - 1
    pool_ids = {json.loads(line)["id"] for line in (out / "review" / "round_002" / "tasks.jsonl").read_text().splitlines()}
    assert item["task_id"] not in pool_ids
    rounds = json.loads((out / "review" / "active_learning.json").read_text())["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert rounds[1]["new_items"] == rounds[1]["needing_review"] == r2["needing_review"] >= 1  # its own items
    assert "| 2 |" in (out / "report.md").read_text()


def test_the_review_pool_never_takes_held_out_tasks(tmp_path):
    from officegym.pipeline.review import build_pool

    train, exports = tmp_path / "train.jsonl", tmp_path / "exp"
    exports.mkdir()
    train.write_text("".join(json.dumps({"id": i, "v": 0}) + "\n" for i in ("a", "b", "c")))
    (exports / "rl_removed.jsonl").write_text(json.dumps({"id": "b"}) + "\n")
    (exports / "rl_tasks.jsonl").write_text("".join(json.dumps({"id": i, "v": 1}) + "\n" for i in ("c", "d", "val")))
    counts = build_pool(train, exports, {"val"}, tmp_path / "pool.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert [(r["id"], r["v"]) for r in rows] == [("a", 0), ("c", 1), ("d", 1)]
    assert counts == {"train": 3, "removed": 1, "replaced": 1, "added": 1, "held_out_skipped": 1, "pool": 3}


def test_without_vllm_the_pipeline_says_so_and_runs_on_hf(tmp_path, tiny_model_dir, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    said: list[str] = []

    class Console:
        def print(self, text, **_):
            said.append(str(text))

    out = tmp_path / "run"
    cfg = _cfg(out, tiny_model_dir, "stages=[world, tasks, eval_base, sft, grpo]", "eval.backend=vllm", "grpo.backend=vllm")
    Pipeline(cfg, Console()).run()
    assert sum("vLLM is not installed" in s for s in said) == 1  # said once
    run = json.loads((out / "eval_base" / "run.json").read_text()) if (out / "eval_base" / "run.json").exists() else {}
    assert "vllm" not in json.dumps(run)
    assert (out / "grpo" / "model").exists()
    assert "backend: hf" in (out / "grpo" / "config.yaml").read_text()


def test_an_interrupted_stage_keeps_its_time_and_the_resumed_run_adds_to_it(tmp_path, monkeypatch):
    out = tmp_path / "run"
    pipe = Pipeline(_cfg(out, "unused", "stages=[world, tasks]"))
    clock = iter([100.0, 130.0, 200.0, 210.0, 300.0, 305.0])
    monkeypatch.setattr("officegym.pipeline.run.time.perf_counter", lambda: next(clock))

    def interrupted(ctx):
        raise KeyboardInterrupt

    monkeypatch.setattr("officegym.pipeline.world_tasks.world", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pipe.run()
    assert json.loads((out / "timings.json").read_text()) == {"world": 30.0}
    (out / "timings.json").write_text(json.dumps({"world": 30.0, "tasks": "garbage"}))
    resumed = Pipeline(_cfg(out, "unused", "stages=[world, tasks]"))
    monkeypatch.setattr("officegym.pipeline.world_tasks.world", lambda ctx: None)
    monkeypatch.setattr("officegym.pipeline.world_tasks.tasks", lambda ctx: None)
    resumed.run()
    assert json.loads((out / "timings.json").read_text()) == {"world": 40.0, "tasks": 5.0}


def test_an_empty_evaluation_split_is_a_clear_error_not_a_crash(tmp_path):
    from officegym.pipeline import PipelineError

    out = tmp_path / "run"
    cfg = build_config(PipelineConfig, {
        "out_dir": str(out), "model": "oracle", "stages": ["world", "tasks", "eval_base"],
        "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 4, "seed": 0, "templates": ["email.send_to_address"], "fractions": [1.0, 0.0, 0.0]}}, [])
    with pytest.raises(PipelineError, match=r"validation split .* has no tasks"):
        Pipeline(cfg).run()


def test_a_model_that_cannot_load_stops_the_stage_instead_of_scoring_0(tmp_path):
    """A missing model fails eval_base with the loader's message; no metrics.json marks it done."""
    from officegym.pipeline import PipelineError

    out = tmp_path / "run"
    cfg = _cfg(out, tmp_path / "no-such-model", "stages=[world, tasks, eval_base]")
    with pytest.raises(PipelineError, match=r"eval_base: .* cannot run: .*no-such-model"):
        Pipeline(cfg).run()
    assert not (out / "eval_base" / "metrics.json").exists() and not (out / "eval_base" / "rollouts.jsonl").exists()


def test_rollouts_the_backend_failed_leave_the_stage_undone_and_a_rerun_retries_them(tmp_path, monkeypatch):
    from officegym.agent import policies
    from officegym.core.policy import Completion
    from officegym.pipeline import PipelineError

    real = policies.make_policy
    broken = {"on": True}

    def flaky(spec, **options):
        policy = real(spec, **options)
        complete = policy.complete

        async def failing(requests, params):
            if broken["on"]:
                return [Completion(finish_reason="error", error="ConnectError: the server went away") for _ in requests]
            return await complete(requests, params)

        policy.complete = failing
        return policy

    monkeypatch.setattr(policies, "make_policy", flaky)
    out = tmp_path / "run"
    cfg = build_config(PipelineConfig, {
        "out_dir": str(out), "model": "oracle", "stages": ["world", "tasks", "eval_base"],
        "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 20, "seed": 0, "templates": ["email.send_to_address"], "fractions": [0.5, 0.5, 0.0]},
        "eval": {"max_tasks": 3, "max_steps": 2}}, [])
    with pytest.raises(PipelineError, match=r"eval_base: 3 of 3 rollouts failed in the model backend .*server went away"):
        Pipeline(cfg).run()
    assert not (out / "eval_base" / "metrics.json").exists()
    broken["on"] = False
    assert Pipeline(cfg).run() == ["eval_base"]
    assert json.loads((out / "eval_base" / "metrics.json").read_text())["accuracy"] == 1.0


def test_demonstrated_templates_limit_sft_and_the_sft_term_while_grpo_plays_them_all(tmp_path, tiny_model_dir):
    """tasks.demonstrated: SFT and GRPO's SFT term see the ground truth of those templates only;
    GRPO's rollouts still come from every training task (the rest are verifier-only)."""
    import io

    import yaml
    from rich.console import Console

    from officegym.pipeline import PipelineError
    from officegym.train.data import DataError, load_tasks, of_templates, template_of

    out = tmp_path / "run"
    shown = "email.send_to_address"
    cfg = _cfg(out, tiny_model_dir, "stages=[world, tasks, sft, grpo]", f"tasks.demonstrated=[{shown}]",
               "grpo.grpo.sft_mix.coef=0.5", "grpo.grpo.sft_mix.examples=2", "grpo.grpo.sft_mix.max_length=6000")
    log = io.StringIO()
    Pipeline(cfg, console=Console(file=log, width=200)).run()
    sft = yaml.safe_load((out / "sft" / "config.yaml").read_text())
    grpo = yaml.safe_load((out / "grpo" / "config.yaml").read_text())
    assert sft["data"]["templates"] == [shown] and grpo["data"]["templates"] is None
    assert grpo["grpo"]["sft_mix"]["templates"] == [shown] and grpo["grpo"]["sft_mix"]["coef"] == 0.5
    train = load_tasks(out / "tasks" / "train.jsonl")
    assert len({template_of(t) for t in train}) == 4
    n_shown = sum(template_of(t) == shown for t in train)
    printed = log.getvalue()
    assert f"SFT: {n_shown} training" in printed and f"SFT mix: {n_shown} ground-truth conversations" in printed
    with pytest.raises(DataError, match=r"no task of email.send_to_adress; the tasks' templates are .*analytics"):
        of_templates(train, ["email.send_to_adress"], "data.templates")
    assert of_templates(train, ["email.send_to_adress"], "x", strict=False) == []
    bad = _cfg(tmp_path / "b", tiny_model_dir, "tasks.demonstrated=[calendar.create_with_person]")
    with pytest.raises(PipelineError, match=r"tasks\.demonstrated: calendar\.create_with_person not in tasks\.templates"):
        Pipeline(bad).run()


def test_eval_base_can_take_fewer_tasks_and_is_compared_on_the_tasks_both_ran(tmp_path):
    out = tmp_path / "run"
    cfg = build_config(PipelineConfig, {
        "out_dir": str(out), "model": "oracle", "stages": ["world", "tasks", "eval_base", "report"],
        "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 20, "seed": 0, "templates": ["email.send_to_address"], "fractions": [0.5, 0.5, 0.0]},
        "eval": {"max_tasks": 6, "base_max_tasks": 2, "max_steps": 2}}, [])
    Pipeline(cfg).run()
    assert json.loads((out / "eval_base" / "metrics.json").read_text())["tasks"] == 2
    pipe = Pipeline(cfg)
    assert len(pipe.eval_tasks("eval_sft")) == 6 and len(pipe.eval_tasks("eval_base")) == 2


def test_eval_base_sees_the_prompts_training_will_give_the_base_model(tmp_path, tiny_model_dir, monkeypatch):
    """sft.model.chat_template=officegym-signatures: the untrained model is evaluated with that template
    too (trained models carry theirs); with the default (auto) the evaluation passes none."""
    from officegym.agent import policies

    seen = []
    real = policies.make_policy

    def spy(spec, **options):
        if spec.startswith(("hf:", "vllm:")):
            seen.append(options.get("chat_template"))
        return real(spec, **options)

    monkeypatch.setattr(policies, "make_policy", spy)
    out = tmp_path / "run"
    Pipeline(_cfg(out, tiny_model_dir, "stages=[world, tasks, eval_base]", "eval.max_tasks=1",
                  "sft.model.chat_template=officegym-signatures")).run()
    assert seen == ["officegym-signatures"]
    assert Pipeline(_cfg(tmp_path / "plain", tiny_model_dir)).base_template() is None
    grpo_only = _cfg(tmp_path / "g", tiny_model_dir, "stages=[world, tasks, grpo]", "grpo.model.chat_template=officegym")
    assert Pipeline(grpo_only).base_template() == "officegym"
