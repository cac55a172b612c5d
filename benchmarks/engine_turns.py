"""Where a rollout turn's time goes in the vLLM engine: prefill (cold, shared, warm) vs decode.

    python benchmarks/engine_turns.py --tasks RUN/tasks/train.jsonl --model RUN/sft/model \
        [--template email.send_to_person] [--group 8] [--reps 3] [--chat-template officegym]

The engine is started as officegym starts it (agent/vllm_engine.py: prefix caching, eager, float32
on a CPU without bf16). A task's first prompt is rendered as the policy renders it, then timed:

- cold prefill: one request, one token, the prefix cache just reset;
- group prefill, cold: `--group` requests of that prompt submitted together, cache reset (does a
  group of rollouts prefill its prompt once or once per rollout?);
- group prefill, warm: the same with the prompt already cached;
- a second turn: each row's prompt + 60 sampled-like tokens + a ~100-token tool response, the
  first prompt cached (what a multi-turn rollout prefills per turn);
- decode: the group, warm, 64 tokens each with EOS ignored, less the cached group's prefill
  (tokens/s of batched decoding).

Medians of `--reps`; a table per phase with the tokens it processed and tokens/s.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--model", required=True, help="a model folder or alias (smollm2-135m)")
    ap.add_argument("--template", default="email.send_to_person", help="task template whose first prompt is timed")
    ap.add_argument("--group", type=int, default=8, help="rollouts of one prompt")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--chat-template", default="officegym", choices=["officegym", "officegym-signatures"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--engine", nargs="*", default=[], metavar="KEY=VALUE",
                    help="vllm.LLM options over officegym's (a YAML value each: block_size=32 enforce_eager=false)")
    args = ap.parse_args()

    import torch
    import vllm
    import yaml
    from transformers import AutoTokenizer
    from vllm.inputs import TokensPrompt

    from officegym.agent import vllm_engine
    from officegym.agent.chatml import render_chatml
    from officegym.agent.hf_chat import FORCED_FORMATS
    from officegym.agent.messages import responses_items_to_chat_messages
    from officegym.agent.models import resolve_model
    from officegym.core.task import read_tasks

    torch.set_num_threads(args.threads)
    tasks = [t for t in read_tasks(args.tasks) if t.metadata.get("template") == args.template]
    if not tasks:
        raise SystemExit(f"{args.tasks}: no task of template {args.template}")
    path = resolve_model(args.model)
    tok = AutoTokenizer.from_pretrained(path)
    fmt = FORCED_FORMATS[args.chat_template]
    prompts = [tok(render_chatml(responses_items_to_chat_messages(t.input), t.tools, True, fmt)).input_ids
               for t in tasks[: args.reps + 1]]
    options = {k: yaml.safe_load(v) for k, v in (o.split("=", 1) for o in args.engine)}
    start = time.perf_counter()
    llm = vllm_engine.acquire(path, options)
    print(f"engine started in {time.perf_counter() - start:.1f} s ({options or 'officegym defaults'}); "
          f"prompt {len(prompts[0])} tokens, {fmt} tools")

    def run(ids_list: list[list[int]], max_tokens: int, reset: bool) -> float:
        if reset:
            llm.reset_prefix_cache()
        sp = vllm.SamplingParams(temperature=1.0, max_tokens=max_tokens, ignore_eos=True)
        t0 = time.perf_counter()
        llm.generate([TokensPrompt(prompt_token_ids=i) for i in ids_list], sp, use_tqdm=False)
        return time.perf_counter() - t0

    filler = tok(" the").input_ids
    tail = tok("<|im_end|>\n<|im_start|>user\n<tool_response>\n" + "[\"someone@atlas.com\"] " * 12
               + "</tool_response><|im_end|>\n<|im_start|>assistant\n").input_ids
    phases: dict[str, list[float]] = {k: [] for k in ("cold", "group_cold", "group_warm", "turn2", "decode")}
    run([prompts[-1]], 1, True)  # warm-up on a prompt not timed
    for p in prompts[: args.reps]:
        phases["cold"].append(run([p], 1, True))
        phases["group_cold"].append(run([p] * args.group, 1, True))
        phases["group_warm"].append(run([p] * args.group, 1, False))
        second = [p + filler * (60 + k) + tail for k in range(args.group)]
        phases["turn2"].append(run(second, 1, False))
        phases["decode"].append(run([p] * args.group, 64, False) - statistics.median(phases["group_warm"]))
    n, g = len(prompts[0]), args.group
    work = {"cold": (f"prefill {n}", n), "group_cold": (f"{g} x prefill {n}, cache reset", g * n),
            "group_warm": (f"{g} x prefill {n}, cached", g * n),
            "turn2": (f"{g} x turn 2 (+{60 + len(tail)}-{60 + g - 1 + len(tail)} new)",
                      sum(60 + k + len(tail) for k in range(g))),
            "decode": (f"{g} x 64 decoded", g * 64)}
    table = Table(title=f"vLLM engine phases, {args.template}, medians of {args.reps}")
    for col in ("phase", "work", "seconds", "tokens/s"):
        table.add_column(col, justify="left" if col in ("phase", "work") else "right")
    for name, times in phases.items():
        sec = statistics.median(times)
        label, tokens = work[name]
        table.add_row(name, label, f"{sec:.2f}", f"{tokens / sec:.0f}" if sec > 0 else "-")
    Console().print(table)
    vllm_engine.shutdown()


if __name__ == "__main__":
    main()
