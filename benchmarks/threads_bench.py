"""How training and decoding degrade when another process keeps a core busy, per thread setting.

    python benchmarks/threads_bench.py [--model DIR] [--reps 3]

Each cell runs in a fresh process (OpenMP reads its settings when torch loads): one GRPO-like update
(8 rows sharing a 1,100-token prompt, 200 tokens each, LoRA, the CPU's precision; train/forward.py)
and 64 decoded tokens at batch 8 with the hf: decoding loop's model call. "busy" starts a pure-Python
spinning process for the duration (the kind of load a laptop has). Threads "2" is a count chosen
once (what a run kept when the load came after its start); "auto" is the trainers' default, the
thread governor re-measuring the free cores before every rep (machine.ThreadGovernor). The table
shows the median seconds and the slowdown against the idle run of the same setting.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

WORKER = r"""
import json, sys, time, torch
from officegym.train.config import LoraConfig, ModelConfig
from officegym.train.modeling import load_train_model
from officegym.train.forward import forward_logprobs
from officegym.machine import ThreadGovernor
auto = sys.argv[1] == "auto"
threads, model, reps = (None if auto else int(sys.argv[1])), sys.argv[2], int(sys.argv[3])
governor = ThreadGovernor(threads)
tm = load_train_model(ModelConfig(name=model, device="cpu", precision="auto", threads=threads), LoraConfig(enabled=True, r=16), 0)
tm.model.eval()
g = torch.Generator().manual_seed(0)
p = torch.randint(100, 40000, (1100,), generator=g)
ids = torch.stack([torch.cat([p, torch.randint(100, 40000, (200,), generator=g)]) for _ in range(8)])
mask = torch.zeros(ids.shape); mask[:, 1105:1205] = 1
batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "loss_mask": mask}
def update():
    lp, _, off = forward_logprobs(tm.model, tm, batch, 1.0, share="exact")
    (-(lp * mask[:, off:]).sum() / mask.sum()).backward()
def decode():
    with torch.inference_mode(), tm.autocast():
        out = tm.model(input_ids=ids[:, :64], use_cache=True)
        cache = out.past_key_values
        tok = out.logits[:, -1:].argmax(-1)
        for _ in range(64):
            out = tm.model(input_ids=tok, past_key_values=cache, use_cache=True)
            tok = out.logits[:, -1:].argmax(-1)
update(); decode()  # warm-up
res = {"update": [], "decode": []}
for _ in range(reps):
    governor.update()  # what the trainers do at every step ("auto": measured; a number: kept)
    t = time.perf_counter(); update(); res["update"].append(time.perf_counter() - t)
    t = time.perf_counter(); decode(); res["decode"].append(time.perf_counter() - t)
print(json.dumps(res))
"""

SPIN = "while True: pass"


def run(threads: str, policy: str, busy: bool, model: str, reps: int) -> dict[str, float]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    if threads == "auto":  # the trainers' default: the governor measures the free cores at every step
        env.pop("OMP_NUM_THREADS")
        env.pop("OFFICEGYM_THREADS", None)
    env.pop("OMP_WAIT_POLICY", None)
    if policy != "default":
        env["OMP_WAIT_POLICY"] = policy
    spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if busy else None
    try:
        time.sleep(0.5 if busy else 0)
        out = subprocess.run([sys.executable, "-c", WORKER, str(threads), model, str(reps)], env=env, capture_output=True,
                             text=True, check=True)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return {k: statistics.median(v) for k, v in res.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="a model directory (default: the bundled smollm2-135m cache)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--settings", default="1:default,2:default,auto:default",
                    help="threads:OMP_WAIT_POLICY, comma-separated; threads 'auto' re-chooses them every rep as the trainers do")
    args = ap.parse_args(argv)
    model = args.model
    if model is None:
        from officegym.agent.models import resolve_model

        model = str(resolve_model("smollm2-135m"))
    table = Table(title="seconds (median), and slowdown when another process spins on a core")
    for col in ("threads", "OMP_WAIT_POLICY", "update idle", "update busy", "x", "decode idle", "decode busy", "x"):
        table.add_column(col, justify="right")
    for setting in args.settings.split(","):
        threads, policy = setting.split(":")
        idle = run(threads, policy, False, model, args.reps)
        busy = run(threads, policy, True, model, args.reps)
        table.add_row(threads, policy, f"{idle['update']:.1f}", f"{busy['update']:.1f}", f"{busy['update'] / idle['update']:.1f}",
                      f"{idle['decode']:.1f}", f"{busy['decode']:.1f}", f"{busy['decode'] / idle['decode']:.1f}")
    Console(width=140).print(table)
    import torch

    print(f"{os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__}, "
          f"{platform.machine()}, {time.strftime('%Y-%m-%d')}, model {Path(model).name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
