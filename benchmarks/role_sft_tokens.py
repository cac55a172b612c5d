"""Token lengths of the SFT conversations a role pipeline builds from the oracle (no training).

    OMP_NUM_THREADS=1 python benchmarks/role_sft_tokens.py configs/roles_cto.yaml [configs/roles_cost.yaml ...]
        [--max-tasks N] [--set tasks.difficulty=[1,2] ...]

For each pipeline config (`sft_data: oracle`): the tasks stage's train split (the config's `tasks`
section), the oracle played turn by turn as each task plans it, with the evaluation's tool-output cap
(what the pipeline's `sft_data` stage writes), the conversations SFT keeps (reward 1) and their token
ids under the config's model's chat template (sft_data.encode_all: the tokens SFT trains on). Prints
per role and level: conversations, turns, and the min / median / p90 / max of the whole conversation,
of its first prompt and of the assistant (loss) tokens, the longest assistant turn, and how many
exceed `sft.sft.max_length`. The model's
weights are loaded once (the renderer is the trainer's); nothing runs through them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.agent.loop import LoopConfig
from officegym.agent.scripted import OraclePolicy, plan_turns
from officegym.core import registry
from officegym.core.rollout_row import parse
from officegym.core.task import Task
from officegym.eval.run import ROLLOUTS, run_eval
from officegym.pipeline.config import load_pipeline_config
from officegym.sdg.env_tasks import generate_env_tasks
from officegym.train.sft_data import BuildReport, encode_conversation, rollout_conversations


def renderer_for(model: str):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from officegym.agent.hf import HFPolicy
    from officegym.agent.models import resolve_model

    path = resolve_model(model)
    tok = AutoTokenizer.from_pretrained(path)
    module = AutoModelForCausalLM.from_pretrained(path)
    return HFPolicy.from_module(module, tok, name=f"hf:{model}", threads=1)


def q(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def longest_run(mask: list[int]) -> int:
    """The longest assistant turn: the longest run of loss tokens."""
    best = run = 0
    for m in mask:
        run = run + 1 if m else 0
        best = max(best, run)
    return best


def measure(config: str, renderer_cache: dict, max_tasks: int | None, overrides: list[str]) -> dict:
    cfg = load_pipeline_config(config, overrides)
    env = registry.make(cfg.env)
    t = cfg.tasks
    task_set = generate_env_tasks(env, t.n, t.seed, t.difficulty, name=cfg.env, fractions=t.fractions)
    tasks = [Task.from_row(r) for r in task_set.rows["train"]][:max_tasks]
    turns = max(len(plan_turns(len(x.ground_truth), x.metadata.get("oracle_turns"))) for x in tasks)
    loop = LoopConfig(max_steps=turns + 1, max_tool_output_chars=cfg.eval.max_tool_output_chars)
    report = BuildReport()
    with tempfile.TemporaryDirectory() as tmp:
        run_eval(env, tasks, OraclePolicy(), Path(tmp), k=1, config=loop)
        min_reward = cfg.sft.get("sft", {}).get("min_reward", 1.0)
        convs = rollout_conversations([Path(tmp) / ROLLOUTS], min_reward, report)
        # rollout_conversations names a conversation FILE:LINE; the rows are in the order they finished
        task_of_line = {i: parse(json.loads(line)).task().id
                        for i, line in enumerate((Path(tmp) / ROLLOUTS).read_text().splitlines(), 1) if line.strip()}
    if cfg.model not in renderer_cache:
        renderer_cache[cfg.model] = renderer_for(cfg.model)
    renderer = renderer_cache[cfg.model]
    level = {str(x.id): x.metadata.get("difficulty") for x in tasks}
    rows: dict[str, dict] = {}
    for conv in convs:
        ex = encode_conversation(renderer, conv)
        key = f"level {level[str(task_of_line[int(conv.source.rsplit(':', 1)[1])])]}"
        for name in (key, "all"):
            r = rows.setdefault(name, {"total": [], "prompt": [], "loss": [], "turn": [], "turns": set()})
            r["total"].append(len(ex))
            r["prompt"].append(ex.loss_mask.index(1))
            r["loss"].append(sum(ex.loss_mask))
            r["turn"].append(longest_run(ex.loss_mask))
            r["turns"].add(sum(1 for m in conv.messages if m.get("role") == "assistant"))
    max_length = cfg.sft.get("sft", {}).get("max_length")
    return {"role": cfg.env, "tasks": len(tasks), "kept": len(convs), "dropped": dict(report.dropped),
            "rows": dict(sorted(rows.items())), "max_length": max_length}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--max-tasks", type=int, default=None, help="the first N train tasks (default: all)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a dotted config override for every config, e.g. tasks.difficulty=[1,2]")
    args = ap.parse_args(argv)
    cache: dict = {}
    table = Table(title="SFT conversations from the oracle (tokens: min / median / p90 / max)")
    for col in ("env", "tasks", "conversations", "assistant turns", "conversation", "first prompt", "loss tokens",
                "longest turn", "> max_length"):
        table.add_column(col)

    def span(xs: list[int]) -> str:
        return f"{min(xs)} / {int(statistics.median(xs))} / {q(xs, 0.9)} / {max(xs)}" if xs else "-"

    for config in args.configs:
        r = measure(config, cache, args.max_tasks, args.set)
        for name, row in r["rows"].items():
            over = sum(x > r["max_length"] for x in row["total"]) if r["max_length"] else 0
            table.add_row(r["role"], name, str(len(row["total"])), ",".join(map(str, sorted(row["turns"]))),
                          span(row["total"]), span(row["prompt"]), span(row["loss"]), str(max(row["turn"])),
                          f"{over} of {r['max_length']}")
        if r["dropped"]:
            print(f"{r['role']}: {r['kept']} of {r['tasks']} kept, dropped {r['dropped']}", file=sys.stderr)
    Console(width=180).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
