"""Run a policy over BFCL entries: one model turn per single-turn entry, one episode per multi-turn
entry (bfcl_multi_turn.py), scored by bfcl-eval's checker as it finishes and appended to
RUN/results.jsonl, so an interrupted run resumes where it stopped.

Rows are keyed by BFCL's entry id. A row whose model call failed in the backend (not the model's
fault) is dropped on the next run and retried, as `officegym eval` does; every other row is final.
scores.json and the reports are rebuilt from the rows of the selected entries.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.agent.batching import Batcher
from officegym.agent.messages import responses_items_to_chat_messages
from officegym.bench import bfcl_lib
from officegym.bench.bfcl_data import LIVE_AST, BfclCase
from officegym.bench.bfcl_multi_turn import run_and_row
from officegym.bench.bfcl_score import (
    backend_error_verdict,
    bfcl_summary,
    call_row,
    category_scores,
    pooled,
    score_completion,
)
from officegym.core.files import atomic_write, jsonl_line, load_appendable_jsonl, write_jsonl_rows
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams

RESULTS = "results.jsonl"
SCORES = "scores.json"


@dataclass
class BenchResult:
    rows: list[dict[str, Any]]  # one per selected entry that has a result, in BFCL's order
    new: int
    skipped: int


def backend_failed(row: dict[str, Any]) -> bool:
    return bool(row.get("backend_error"))


def result_row(case: BfclCase, completion: Completion, seconds: float) -> dict[str, Any]:
    """The stored result of one entry: the verdict, what the model did, and its cost."""
    if completion.error:
        verdict = backend_error_verdict(completion.error, decoded=None)
    else:
        verdict = score_completion(case, completion)
    return {
        "id": case.id,
        "category": case.category,
        "index": case.index,
        "valid": verdict["valid"],
        "error_type": verdict["error_type"],
        "error": verdict["error"],
        "decoded": verdict["decoded"],
        "question": _question(case),
        "text": completion.text,
        "calls": [call_row(c) for c in completion.tool_calls],
        "invalid": list(completion.invalid),
        "finish_reason": completion.finish_reason,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "seconds": round(seconds, 4),
        "backend_error": completion.error,
    }


def _question(case: BfclCase, limit: int = 600) -> str:
    text = case.task.user_prompt
    return text if len(text) <= limit else text[:limit] + "..."


async def _complete_all(cases: list[BfclCase], policy: Policy, params: SamplingParams, concurrency: int,
                        max_batch: int, on_done: Callable[[dict[str, Any]], None]) -> None:
    batcher = Batcher(policy, params, max_batch=max_batch)
    if policy.continuous:
        # The backend batches across conversations itself (see agent/loop.py).
        async def submit(request: PolicyRequest) -> Completion:
            return (await policy.complete([request], params))[0]
    else:
        submit = batcher.submit
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(case: BfclCase) -> None:
        async with gate:
            if case.multi_turn is not None:
                on_done(await run_and_row(case, submit))
                return
            request = PolicyRequest(messages=responses_items_to_chat_messages(case.task.input), tools=case.tools,
                                    task=case.task, turn=0)
            start = time.perf_counter()
            try:
                completion = await submit(request)
            except Exception as exc:  # a continuous backend raising fails this entry, not the run
                completion = Completion(finish_reason="error", error=f"{type(exc).__name__}: {exc}")
            on_done(result_row(case, completion, time.perf_counter() - start))

    try:
        await asyncio.gather(*(one(c) for c in cases))
    finally:
        await batcher.close()
        await policy.aclose()


def run_bfcl(cases: list[BfclCase], policy: Policy, out_dir: Path, params: SamplingParams | None = None,
             concurrency: int = 32, max_batch: int = 32, progress: Callable[[int], None] | None = None) -> BenchResult:
    """Run every selected entry that has no result in out_dir/results.jsonl yet, appending each."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / RESULTS
    rows = load_appendable_jsonl(path)
    if any(backend_failed(r) for r in rows):
        rows = [r for r in rows if not backend_failed(r)]
        write_jsonl_rows(path, rows)
    done = {r.get("id") for r in rows}
    todo = [c for c in cases if c.id not in done]
    skipped = len(cases) - len(todo)
    if progress is not None and skipped:
        progress(skipped)
    new_rows: list[dict[str, Any]] = []
    with open(path, "a", encoding="utf-8") as fh:

        def on_done(row: dict[str, Any]) -> None:
            fh.write(jsonl_line(row, default=repr))
            fh.flush()
            new_rows.append(row)
            if progress is not None:
                progress(1)

        if todo:
            asyncio.run(_complete_all(todo, policy, params or SamplingParams(), concurrency, max_batch, on_done))
    by_id = {r.get("id"): r for r in [*rows, *new_rows]}
    selected = [by_id[c.id] for c in cases if c.id in by_id]
    return BenchResult(selected, len(new_rows), skipped)


def summarise(rows: list[dict[str, Any]], categories: list[str]) -> dict[str, Any]:
    """scores.json: per-category accuracy with 95% Wilson intervals, BFCL's summary, the pooled figure."""
    scored = [r for r in rows if not backend_failed(r)]
    per_category = category_scores(scored)
    sizes = {c: bfcl_lib.category_size(c) for c in LIVE_AST}
    for c, v in per_category.items():
        v["size"] = bfcl_lib.category_size(c)
    return {
        "benchmark": "BFCL",
        "bfcl_eval_version": bfcl_lib.version(),
        "categories_run": categories,
        "per_category": {c: per_category[c] for c in categories if c in per_category},
        "summary": bfcl_summary(per_category, sizes),
        "pooled": pooled(scored),
        "backend_failures": sum(backend_failed(r) for r in rows),
    }


def write_scores(out_dir: Path, scores: dict[str, Any]) -> Path:
    path = out_dir / SCORES
    atomic_write(path, json.dumps(scores, indent=2, ensure_ascii=False) + "\n")
    return path
