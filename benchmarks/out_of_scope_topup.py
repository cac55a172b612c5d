"""Does a model learn when not to call? A short SFT continuation with requests no tool serves.

    python benchmarks/out_of_scope_topup.py --run RUN --model MODEL_DIR --out OUT [--steps 16] [--share 0.25]

RUN is a Workplace pipeline folder (its world, train tasks and resolved SFT config); MODEL_DIR a
standalone model (`officegym train export`) to continue from. Writes OUT/tasks: new requests no
Workplace tool serves (the `*.out_of_scope` templates, composed wordings, the domain's tools)
split into out_of_scope_train.jsonl and out_of_scope_test.jsonl, and train.jsonl, which mixes
`share` of those with RUN's own train tasks for `steps` steps of the run's batch size. Then trains
OUT/sft from MODEL_DIR with RUN's SFT settings (a fresh LoRA, lr 3e-4 to 1e-4). What to run next to
measure it is printed at the end: the Workplace test split (benchmarks/checkpoint_eval.py), BFCL
before and after (`officegym bench bfcl`, benchmarks/bfcl_compare.py) and the held-out
out-of-scope requests (`officegym eval`, then this script's --score on the rollouts: the share
answered without any call).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from officegym.envs.workplace.tasks.base import DOMAINS

OUT_OF_SCOPE = [f"{d}.out_of_scope" for d in DOMAINS]


def score(paths: list[str]) -> None:
    from officegym.eval.stats import wilson_interval

    for path in paths:
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        silent = sum(not any(o.get("type") == "function_call" for o in (r.get("response") or {}).get("output") or [])
                     for r in rows)
        lo, hi = wilson_interval(silent, len(rows))
        print(f"{path}: answered without any call {silent}/{len(rows)} = {silent / max(1, len(rows)):.1%} "
              f"[{lo:.1%}, {hi:.1%}]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run")
    ap.add_argument("--model")
    ap.add_argument("--out")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--share", type=float, default=0.25, help="share of out-of-scope requests in the mix")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--score", nargs="+", metavar="ROLLOUTS", help="only score eval rollouts: answered without a call")
    args = ap.parse_args()
    if args.score:
        score(args.score)
        return
    if not (args.run and args.model and args.out):
        ap.error("--run, --model and --out are needed (or --score)")

    from officegym.core.files import atomic_write
    from officegym.sdg.dataset import build_dataset
    from officegym.train.config import SFTRunConfig
    from officegym.train.config_files import load_config
    from officegym.train.sft import train_sft

    run, out = Path(args.run).resolve(), Path(args.out).resolve()
    cfg = load_config(SFTRunConfig, run / "sft" / "config.yaml", [])
    batch = cfg.sft.batch_size
    n_oos = round(args.steps * batch * args.share)
    ds = build_dataset([run / "world"], 4 * n_oos, seed=args.seed, templates=OUT_OF_SCOPE, wordings="composed",
                       tools="domain", fractions=(0.75, 0.0, 0.25))
    oos_train, oos_test = ds.rows["train"], ds.rows["test"]
    rng = random.Random(args.seed)
    with open(run / "tasks" / "train.jsonl", encoding="utf-8") as f:
        regular = [json.loads(line) for line in f if line.strip()]
    mix = rng.sample(oos_train, min(n_oos, len(oos_train))) + rng.sample(regular, args.steps * batch - n_oos)
    rng.shuffle(mix)
    tasks = out / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    for name, rows in (("out_of_scope_train", oos_train), ("out_of_scope_test", oos_test), ("train", mix)):
        atomic_write(tasks / f"{name}.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    overrides = [f"out_dir={out / 'sft'}", f"model.name={args.model}", f"data.tasks={tasks / 'train.jsonl'}", f"data.world={run / 'world'}",
                 "data.val_tasks=null", f"sft.max_steps={args.steps}", "optim.lr=3.0e-4", "optim.min_lr=1.0e-4",
                 "optim.warmup_steps=2", f"checkpoint.every={args.steps}", "checkpoint.keep_top_k=2"]
    cfg = load_config(SFTRunConfig, run / "sft" / "config.yaml", overrides)
    print(f"{len(mix)} conversations: {n_oos} out-of-scope requests, {len(mix) - n_oos} of {run}'s train tasks; "
          f"{len(oos_test)} out-of-scope test requests")
    train_sft(cfg)
    print("next:\n"
          f"  python benchmarks/checkpoint_eval.py {run} --stage sft --checkpoints {out / 'sft'} --steps {args.steps} "
          f"--splits test --out {out / 'curve'}\n"
          f"  officegym bench bfcl --policy vllm:{out / 'curve' / f'step{args.steps}_model'} --out {out / 'bfcl'} "
          "--categories simple_python,multiple,parallel,irrelevance --limit 25 --max-new-tokens 256\n"
          f"  officegym eval --policy vllm:MODEL --tasks {tasks / 'out_of_scope_test.jsonl'} --world {run / 'world'} "
          "--out DIR, then: python benchmarks/out_of_scope_topup.py --score DIR/rollouts.jsonl")


if __name__ == "__main__":
    main()
