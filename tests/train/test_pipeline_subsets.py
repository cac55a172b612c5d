"""The pipeline's test split in subsets: held-out templates and wordings go to test whole, the
evaluation takes N tasks of each, metrics give each subset apart, and the report shows them side by
side with paired tests per subset."""

from __future__ import annotations

import json

import pytest

from officegym.core.rollout_row import RolloutRow
from officegym.pipeline import Pipeline, PipelineConfig
from officegym.pipeline.report_subsets import subset_rows, subset_tests
from officegym.pipeline.training import train_data
from officegym.train.config_files import build_config

TEMPLATES = ["email.send_to_address", "email.send_to_person", "email.delete_last_from", "calendar.cancel_next_with",
             "project_management.cond_overdue_review", "customer_relationship_manager.cond_lead_qualified",
             "analytics.plot_since", "calendar.cond_catch_up"]


def _config(out, policy="oracle"):
    return build_config(PipelineConfig, {
        "out_dir": str(out), "model": policy, "stages": ["world", "tasks", "eval_base", "report"],
        "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 160, "seed": 0, "templates": TEMPLATES, "wordings": "composed", "holdout_templates": 2,
                  "holdout_wordings": 6, "tools": "mixed", "all_tools_share": 0.5, "fractions": [0.6, 0.1, 0.3]},
        "eval": {"split": "test", "per_subset": 5, "max_steps": 3}}, [])


def test_each_subset_is_evaluated_and_reported_apart(tmp_path):
    out = tmp_path / "run"
    Pipeline(_config(out)).run()
    test_rows = [json.loads(line) for line in (out / "tasks" / "test.jsonl").read_text().splitlines()]
    assert {r["subset"] for r in test_rows} == {"trained", "heldout_template", "heldout_wording"}
    for line in (out / "tasks" / "train.jsonl").read_text().splitlines():
        assert json.loads(line)["subset"] == "trained"
    metrics = json.loads((out / "eval_base" / "metrics.json").read_text())
    assert metrics["tasks"] == 15
    subsets = metrics["subsets"]
    assert {"trained", "heldout_template", "heldout_wording", "heldout"} <= set(subsets)
    assert all(subsets[name]["tasks"] == 5 for name in ("trained", "heldout_template", "heldout_wording"))
    assert subsets["heldout"]["tasks"] == 10
    assert all(subsets[name]["accuracy"] == 1.0 for name in subsets)  # the oracle
    page = (out / "report.html").read_text()
    assert "What transfers" in page and "held-out wordings: accuracy [95%]" in page


def test_subset_rows_and_paired_tests_per_subset(tmp_path):
    out = tmp_path / "run"
    Pipeline(_config(out)).run()
    rows = [json.loads(line) for line in (out / "eval_base" / "rollouts.jsonl").read_text().splitlines()]
    tasks = {json.loads(line)["id"]: json.loads(line) for line in (out / "tasks" / "test.jsonl").read_text().splitlines()}
    # a second evaluation that fails every held-out task: the held-out tests must see 10 lost tasks
    worse = []
    for r in rows:
        r2 = json.loads(json.dumps(r))
        if tasks[RolloutRow(r).task_id]["subset"] != "trained":
            r2["reward"] = 0.0
            r2.setdefault("officegym", {}).setdefault("verdict", {})["matched"] = False
        worse.append(r2)
    sentences = subset_tests(out, [("before", rows, "after", worse)])
    held = [s for s in sentences if s.startswith("held-out templates + wordings:")]
    assert held and "10 lost" in held[0] and "worsened" in held[0]
    trained = [s for s in sentences if s.startswith("new fills")]
    assert trained == []  # only the held-out subsets and "change nothing" are tested per subset
    metrics = {"a": json.loads((out / "eval_base" / "metrics.json").read_text()), "b": {}}
    table = subset_rows(metrics)
    assert table and all(len(r) == 3 for r in table) and table[0][2] == "-"


def test_reference_examples_are_one_more_subset_in_their_own_world(tmp_path, reference_dir):
    out = tmp_path / "run"
    cfg = _config(out)
    cfg.eval.reference = str(reference_dir)
    Pipeline(cfg).run()
    metrics = json.loads((out / "eval_base" / "metrics.json").read_text())
    reference = metrics["subsets"]["reference"]
    assert reference["tasks"] == 5 and reference["accuracy"] == 1.0  # the oracle, in the reference world
    assert (out / "eval_base" / "reference" / "rollouts.jsonl").exists()
    assert "NeMo Gym&#x27;s example tasks" in (out / "report.html").read_text()


def test_a_reference_folder_without_examples_is_a_clear_error(tmp_path):
    from officegym.pipeline import PipelineError

    cfg = _config(tmp_path / "run")
    cfg.eval.reference = str(tmp_path)
    with pytest.raises(PipelineError, match=r"holds no example\.jsonl"):
        Pipeline(cfg).run()


def test_the_gpu_variant_takes_any_hf_path_and_keeps_the_cpu_recipes_subsets():
    from pathlib import Path

    from officegym.pipeline import load_pipeline_config

    configs = Path(__file__).resolve().parents[2] / "configs"
    cpu = load_pipeline_config(str(configs / "workplace.yaml"), [])
    gpu = load_pipeline_config(str(configs / "workplace_gpu.yaml"), ["model=hf:/models/my-checkpoint"])
    assert gpu.model == "/models/my-checkpoint"
    for key in ("wordings", "holdout_templates", "holdout_wordings", "seed", "tools"):
        assert getattr(gpu.tasks, key) == getattr(cpu.tasks, key)
    assert cpu.tasks.tools == "mixed" and cpu.tasks.wordings == "composed" and cpu.eval.per_subset
    # SFT on the CPU sees domain prompts only (half the cost a step); on a GPU the rows' own mix
    assert train_data(Pipeline(cpu), section=cpu.sft)["tools"] == "domain"
    assert train_data(Pipeline(gpu), section=gpu.sft)["tools"] == "all"


def test_a_mixed_dataset_keeps_each_rows_tools_unless_a_stage_asks_for_domain_prompts(tmp_path):
    cfg = _config(tmp_path / "run")
    assert train_data(Pipeline(cfg), section=cfg.sft)["tools"] == "all"  # the rows' own tool lists
    cfg.sft = {"data": {"tools": "domain"}}
    pipe = Pipeline(cfg)
    assert train_data(pipe, section=cfg.sft)["tools"] == "domain"
    assert train_data(pipe, section=cfg.grpo)["tools"] == "all"
