"""Peak memory of one GRPO-like update: ROWS rows sharing a PREFIX-token prompt, REST tokens each.

    python benchmarks/update_memory.py --model RUN/sft/model [--rows 4 8] [--prefix 1100] [--rest 200]

Each cell runs in a fresh process (1 thread, LoRA r=16 on every linear layer, the CPU's precision,
train/forward.py's shared-prefix forward with gradient, then backward), which samples its resident
memory every 20 ms; the table shows the resident memory before the update, the peak during it and
the difference per token run with gradient (the prefix once plus every row's rest). This is what
`micro_batch_tokens` bounds in SFT and GRPO.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time

from rich.console import Console
from rich.table import Table

WORKER = r"""
import json, sys, threading, time, torch
from officegym.train.config import LoraConfig, ModelConfig
from officegym.train.forward import forward_logprobs
from officegym.train.modeling import load_train_model
torch.set_num_threads(1)
model, rows, prefix, rest = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
tm = load_train_model(ModelConfig(name=model, device="cpu", precision="auto", threads=1), LoraConfig(enabled=True, r=16), 0)
tm.model.train()
def rss():
    with open("/proc/self/status") as fh:
        return next(int(x.split()[1]) for x in fh if x.startswith("VmRSS")) / 1024
peak = [0.0]
def watch():
    while True:
        peak[0] = max(peak[0], rss()); time.sleep(0.02)
g = torch.Generator().manual_seed(0)
p = torch.randint(100, 40000, (prefix,), generator=g)
ids = torch.stack([torch.cat([p, torch.randint(100, 40000, (rest,), generator=g)]) for _ in range(rows)])
mask = torch.zeros(ids.shape)
mask[:, prefix + 5:] = 1  # the rollout's tokens, as GRPO trains them
batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "loss_mask": mask}
before = rss()
threading.Thread(target=watch, daemon=True).start()
t = time.perf_counter()
lp, _, off = forward_logprobs(tm.model, tm, batch, 1.0, share="exact")
(-(lp * mask[:, off:]).sum() / mask.sum()).backward()
seconds = time.perf_counter() - t
time.sleep(0.1)
print(json.dumps({"before": before, "peak": peak[0], "seconds": seconds}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--rows", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--prefix", type=int, default=1100)
    ap.add_argument("--rest", type=int, default=200)
    args = ap.parse_args(argv)
    table = Table(title=f"one update, prefix {args.prefix} tokens shared, {args.rest} tokens a row (1 thread, LoRA r=16)")
    for col in ("rows", "tokens with gradient", "RSS before (MB)", "peak (MB)", "added (MB)", "MB a token", "seconds"):
        table.add_column(col, justify="right")
    for rows in args.rows:
        proc = subprocess.run([sys.executable, "-c", WORKER, args.model, str(rows), str(args.prefix), str(args.rest)],
                              capture_output=True, text=True, env={"OMP_NUM_THREADS": "1", **_env()})
        if proc.returncode != 0:
            table.add_row(str(rows), "", "", f"failed (exit {proc.returncode})", "", "", "")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        tokens = args.prefix + rows * args.rest
        added = r["peak"] - r["before"]
        table.add_row(str(rows), f"{tokens:,}", f"{r['before']:,.0f}", f"{r['peak']:,.0f}", f"{added:,.0f}",
                      f"{added / tokens:.2f}", f"{r['seconds']:.1f}")
    Console(width=140).print(table)
    import torch

    print(f"Python {platform.python_version()} | torch {torch.__version__} | {platform.machine()} | {time.strftime('%Y-%m-%d')}")
    return 0


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}


if __name__ == "__main__":
    sys.exit(main())
