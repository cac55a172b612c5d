"""Teacher-forced turn accuracy: does a model know each step of a task when the steps before it are right?

    python benchmarks/turn_accuracy.py RUN --model MODEL [--subset trained] [--max-tasks 40]

RUN is a pipeline folder (its config and test split; the tasks its evaluation draws). For each task
the ground truth is replayed through the environment one call a turn, as SFT sees it; at every
assistant turn the model (greedy, vLLM when installed) continues the replayed conversation, and its
turn is compared with the ground truth's: the same call (tool and arguments), the right tool with
other arguments, another tool, a text answer where a call was due, or a call where the answer was.
A model whose every turn is right here solves the task in a free run; the table says which kind of
turn (a read, a write, the final answer) it gets wrong, and how many tasks it gets right at every
turn against how many its free-running evaluation solved (RUN's or --rollouts).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter, defaultdict
from pathlib import Path

from officegym.eval.stats import wilson_interval


def kind_of(env, call) -> str:
    """A ground-truth call's kind: a read or a write (the environment's own classification)."""
    return "write" if call.name in (env.write_tools or ()) else "read"


def judge(gold_calls, completion) -> str:
    """How a model turn compares with the ground truth's turn (one call, or the final answer)."""
    if not gold_calls:
        return "right" if not completion.tool_calls and not completion.invalid else "called instead of answering"
    if completion.invalid and not completion.tool_calls:
        return "invalid call"
    if not completion.tool_calls:
        return "answered instead of calling"
    got, want = completion.tool_calls[0], gold_calls[0]
    if got.name != want.name:
        return "other tool"
    return "right" if got.arguments == want.arguments else "right tool, other arguments"


VERDICTS = ["right", "right tool, other arguments", "other tool", "answered instead of calling", "invalid call",
            "called instead of answering"]


class TurnAccuracy:
    """Verdicts by kind of turn; per task whether every turn was right; each task's first mistake."""

    def __init__(self) -> None:
        self.by_kind: dict[str, Counter] = defaultdict(Counter)
        self.task_ok: dict[str, bool] = {}
        self.first_wrong: Counter = Counter()
        self.swaps: Counter = Counter()


def turn_accuracy(env, tasks, policy, max_new_tokens: int = 128, batch: int = 64) -> TurnAccuracy:
    """Replay each task's ground truth one call a turn; let `policy` continue at each assistant turn."""
    from officegym.core.policy import PolicyRequest, SamplingParams
    from officegym.train.sft_data import BuildReport, ground_truth_conversations

    convs = ground_truth_conversations(env, tasks, "one", "Done.", None, BuildReport())
    by_id = {t.id: t for t in tasks}
    requests, gold = [], []
    for conv in convs:
        task = by_id[conv.source.removeprefix("task:")]
        turn = 0
        for i, m in enumerate(conv.messages):
            if m["role"] != "assistant":
                continue
            calls = list(task.ground_truth[turn: turn + 1]) if m.get("tool_calls") else []
            requests.append(PolicyRequest(messages=conv.messages[:i], tools=conv.tools, task=task, turn=turn))
            gold.append(calls)
            turn += 1
    params = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    completions = []
    for start in range(0, len(requests), batch):
        completions += asyncio.run(policy.complete(requests[start: start + batch], params))

    out = TurnAccuracy()
    for calls, comp, req in zip(gold, completions, requests):
        task, turn = req.task, req.turn
        kind = kind_of(env, calls[0]) if calls else "answer"
        verdict = judge(calls, comp)
        out.by_kind[kind][verdict] += 1
        if verdict != "right" and out.task_ok.get(task.id, True):
            out.first_wrong[f"{kind}: {verdict}"] += 1
            if verdict == "other tool":
                later = {c.name for c in task.ground_truth[turn + 1:]}
                got = comp.tool_calls[0].name
                out.swaps[f"{calls[0].name} -> {got}" + (" (due later)" if got in later else "")] += 1
        out.task_ok[task.id] = out.task_ok.get(task.id, True) and verdict == "right"
    return out


def print_table(acc: TurnAccuracy, title: str, rollouts: Path | None) -> None:
    print(title)
    print("| turn | turns | " + " | ".join(VERDICTS) + " |")
    print("|---|---:|" + "---:|" * len(VERDICTS))
    for kind in ("read", "write", "answer"):
        c = acc.by_kind.get(kind, Counter())
        n = sum(c.values())
        if n:
            print(f"| {kind} | {n} | " + " | ".join(f"{100 * c[v] / n:.0f}%" for v in VERDICTS) + " |")
    ok, n = sum(acc.task_ok.values()), len(acc.task_ok)
    lo, hi = wilson_interval(ok, n)
    print(f"\ntasks with every turn right: {ok} of {n} ({100 * ok / max(1, n):.1f}% [{100 * lo:.1f}, {100 * hi:.1f}])")
    if rollouts and rollouts.is_file():
        rows = [json.loads(line) for line in rollouts.read_text().splitlines() if line.strip()]
        solved = {r["id"] for r in rows if float(r.get("reward") or 0) >= 1}
        free = sum(1 for tid in acc.task_ok if tid in solved)
        both = sum(1 for tid, good in acc.task_ok.items() if good and tid in solved)
        print(f"solved in the free run ({rollouts}): {free} of {n}; right at every turn and solved: {both}")
    print("\nthe first wrong turn of each task:")
    for what, k in acc.first_wrong.most_common():
        print(f"  {k:3d}  {what}")
    print("\nanother tool than the ground truth's (expected -> made; 'due later': a call the task makes later):")
    for what, k in acc.swaps.most_common():
        print(f"  {k:3d}  {what}")


def run_tasks(run: Path, subset: str | None = None, tools: str | None = None, max_tasks: int = 0):
    """A pipeline run's environment and the test tasks its evaluation takes, of one subset and tool
    set when given, the first `max_tasks` when nonzero."""
    from rich.console import Console

    from officegym.pipeline.config import load_pipeline_config
    from officegym.pipeline.run import Pipeline

    pipeline = Pipeline(load_pipeline_config(str(run / "config.yaml"), []), Console(stderr=True))
    tasks = pipeline.eval_tasks("eval_sft")
    tasks = [t for t in tasks if (not subset or t.metadata.get("subset") == subset)
             and (not tools or t.metadata.get("tools_offered") == tools)]
    return pipeline.environment(), tasks[:max_tasks] if max_tasks else tasks


def main() -> None:
    from officegym.agent.policies import make_policy

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path)
    ap.add_argument("--model", required=True, help="a policy spec: vllm:MODEL, hf:MODEL, oracle, ...")
    ap.add_argument("--subset", default=None, help="only the test tasks of this subset (trained, heldout_template, ...)")
    ap.add_argument("--tools", default=None, choices=["domain", "all"], help="only the tasks offering these tools")
    ap.add_argument("--max-tasks", type=int, default=0)
    ap.add_argument("--rollouts", type=Path, default=None, help="the model's free-running rollouts on the same tasks")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    args = ap.parse_args()

    env, tasks = run_tasks(args.run, args.subset, args.tools, args.max_tasks)
    acc = turn_accuracy(env, tasks, make_policy(args.model), args.max_new_tokens)
    where = ", ".join(x for x in (args.subset, args.tools and f"{args.tools} tools") if x)
    print_table(acc, f"{args.model} on {len(acc.task_ok)} test tasks of {args.run}" + (f" ({where})" if where else ""),
                args.rollouts)


if __name__ == "__main__":
    main()
