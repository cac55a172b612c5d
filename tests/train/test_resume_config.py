"""Rerunning `train` on a run folder: the new config is compared with the saved one; changes that
would make it another run are refused (and the saved config kept), harmless ones are logged. The
config table shows what matters for the stage."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from officegym.train.checkpoint import CheckpointManager
from officegym.train.run_folder import ResumeError, prepare_run_dir


def _fake_checkpoint(out, step=3):
    def write(tmp):
        (tmp / "model").mkdir()
        (tmp / "model" / "weights.bin").write_bytes(b"w")

    CheckpointManager(out).save(step, write, {"data": {}})


@pytest.fixture
def run(tmp_path, make_cfg, toy_tasks):
    """A GRPO run folder with a saved config and one checkpoint, and a builder of rerun configs."""
    out = tmp_path / "run"
    base = (f"data.tasks={toy_tasks}", "data.env=toy_pick")

    def cfg(*overrides):
        return make_cfg("grpo", out, *base, *overrides)

    prepare_run_dir(cfg(), None, "grpo")
    _fake_checkpoint(out)
    return out, cfg


@pytest.mark.parametrize("override", ["optim.lr=1e-4", "model.name=other-model", "lora.enabled=true", "seed=7",
                                      "grpo.num_generations_per_prompt=8", "grpo.reward=shaped", "data.val_fraction=0.5"])
def test_a_change_that_makes_another_run_is_refused_and_the_saved_config_kept(run, override):
    out, cfg = run
    saved = (out / "config.yaml").read_bytes()
    with pytest.raises(ResumeError) as err:
        prepare_run_dir(cfg(override, "grpo.max_steps=200"), None, "grpo")
    key = override.partition("=")[0]
    assert f"{key}: " in str(err.value) and "step 3" in str(err.value) and "another out_dir" in str(err.value)
    assert "grpo.max_steps" not in str(err.value)  # harmless changes are not what is refused
    assert (out / "config.yaml").read_bytes() == saved and not (out / "config_changes.jsonl").exists()


def test_another_data_file_is_refused_and_the_same_one_spelled_otherwise_is_not(run, tmp_path, toy_tasks, monkeypatch):
    out, cfg = run
    other = tmp_path / "other.jsonl"
    other.write_text(toy_tasks.read_text())
    with pytest.raises(ResumeError, match=r"data\.tasks: "):
        prepare_run_dir(cfg(f"data.tasks={other}"), None, "grpo")
    monkeypatch.chdir(toy_tasks.parent)
    assert prepare_run_dir(cfg(f"data.tasks={toy_tasks.name}"), None, "grpo") == out


def test_harmless_changes_are_allowed_logged_and_saved(run):
    out, cfg = run
    console = Console(record=True, width=200)
    prepare_run_dir(cfg("grpo.max_steps=250", "validation.every=5", "logging.write_rollouts=false",
                        "checkpoint.keep_top_k=2", "checkpoint.export=best", "rollout.concurrency=8"), console, "grpo")
    text = console.export_text()
    assert "resuming at step 3 with changed settings:" in text and "grpo.max_steps: 100 -> 250" in text
    assert "max_steps: 250" in (out / "config.yaml").read_text()
    record = json.loads((out / "config_changes.jsonl").read_text())
    assert record["resumed_at_step"] == 3 and record["changes"]["validation.every"] == [0, 5]
    assert record["changes"]["checkpoint.export"] == ["last", "best"]


def test_without_checkpoints_or_with_resume_off_nothing_is_compared(tmp_path, make_cfg, toy_tasks):
    out = tmp_path / "fresh"
    prepare_run_dir(make_cfg("grpo", out, f"data.tasks={toy_tasks}"), None, "grpo")
    prepare_run_dir(make_cfg("grpo", out, f"data.tasks={toy_tasks}", "optim.lr=1e-3"), None, "grpo")
    assert "lr: 0.001" in (out / "config.yaml").read_text()


def test_an_sft_folder_is_not_resumed_as_grpo(tmp_path, make_cfg, toy_tasks):
    out = tmp_path / "sft"
    prepare_run_dir(make_cfg("sft", out, f"data.tasks={toy_tasks}"), None, "sft")
    _fake_checkpoint(out)
    with pytest.raises(ResumeError, match="checkpoints of an SFT run"):
        prepare_run_dir(make_cfg("grpo", out, f"data.tasks={toy_tasks}"), None, "grpo")


def test_the_cli_refuses_in_one_line_and_a_failed_rerun_keeps_the_config(run, toy_tasks):
    from officegym.cli import app

    out, _ = run
    saved = (out / "config.yaml").read_bytes()
    common = [f"out_dir={out}", f"data.tasks={toy_tasks}", "data.env=toy_pick", "model.device=cpu", "model.threads=1",
              "logging.tensorboard=false", "rollout.concurrency=64", "rollout.max_new_tokens_per_turn=24",
              "rollout.max_new_tokens_per_episode=48", "rollout.max_steps=2", "validation.every=0",
              "checkpoint.keep_top_k=1"]
    for extra, message in ((["optim.lr=1e-3"], "optim.lr: 5e-06 -> 0.001"),
                           (["grpo.max_steps=7", "grpo.reward=nosuch"], "grpo.reward: unknown reward 'nosuch'")):
        res = CliRunner().invoke(app, ["train", "grpo", *common, *extra])
        assert res.exit_code == 2 and "Traceback" not in res.output, res.output
        assert message in " ".join(res.output.split())
        assert (out / "config.yaml").read_bytes() == saved


@pytest.mark.parametrize("kind", ["sft", "grpo"])
def test_the_config_table_is_short_and_only_shows_what_applies(tmp_path, make_cfg, toy_tasks, kind):
    out = tmp_path / f"[/{kind}]"  # brackets are text, not markup
    console = Console(record=True, width=300)
    extra = ["validation.accuracy=false"] if kind == "sft" else []  # an SFT run that rolls nothing out
    prepare_run_dir(make_cfg(kind, out, f"data.tasks={toy_tasks}", "data.env=toy_pick", "optim.warmup_steps=3", *extra),
                    console, kind)
    text = console.export_text()
    lines = [line for line in text.splitlines() if line.startswith("│")]
    assert len(lines) <= 20, text
    assert f"full config: {out / 'config.yaml'}" in text and "(40 tasks)" in text
    assert "warm-up 3" in text and "model.device" in text and "logging.tensorboard" in text  # differs from defaults
    assert "vllm." not in text and "lora.r" not in text and "optim.warmup_steps" not in text  # n/a, or shown above
    assert ("grpo" in text) == (kind == "grpo") and ("rollout." in text) == (kind == "grpo")
