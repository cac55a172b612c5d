"""grpo.sft_mix.templates may name templates the policy gradient never samples (data.templates)."""

from __future__ import annotations

import pytest

from officegym.pipeline import Pipeline, PipelineConfig
from officegym.train.config import GRPORunConfig
from officegym.train.config_files import build_config
from officegym.train.data import DataError, load_tasks, prepare_tasks, split_tasks, template_of
from officegym.train.grpo import sft_mix_tasks

SHOWN, LEARNT = "email.send_to_address", "email.send_to_person"


@pytest.fixture(scope="module")
def tasks_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("pool") / "run"
    Pipeline(build_config(PipelineConfig, {
        "out_dir": str(out), "model": "oracle", "stages": ["world", "tasks"], "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 60, "seed": 0, "tools": "all", "templates": [SHOWN, LEARNT, "analytics.plot_since"]}}, [])).run()
    return out / "tasks"


def _pool(tasks_dir, *overrides):
    cfg = build_config(GRPORunConfig, {}, [f"out_dir={tasks_dir.parent / 'grpo'}", f"data.tasks={tasks_dir / 'train.jsonl'}",
                                           f"data.val_tasks={tasks_dir / 'validation.jsonl'}", *overrides])
    train, _ = split_tasks(prepare_tasks(load_tasks(cfg.data.tasks), cfg.data), cfg.data, cfg.seed)
    return train, sft_mix_tasks(train, cfg)


def test_the_term_draws_templates_outside_the_sampled_ones_from_the_training_file(tasks_dir):
    every = load_tasks(tasks_dir / "train.jsonl")
    shown = sorted(t.id for t in every if template_of(t) == SHOWN)
    train, pool = _pool(tasks_dir, f"data.templates=[{LEARNT}]", f"grpo.sft_mix.templates=[{SHOWN}]")
    assert {template_of(t) for t in train} == {LEARNT}  # the policy gradient samples only these
    assert shown and sorted(t.id for t in pool) == shown
    # both: the sampled template's training tasks and the other's, each once
    _, both = _pool(tasks_dir, f"data.templates=[{LEARNT}]", f"grpo.sft_mix.templates=[{SHOWN}, {LEARNT}]")
    assert sorted(t.id for t in both) == sorted(t.id for t in every if template_of(t) in (SHOWN, LEARNT))
    # tools restricted as the sampled tasks' are (data.tools=domain)
    _, restricted = _pool(tasks_dir, "data.tools=domain", f"data.templates=[{LEARNT}]", f"grpo.sft_mix.templates=[{SHOWN}]")
    assert all(len(t.tools) < len(every[0].tools) for t in restricted)


def test_without_data_templates_the_term_draws_from_the_training_tasks(tasks_dir):
    train, pool = _pool(tasks_dir, f"grpo.sft_mix.templates=[{SHOWN}]")
    assert [t.id for t in pool] == [t.id for t in train if template_of(t) == SHOWN]
    with pytest.raises(DataError, match=r"grpo\.sft_mix\.templates: no task of calendar"):
        _pool(tasks_dir, "grpo.sft_mix.templates=[calendar.create_with_person]")


def test_validation_is_capped_after_keeping_the_trained_templates(tasks_dir):
    """data.max_val_tasks counts validation tasks of data.templates (it used to take 4 of every template,
    then keep the 4 of the one trained on)."""
    cfg = build_config(GRPORunConfig, {}, [f"out_dir={tasks_dir.parent / 'grpo'}", f"data.tasks={tasks_dir / 'train.jsonl'}",
                                           f"data.val_tasks={tasks_dir / 'validation.jsonl'}", f"data.templates=[{LEARNT}]",
                                           "data.max_val_tasks=4", "data.val_sample=per_template"])
    held = [t for t in load_tasks(tasks_dir / "validation.jsonl") if template_of(t) == LEARNT]
    _, val = split_tasks(prepare_tasks(load_tasks(cfg.data.tasks), cfg.data), cfg.data, cfg.seed)
    assert len(held) >= 2 and [t.id for t in val] == [t.id for t in held][:4]
