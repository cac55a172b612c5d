"""A GRPO update with and without the frozen trunk's cache (train/trunk.py), on the same batches.

    python benchmarks/update_trunk.py --grpo-config RUN/grpo/config.yaml --model RUN/sft/model \
        [--steps 6] [--rows 8] [--row-tokens 150 250] [--threads 2]

RUN/grpo/config.yaml is a GRPO run's full config (its data, LoRA with `last_layers`, SFT term); the
model is where that run started. Each step builds the work of one quickstart update: a group of
`--rows` rows on the first prompt of a task the SFT term imitates, each followed by a continuation
of random tokens (`--row-tokens` lo hi, all trained: what the forward costs does not depend on
which tokens), and
the step's SFT-term conversations (train/sft_mix.py, drawn as the trainer draws them). It then
times the forward+backward of that work with the cache off and on, in alternating order, without
an optimiser step (the trunk has no adapter: what is kept does not depend on the top's weights).
The cache persists across steps as in a run. Prints the per-step seconds and the medians, the
group and the SFT term apart, and checks both give the same loss.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grpo-config", type=Path, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--row-tokens", type=int, nargs=2, default=[150, 250], metavar=("LO", "HI"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch
    import yaml

    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import build_config
    from officegym.train.data import load_tasks, make_environment, prepare_tasks, split_tasks
    from officegym.train.distributed import Dist
    from officegym.train.forward import forward_logprobs
    from officegym.train.grpo import sft_mix_tasks
    from officegym.train.ledger import LedgerRow, collate
    from officegym.train.modeling import load_train_model
    from officegym.train.sft import nll_sum
    from officegym.train.sft_mix import SFTMix

    data = yaml.safe_load(args.grpo_config.read_text())
    data["model"]["name"] = args.model
    data["model"]["threads"] = args.threads
    cfg = build_config(GRPORunConfig, data)
    torch.set_num_threads(args.threads)
    env = make_environment(cfg.data)
    train_tasks, _ = split_tasks(prepare_tasks(load_tasks(cfg.data.tasks), cfg.data), cfg.data, cfg.seed)
    tm = load_train_model(cfg.model, cfg.lora, cfg.seed)
    tm.model.eval()
    mix = SFTMix.build(tm, cfg, env, sft_mix_tasks(train_tasks, cfg))
    rng = random.Random(args.seed)
    vocab = tm.tokenizer.vocab_size
    pad = int(mix.pad_id)
    share = "no_grad" if not cfg.grpo.prompt_grad else "exact"
    sft_share = "no_grad" if not cfg.grpo.sft_mix.prompt_grad else share
    console = Console()

    def row(ids: list[int], mask: list[int]) -> LedgerRow:
        return LedgerRow(torch.tensor(ids), torch.tensor(mask), torch.zeros(len(ids)), torch.zeros(len(ids), dtype=torch.long))

    def group_batch(step: int) -> dict:
        # a training task's first prompt: a ground-truth conversation up to its first trained token
        example = mix.examples[rng.randrange(len(mix.examples))]
        first = next(i for i, m in enumerate(example.loss_mask) if m)
        prompt = list(example.input_ids[:first])
        rows = []
        for _ in range(args.rows):
            n = rng.randint(*args.row_tokens)
            rows.append(row(prompt + [rng.randrange(100, vocab) for _ in range(n)], [0] * len(prompt) + [1] * n))
        batch = collate(rows, pad)
        batch["advantages"] = torch.tensor([rng.choice([-1.0, 1.0]) for _ in rows])
        return batch

    def run(batch: dict, sft_batches: list[dict]) -> tuple[float, float, float]:
        tm.model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        lp, _, offset = forward_logprobs(tm.model, tm, batch, cfg.rollout.temperature or 1.0, share=share)
        mask = batch["loss_mask"][:, offset:]
        loss = -(batch["advantages"][:, None] * lp * mask).sum() / mask.sum()
        loss.backward()
        t1 = time.perf_counter()
        total = 0.0
        for b in sft_batches:
            nll, n = nll_sum(tm, b, sft_share)
            (nll / max(1, n)).backward()
            total += float(nll.detach())
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, float(loss.detach()) + total

    trunk = tm.keep_trunk(cfg.grpo.trunk_cache_mb or 512)
    if trunk is None:
        raise SystemExit("no frozen trunk: this config adapts every layer (set lora.last_layers)")
    console.print(f"frozen trunk: {trunk.n} of {trunk.n_layers} layers; {len(mix.examples)} SFT-term conversations, "
                  f"{cfg.grpo.sft_mix.examples} a step; group {args.rows} rows; {args.threads} threads")
    table = Table(title="update seconds (forward + backward), cache off | on")
    for col in ("step", "group off", "group on", "SFT term off", "SFT term on", "loss |diff|"):
        table.add_column(col, justify="right")
    times: dict[str, list[float]] = {k: [] for k in ("g_off", "g_on", "s_off", "s_on")}
    run(group_batch(0), mix.batches(0, tm.device, Dist()))  # warm-up (allocator, threads) and the one-time check
    for step in range(1, args.steps + 1):
        batch, sft_batches = group_batch(step), mix.batches(step, tm.device, Dist())
        got = {}
        for variant in (("off", "on") if step % 2 else ("on", "off")):
            tm.trunk_cache = trunk if variant == "on" else None
            got[variant] = run(batch, sft_batches)
        times["g_off"].append(got["off"][0])
        times["g_on"].append(got["on"][0])
        times["s_off"].append(got["off"][1])
        times["s_on"].append(got["on"][1])
        table.add_row(str(step), *(f"{v:.2f}" for v in (got["off"][0], got["on"][0], got["off"][1], got["on"][1])),
                      f"{abs(got['off'][2] - got['on'][2]):.1e}")
        console.print(f"step {step}/{args.steps}: off {got['off'][0] + got['off'][1]:.1f} s, "
                      f"on {got['on'][0] + got['on'][1]:.1f} s")
    table.add_row("median", *(f"{statistics.median(times[k]):.2f}" for k in ("g_off", "g_on", "s_off", "s_on")), "")
    console.print(table)
    off = statistics.median([a + b for a, b in zip(times["g_off"], times["s_off"])])
    on = statistics.median([a + b for a, b in zip(times["g_on"], times["s_on"])])
    console.print(f"update, median of the steps: {off:.2f} s off, {on:.2f} s on ({on / off:.2f}x); "
                  f"kept {trunk.bytes / 2**20:.0f} MB in {len(trunk.entries)} prompts")


if __name__ == "__main__":
    main()
