"""`officegym train export`: any checkpoint of a run as a standalone model, equal to what the run
itself exports at that step."""

import pytest
from safetensors.torch import load_file
from typer.testing import CliRunner


def _weights(folder):
    return load_file(str(next(folder.glob("*.safetensors"))))


def test_export_of_a_checkpoint_equals_the_runs_own_export(tmp_path, make_cfg, tiny_model_dir, workplace_tasks,
                                                           tiny_world_dir):
    from officegym.cli import app
    from officegym.train.sft import train_sft

    run = tmp_path / "sft"
    cfg = make_cfg("sft", run, f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}",
                   f"data.world={tiny_world_dir}", "sft.max_steps=2", "sft.batch_size=2", "sft.micro_batch_size=2",
                   "checkpoint.every=1", "checkpoint.keep_top_k=5", "validation.every=1", "data.val_fraction=0.25",
                   "lora.enabled=true", "model.chat_template=officegym-signatures")
    train_sft(cfg)
    runner = CliRunner()
    res = runner.invoke(app, ["train", "export", str(run), "--out", str(tmp_path / "last")])
    assert res.exit_code == 0, res.output
    last, own = _weights(tmp_path / "last"), _weights(run / "model")
    assert last.keys() == own.keys() and all((last[k] == own[k]).all() for k in own)
    # the run's chat template travels with the weights (evaluations render prompts with it)
    assert (tmp_path / "last" / "chat_template.jinja").read_text() == (run / "model" / "chat_template.jinja").read_text()
    res = runner.invoke(app, ["train", "export", str(run), "--out", str(tmp_path / "first"), "--step", "1"])
    assert res.exit_code == 0, res.output
    first = _weights(tmp_path / "first")
    assert any(not (first[k] == own[k]).all() for k in own)  # step 1's weights, not step 2's
    # a step the run does not have, and a folder that is not an export, are refused by name
    res = runner.invoke(app, ["train", "export", str(run), "--out", str(tmp_path / "x"), "--step", "7"])
    assert res.exit_code == 2 and "checkpoint of step 7" in " ".join(res.output.split())
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    res = runner.invoke(app, ["train", "export", str(run), "--out", str(mine)])
    assert res.exit_code == 2 and (mine / "notes.txt").read_text() == "keep"
    # an earlier export is replaced
    res = runner.invoke(app, ["train", "export", str(run), "--out", str(tmp_path / "first")])
    assert res.exit_code == 0 and all((_weights(tmp_path / "first")[k] == own[k]).all() for k in own)


def test_export_needs_a_run_folder(tmp_path):
    from officegym.train.export import export_checkpoint
    from officegym.train.modeling import ModelSetupError

    with pytest.raises(ModelSetupError, match=r"config\.yaml"):
        export_checkpoint(tmp_path, tmp_path / "out")
