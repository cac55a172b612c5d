"""Train SmolLM2-135M with TRL's GRPOTrainer on officegym's generated Workplace tasks, on a CPU.

    pip install -e ".[trl,smollm2]"
    officegym generate tasks --n 200 --tools domain --out tasks --hf tasks/hf
    python examples/trl_grpo.py --tasks tasks --steps 2

The environment is officegym's (one session per rollout, its tools as methods, the answers officegym's
own loop gives); the reward is officegym's verifier (`reward_func`). SmolLM2's own chat template
drops tools, so the tokenizer gets Qwen2.5's ChatML template (SmolLM2 shares its <|im_start|> and
<|im_end|> tokens), whose <tool_call> blocks TRL knows how to parse. Untrained, SmolLM2 makes almost
no valid tool call, so most rewards are 0: run it from an SFT checkpoint (`--model DIR`, e.g.
runs/quickstart/sft/model) to see rewards move.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, required=True, help="a `generate tasks --hf` folder (train.jsonl and hf/)")
    parser.add_argument("--model", default="smollm2-135m", help="smollm2-135m or a local model folder")
    parser.add_argument("--out", type=Path, default=Path("runs/trl_grpo"))
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--generations", type=int, default=2, help="rollouts per prompt (GRPO's group size)")
    parser.add_argument("--max-completion-length", type=int, default=192)
    parser.add_argument("--max-tool-calls", type=int, default=4, help="tool-calling rounds per rollout")
    args = parser.parse_args()

    from datasets import load_from_disk
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from officegym.agent.models import resolve_model
    from officegym.integrations.trl import environment_factory, reward_func

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    path = resolve_model(args.model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = qwen2_5_chat_template
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path)

    dataset = load_from_disk(str(args.tasks / "hf"))["train"]
    dataset = dataset.select_columns(["id", "prompt"])  # reset() finds the task by id among the factory's
    config = GRPOConfig(
        output_dir=str(args.out), max_steps=args.steps, per_device_train_batch_size=args.generations,
        num_generations=args.generations, max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls, learning_rate=1e-5, logging_steps=1, save_strategy="no",
        report_to=[], use_cpu=True, bf16=False, temperature=0.7, seed=0,
    )
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, train_dataset=dataset, args=config,
                          environment_factory=environment_factory(args.tasks / "train.jsonl"),
                          reward_funcs=reward_func())
    trainer.train()
    for entry in trainer.state.log_history:
        if "reward" in entry:
            print(f"step {entry['step']}: reward {entry['reward']:.3f}  loss {entry['loss']:.4f}  "
                  f"tool calls per rollout {entry.get('tools/call_frequency', 0.0):.2f}  step time {entry.get('step_time', 0.0):.0f} s")


if __name__ == "__main__":
    main()
