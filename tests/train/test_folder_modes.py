"""Exported models and checkpoints get the folder mode the umask gives (issue 47 N7), not mkdtemp's 0700."""

from __future__ import annotations

import os
import stat
from types import SimpleNamespace

import pytest

from officegym.core.files import temp_dir
from officegym.train.checkpoint import CheckpointManager
from officegym.train.modeling import TrainModel


@pytest.fixture(params=[0o022, 0o027, 0o077])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_temp_dir_takes_the_umask(tmp_path, umask):
    assert _mode(temp_dir(tmp_path, ".x-")) == 0o777 & ~umask


def test_a_checkpoint_folder_takes_the_umask(tmp_path, umask):
    def write(tmp):
        (tmp / "model").mkdir()
        (tmp / "model" / "weights.bin").write_bytes(b"w")

    path = CheckpointManager(tmp_path).save(1, write, {"metric": None})
    assert path.name == "step_000001" and _mode(path) == 0o777 & ~umask
    assert _mode(path / "model") == 0o777 & ~umask and _mode(path / "state.json") == 0o666 & ~umask


def test_an_exported_model_folder_takes_the_umask(tmp_path, umask):
    def saver(name):
        return SimpleNamespace(save_pretrained=lambda d: (d / name).write_text("x"))

    fake = SimpleNamespace(lora=False, model=saver("model.safetensors"), tokenizer=saver("tokenizer.json"), path="m")
    out = TrainModel.export(fake, tmp_path / "model")
    assert _mode(out) == 0o777 & ~umask and sorted(p.name for p in out.iterdir()) == [
        "model.safetensors", "officegym-export.json", "tokenizer.json"]
