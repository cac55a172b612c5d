"""benchmarks/role_arguments.py: the solver call's arguments against the oracle's, per argument."""

from __future__ import annotations

import json


def _row(subset: str, agent_args: dict | None, extra_calls: tuple = ()) -> dict:
    output = [{"type": "function_call", "name": n, "arguments": json.dumps(a)} for n, a in extra_calls]
    if agent_args is not None:
        output.append({"type": "function_call", "name": "find_x", "arguments": json.dumps(agent_args)})
    truth = [{"name": "read_document", "arguments": '{"doc_id": "D1"}'},
             {"name": "find_x", "arguments": json.dumps({"budget": 1000, "tags": ["a", "b"], "slo": 0.99})},
             {"name": "submit_x", "arguments": "{}"}]
    return {"subset": subset, "ground_truth": truth, "response": {"output": output}}


def test_counts_right_missing_and_unasked_arguments(benchmark_script) -> None:
    mod = benchmark_script("role_arguments")
    rows = [
        _row("trained", {"budget": 1000.0, "tags": ["b", "a"], "slo": 0.99}, (("read_document", {"doc_id": "D1"}),)),
        _row("trained", {"budget": 999, "tags": ["a", "b"], "latency": 5}),
        _row("heldout_wording", None),
    ]
    c = mod.tally(rows, None)
    # [right, left out, oracle passed it, passed unasked, tasks]
    assert c[("trained", "budget")] == [1, 0, 2, 0, 2]
    assert c[("trained", "tags")] == [2, 0, 2, 0, 2]
    assert c[("trained", "slo")] == [1, 1, 2, 0, 2]
    assert c[("trained", "latency")] == [0, 0, 0, 1, 2]
    assert c[("trained", "(every argument)")][:3] == [1, 0, 2]
    # never called the solver: every argument counts as left out
    assert c[("heldout_wording", "budget")] == [0, 1, 1, 0, 1]
    assert c[("heldout_wording", "(every argument)")][:3] == [0, 1, 1]


def test_solver_call_skips_reads_and_answers(benchmark_script) -> None:
    mod = benchmark_script("role_arguments")
    truth = [{"name": "read_document", "arguments": "{}"}, {"name": "calculate", "arguments": "{}"},
             {"name": "find_plan", "arguments": '{"a": 1}'}, {"name": "submit_plan", "arguments": "{}"}]
    assert mod.solver_call(truth, None) == ("find_plan", {"a": 1})
    assert mod.solver_call(truth, "submit_plan") == ("submit_plan", {})
    assert mod.solver_call([{"name": "escalate", "arguments": "{}"}], None) is None
