"""Prompt tokens under each tool format: officegym's JSON lines vs compact signatures.

    python benchmarks/tool_format_tokens.py --tasks RUN/tasks/train.jsonl [--model smollm2-135m]

For every task of the file, the first prompt a model sees (system turn with the task's tools, user
turn, generation prompt) rendered in each tool format (agent/chatml.py: `json`, the default
template, and `signatures`, `model.chat_template=officegym-signatures`) and tokenised with the
model's tokenizer. Prints per template the median prompt length in each format and their ratio, and
the same for a prompt offering all 27 workplace tools (NeMo Gym's datasets offer them all). Only
the tokenizer is loaded.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.agent.chatml import TOOL_FORMATS, render_chatml
from officegym.agent.messages import responses_items_to_chat_messages
from officegym.agent.models import resolve_model
from officegym.core.task import read_tasks
from officegym.envs.workplace.specs import TOOL_SPECS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=Path, required=True, help="task rows (NeMo Gym JSONL)")
    ap.add_argument("--model", default="smollm2-135m", help="whose tokenizer counts the tokens")
    args = ap.parse_args()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(resolve_model(args.model))
    tasks = read_tasks(args.tasks)
    if not tasks:
        raise SystemExit(f"{args.tasks}: no tasks")
    lengths: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for task in tasks:
        messages = responses_items_to_chat_messages(task.input)
        template = str(task.metadata.get("template") or task.category or "?")
        for name, tools in ((template, task.tools), ("all 27 workplace tools", TOOL_SPECS)):
            for fmt in TOOL_FORMATS:
                lengths[name][fmt].append(len(tok(render_chatml(messages, tools, True, fmt)).input_ids))
    table = Table(title=f"first-prompt tokens ({args.model}'s tokenizer), median over {len(tasks)} tasks")
    for col in ("tools offered", "tasks", "json", "signatures", "signatures / json"):
        table.add_column(col, justify="left" if col == "tools offered" else "right")
    for name in sorted(lengths, key=lambda n: (n.startswith("all "), n)):
        row = lengths[name]
        json_med, sig_med = statistics.median(row["json"]), statistics.median(row["signatures"])
        table.add_row(name, str(len(row["json"])), f"{json_med:.0f}", f"{sig_med:.0f}", f"{sig_med / json_med:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
