"""BFCL's categories and test entries as officegym cases: the conversation, the tools, the answer.

Which categories run here, and why the others do not, is stated in `NOT_RUN` (and in
docs/benchmarks-bfcl.md): every single-turn category runs offline through bfcl-eval's AST checker
or its relevance rule; the multi-turn, agentic and format-sensitivity categories need a driver or
services officegym does not have.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from officegym.bench import bfcl_lib
from officegym.bench.bfcl_convert import ToolNames, tool_specs
from officegym.bench.bfcl_replay import relevance_call, replay_calls
from officegym.core.task import Task
from officegym.core.types import ToolSpec

NON_LIVE_AST = ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple"]
LIVE_AST = ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"]
RELEVANCE = ["irrelevance", "live_irrelevance", "live_relevance"]
OFFLINE = [*NON_LIVE_AST, "irrelevance", *LIVE_AST, "live_irrelevance", "live_relevance"]

_MULTI_TURN_WHY = (
    "multi-turn: bfcl-eval's executable backends (file system, trading bot, travel booking, ...) are "
    "plain Python and would run offline, but scoring needs a driver that feeds BFCL's later user turns "
    "and injected functions into the episode and replays calls into those backends; officegym has not "
    "built that driver yet"
)
NOT_RUN = {
    "multi_turn_base": _MULTI_TURN_WHY,
    "multi_turn_miss_func": _MULTI_TURN_WHY,
    "multi_turn_miss_param": _MULTI_TURN_WHY,
    "multi_turn_long_context": _MULTI_TURN_WHY,
    "web_search_base": "agentic: needs live web search through SerpAPI (an API key and the network)",
    "web_search_no_snippet": "agentic: needs live web search through SerpAPI (an API key and the network)",
    "memory_kv": "agentic: needs BFCL's prerequisite conversations replayed into a memory backend and its "
                 "answer checker; officegym has no such driver",
    "memory_vector": "agentic: its memory backend embeds with sentence-transformers and faiss, downloading "
                     "a model from the Hugging Face hub",
    "memory_rec_sum": "agentic: needs BFCL's prerequisite conversations replayed into a memory backend and its "
                      "answer checker; officegym has no such driver",
    "format_sensitivity": "not scored by BFCL (it measures prompt-format variance of prompting models)",
}
_NOT_RUN_GROUPS = {
    "multi_turn": ["multi_turn_base"],
    "web_search": ["web_search_base"],
    "memory": ["memory_kv", "memory_vector"],
    "agentic": ["web_search_base", "memory_kv", "memory_vector"],
}
ALIASES = {"simple": "simple_python", "java": "simple_java", "javascript": "simple_javascript"}
GROUPS = {
    "all": OFFLINE,
    "single_turn": OFFLINE,
    "ast": [*NON_LIVE_AST, *LIVE_AST],
    "non_live": [*NON_LIVE_AST, "irrelevance"],
    "live": [*LIVE_AST, "live_irrelevance", "live_relevance"],
    "python": [c for c in OFFLINE if c not in ("simple_java", "simple_javascript")],
    "relevance": RELEVANCE,
}


class CategoryError(ValueError):
    pass


def parse_categories(names: list[str] | None) -> list[str]:
    """Category names, aliases ("simple") and groups ("live", "ast", "all") -> categories, in
    BFCL's order. A category that does not run offline is refused with the reason."""
    if not names:
        return list(OFFLINE)
    wanted: set[str] = set()
    for raw in names:
        for name in (n.strip() for n in raw.split(",")):
            if not name:
                continue
            name = ALIASES.get(name, name)
            if name in GROUPS:
                wanted.update(GROUPS[name])
            elif name in OFFLINE:
                wanted.add(name)
            elif name in NOT_RUN or name in _NOT_RUN_GROUPS:
                why = "; ".join(dict.fromkeys(NOT_RUN[c] for c in _NOT_RUN_GROUPS.get(name, [name])))
                raise CategoryError(f"BFCL category {name!r} does not run in officegym: {why}")
            else:
                known = ", ".join([*OFFLINE, *ALIASES, *GROUPS])
                raise CategoryError(f"unknown BFCL category {name!r}; known: {known}")
    return [c for c in OFFLINE if c in wanted]


@dataclass
class BfclCase:
    """One BFCL test entry, ready for a policy (`task`, `tools`) and for the checker (`functions`,
    `answer`: the documents and possible answer exactly as bfcl-eval's checker reads them)."""

    id: str
    category: str
    index: int  # position in BFCL's file, which orders the report
    task: Task
    tools: list[ToolSpec]
    names: ToolNames
    functions: list[dict[str, Any]]
    answer: list[dict[str, Any]] | None
    metadata: dict[str, Any] = field(default_factory=dict)


def subset(n_entries: int, category: str, limit: int | None, seed: int) -> list[int]:
    """Indices of the entries to run: all, or `limit` drawn by a seeded shuffle of the category.
    A larger limit keeps the smaller one's entries (it takes a longer prefix of the same shuffle),
    so raising --limit on a run folder only adds work."""
    if limit is None or limit >= n_entries:
        return list(range(n_entries))
    order = list(range(n_entries))
    random.Random(f"bfcl:{seed}:{category}").shuffle(order)
    return sorted(order[: max(0, limit)])


def load_cases(category: str, limit: int | None = None, seed: int = 0) -> list[BfclCase]:
    """The (selected) entries of one offline category."""
    shown = bfcl_lib.load_prompts(category, hint=True)
    checked = bfcl_lib.load_prompts(category, hint=False)
    answers = bfcl_lib.load_answers(category)
    if len(shown) != len(checked) or (answers is not None and len(answers) != len(checked)):
        raise RuntimeError(f"bfcl-eval's {category} files disagree in length; reinstall {bfcl_lib.PACKAGE}")
    cases = []
    for i in subset(len(checked), category, limit, seed):
        entry, functions = shown[i], checked[i]["function"]
        # BFCL pairs a prompt with its answer by position (some answer ids are written differently).
        answer = answers[i]["ground_truth"] if answers is not None else None
        names = ToolNames(f["name"] for f in entry["function"])
        tools = tool_specs(entry["function"], names)
        turns = entry["question"]
        messages = [dict(m) for m in turns[0]] if turns else []
        if answer is not None:
            truth = replay_calls(answer, functions, names, category)
        else:  # (ir)relevance: no possible answer; any call is right for relevance, none for irrelevance
            truth = relevance_call(tools) if category == "live_relevance" else []
        task = Task(id=entry["id"], input=messages, tools=[t.to_schema() for t in tools], ground_truth=truth,
                    environment_name="bfcl", category=category, metadata={"bfcl_index": i})
        cases.append(BfclCase(entry["id"], category, i, task, tools, names, functions, answer))
    return cases
