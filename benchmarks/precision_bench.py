"""What bf16 costs or saves on this CPU: a training step and vLLM decoding, float32 against bfloat16.

    python benchmarks/precision_bench.py [--model DIR] [--tokens 600] [--no-vllm]

Training: one forward+backward of a `--tokens`-token sequence through the full model (float32
weights), plain and under torch.autocast(bfloat16), second of two runs each. vLLM: the engine
started in a fresh process per dtype (officegym's options), then 8 prompts of 600-607 tokens with
64 sampled tokens each (prefill included), after one warm-up request. The table says which dtype
`precision: auto` picks here (machine.cpu_dtype).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

from rich.console import Console
from rich.table import Table

TRAIN = r"""
import json, sys, time, torch
from transformers import AutoModelForCausalLM
path, tokens, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
x = torch.randint(0, model.config.vocab_size, (1, tokens), generator=torch.Generator().manual_seed(0))
out = {}
for amp in (False, True):
    for _ in range(2):
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        model.zero_grad(set_to_none=True)
        seconds = time.perf_counter() - t
        if seconds > 60:  # emulated bf16: one run says enough
            break
    out["bfloat16" if amp else "float32"] = seconds
print("RESULT " + json.dumps(out), flush=True)
"""

DECODE = r"""
import json, os, sys, time
from vllm import SamplingParams
from officegym.agent import vllm_engine
path, dtype = sys.argv[1], sys.argv[2]
t = time.perf_counter()
llm = vllm_engine.acquire(path, {"dtype": dtype})
start = time.perf_counter() - t
prompts = [{"prompt_token_ids": list(range(1000, 1600 + i))} for i in range(8)]
params = SamplingParams(max_tokens=64, temperature=1.0, ignore_eos=True, seed=0)
llm.generate(prompts[:1], params, use_tqdm=False)
t = time.perf_counter()
outs = llm.generate(prompts, params, use_tqdm=False)
seconds = time.perf_counter() - t
print("RESULT " + json.dumps({"start": start, "seconds": seconds, "tokens": sum(len(o.outputs[0].token_ids) for o in outs)}), flush=True)
os._exit(0)
"""


def _run(code: str, *args: str, timeout: float = 900) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"worker failed (exit {proc.returncode}): {proc.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a model directory (default: the bundled smollm2-135m)")
    parser.add_argument("--tokens", type=int, default=600)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-vllm", action="store_true")
    args = parser.parse_args()

    from officegym.agent.models import resolve_model
    from officegym.machine import cpu_bf16, cpu_dtype, default_threads

    path = str(args.model or resolve_model("smollm2-135m"))
    threads = args.threads or default_threads()
    console = Console()
    flag = cpu_bf16()
    console.print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {threads} threads; "
                  f"bf16 hardware: {flag or 'none'}; precision auto picks {cpu_dtype()}")
    train = _run(TRAIN, path, str(args.tokens), str(threads))
    table = Table(title="float32 vs bfloat16 on this CPU")
    for col in ("work", "float32", "bfloat16", "bf16 / fp32 time"):
        table.add_column(col, justify="right" if col != "work" else "left")
    table.add_row(f"training fwd+bwd, {args.tokens} tokens (s)", f"{train['float32']:.2f}", f"{train['bfloat16']:.2f}",
                  f"{train['bfloat16'] / train['float32']:.2f}x")
    if not args.no_vllm:
        decode = {d: _run(DECODE, path, d) for d in ("float32", "bfloat16")}
        rate = {d: v["tokens"] / v["seconds"] for d, v in decode.items()}
        table.add_row("vLLM, 8 x 600-token prompts + 64 tokens (tok/s)", f"{rate['float32']:.1f}", f"{rate['bfloat16']:.1f}",
                      f"{rate['float32'] / rate['bfloat16']:.2f}x")
        table.add_row("vLLM start (s)", f"{decode['float32']['start']:.1f}", f"{decode['bfloat16']['start']:.1f}", "")
    console.print(table)


if __name__ == "__main__":
    main()
