from __future__ import annotations

from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.eval.metrics import compute_metrics

WRITES = frozenset({"email_send_email"})


def row(task_id: int, reward: float, calls: list[str], status: list[str], frags: list[str] = ()) -> dict:
    output = [{"type": "function_call", "name": n, "arguments": "{}"} for n in calls]
    return {"id": task_id, "reward": reward, "response": {"output": output},
            "officegym": {"task_id": task_id, "call_status": status, "invalid_fragments": list(frags)}}


def test_failures_with_an_invalid_call_are_counted_whatever_their_primary_kind():
    tasks = [Task(id=i, input=[], ground_truth=[ToolCall("email_send_email", {})]) for i in range(3)]
    rows = [
        row(0, 0.0, ["email_send_email"], ["error"]),  # the write failed: primary kind "missing write"
        row(1, 0.0, [], [], ["<tool_call>{bad"]),  # only a malformed fragment: "missing write" too
        row(2, 1.0, ["email_send_email"], ["ok"]),
    ]
    m = compute_metrics(rows, tasks, WRITES)
    assert m["errors"]["missing write"] == 2 and m["errors"]["invalid call"] == 0
    assert m["failures_with_invalid_call"] == 2
    assert m["invalid_call_rate"] == 2 / 3


def errored(task_id: int, error: str, source: str | None = None) -> dict:
    """A rollout that ended in an error (rows without a source: the model backend's): the verifier
    replayed no call, so on a task that changes nothing it "matched"."""
    r = row(task_id, 1.0, [], [])
    r["officegym"].update(stop_reason="error", error=error, verdict={"matched": True})
    if source is not None:
        r["officegym"]["error_source"] = source
    return r


def test_errored_rollouts_are_counted_apart_from_every_figure():
    tasks = [Task(id=0, input=[], ground_truth=[]), Task(id=1, input=[], ground_truth=[ToolCall("email_send_email", {})])]
    rows = [row(1, 0.0, [], []), row(1, 1.0, ["email_send_email"], ["ok"]),
            errored(0, "HTTP 400: no tools"), errored(0, "HTTP 400: no tools", "backend"),
            errored(1, "ZeroDivisionError", "environment")]
    m = compute_metrics(rows, tasks, WRITES)
    assert m["rollouts"] == 2 and m["errored"] == 3 and m["tasks"] == 1
    assert m["errored_causes"] == {"backend: HTTP 400: no tools": 2, "environment: ZeroDivisionError": 1}
    assert m["accuracy"] == 0.5 and set(m["buckets"]) == {"1 write", ">= 1 write"}  # no "empty ground truth"
    assert m["by"]["category"]["None"]["n"] == 2
    assert m["pass_at_k"]["2"] == 1.0 and m["stop_reasons"] == {"": 2}


def test_when_every_rollout_errored_there_is_no_score():
    tasks = [Task(id=0, input=[], ground_truth=[])]
    m = compute_metrics([errored(0, "RuntimeError: gone")] * 3, tasks, WRITES)
    assert m["accuracy"] is None and m["mean_reward"] is None and m["side_effect_rate"] is None
    assert m["rollouts"] == 0 and m["errored"] == 3 and m["errored_causes"] == {"backend: RuntimeError: gone": 3}
    assert compute_metrics([], tasks)["accuracy"] is None


def test_the_report_shows_errored_rollouts_apart(tmp_path):
    from officegym.eval.report import compare_table, summary_rows, write_report

    tasks = [Task(id=0, input=[], ground_truth=[]), Task(id=1, input=[], ground_truth=[])]
    rows = [row(1, 1.0, [], []), errored(0, "HTTP 400: tool choice needs a parser")]
    m = compute_metrics(rows, tasks, WRITES)
    html_path, md_path = write_report(tmp_path, m, rows)
    md = md_path.read_text()
    assert "1 of 2 rollouts ended in an error and are not scored: every figure is over the 1 that ran" in md
    assert "| backend: HTTP 400: tool choice needs a parser | 1 |" in md and "## Errored rollouts (1, not scored)" in md
    assert "## Failures (0)" in md  # the errored rollout is no failure of the model
    assert "task 0 sample None: backend: HTTP 400" in html_path.read_text()
    assert ("errored rollouts (not scored)", "1") in summary_rows(m)

    nothing = compute_metrics([errored(0, "gone")], tasks, WRITES)
    assert ("accuracy", "-") in summary_rows(nothing) and "none ran, so there is no score" in \
        write_report(tmp_path / "none", nothing, [errored(0, "gone")])[1].read_text()
    _, table = compare_table({"a": m, "b": nothing})
    assert ["accuracy", "100.0%", "-"] in table and ["errored rollouts (not scored)", "1", "1"] in table


def test_the_headline_scores_only_what_ran_and_says_what_errored():
    from officegym.eval.report import headline

    tasks = [Task(id=0, input=[], ground_truth=[])]
    m = compute_metrics([row(0, 1.0, [], []), errored(0, "gone")], tasks, WRITES)
    assert headline(m).startswith("mean reward 1.000 [") and headline(m).endswith(
        "fully right 100.0% on 1 tasks; 1 rollouts ended in an error and are not scored")
    assert headline(compute_metrics([errored(0, "gone")], tasks, WRITES)) == (
        "no rollout ran, so there is no score; 1 rollouts ended in an error and are not scored")
