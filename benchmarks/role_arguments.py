"""Which requirements a role agent reads right: its solver call's arguments against the oracle's,
argument by argument, on trained and held-out wordings.

    python benchmarks/role_arguments.py RUN/eval_sft/rollouts.jsonl [MORE.jsonl ...] [--tool find_architecture]

For each rollout, the oracle's solver call (the first ground-truth call that is not the answer:
`find_architecture`, `find_staffing`, `find_plan`, `assess_risks`, `find_agreement`) is compared
with the agent's first call to the same tool: per argument the share of tasks where the agent gave
the oracle's value (numbers equal to 1e-6 relative, lists as sets), where it left out an argument
the oracle passed, and where it passed one the oracle did not (a requirement read where none was
stated). Tasks where the agent never called the solver count as wrong on every argument.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table

ANSWERS = ("submit", "escalate", "answer", "commit")


def same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        try:
            return sorted(map(json.dumps, a)) == sorted(map(json.dumps, b))
        except TypeError:
            return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def arguments(text: Any) -> dict[str, Any] | None:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def solver_call(ground_truth: list[dict[str, Any]], tool: str | None) -> tuple[str, dict[str, Any]] | None:
    for call in ground_truth or []:
        name = call.get("name", "")
        if (tool and name == tool) or (not tool and name != "read_document" and name != "calculate"
                                       and not name.startswith(ANSWERS)):
            args = arguments(call.get("arguments"))
            return (name, args) if args is not None else None
    return None


def agent_call(row: dict[str, Any], name: str) -> dict[str, Any] | None:
    for item in (row.get("response") or {}).get("output") or []:
        if item.get("type") == "function_call" and item.get("name") == name:
            return arguments(item.get("arguments")) or {}
    return None


def tally(rows: list[dict[str, Any]], tool: str | None) -> dict[tuple[str, str], list[int]]:
    """(subset, argument) -> [right, left out, tasks where the oracle passed it, passed unasked, the subset's tasks]."""
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for row in rows:
        gt = solver_call(row.get("ground_truth"), tool)
        if gt is None:
            continue
        name, want = gt
        got = agent_call(row, name)
        subset = row.get("subset") or "all"
        keys = set(want) | set(got or {})
        out[(subset, "(every argument)")][4] += 1
        for key in keys:
            c = out[(subset, key)]
            if key in want:
                c[2] += 1
                if got is not None and key in got and same(got[key], want[key]):
                    c[0] += 1
                elif got is None or key not in got:
                    c[1] += 1
            elif got is not None and key in got:
                c[3] += 1
        whole = out[(subset, "(every argument)")]
        whole[2] += 1
        if got is not None and got.keys() == want.keys() and all(same(got[k], want[k]) for k in want):
            whole[0] += 1
        elif got is None:
            whole[1] += 1
    for (subset, _key), c in out.items():  # every task of the subset: an argument no one passed counts too
        c[4] = out[(subset, "(every argument)")][4]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rollouts", nargs="+")
    ap.add_argument("--tool", help="the solver tool (default: the oracle's first call that is not a read or an answer)")
    args = ap.parse_args()
    console = Console(width=max(120, Console().width))
    for path in args.rollouts:
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        counts = tally(rows, args.tool)
        table = Table(title=f"{path}: the solver call's arguments against the oracle's ({len(rows)} rollouts)")
        for col in ("subset", "argument", "oracle passed it", "agent gave its value", "agent left it out",
                    "agent passed it unasked"):
            table.add_column(col, justify="left" if col in ("subset", "argument") else "right")
        for (subset, key), (right, missing, asked, unasked, tasks) in sorted(counts.items()):
            table.add_row(subset, key, f"{asked}/{tasks}", f"{right / asked:.0%}" if asked else "-",
                          f"{missing / asked:.0%}" if asked else "-", f"{unasked}/{tasks - asked}" if tasks > asked else "-")
        console.print(table)


if __name__ == "__main__":
    main()
