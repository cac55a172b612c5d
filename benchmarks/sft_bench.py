"""SFT seconds per conversation on CPU: micro-batch size x how the shared prefix runs
(`sft.share_prefix`, `sft.prompt_grad`; see train/forward.py).

    python benchmarks/sft_bench.py --tasks runs/quickstart/tasks/train.jsonl --world runs/quickstart/world

SmolLM2-135M (or --model DIR), LoRA r=16, bf16 autocast, ground-truth conversations one call per
turn, forward + backward only (no optimizer step). Each setting runs once to warm up, then twice;
the table shows the faster run.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--world", type=Path, required=True)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--conversations", type=int, default=16)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    from officegym.train.config import SFTRunConfig
    from officegym.train.config_files import build_config
    from officegym.train.data import make_environment
    from officegym.train.modeling import load_train_model, token_renderer
    from officegym.train.sft import build_examples, conversation_batches, nll_sum

    cfg = build_config(SFTRunConfig, {}, [
        f"out_dir={tempfile.mkdtemp(prefix='sft-bench-')}", f"data.tasks={args.tasks}", f"data.world={args.world}",
        "data.tools=domain", "data.val_fraction=0", "sft.calls_per_turn=one", "model.precision=bf16", "lora.enabled=true",
        "model.device=cpu", f"model.threads={args.threads}", f"model.name={args.model}"])
    tm = load_train_model(cfg.model, cfg.lora, 0)
    renderer = token_renderer(tm, cfg)
    train, _, _, _ = build_examples(cfg, renderer, make_environment(cfg.data))
    # A training step's batch: conversations drawn at random, over several tool sets.
    import random

    examples = random.Random(0).sample(train, min(args.conversations, len(train)))
    pad = int(renderer.pad_id)

    def run(micro: int, share: str) -> float:
        t = time.perf_counter()
        for b in conversation_batches(examples, micro, pad, tm.device, share != "off"):
            nll, _ = nll_sum(tm, b, share)
            (nll / 100).backward()
        return time.perf_counter() - t

    tool_sets = len({tuple(e.input_ids[:600]) for e in examples})
    table = Table(title=f"SFT on CPU, {len(examples)} conversations of {min(map(len, examples))}-{max(map(len, examples))} "
                        f"tokens, {tool_sets} tool sets ({args.threads} threads, LoRA, bf16 autocast)")
    for col in ("micro-batch", "shared prefix", "gradient", "s / conversation"):
        table.add_column(col, justify="right")
    n = len(examples)
    for micro, share in ((1, "off"), (n, "exact"), (n, "no_grad")):
        run(micro, share)
        best = min(run(micro, share) for _ in range(2))
        label = {"off": ("no", "exact"), "exact": ("once", "exact"), "no_grad": ("once", "truncated")}[share]
        table.add_row(str(micro), *label, f"{best / n:.2f}")
    Console(width=120).print(table)
    print(f"Python {platform.python_version()}, torch {torch.__version__}, {platform.machine()}, {time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
