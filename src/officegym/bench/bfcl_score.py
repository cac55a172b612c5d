"""Scoring: one model turn -> bfcl-eval's verdict on it; verdicts -> per-category accuracy with
95% Wilson intervals and BFCL's overall figure.

Per entry the rules are bfcl-eval's own (`eval_checker/eval_runner.py`, version in bfcl_lib):
* AST categories: the calls are decoded to `[{name: {param: value}}]` and handed to its
  `ast_checker`; output that does not decode (arguments that are not a JSON object, a malformed
  tool-call fragment) fails as "ast_decoder:decoder_failed".
* irrelevance / live_irrelevance: right when the turn holds no function call, where output that
  does not decode counts as no call (BFCL's rule); live_relevance: right when it holds one.
A checker that raises on odd model output (it was written for well-formed calls) fails the entry
with the exception's text; it never stops the run.

The aggregate follows `generate_leaderboard_csv` in bfcl-eval's eval_runner_helper.py: the
non-live AST summary is the plain mean of simple (itself the mean of Python, Java and JavaScript),
multiple, parallel and parallel-multiple; the live AST summary weights its four categories by
size; irrelevance is the mean of the two irrelevance categories; multi-turn is the plain mean of
base, miss_func, miss_param and long_context (each scored by bfcl_multi_turn.py with bfcl-eval's
multi-turn checker); overall = 10% non-live + 10% live + 10% irrelevance + 30% multi-turn + 40%
agentic, a category not run counting 0 (as BFCL counts it). Sizes are the full categories' sizes, so a --limit run estimates the full run's figure.
"""

from __future__ import annotations

import traceback
from typing import Any

from officegym.bench import bfcl_lib
from officegym.bench.bfcl_convert import CallError, decode_calls, unknown_functions
from officegym.bench.bfcl_data import MULTI_TURN, NOT_RUN, OFFLINE, BfclCase
from officegym.core.policy import Completion
from officegym.eval.stats import wilson_interval


def _fail(error: str, error_type: str, decoded: Any = None) -> dict[str, Any]:
    return {"valid": False, "error": [error], "error_type": error_type, "decoded": decoded}


def score_completion(case: BfclCase, completion: Completion) -> dict[str, Any]:
    """{valid, error, error_type, decoded} for the model's turn on one entry."""
    try:
        decoded = decode_calls(completion.tool_calls, case.names)
        decode_error = None
    except CallError as exc:
        decoded, decode_error = None, str(exc)
    if decode_error is None and completion.invalid:
        decode_error = f"malformed tool call: {completion.invalid[0]}"
    if bfcl_lib.is_relevance_or_irrelevance(case.category):
        has_call = decode_error is None and not bfcl_lib.is_empty_output(decoded)
        if "irrelevance" in case.category:
            if has_call:
                return _fail("Valid syntax. Successfully decode AST when it should not.",
                             "irrelevance_error:decoder_success", decoded)
        elif not has_call:
            return _fail(f"Invalid syntax. Failed to decode AST when it should have. {decode_error or ''}".strip(),
                         "relevance_error:decoder_failed", decoded)
        return {"valid": True, "error": [], "error_type": None, "decoded": decoded}
    if decode_error is not None:
        return _fail(f"Invalid syntax. Failed to decode AST. {decode_error}", "ast_decoder:decoder_failed")
    unknown = unknown_functions(completion.tool_calls, case.names)
    if unknown:
        offered = ", ".join(t.name for t in case.tools)
        return _fail(f"Called {', '.join(map(repr, unknown))}, which this entry does not offer (offered: {offered}).",
                     "officegym:unknown_function", decoded)
    if not bfcl_lib.is_function_calling_format(decoded):
        return _fail("Did not output in the specified format.", "ast_decoder:decoder_wrong_output_format", decoded)
    try:
        result = bfcl_lib.ast_check(case.functions, decoded, case.answer or [], case.category)
    except Exception as exc:  # the checker indexes model output freely; odd output must not stop the run
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return _fail(f"bfcl-eval's checker raised {type(exc).__name__}: {exc} (at {where.name}, line {where.lineno})",
                     "officegym:checker_exception", decoded)
    return {"valid": bool(result.get("valid")), "error": result.get("error") or [],
            "error_type": result.get("error_type"), "decoded": decoded}


# ---- aggregate -------------------------------------------------------------------------------

def category_scores(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Category -> {n, correct, accuracy, ci95: [low, high]} over scored rows."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        c = out.setdefault(row["category"], {"n": 0, "correct": 0})
        c["n"] += 1
        c["correct"] += bool(row.get("valid"))
    for c in out.values():
        c["accuracy"] = c["correct"] / c["n"] if c["n"] else None
        c["ci95"] = list(wilson_interval(c["correct"], c["n"]))
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def bfcl_summary(per_category: dict[str, dict[str, Any]], sizes: dict[str, int]) -> dict[str, Any]:
    """BFCL's summary figures from per-category accuracies (a category not run counts 0).
    `sizes`: the live categories' full sizes, the live summary's weights."""
    def acc(c: str) -> float:
        v = per_category.get(c, {}).get("accuracy")
        return float(v) if v is not None else 0.0

    simple = _mean([acc("simple_python"), acc("simple_java"), acc("simple_javascript")])
    non_live = _mean([simple, acc("multiple"), acc("parallel"), acc("parallel_multiple")])
    live_cats = ["live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"]
    weight = sum(sizes.get(c, 0) for c in live_cats)
    live = sum(acc(c) * sizes.get(c, 0) for c in live_cats) / weight if weight else 0.0
    irrelevance = _mean([acc("irrelevance"), acc("live_irrelevance")])
    multi_turn = _mean([acc(c) for c in MULTI_TURN])
    agentic = 0.0  # not run here (bfcl_data.NOT_RUN): BFCL counts it 0
    overall = 0.1 * non_live + 0.1 * live + 0.1 * irrelevance + 0.3 * multi_turn + 0.4 * agentic
    return {
        "non_live_simple_ast": simple,
        "non_live_ast": non_live,
        "live_ast": live,
        "irrelevance": irrelevance,
        "relevance": acc("live_relevance"),
        "multi_turn": multi_turn,
        "agentic": agentic,
        "overall": overall,
        "overall_weights": {"non_live_ast": 10, "live_ast": 10, "irrelevance": 10, "multi_turn": 30, "agentic": 40},
        "not_run": [c for c in (*OFFLINE, *NOT_RUN) if c not in per_category],
    }


def pooled(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """All scored entries together: a single accuracy with its Wilson interval (officegym's figure,
    not BFCL's; it is what before/after comparisons of the same selection use)."""
    n = len(rows)
    k = sum(bool(r.get("valid")) for r in rows)
    return {"n": n, "correct": k, "accuracy": k / n if n else None, "ci95": list(wilson_interval(k, n))}


def call_row(call: Any) -> dict[str, Any]:
    """A tool call as a results row stores it (the raw text where its arguments did not decode)."""
    arguments = call.arguments if call.parse_error is None else call.raw_arguments
    return {"name": call.name, "arguments": arguments, **({"parse_error": call.parse_error} if call.parse_error else {})}


def backend_error_verdict(error: str, **fields: Any) -> dict[str, Any]:
    """The verdict of an entry whose model backend failed (rerun on resume, not scored)."""
    return {"valid": False, "error": [f"model backend failed: {error}"], "error_type": "officegym:backend_error", **fields}
