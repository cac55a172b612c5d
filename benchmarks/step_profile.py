"""Where an SFT step's time goes: torch.profiler over a few steps, by kind of work.

    python benchmarks/step_profile.py --config RUN/sft/config.yaml [--steps 3] [--threads 2] [--kernels] [KEY=VALUE ...]

RUN/sft/config.yaml is the resolved SFT config a pipeline run writes (its tasks, model, LoRA and
batching). The steps draw their conversations as the run does (`sft.batch_by_prefix`), run the
forward and backward it runs (no optimiser step: the weights do not matter for the time) after one
step of warm-up, and the table sums each operator's own time by kind: matrix products (every linear
layer, the LoRA adapters and the output layer), attention, the output layer's log-softmax, and the
element-wise work and copies around them. Also prints the tokens a step computes: the shared prompt
once, each row's rest, and those trained.

--kernels then times the step's own shapes in isolation (random tensors, the same thread count): the
linear layers' matrix products at the rows' token count (GFLOP/s), and one layer's attention of the
rows over the prompt and themselves, forward and backward, with each kernel PyTorch offers (flash,
math, plain matrix products) and with flash given keys and values that need no gradient.
"""

from __future__ import annotations

import argparse
import resource
import time
from collections import defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table

KINDS = (
    ("attention", ("scaled_dot_product", "_flash_attention")),
    ("matrix products (linear layers, LoRA, output layer)", ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")),
    ("output layer: log-softmax and its backward", ("log_softmax", "nll_loss", "cross_entropy")),
    ("element-wise, reductions, copies", ("aten::mul", "aten::add", "aten::copy_", "aten::sum", "aten::cat", "aten::fill_",
                                          "aten::silu", "aten::where", "aten::pow", "aten::div", "aten::neg", "aten::rsqrt",
                                          "aten::mean", "aten::sub", "aten::index", "aten::masked_fill", "aten::clone",
                                          "aten::expand", "aten::zero_", "aten::exp", "aten::cos", "aten::sin")),
)


def kind_of(name: str) -> str:
    for kind, keys in KINDS:
        if any(k in name for k in keys):
            return kind
    return "other (autograd, views, allocation, Python)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="a resolved SFT config (RUN/sft/config.yaml)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kernels", action="store_true", help="also time the step's shapes in isolation")
    ap.add_argument("overrides", nargs="*", help="config overrides, KEY=VALUE")
    args = ap.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from officegym.train.config import SFTRunConfig
    from officegym.train.config_files import load_config
    from officegym.train.data import make_environment
    from officegym.train.forward import shared_prefix_length
    from officegym.train.modeling import load_train_model, token_renderer
    from officegym.train.sft import build_examples, conversation_batches, nll_sum, sft_share, sft_stream

    cfg = load_config(SFTRunConfig, args.config, args.overrides)
    s = cfg.sft
    tm = load_train_model(cfg.model, cfg.lora, cfg.seed)
    renderer = token_renderer(tm, cfg)
    train, _, _, _ = build_examples(cfg, renderer, make_environment(cfg.data), None)
    stream = sft_stream(train, cfg)
    torch.set_num_threads(args.threads)  # loading the model sets the run's own count (model.threads)
    share, pad = sft_share(s), int(renderer.pad_id)
    counts: dict[str, int] = defaultdict(int)

    def step(drawn: list, count: bool) -> None:
        batches = conversation_batches(drawn, s.micro_batch_size, pad, tm.device, share != "off", s.micro_batch_tokens)
        trained = sum(int(b["loss_mask"].sum()) for b in batches)
        for b in batches:
            if count:
                rows = int(b["input_ids"].shape[0])
                shared = shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"], share) if share != "off" else 0
                counts["shared prompt"] += shared
                counts["rest"] += int(b["attention_mask"][:, shared:].sum())
                counts["rows"] += rows
                counts["micro-batches"] += 1
            nll, _ = nll_sum(tm, b, share)
            (nll / max(1, trained)).backward()
        if count:
            counts["trained"] += trained

    tm.model.train()
    draws = [stream.take(s.batch_size) for _ in range(args.steps + 1)]
    step(draws[0], False)  # warm-up: first-call allocation and dispatch
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for drawn in draws[1:]:
            step(drawn, True)
    wall = (time.perf_counter() - start) / args.steps
    by_kind: dict[str, float] = defaultdict(float)
    for event in prof.key_averages():
        by_kind[kind_of(event.key)] += event.self_cpu_time_total / 1e6 / args.steps
    total = sum(by_kind.values())
    table = Table(title=f"An SFT step's operators by kind ({args.steps} steps, {torch.get_num_threads()} threads, "
                        f"{wall:.1f} s a step under the profiler)")
    for col in ("kind", "seconds a step", "share"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    for kind, sec in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        table.add_row(kind, f"{sec:.2f}", f"{sec / total:.0%}" if total else "-")
    console = Console()
    console.print(table)
    n = args.steps
    batches = max(1, counts["micro-batches"])
    prompt = round(counts["shared prompt"] / batches)
    console.print(f"a step: {counts['rows'] / n:.0f} conversations in {batches / n:.1f} micro-batches, a shared prompt of "
                  f"{prompt} tokens each (forwarded once a micro-batch), rows' rest {counts['rest'] / n:.0f} tokens, "
                  f"trained {counts['trained'] / n:.0f}; {wall:.1f} s a step under the profiler; peak memory "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.1f} GB")
    if args.kernels:
        config = getattr(tm.model, "config", None) or tm.model.get_base_model().config
        tokens = round(counts["rest"] / max(1, counts["rows"]))
        kernels(console, config, rows=round(counts["rows"] / batches), rest=tokens, prompt=prompt)


def _best(fn: Any, reps: int = 3) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def kernels(console: Any, config: Any, rows: int, rest: int, prompt: int) -> None:
    """The step's matrix products and one layer's attention, timed alone."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    hidden, inter = config.hidden_size, config.intermediate_size
    heads, kv = config.num_attention_heads, getattr(config, "num_key_value_heads", config.num_attention_heads)
    dim = hidden // heads
    m = rows * rest
    table = Table(title=f"The step's shapes alone ({torch.get_num_threads()} threads; {rows} rows x {rest} tokens "
                        f"on a {prompt}-token prompt)")
    for col in ("work", "seconds", "GFLOP/s"):
        table.add_column(col, justify="left" if col == "work" else "right")
    for k, n_out in ((hidden, inter), (inter, hidden), (hidden, hidden)):
        a, b = torch.randn(m, k), torch.randn(k, n_out)
        sec = _best(lambda a=a, b=b: a @ b)
        table.add_row(f"[{m} x {k}] @ [{k} x {n_out}]", f"{sec:.4f}", f"{2 * m * k * n_out / sec / 1e9:.0f}")
    keys = prompt + rest
    visible = torch.ones(rest, keys, dtype=torch.bool).tril(prompt)[None, None].expand(rows, 1, rest, keys)

    def grow(x: Any) -> Any:  # grouped-query attention: each key/value head serves heads // kv query heads
        return x[:, :, None].expand(rows, kv, heads // kv, keys, dim).reshape(rows, heads, keys, dim)

    def attend(kind: str, kv_grad: bool = True) -> float:
        q = torch.randn(rows, heads, rest, dim, requires_grad=True)
        kk = torch.randn(rows, kv, keys, dim, requires_grad=kv_grad)
        vv = torch.randn(rows, kv, keys, dim, requires_grad=kv_grad)

        def run() -> None:
            if kind == "matmul":
                scores = (q @ grow(kk).transpose(-1, -2)) * dim ** -0.5
                out = torch.softmax(scores.masked_fill(~visible, float("-inf")), -1) @ grow(vv)
            else:
                backend = SDPBackend.FLASH_ATTENTION if kind == "flash" else SDPBackend.MATH
                with sdpa_kernel(backend):
                    out = F.scaled_dot_product_attention(q, grow(kk), grow(vv), attn_mask=visible)
            out.sum().backward()

        return _best(run)

    flops = 4 * rows * heads * rest * keys * dim  # forward: scores and the weighted sum
    for label, kind, grad in (("flash (PyTorch's CPU default)", "flash", True), ("math kernel", "math", True),
                              ("plain matrix products", "matmul", True), ("flash, keys/values without gradient", "flash", False)):
        sec = attend(kind, grad)
        table.add_row(f"attention, one layer fwd + bwd: {label}", f"{sec:.4f}", f"{3 * flops / sec / 1e9:.0f}")
    console.print(table)


if __name__ == "__main__":
    main()
