"""Run by test_grpo_vllm.py in a fresh process (vLLM binds threads and starts a process group): GRPO
on the real vLLM engine, colocated, with validation riding along with the next step's rollouts.
Prints one JSON line of findings."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import build_config
    from officegym.train.grpo import train_grpo

    model_dir, tasks, world, out = (Path(a) for a in sys.argv[1:5])
    overlap = sys.argv[5]
    cfg = build_config(GRPORunConfig, {}, [
        f"out_dir={out}", "backend=vllm", f"model.name={model_dir}", "model.device=cpu", "model.threads=1",
        f"data.tasks={tasks}", f"data.world={world}", "data.val_fraction=0.25", "logging.tensorboard=false",
        "grpo.max_steps=2", "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2",
        "rollout.temperature=1.0", "rollout.max_new_tokens_per_turn=16", "rollout.max_new_tokens_per_episode=32",
        "rollout.max_steps=2", "validation.every=1", "validation.at_start=true", f"validation.overlap={overlap}",
        "checkpoint.every=1", "checkpoint.keep_top_k=3", "vllm.extra={dtype: float32, max_model_len: 8192}",
        # adapters on the top layer, moved hard every step by the SFT term: the engine gets a partial
        # push, and a stale layer would show in the sampler's log-probs
        "lora.enabled=true", "lora.r=4", "lora.last_layers=1", "optim.lr=0.05", "grpo.sft_mix.coef=1.0",
        "grpo.sft_mix.examples=2", "grpo.skip_zero_advantage=false"])
    result = train_grpo(cfg)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    val_steps = sorted({json.loads(line)["officegym"]["step"] for line in (out / "val_rollouts.jsonl").read_text().splitlines()})
    index = json.loads((out / "checkpoints.json").read_text())["checkpoints"]
    print(json.dumps({
        "last_step": result.last_step, "steps": [r["step"] for r in rows],
        "with_val": [r["step"] for r in rows if "val/accuracy" in r],
        "overlapped": [r["step"] for r in rows if "time/validation_overlapped_s" in r],
        "alone": [r["step"] for r in rows if "time/validation_s" in r],
        "val_rollout_steps": val_steps, "checkpoints": [(c["step"], c["metric"]) for c in index],
        "sampler_gap": [r["train/sampler_logprob_abs_diff"] for r in rows if r["step"] > 0],
        "sft_loss": [r["train/sft_loss"] for r in rows if r["step"] > 0],
        "exported": (out / "model" / "config.json").exists()}))


if __name__ == "__main__":
    main()
