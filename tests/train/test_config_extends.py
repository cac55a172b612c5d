"""`extends:` in a config file: another file's sections under it, merged at every depth."""

from __future__ import annotations

from pathlib import Path

import pytest

from officegym.pipeline import load_pipeline_config
from officegym.train.config_files import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_a_file_extends_another_and_overrides_only_what_it_names(tmp_path):
    (tmp_path / "base.yaml").write_text(
        "out_dir: runs/base\ntasks: {n: 50, templates: [a, b]}\ngrpo: {grpo: {max_steps: 30, num_prompts_per_step: 2}}\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "child.yaml").write_text(
        "extends: ../base.yaml\ntasks: {templates: [c]}\ngrpo: {grpo: {max_steps: 5}, data: {templates: [c]}}\n")
    cfg = load_pipeline_config(str(tmp_path / "sub" / "child.yaml"), ["grpo.grpo.num_prompts_per_step=4"])
    assert cfg.out_dir == "runs/base" and cfg.tasks.n == 50
    assert cfg.tasks.templates == ["c"]  # a list is replaced, not appended to
    assert cfg.grpo == {"grpo": {"max_steps": 5, "num_prompts_per_step": 4}, "data": {"templates": ["c"]}}


@pytest.mark.parametrize("text, message", [
    ("extends: missing.yaml\n", "missing.yaml"),
    ("extends: [a.yaml, b.yaml]\n", "extends must name one config file"),
    ("extends: loop.yaml\n", "makes a cycle"),
])
def test_a_bad_extends_is_a_config_error_naming_it(tmp_path, text, message):
    (tmp_path / "loop.yaml").write_text("extends: c.yaml\n")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_pipeline_config(str(tmp_path / "c.yaml"), [])


DEMONSTRATED = ["email.send_to_address", "calendar.create_with_person", "project_management.create_task",
                "customer_relationship_manager.add_customer", "analytics.plot_between"]


def test_the_quickstart_is_the_measured_verifier_only_recipe():
    """docs/results.md has these settings' measurements (three seeds and their controls on two CPUs)."""
    cfg = load_pipeline_config(str(ROOT / "configs" / "quickstart.yaml"), [])
    assert cfg.out_dir == "runs/quickstart" and cfg.tasks.n == 2000 and cfg.bfcl is None
    assert cfg.tasks.demonstrated == DEMONSTRATED and "email.send_to_person" in cfg.tasks.templates
    assert cfg.sft["sft"]["max_steps"] == 24 and cfg.sft["optim"] == {"lr": 1.0e-3, "min_lr": 1.0e-4}
    grpo = cfg.grpo
    assert grpo["data"]["templates"] == ["email.send_to_person"] and grpo["rollout"]["temperature"] == 0.7
    assert (grpo["grpo"]["max_steps"], grpo["grpo"]["num_prompts_per_step"], grpo["grpo"]["num_generations_per_prompt"]) \
        == (30, 1, 8)
    assert grpo["validation"]["every"] == 5 and cfg.eval.max_tasks == 100


def test_quickstart_rl_is_the_quickstart_under_its_old_name():
    rl = load_pipeline_config(str(ROOT / "configs" / "quickstart_rl.yaml"), [])
    assert rl == load_pipeline_config(str(ROOT / "configs" / "quickstart.yaml"), ["out_dir=runs/quickstart_rl"])


def test_quickstart_all_demonstrated_is_the_previous_quickstart():
    """The recipe docs/archive/benchmarks-2026-11.md measured as configs/quickstart.yaml until 2026-11-29."""
    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import build_config, merge_sections

    previous = load_pipeline_config(str(ROOT / "configs" / "quickstart.yaml"), [
        "out_dir=runs/quickstart_all_demonstrated", "tasks.n=500", "tasks.demonstrated=null",
        "sft.optim.lr=5.0e-4", "sft.optim.min_lr=5.0e-5", "sft.sft.max_steps=36", "grpo.rollout.temperature=1.0",
        "grpo.grpo.num_prompts_per_step=2", "grpo.grpo.num_generations_per_prompt=4"])
    previous.grpo["data"].pop("templates")
    cfg = load_pipeline_config(str(ROOT / "configs" / "quickstart_all_demonstrated.yaml"), [])
    assert cfg.tasks.demonstrated is None and cfg.grpo["data"]["templates"] is None
    grpo = [build_config(GRPORunConfig, merge_sections(c.grpo, {"out_dir": "x"})) for c in (cfg, previous)]
    assert grpo[0] == grpo[1] and grpo[0].data.templates is None
    assert cfg.model_dump(exclude={"grpo"}) == previous.model_dump(exclude={"grpo"})
