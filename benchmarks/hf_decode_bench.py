"""The `hf:` backend's decoding loop: eager steps vs steps replayed from a CUDA graph.

    python benchmarks/hf_decode_bench.py --model smollm2-135m --device cuda --batch 16 --tokens 96

Every row shares a prompt prefix of --prompt-tokens (a system prompt and tool list) plus a few
tokens of its own, and decodes exactly --tokens tokens (end-of-turn tokens are ignored), sampled at
temperature 1 with a fixed seed. Modes: `eager` (the CPU loop: finished rows leave the batch),
`static` (fixed tensors rewritten in place, each step run eagerly: what a graph records) and
`graph` (the same loop, each step a CUDA graph replay; GPU only). The kept prefix is warm for every
timed call, so the time is the rows' own prefill and the decoding. Prints a table.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--prompt-tokens", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--modes", default="eager,static,graph")
    args = ap.parse_args()

    import torch

    from officegym.agent.hf import HFPolicy
    from officegym.core.policy import SamplingParams

    policy = HFPolicy(args.model, device=args.device, dtype=args.dtype, threads=args.threads, batch_size=args.batch,
                      conversation_cache_mb=0).load()
    policy._stop_ids = set()  # every row decodes --tokens tokens
    vocab = len(policy.tokenizer)
    gen = torch.Generator().manual_seed(0)
    prefix = torch.randint(100, vocab, (args.prompt_tokens,), generator=gen).tolist()
    prompts = [prefix + torch.randint(100, vocab, (4 + b % 5,), generator=gen).tolist() for b in range(args.batch)]
    params = SamplingParams(temperature=1.0, max_new_tokens=args.tokens, seed=0)
    cuda = policy._device.type == "cuda"
    original = policy._decode_static

    def run(mode: str) -> float:
        policy.cuda_graphs = mode != "eager"
        policy.graph_failure = None
        if mode == "static":
            policy._graphs_apply = lambda rows, live: True
            policy._decode_static = lambda *a, **k: original(*a, **k, capture=False)
        else:
            policy.__dict__.pop("_graphs_apply", None)
            policy._decode_static = original
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        rows = policy._generate(prompts, params, policy._make_generator(params.seed))
        if cuda:
            torch.cuda.synchronize()
        assert all(len(r.ids) == args.tokens for r in rows)
        return time.perf_counter() - t0

    modes = [m for m in args.modes.split(",") if m and (m != "graph" or cuda)]
    rows = []
    for mode in modes:
        run(mode)  # warm-up (and the kept prefix)
        before = policy.stats["graph_steps"]
        times = [run(mode) for _ in range(args.reps)]
        steps = policy.stats["graph_steps"] - before
        wall = statistics.median(times)
        rows.append((mode, wall, args.batch * args.tokens / wall, 1000 * wall / args.tokens, steps // max(1, args.reps),
                     policy.graph_failure or ""))
    device = torch.cuda.get_device_name() if cuda else "cpu"
    print(f"\n{args.model} on {device}, torch {torch.__version__}; batch {args.batch}, {args.tokens} new tokens, "
          f"prefix {args.prompt_tokens} tokens; median of {args.reps}")
    print("| mode | wall s | sampled tok/s | ms / step | graph replays / call | failure |")
    print("|---|---:|---:|---:|---:|---|")
    for mode, wall, tps, ms, steps, failure in rows:
        print(f"| {mode} | {wall:.3f} | {tps:.0f} | {ms:.2f} | {steps} | {failure} |")


if __name__ == "__main__":
    main()
