"""A checkpoint whose optimizer.pt is a foreign pickle is refused safely, in one line (issue 47 N8)."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import pytest

from officegym.train.checkpoint import CheckpointManager
from officegym.train.modeling import ModelSetupError
from officegym.train.runtime import restore_checkpoint

RAN: list[str] = []


class Payload:
    def __reduce__(self):
        return (RAN.append, ("unpickled",))


@pytest.mark.parametrize("content", [pickle.dumps({"optimizer": Payload()}), b"not a pickle at all", b""],
                         ids=["foreign_pickle", "garbage", "empty"])
def test_a_foreign_or_damaged_optimizer_state_is_refused_in_one_line(tmp_path, content):
    def write(tmp):
        (tmp / "optimizer.pt").write_bytes(content)

    manager = CheckpointManager(tmp_path)
    manager.save(3, write, {"metric": None})
    tm = SimpleNamespace(load_trainable=lambda path: None, device="cpu")
    with pytest.raises(ModelSetupError) as err:
        restore_checkpoint(manager, tm, optimizer=None, scheduler=None)
    message = str(err.value)
    assert "cannot resume from" in message and "optimizer.pt is not an optimizer state" in message
    assert "\n" not in message and RAN == []
