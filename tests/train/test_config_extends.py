"""`extends:` in a config file: another file's sections under it, merged at every depth."""

from __future__ import annotations

from pathlib import Path

import pytest

from officegym.pipeline import load_pipeline_config
from officegym.train.config import ConfigError

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


def test_quickstart_rl_is_the_quickstart_with_the_measured_overrides():
    """docs/benchmarks.md measured the verifier-only recipe as quickstart.yaml plus these overrides."""
    measured = load_pipeline_config(str(ROOT / "configs" / "quickstart.yaml"), [
        "tasks.n=2000",
        "tasks.demonstrated=[email.send_to_address,calendar.create_with_person,project_management.create_task,"
        "customer_relationship_manager.add_customer,analytics.plot_between]",
        "bfcl=null", "grpo.data.templates=[email.send_to_person]", "grpo.grpo.num_generations_per_prompt=8",
        "grpo.grpo.num_prompts_per_step=1", "grpo.rollout.temperature=0.7", "out_dir=runs/quickstart_rl",
        "sft.sft.max_steps=24", "sft.optim.lr=1.0e-3", "sft.optim.min_lr=1.0e-4"])
    assert load_pipeline_config(str(ROOT / "configs" / "quickstart_rl.yaml"), []) == measured
    assert measured.tasks.templates and "email.send_to_person" not in measured.tasks.demonstrated
