"""Where a model's SFT loss sits: per-token loss on held-out ground-truth conversations, by kind of token.

    python benchmarks/token_loss.py RUN --model MODEL_DIR [--subset trained] [--max-tasks 80]

RUN is a pipeline folder (its config and test split). Each test task's ground truth is replayed one
call a turn and tokenised exactly as SFT trains on it (assistant tokens only); MODEL_DIR (a model
folder with its chat template, e.g. RUN/sft/model) scores every assistant token teacher-forced. The
tokens are sorted by what they are in their turn: the tool's name (which tool to call), argument
values, the call's fixed structure (`<tool_call>`, keys, braces, the end marker), and the text of a
final answer. The table gives each kind's share of the tokens, its mean loss, its share of the total
loss and how often the model's top token is the right one, and for the names also the hardest token
of each (where the choice of tool is made): a kind with few tokens and a high loss is one a
token-mean loss barely trains.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from officegym.train.token_kinds import KINDS, token_kinds


def main() -> None:
    import torch
    from turn_accuracy import run_tasks  # this folder's script, on sys.path when run as one

    from officegym.agent.policies import make_policy
    from officegym.train.sft_data import BuildReport, encode_conversation, ground_truth_conversations

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path)
    ap.add_argument("--model", required=True, type=Path, help="a model folder")
    ap.add_argument("--subset", default=None)
    ap.add_argument("--max-tasks", type=int, default=80)
    args = ap.parse_args()

    env, tasks = run_tasks(args.run, args.subset, None, args.max_tasks)
    convs = ground_truth_conversations(env, tasks, "one", "Done.", None, BuildReport())
    policy = make_policy(f"hf:{args.model}").load()
    tok, model = policy.tokenizer, policy.module
    model.eval()
    loss_sum: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    top1: dict[str, int] = defaultdict(int)
    hardest: list[float] = []  # each call's highest-loss name token
    names_right: list[bool] = []  # each call's name: every token the model's top choice
    with torch.no_grad():
        for conv in convs:
            ex = encode_conversation(policy, conv)
            ids = torch.tensor([ex.input_ids])
            logits = model(input_ids=ids).logits[0, :-1].float()
            nll = torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none")
            best = logits.argmax(-1) == ids[0, 1:]
            mask, i = ex.loss_mask, 0
            while i < len(mask):  # each run of assistant tokens is one turn
                if not mask[i]:
                    i += 1
                    continue
                j = i
                while j < len(mask) and mask[j]:
                    j += 1
                name = []
                for k, kind in zip(range(i, j), token_kinds(tok, ex.input_ids[i:j])):
                    loss_sum[kind] += float(nll[k - 1])
                    count[kind] += 1
                    top1[kind] += int(best[k - 1])
                    if kind == "tool name":
                        name.append(k - 1)
                if name:
                    hardest.append(max(float(nll[k]) for k in name))
                    names_right.append(all(bool(best[k]) for k in name))
                i = j
    total_tokens, total_loss = sum(count.values()), sum(loss_sum.values())
    print(f"{args.model} on {len(convs)} held-out ground-truth conversations of {args.run}"
          + (f" ({args.subset})" if args.subset else ""))
    print("| kind of token | tokens | share of tokens | mean loss | share of the loss | top-1 right |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        n = count.get(kind, 0)
        if n:
            print(f"| {kind} | {n} | {100 * n / total_tokens:.1f}% | {loss_sum[kind] / n:.3f} | "
                  f"{100 * loss_sum[kind] / max(total_loss, 1e-9):.1f}% | {100 * top1[kind] / n:.1f}% |")
    if hardest:
        print(f"| tool name: its hardest token | {len(hardest)} | | {sum(hardest) / len(hardest):.3f} | | "
              f"{100 * sum(names_right) / len(names_right):.1f}% (whole name) |")
    print(f"| all | {total_tokens} | 100% | {total_loss / max(total_tokens, 1):.3f} | 100% | "
          f"{100 * sum(top1.values()) / max(total_tokens, 1):.1f}% |")


if __name__ == "__main__":
    main()
