"""BFCL's multi-turn categories as episodes against bfcl-eval's own backends, scored by its own
multi-turn checker: the oracle replays the per-turn ground truth to 100%, noop scores 0, a policy
that leaves out one call fails, bad model output is an error tool message or a scored failure and
never a crash, nothing a model writes reaches `eval` unparsed, runs resume. Skipped without bfcl-eval."""

from __future__ import annotations

import asyncio
import builtins
import decimal
import json

import pytest

pytest.importorskip("bfcl_eval")

from typer.testing import CliRunner

from officegym.agent.policies import make_policy
from officegym.bench import bfcl_lib
from officegym.bench.bfcl_data import MULTI_TURN, load_cases
from officegym.bench.bfcl_multi_turn import run_episode
from officegym.bench.bfcl_replay import GroundTruthError, parse_call_string
from officegym.bench.bfcl_run import RESULTS, run_bfcl, summarise
from officegym.bench.bfcl_session import CallRefused, render_call
from officegym.cli import app
from officegym.core.policy import Completion, Policy
from officegym.core.types import ToolCall

try:
    bfcl_lib.version()
    bfcl_lib.category_mapping()
    bfcl_lib.backend_class("MathAPI")  # imports mpmath
except bfcl_lib.BfclUnavailable as exc:
    pytest.skip(str(exc), allow_module_level=True)

LIMIT = 25  # entries per category for the replay (all 800 replay too: docs/benchmarks-bfcl.md)


def _leftover_instances() -> list[str]:
    namespace = vars(bfcl_lib._module(bfcl_lib._MULTI_TURN_UTILS))
    return [k for k in namespace if k.startswith("officegym_")]


@pytest.fixture(scope="module")
def replay_cases():
    return [case for c in MULTI_TURN for case in load_cases(c, limit=LIMIT)]


def test_oracle_replays_the_multi_turn_ground_truth_to_100_percent(replay_cases, tmp_path):
    result = run_bfcl(replay_cases, make_policy("oracle"), tmp_path)
    assert result.new == len(replay_cases) == 4 * LIMIT
    failed = {r["id"]: (r["error_type"], r["error"]) for r in result.rows if not r["valid"]}
    assert not failed, failed
    scores = summarise(result.rows, MULTI_TURN)
    for category in MULTI_TURN:
        v = scores["per_category"][category]
        assert v["n"] == LIMIT and v["accuracy"] == 1.0 and v["size"] == 200
        assert 0.8 < v["ci95"][0] < 1.0 and v["ci95"][1] == pytest.approx(1.0)
    assert scores["summary"]["multi_turn"] == 1.0
    assert scores["summary"]["overall"] == pytest.approx(0.3)  # only the multi-turn share was run
    assert not _leftover_instances()  # every episode's and every check's backends were freed
    row = result.rows[0]
    assert len(row["decoded"]) == len(row["turns"]) and row["steps"] >= len(row["turns"])


def test_a_ground_truth_call_used_before_miss_func_shows_it_still_runs(tmp_path):
    # multi_turn_miss_func_49's ground truth calls `tail` one turn before BFCL adds it to the
    # documents; bfcl-eval's executor runs any method of the entry's classes, and so does officegym.
    (case,) = [c for c in load_cases("multi_turn_miss_func") if c.id == "multi_turn_miss_func_49"]
    assert "tail" not in {t.name for t in case.tools}
    (row,) = run_bfcl([case], make_policy("oracle"), tmp_path).rows
    assert row["valid"], row["error"]


def test_noop_scores_zero_on_every_multi_turn_category(tmp_path):
    cases = [case for c in MULTI_TURN for case in load_cases(c, limit=8)]
    result = run_bfcl(cases, make_policy("noop"), tmp_path)
    per = summarise(result.rows, MULTI_TURN)["per_category"]
    assert {c: v["accuracy"] for c, v in per.items()} == dict.fromkeys(MULTI_TURN, 0.0)
    assert {r["error_type"] for r in result.rows} == {"multi_turn:empty_turn_model_response"}


class _Oracle(Policy):
    """Replays each turn's ground truth, optionally changed by `edit(case_id, turn, calls)`."""

    name = "edited-oracle"

    def __init__(self, edit=None):
        self.edit = edit
        self.requests = []

    async def complete(self, requests, params):
        out = []
        for r in requests:
            self.requests.append(r)
            turn = r.task.metadata["bfcl_turn"]
            calls = list(r.task.ground_truth) if r.turn == 0 else []
            if self.edit is not None and calls:
                calls = self.edit(r.task.id, turn, calls)
            out.append(Completion(tool_calls=calls) if calls else Completion(text="Done."))
        return out


def test_leaving_out_one_call_fails_with_the_checkers_reason(tmp_path):
    cases = load_cases("multi_turn_base", limit=6)
    last_turn = {c.id: max(t for t, calls in enumerate(c.multi_turn.oracle) if calls) for c in cases}

    def drop_last(case_id, turn, calls):
        return calls[:-1] if turn == last_turn[case_id] else calls

    rows = run_bfcl(cases, _Oracle(drop_last), tmp_path).rows
    assert not any(r["valid"] for r in rows)
    kinds = {r["error_type"] for r in rows}
    assert kinds <= {"multi_turn:instance_state_mismatch", "multi_turn:execution_response_mismatch",
                     "multi_turn:empty_turn_model_response"}, kinds


def test_miss_func_adds_the_held_back_functions_at_their_turn(tmp_path):
    case = next(c for c in load_cases("multi_turn_miss_func", limit=10) if c.multi_turn.added)
    (turn, (_docs, specs)), = case.multi_turn.added.items()
    policy = _Oracle()
    (row,) = run_bfcl([case], policy, tmp_path).rows
    assert row["valid"], row["error"]
    added = {s.name for s in specs}
    for r in policy.requests:
        names = {t.name for t in r.tools}
        now = r.task.metadata["bfcl_turn"]
        assert (added <= names) == (now >= turn) == bool(added & names)
        if now == turn and r.turn == 0:
            assert r.messages[-1] == {"role": "user", "content": bfcl_lib.added_functions_prompt()}
            assert r.previous is None  # the tools changed: the conversation is rendered anew
    assert row["turns"][turn]["user"] == [bfcl_lib.added_functions_prompt()]


def test_render_call_writes_only_validated_literals():
    offered = {"cd", "mean"}
    assert render_call("cd", {"folder": "it's \"here\"\n"}, offered) == "cd(folder='it\\'s \"here\"\\n')"
    text = render_call("mean", {"numbers": [1, 2.5, None, True, {"k": "v"}]}, offered)
    assert text == "mean(numbers=[1, 2.5, None, True, {'k': 'v'}])"
    for name, args, why in [
        ("rm_rf", {}, "not available"),
        ("__import__", {}, "not available"),
        ("cd", ["document"], "not a JSON object"),
        ("cd", {"folder=__import__('os').getcwd(),x": 1}, "not a Python identifier"),
        ("cd", {"lambda": 1}, "not a Python identifier"),
        ("cd", {"folder": float("nan")}, "not a finite number"),
        ("cd", {"folder": {1: "a"}}, "key that is not a string"),
        ("cd", {"folder": ("a",)}, "not a JSON value"),
        ("cd", {"folder": object()}, "not a JSON value"),
    ]:
        with pytest.raises(CallRefused, match=why):
            render_call(name, args, offered)
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(CallRefused, match="nested too deeply"):
        render_call("mean", {"numbers": deep}, offered)
    with pytest.raises(CallRefused, match="over officegym's limit"):
        render_call("power", {"base": 10, "exponent": 10**9}, {"power"})


def test_ground_truth_strings_are_parsed_not_evaluated():
    classes = ["GorillaFileSystem", "MathAPI"]
    assert parse_call_string("sort('final_report.pdf')", classes) == ("sort", {"file_name": "final_report.pdf"})
    assert parse_call_string("cd(folder='..')", classes) == ("cd", {"folder": ".."})
    for bad in ["cd(folder=__import__('os').getcwd())", "os.system('x')", "cd(**{'folder': 'x'})", "cd(",
                "nosuch(1)"]:
        with pytest.raises(GroundTruthError):
            parse_call_string(bad, classes)


class _Zoo(Policy):
    """Per entry id, a script of completions, one per request (the last repeats)."""

    name = "zoo"

    def __init__(self, scripts):
        self.scripts = scripts
        self.seen = {}

    async def complete(self, requests, params):
        out = []
        for r in requests:
            self.seen.setdefault(r.task.id, []).append(r)
            script = self.scripts[r.task.id]
            out.append(script[min(len(self.seen[r.task.id]) - 1, len(script) - 1)](r))
        return out


def test_bad_model_output_is_an_error_message_or_a_scored_failure_never_a_crash(tmp_path):
    cases = [c for c in load_cases("multi_turn_base")
             if "GorillaFileSystem" in c.multi_turn.entry["involved_classes"]][:8]
    ids = [c.id for c in cases]
    assert len(ids) == 8
    injection = "folder=__import__('builtins').setattr(__import__('builtins'), 'PWNED', 1) or 'x', y"
    done = lambda r: Completion(text="Done.")  # noqa: E731
    scripts = {
        # arguments that are not JSON: the turn ends, nothing runs
        ids[0]: [lambda r: Completion(tool_calls=[ToolCall("cd", None, '{"folder": ', parse_error="Expecting value")]),
                 done],
        # an unknown function, a backend method raising (unexpected argument), an injection attempt
        ids[1]: [lambda r: Completion(tool_calls=[ToolCall("rm_rf", {"path": "/"}),
                                                  ToolCall("cd", {"no_such_argument": 1}),
                                                  ToolCall("cd", {injection: 1}),
                                                  ToolCall("cd", {"folder": "'); __import__('os').getcwd(); ('"})]),
                 done],
        # a malformed call fragment in the text
        ids[2]: [lambda r: Completion(text="<tool_call>{oops", invalid=["not JSON: {oops"]), done],
        # never stops calling: force-terminated after BFCL's step limit
        ids[3]: [lambda r: Completion(tool_calls=[ToolCall("pwd", {})])],
        # the model backend fails: not scored, retried on the next run
        ids[4]: [lambda r: Completion(finish_reason="error", error="ConnectionError: server went away")],
        # arguments that are a JSON list, not an object
        ids[5]: [lambda r: Completion(tool_calls=[ToolCall("ls", ["a"])]), done],
        # a backend answering with its own error; then a non-finite number, refused
        ids[6]: [lambda r: Completion(tool_calls=[ToolCall("rmdir", {"dir_name": "nope"})]), done],
        ids[7]: [lambda r: Completion(tool_calls=[ToolCall("cd", {"folder": float("inf")})]), done],
    }
    zoo = _Zoo(scripts)
    rows = {r["id"]: r for r in run_bfcl(cases, zoo, tmp_path).rows}
    assert not hasattr(builtins, "PWNED")
    assert not any(r["valid"] for r in rows.values())

    # non-JSON arguments: the step is not executed, the turn ends, the model is told why
    r0 = rows[ids[0]]
    assert r0["turns"][0]["steps"][0]["undecodable"] and r0["decoded"][0] == []
    second = zoo.seen[ids[0]][1]  # the next request is the next user turn's
    assert second.task.metadata["bfcl_turn"] == 1
    assert "did not decode" in next(m["content"] for m in second.messages if m["role"] == "tool")

    results = rows[ids[1]]["turns"][0]["steps"][0]["results"]
    assert results[0] == "Error during execution: function 'rm_rf' is not available"
    assert results[1].startswith("Error during execution:") and "no_such_argument" in results[1]
    assert "not a Python identifier" in results[2]
    # a string value stays a string: the backend looked for a folder of that name
    assert json.loads(results[3]) == {"error": "cd: '\'); __import__(\'os\').getcwd(); (\'': No such file or directory"}
    assert rows[ids[1]]["decoded"][0] == [[
        "cd(no_such_argument=1)", "cd(folder=\"'); __import__('os').getcwd(); ('\")"]]

    assert rows[ids[2]]["turns"][0]["steps"][0]["undecodable"] == ["malformed tool call: not JSON: {oops"]

    r3 = rows[ids[3]]
    assert r3["error_type"] == "multi_turn:force_terminated"
    assert len(r3["turns"]) == 1 and len(r3["turns"][0]["steps"]) == bfcl_lib.max_steps_per_turn() + 1

    assert rows[ids[4]]["error_type"] == "officegym:backend_error" and rows[ids[4]]["backend_error"]
    assert "must be a JSON object" in rows[ids[5]]["turns"][0]["steps"][0]["undecodable"][0]
    assert rows[ids[6]]["turns"][0]["steps"][0]["results"][0].startswith("{")  # the backend's own error answer
    assert "not a finite number" in rows[ids[7]]["turns"][0]["steps"][0]["results"][0]
    assert not _leftover_instances()

    # The failed backends are retried; every other row is final.
    again = run_bfcl(cases, make_policy("oracle"), tmp_path)
    assert again.new == 1 and again.skipped == len(cases) - 1
    assert {r["id"]: r for r in again.rows}[ids[4]]["valid"]


def test_a_policy_that_raises_fails_the_entry_as_a_backend_error():
    (case,) = load_cases("multi_turn_base", limit=1)

    async def submit(request):
        raise RuntimeError("boom")

    episode = asyncio.run(run_episode(case, submit))
    assert episode.backend_error == "RuntimeError: boom" and episode.steps == 1
    assert not _leftover_instances()


def test_math_precision_does_not_leak_out_of_a_call():
    import mpmath

    case = next(c for c in load_cases("multi_turn_base") if "MathAPI" in c.multi_turn.entry["involved_classes"])
    prec, dps = decimal.getcontext().prec, mpmath.mp.dps
    with bfcl_lib.Backends(case.multi_turn.entry, case.category) as backends:
        out = backends.execute(["square_root(number=2, precision=3)", "logarithm(value=8, base=2, precision=40)"])
    assert out[0] == "{'result': Decimal('1.41')}" and out[1].startswith("{'result': mpf('3.0")
    assert (decimal.getcontext().prec, mpmath.mp.dps) == (prec, dps)
    assert not _leftover_instances()


def test_episodes_of_one_entry_never_share_backends():
    (case,) = load_cases("multi_turn_base", limit=1)
    policy = make_policy("oracle")

    async def submit(request):
        return (await policy.complete([request], None))[0]

    async def twice():
        return await asyncio.gather(run_episode(case, submit), run_episode(case, submit))

    first, second = asyncio.run(twice())
    assert first.decoded == second.decoded and first.transcript == second.transcript


def test_cli_runs_the_multi_turn_group_and_resumes(tmp_path):
    runner = CliRunner()
    out = tmp_path / "bfcl"
    args = ["bench", "bfcl", "--policy", "oracle", "--out", str(out), "--limit", "2", "--categories", "multi_turn"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    scores = json.loads((out / "scores.json").read_text())
    assert {c: v["accuracy"] for c, v in scores["per_category"].items()} == dict.fromkeys(MULTI_TURN, 1.0)
    assert scores["summary"]["multi_turn"] == 1.0 and scores["summary"]["overall"] == pytest.approx(0.3)
    rows = [json.loads(line) for line in (out / RESULTS).read_text().splitlines()]
    assert len(rows) == 8 and len({r["id"] for r in rows}) == 8
    assert "multi-turn (mean of base" in (out / "report.md").read_text()
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and "0 new entries, 8 already done" in " ".join(res.output.split())
    res = runner.invoke(app, [*args[:3], "noop", *args[4:], "--fresh"])
    assert res.exit_code == 0, res.output
    scores = json.loads((out / "scores.json").read_text())
    assert scores["summary"]["multi_turn"] == 0.0
    assert "Model response list is empty" in (out / "report.html").read_text()
