"""Multi-agent RL in the council: one seat learned by SFT then GRPO, the others scripted.

    python benchmarks/council_rl.py --out /tmp/council_rl [--seat reconcile] [--device auto]
        [--sft-steps 40] [--grpo-steps 20] [--prompts 4] [--generations 8] [--test-tasks 60]
        [--micro-batch-tokens 2048] [--val-every 5] [--temperature 1.0] [--dynamic-sampling off]
        [--teachers scripted,recovering] [--sft-min-reward 0.95]

Stages (each skipped when its output exists, so a stopped run resumes): roles/council tasks
(difficulty --difficulty, split train / validation / test) -> evaluation of the untrained model in
the seat -> SFT on the scripted seat's conversations (sft.source=council) -> evaluation -> GRPO on
the team reward (council.train_seats) -> evaluation. Every evaluation plays one greedy council per
test task with the other seats scripted; the scripted and greedy policies in the same seat are
evaluated beside them. Prints the team reward of each with its 95% interval (percentile bootstrap
over councils), consensus and commit rates, and the paired comparisons (paired sign-flip test on
the per-council rewards), and writes them to OUT/summary.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from officegym.agent.council import CouncilConfig, run_councils
from officegym.agent.council_file import summarize_councils
from officegym.agent.council_seats import scripted_seat
from officegym.agent.policies import make_policy
from officegym.core.policy import SamplingParams
from officegym.core.registry import make
from officegym.core.task import read_tasks, write_jsonl
from officegym.eval.stats import bootstrap_mean_interval, sign_flip_p_value


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def make_tasks(out: Path, args: argparse.Namespace) -> dict[str, Path]:
    paths = {split: out / f"{split}.jsonl" for split in ("train", "validation", "test")}
    if all(p.exists() for p in paths.values()):
        return paths
    low, high = (int(x) for x in args.difficulty.split(","))
    env = make("roles/council")
    sizes = {"train": args.train_tasks, "validation": args.val_tasks, "test": args.test_tasks}
    for i, (split, n) in enumerate(sizes.items()):  # separate seeds: no scenario in two splits
        write_jsonl(paths[split], env.generate_tasks(n, args.seed * 10 + i, difficulty=(low, high)))
    return paths


def evaluate(label: str, seat_policy: Any, tasks: list[Any], args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """One greedy council per task with `seat_policy` at the seat (scripted elsewhere); rows cached."""
    path = out / f"eval_{label}.json"
    if path.exists():
        return json.loads(path.read_text())["rows"]
    config = CouncilConfig(max_rounds=args.rounds, params=SamplingParams(temperature=0.0, max_new_tokens=args.turn_tokens),
                           max_batch=len(tasks))

    async def main() -> list[Any]:
        try:
            return await run_councils(tasks, {args.seat: seat_policy}, config)
        finally:
            close = getattr(seat_policy, "aclose", None)
            if close is not None:
                await close()

    t0 = time.perf_counter()
    outcomes = asyncio.run(main())
    rows = [{"task_id": o.task_id, "reward": o.reward, "label": o.grade.label, "components": o.grade.components,
             "acts": o.state.events, "rounds": o.state.rounds} for o in outcomes]
    write_json(path, {"label": label, "seconds": time.perf_counter() - t0, "rows": rows})
    return rows


def train(kind: str, out: Path, overrides: list[str]) -> Path:
    from officegym.train.config import GRPORunConfig, SFTRunConfig
    from officegym.train.config_files import build_config
    from officegym.train.grpo import train_grpo
    from officegym.train.sft import train_sft

    model_dir = out / "model"
    if (model_dir / "config.json").exists():
        return model_dir
    cfg_type, fn = (SFTRunConfig, train_sft) if kind == "sft" else (GRPORunConfig, train_grpo)
    cfg = build_config(cfg_type, {}, [f"out_dir={out}", *overrides])
    t0 = time.perf_counter()
    result = fn(cfg, Console(stderr=True))
    if result.stopped:
        sys.exit(f"{kind} stopped at step {result.last_step}; rerun to resume")
    write_json(out / "time.json", {"seconds": time.perf_counter() - t0, "steps": result.last_step})
    return model_dir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--seat", default="reconcile", choices=("cto", "cost", "risk", "reconcile"))
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--difficulty", default="1,3", help="LOW,HIGH scenario difficulty (1-10)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--turn-tokens", type=int, default=96)
    ap.add_argument("--train-tasks", type=int, default=300)
    ap.add_argument("--val-tasks", type=int, default=16)
    ap.add_argument("--test-tasks", type=int, default=60)
    ap.add_argument("--sft-steps", type=int, default=40)
    ap.add_argument("--grpo-steps", type=int, default=20)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--generations", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-4, help="GRPO's learning rate")
    ap.add_argument("--sft-lr", type=float, default=5e-4, help="SFT's peak learning rate (cosine to a tenth)")
    ap.add_argument("--batch-size", type=int, default=64, help="rows decoded together in evaluation")
    ap.add_argument("--max-length", type=int, default=4096, help="SFT conversations longer than this are dropped")
    ap.add_argument("--temperature", type=float, default=1.0, help="GRPO's rollout temperature")
    ap.add_argument("--teachers", default="scripted",
                    help="comma list of SFT teachers at the seat: scripted, recovering (mediator: the cheapest plan "
                         "first, the scripted plan after an objection)")
    ap.add_argument("--sft-min-reward", type=float, default=1.0,
                    help="SFT keeps councils at this team reward or more (a recovering council: ~0.958)")
    ap.add_argument("--dynamic-sampling", default="off", choices=("off", "skip", "refill"),
                    help="refill: sample further prompt batches until the step has --prompts groups whose councils differ")
    ap.add_argument("--max-refill-batches", type=int, default=2)
    ap.add_argument("--val-every", type=int, default=5,
                    help="GRPO validates on the validation councils every N steps and at the start (0: never; each "
                         "validation plays --val-tasks councils)")
    ap.add_argument("--micro-batch-tokens", type=int, default=2048,
                    help="tokens with gradient per micro-batch in SFT and GRPO (~4.5 MB each in float32 with LoRA: "
                         "benchmarks/update_memory.py)")
    args = ap.parse_args(argv)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    paths = make_tasks(out, args)
    test = read_tasks(paths["test"])
    device = {"device": args.device, **({"threads": args.threads} if args.threads else {})}

    def model_policy(spec: str) -> Any:
        return make_policy(spec if spec == "smollm2-135m" else f"hf:{spec}", batch_size=args.batch_size, **device)

    common = [f"model.device={args.device}", "lora.enabled=true", "lora.r=16", "lora.alpha=32", "data.env=roles/council",
              f"data.tasks={paths['train']}", f"data.val_tasks={paths['validation']}", f"council.train_seats=[{args.seat}]",
              f"council.max_rounds={args.rounds}", "logging.tensorboard=false", f"seed={args.seed}",
              f"rollout.max_new_tokens_per_turn={args.turn_tokens}", "checkpoint.keep_top_k=1"]
    sft_tokens, grpo_tokens = f"sft.micro_batch_tokens={args.micro_batch_tokens}", f"grpo.micro_batch_tokens={args.micro_batch_tokens}"
    if args.threads:
        common.append(f"model.threads={args.threads}")
    rows = {
        "scripted": evaluate("scripted", scripted_seat(args.seat, "scripted", args.rounds), test, args, out),
        "greedy": evaluate("greedy", scripted_seat(args.seat, "greedy", args.rounds), test, args, out),
        "untrained": evaluate("untrained", model_policy(args.model), test, args, out),
    }
    sft_model = train("sft", out / "sft", [*common, f"model.name={args.model}", "sft.source=council", sft_tokens,
                                          f"council.teachers=[{args.teachers}]", f"sft.min_reward={args.sft_min_reward}",
                                          f"sft.max_steps={args.sft_steps}", "sft.batch_size=8", "sft.micro_batch_size=8",
                                          f"sft.max_length={args.max_length}", "sft.val_fraction_examples=0.0", f"optim.lr={args.sft_lr}",
                                          f"optim.min_lr={args.sft_lr / 10}", "validation.every=0", "validation.accuracy=false",
                                          f"checkpoint.every={args.sft_steps}"])
    rows["sft"] = evaluate("sft", model_policy(str(sft_model)), test, args, out)
    grpo_model = train("grpo", out / "grpo", [*common, f"model.name={sft_model}", f"grpo.max_steps={args.grpo_steps}", grpo_tokens,
                                              f"grpo.num_prompts_per_step={args.prompts}",
                                              f"grpo.num_generations_per_prompt={args.generations}",
                                              f"grpo.micro_batch_size={args.generations}", "grpo.reward=outcome",
                                              f"optim.lr={args.lr}", f"optim.min_lr={args.lr}",
                                              f"rollout.max_new_tokens_per_episode={args.turn_tokens * args.rounds}",
                                              f"rollout.temperature={args.temperature}", f"grpo.dynamic_sampling={args.dynamic_sampling}",
                                              f"grpo.max_refill_batches={args.max_refill_batches}", f"validation.every={args.val_every}",
                                              f"validation.at_start={str(args.val_every > 0).lower()}",
                                              f"validation.accuracy={str(args.val_every > 0).lower()}", f"checkpoint.every={args.grpo_steps}"])
    rows["grpo"] = evaluate("grpo", model_policy(str(grpo_model)), test, args, out)

    summary: dict[str, Any] = {"date": date.today().isoformat(), "python": platform.python_version(),
                               "machine": platform.machine(), "args": {k: str(v) for k, v in vars(args).items()},
                               "seconds": time.perf_counter() - started, "policies": {}, "paired": []}
    table = Table(title=f"council, seat {args.seat} learned, {len(test)} test councils (greedy), others scripted")
    for col in ("policy at the seat", "team reward [95% CI]", "consensus", "commits", "labels"):
        table.add_column(col)
    for label, rs in rows.items():
        team = summarize_councils(rs)
        rewards = [float(r["reward"]) for r in rs]
        low, high = bootstrap_mean_interval(rewards, seed=args.seed)
        summary["policies"][label] = {**team, "reward_ci95": [low, high]}
        table.add_row(label, f"{team['mean_reward']:.3f} [{low:.3f}, {high:.3f}]", f"{team['consensus_rate']:.0%}",
                      f"{team['commit_rate']:.0%}", ", ".join(f"{k} {v}" for k, v in team["labels"].items()))
    console = Console(width=160)
    console.print(table)
    for a, b in (("untrained", "sft"), ("sft", "grpo"), ("untrained", "grpo")):
        diffs = [float(y["reward"]) - float(x["reward"]) for x, y in zip(rows[a], rows[b])]
        p, method = sign_flip_p_value(diffs, seed=args.seed)
        low, high = bootstrap_mean_interval(diffs, seed=args.seed)
        mean = math.fsum(diffs) / len(diffs)
        line = (f"{b} vs {a}: {mean:+.3f} [{low:+.3f}, {high:+.3f}], {sum(d > 0 for d in diffs)} councils higher, "
                f"{sum(d < 0 for d in diffs)} lower, paired sign-flip ({method}) p = {p:.3g}")
        summary["paired"].append({"from": a, "to": b, "delta": mean, "ci95": [low, high], "p": p, "method": method})
        print(line)
    for kind in ("sft", "grpo"):
        t = out / kind / "time.json"
        if t.exists():
            summary[f"{kind}_time"] = json.loads(t.read_text())
    curve = out / "grpo" / "metrics.jsonl"
    if curve.exists():
        points = [json.loads(x) for x in curve.read_text().splitlines() if x.strip()]
        summary["grpo_validation"] = [(p["step"], p.get("val/council/team_reward")) for p in points
                                      if "val/council/team_reward" in p]
        print("GRPO validation team reward by step:", summary["grpo_validation"])
    write_json(out / "summary.json", summary)
    print(f"{date.today()} | Python {platform.python_version()} | {platform.machine()} | "
          f"{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
