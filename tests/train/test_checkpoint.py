"""Checkpoints survive kills: the index lists complete checkpoints only, pruning deletes after the
index drops a folder, a listed checkpoint with missing files is skipped, and resume loads with
weights_only=True."""

from __future__ import annotations

import json
import logging
import random
import shutil

import pytest

torch = pytest.importorskip("torch")

from officegym.train import checkpoint as ckpt  # noqa: E402
from officegym.train.checkpoint import INDEX, CheckpointManager, find_checkpoints  # noqa: E402


def _write(tmp):
    (tmp / "model").mkdir()
    (tmp / "model" / "weights.bin").write_bytes(b"w" * 64)
    (tmp / "optimizer.pt").write_bytes(b"o" * 16)


def _complete(info) -> bool:
    return (info.path / "model" / "weights.bin").is_file() and (info.path / "rng.pt").is_file()


def test_retention_keeps_the_latest_and_the_best(tmp_path):
    m = CheckpointManager(tmp_path, keep_top_k=1)
    for step, metric in ((1, 0.5), (2, 0.9), (3, 0.1), (4, None)):
        m.save(step, _write, {"metric": metric})
    assert [c.step for c in m.list()] == [2, 4] and m.best().step == 2 and m.latest().step == 4
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_000002", "step_000004"]
    index = json.loads((tmp_path / INDEX).read_text())
    assert [row["step"] for row in index["checkpoints"]] == [2, 4]
    assert index["checkpoints"][0]["files"]["model/weights.bin"] == 64


def test_a_kill_while_pruning_leaves_no_listed_checkpoint_without_weights(tmp_path, monkeypatch):
    m = CheckpointManager(tmp_path, keep_top_k=0)
    m.save(1, _write, {})
    real_rmtree = shutil.rmtree

    def killed(path, ignore_errors=False):  # the weights go first, then the process dies
        for weights in list(ckpt.Path(path).rglob("weights.bin")):
            weights.unlink()
        raise KeyboardInterrupt

    monkeypatch.setattr(ckpt.shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        m.save(2, _write, {})  # pruning step 1 is killed half-way
    monkeypatch.setattr(ckpt.shutil, "rmtree", real_rmtree)
    found = CheckpointManager(tmp_path, keep_top_k=0).list()  # the next run
    assert [c.step for c in found] == [2] and all(_complete(c) for c in found)
    assert not list((tmp_path / "checkpoints").glob(".tmp-*"))  # the half-deleted folder is cleared


def test_a_checkpoint_is_listed_only_once_complete(tmp_path, monkeypatch):
    m = CheckpointManager(tmp_path, keep_top_k=3)
    m.save(1, _write, {})

    def disk_full(_tmp):
        raise OSError("disk full")

    def dies(*_a, **_k):
        raise KeyboardInterrupt

    with pytest.raises(OSError):  # a failing write leaves nothing behind
        m.save(2, disk_full, {})
    assert not [p for p in (tmp_path / "checkpoints").iterdir() if p.name.startswith((".tmp-", "step_000002"))]
    monkeypatch.setattr(ckpt, "atomic_write", dies)
    with pytest.raises(KeyboardInterrupt):  # killed after the rename, before the index names it
        m.save(3, _write, {})
    assert [c.step for c in find_checkpoints(tmp_path)] == [1]


def test_a_listed_checkpoint_with_missing_files_is_skipped_with_a_warning(tmp_path, caplog):
    m = CheckpointManager(tmp_path, keep_top_k=3)
    m.save(1, _write, {"metric": 0.2})
    m.save(2, _write, {"metric": 0.8})
    (tmp_path / "checkpoints" / "step_000002" / "model" / "weights.bin").unlink()
    with caplog.at_level(logging.WARNING, logger="officegym.train.checkpoint"):
        assert m.latest().step == 1 and m.best().step == 1
    assert "step_000002" in caplog.text and "model/weights.bin" in caplog.text
    (tmp_path / "checkpoints" / "step_000001" / "optimizer.pt").write_bytes(b"o")  # truncated
    assert m.latest() is None


def test_a_run_without_an_index_is_read_from_its_folders(tmp_path):
    legacy = tmp_path / "checkpoints" / "step_000005"
    legacy.mkdir(parents=True)
    _write(legacy)
    (legacy / "state.json").write_text(json.dumps({"step": 5, "metric": 0.3}))
    m = CheckpointManager(tmp_path, keep_top_k=3)
    assert [c.step for c in m.list()] == [5]
    m.save(6, _write, {"metric": 0.1})
    assert [c.step for c in m.list()] == [5, 6] and (tmp_path / INDEX).exists()


class _TinyModel:
    device = torch.device("cpu")

    def __init__(self):
        self.model = torch.nn.Linear(3, 2)

    def save_trainable(self, folder):
        torch.save(self.model.state_dict(), folder / "weights.pt")

    def load_trainable(self, folder):
        self.model.load_state_dict(torch.load(folder / "weights.pt", weights_only=True))


def test_resume_loads_optimizer_and_rng_with_weights_only(tmp_path, monkeypatch):
    import numpy as np

    from officegym.train.config import OptimConfig
    from officegym.train.runtime import make_optimizer, make_scheduler, restore_checkpoint, save_checkpoint

    tm = _TinyModel()
    opt = make_optimizer(list(tm.model.parameters()), OptimConfig(lr=1e-2))
    sched = make_scheduler(opt, OptimConfig(lr=1e-2), 10)
    tm.model(torch.ones(1, 3)).sum().backward()
    opt.step()
    sched.step()
    m = CheckpointManager(tmp_path)
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    save_checkpoint(m, 1, tm, opt, sched, {"data": {}})
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    flags = []
    real_load = torch.load

    def spy(*args, **kwargs):
        flags.append(kwargs.get("weights_only"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    tm2 = _TinyModel()
    opt2 = make_optimizer(list(tm2.model.parameters()), OptimConfig(lr=1e-2))
    sched2 = make_scheduler(opt2, OptimConfig(lr=1e-2), 10)
    assert restore_checkpoint(m, tm2, opt2, sched2).step == 1
    assert flags and all(f is True for f in flags)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected
    assert sched2.last_epoch == 1 and torch.equal(tm2.model.weight, tm.model.weight)
    assert opt2.state_dict()["state"][0]["exp_avg"].equal(opt.state_dict()["state"][0]["exp_avg"])
