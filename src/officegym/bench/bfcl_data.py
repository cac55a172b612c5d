"""BFCL's categories and test entries as officegym cases: the conversation, the tools, the answer.

Which categories run here, and why the others do not, is stated in `NOT_RUN` (and in
docs/benchmarks-bfcl.md): every single-turn category runs offline through bfcl-eval's AST checker
or its relevance rule, and the four multi-turn categories run as episodes against bfcl-eval's own
executable backends (bfcl_multi_turn.py) and are scored by its multi-turn checker; the agentic and
format-sensitivity categories need services or a driver officegym does not have.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from officegym.bench import bfcl_lib
from officegym.bench.bfcl_convert import ToolNames, tool_specs
from officegym.bench.bfcl_replay import relevance_call, replay_calls, replay_multi_turn
from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolSpec

NON_LIVE_AST = ["simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple"]
LIVE_AST = ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"]
RELEVANCE = ["irrelevance", "live_irrelevance", "live_relevance"]
SINGLE_TURN = [*NON_LIVE_AST, "irrelevance", *LIVE_AST, "live_irrelevance", "live_relevance"]
MULTI_TURN = ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"]
OFFLINE = [*SINGLE_TURN, *MULTI_TURN]

NOT_RUN = {
    "web_search_base": "agentic: needs live web search through SerpAPI (an API key and the network)",
    "web_search_no_snippet": "agentic: needs live web search through SerpAPI (an API key and the network)",
    "memory_kv": "agentic: needs BFCL's prerequisite conversations run first, their memory saved to files that "
                 "the scored entry loads, and its agentic answer checker; officegym's multi-turn driver does not "
                 "chain entries that way",
    "memory_vector": "agentic: its memory backend embeds with sentence-transformers and faiss, downloading "
                     "a model from the Hugging Face hub",
    "memory_rec_sum": "agentic: needs BFCL's prerequisite conversations run first, their memory saved to files "
                      "that the scored entry loads, and its agentic answer checker; officegym's multi-turn driver "
                      "does not chain entries that way",
    "format_sensitivity": "not scored by BFCL (it measures prompt-format variance of prompting models)",
}
_NOT_RUN_GROUPS = {
    "web_search": ["web_search_base"],
    "memory": ["memory_kv", "memory_vector"],
    "agentic": ["web_search_base", "memory_kv", "memory_vector"],
}
ALIASES = {"simple": "simple_python", "java": "simple_java", "javascript": "simple_javascript"}
GROUPS = {
    "all": OFFLINE,
    "single_turn": SINGLE_TURN,
    "multi_turn": MULTI_TURN,
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
class MultiTurnSpec:
    """What an episode of a multi-turn entry needs beyond its first turn.

    `entry` is what bfcl-eval's backends and checker read (id, involved_classes, initial_config);
    `turns` the user messages of each turn as BFCL gives them (an empty turn is where miss_func adds
    functions); `added` the functions added before a turn (their documents and tools); `ground_truth`
    BFCL's per-turn call strings, for the checker; `oracle` the same calls parsed (with `ast`) into
    ToolCalls, what `--policy oracle` replays turn by turn."""

    entry: dict[str, Any]
    turns: list[list[dict[str, Any]]]
    added: dict[int, tuple[list[dict[str, Any]], list[ToolSpec]]]
    ground_truth: list[list[str]]
    oracle: list[list[ToolCall]]

    def turn_task(self, case: BfclCase, turn: int, tools: list[ToolSpec]) -> Task:
        """The Task a policy sees during one user turn (scripted policies replay its ground truth)."""
        return Task(id=case.id, input=[dict(m) for m in self.turns[turn]], tools=[t.to_schema() for t in tools],
                    ground_truth=list(self.oracle[turn]), environment_name="bfcl", category=case.category,
                    metadata={"bfcl_index": case.index, "bfcl_turn": turn})


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
    multi_turn: MultiTurnSpec | None = None  # set for the multi-turn categories


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
    if category in MULTI_TURN:
        return load_multi_turn_cases(category, limit, seed)
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


def load_multi_turn_cases(category: str, limit: int | None = None, seed: int = 0) -> list[BfclCase]:
    """The (selected) entries of one multi-turn category, each with its MultiTurnSpec."""
    entries = bfcl_lib.load_prompts(category, hint=True)
    answers = bfcl_lib.load_answers(category) or []
    if len(answers) != len(entries):
        raise RuntimeError(f"bfcl-eval's {category} files disagree in length; reinstall {bfcl_lib.PACKAGE}")
    for class_name in sorted({c for e in entries for c in e["involved_classes"]}):
        bfcl_lib.backend_class(class_name)  # BfclUnavailable now, not mid-run, when a backend does not import
    cases = []
    for i in subset(len(entries), category, limit, seed):
        entry, truth = entries[i], answers[i]["ground_truth"]
        missed = {int(t): list(docs) for t, docs in (entry.get("missed_function") or {}).items()}
        functions = list(entry["function"])
        every = functions + [f for docs in missed.values() for f in docs]
        names = ToolNames(f["name"] for f in every)
        added = {t: (docs, tool_specs(docs, names)) for t, docs in missed.items()}
        tools = tool_specs(functions, names)
        classes = list(entry["involved_classes"])
        spec = MultiTurnSpec(
            entry={"id": entry["id"], "involved_classes": classes, "initial_config": entry.get("initial_config", {})},
            turns=[list(turn) for turn in entry["question"]],
            added=added,
            ground_truth=[list(turn) for turn in truth],
            oracle=replay_multi_turn(truth, classes, names),
        )
        first = [dict(m) for m in spec.turns[0]] if spec.turns else []
        task = Task(id=entry["id"], input=first, tools=[t.to_schema() for t in tools], ground_truth=spec.oracle[0],
                    environment_name="bfcl", category=category, metadata={"bfcl_index": i, "bfcl_turn": 0})
        cases.append(BfclCase(entry["id"], category, i, task, tools, names, functions, None, multi_turn=spec))
    return cases
