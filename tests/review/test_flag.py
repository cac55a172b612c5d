"""Flagging rules on crafted rollouts, the rows reader, and queueing into the store."""

from __future__ import annotations

import json

from officegym.review.flag import DEFAULT_WEIGHTS, FlagConfig, audit_draw, flag_rows, flag_run
from officegym.review.rows import RolloutRef, read_run
from officegym.review.store import Filters, Store


def _refs(rows):
    return [RolloutRef(r, "rollouts.jsonl", i + 1) for i, r in enumerate(rows)]


def _flag(rows, env=None, **config):
    config.setdefault("audit_share", 0.0)
    return flag_rows(_refs(rows), FlagConfig(**config), (lambda ref, task: env) if env is not None else None)


def _reasons(report):
    return {(it.ref.task_id, it.sample_index): sorted(r.code for r in it.reasons) for it in report.items}


def test_all_fail_with_broken_oracle_is_a_human_item_and_with_sound_oracle_is_not(maker, tasks, env):
    wrong = ("email_reply_email", {"email_id": "00000039", "body": "OK"})
    rows = [maker.row(tasks["broken"], [wrong], s) for s in range(3)]
    rows += [maker.row(tasks["delete"], [], s) for s in range(3)]
    report = _flag(rows, env)
    assert _reasons(report) == {("broken", 0): ["oracle_fails"]}
    detail = report.items[0].reasons[0].detail
    assert "0/3 samples pass" in detail and "Email not found." in detail
    assert report.training_only == 1  # the sound task whose samples all fail: a training signal
    # Without an environment the oracle cannot be replayed: both groups are unchecked, lower priority.
    unchecked = _flag(rows)
    assert _reasons(unchecked) == {("broken", 0): ["all_fail_unchecked"], ("delete", 0): ["all_fail_unchecked"]}
    assert unchecked.items[0].priority == DEFAULT_WEIGHTS["all_fail_unchecked"] < DEFAULT_WEIGHTS["oracle_fails"]


def test_oracle_plan_from_metadata_is_replayed(maker, tasks, env, gt):
    # The ground truth is sound, but the recorded oracle plan (reads + writes) deletes a customer
    # the ground truth keeps: the plan does not verify, so the task is queued.
    task = tasks["reply"]
    row_task = json.loads(json.dumps(task.to_row()))
    row_task["oracle_calls"] = [{"name": "customer_relationship_manager_delete_customer",
                                 "arguments": json.dumps({"customer_id": "00000015"})}]
    from officegym.core.task import Task

    bad = Task.from_row(row_task)
    rows = [maker.row(bad, [], s) for s in range(2)]
    assert _reasons(_flag(rows, env)) == {("reply", 0): ["oracle_fails"]}
    assert "does not verify" in _flag(rows, env).items[0].reasons[0].detail


def test_all_pass_hard_needs_difficulty_and_several_samples(maker, tasks, env, gt):
    hard = [maker.row(tasks["move"], gt(tasks["move"]), s) for s in range(3)]
    assert _reasons(_flag(hard, env)) == {("move", 0): ["all_pass_hard"]}
    assert _reasons(_flag(hard, env, hard_difficulty=10)) == {}
    assert _reasons(_flag(hard[:1], env)) == {}  # one sample says little
    easy = [maker.row(tasks["reply"], gt(tasks["reply"]), s) for s in range(3)]
    assert _reasons(_flag(easy, env)) == {}  # no difficulty recorded: not "hard"


def test_distinct_rewarded_end_states(maker, tasks, env, gt):
    rows = [
        maker.row(tasks["reply"], gt(tasks["reply"]), 0),
        maker.row(tasks["reply"], [("email_reply_email", {"email_id": "00000039", "body": "thanks"})], 1),
        maker.row(tasks["reply"], gt(tasks["reply"]), 2),
    ]
    assert all(r["reward"] == 1.0 for r in rows)  # the outcome verifier ignores the letter case
    report = _flag(rows, env)
    # One item per distinct state (its first sample), the detail says what differs.
    assert _reasons(report) == {("reply", 0): ["distinct_rewarded_states"], ("reply", 1): ["distinct_rewarded_states"]}
    detail = report.items[0].reasons[0].detail
    assert "2 different end states" in detail and "'Thanks'" not in detail and '"thanks"' in detail
    # The same state reached by different call orders is one state.
    both = [("email_reply_email", {"email_id": "00000039", "body": "Thanks"}),
            ("customer_relationship_manager_delete_customer", {"customer_id": "00000015"})]
    task = tasks["reply"]
    same = [maker.row(task, both, 0), maker.row(task, both[::-1], 1)]
    assert _reasons(_flag(same, env)) == {}
    assert _reasons(_flag(rows)) == {}  # without an environment end states are not compared


def test_verifier_errors(maker, tasks, env, gt):
    ok = maker.row(tasks["reply"], gt(tasks["reply"]), 0)
    no_verdict = maker.row(tasks["reply"], gt(tasks["reply"]), 1, verdict=None)
    nan_reward = maker.row(tasks["reply"], gt(tasks["reply"]), 2, reward=None)
    lying = maker.row(tasks["delete"], [], 0)  # recorded as matched, but nothing was deleted
    lying["officegym"]["verdict"]["matched"] = True
    lying["reward"] = 1.0
    abstained = maker.row(tasks["delete"], [], 1)
    abstained["officegym"]["verdict"]["abstain"] = "simulator timeout"
    report = _flag([ok, no_verdict, nan_reward, lying, abstained], env)
    got = {(it.ref.task_id, it.sample_index): [r.detail for r in it.reasons if r.code == "verifier_error"] for it in report.items}
    assert got[("reply", 1)] == ["no verdict recorded"]
    assert got[("reply", 2)] == ["reward is not a number (None)"]
    assert got[("delete", 0)] == ["recorded matched=True but a fresh verify gives matched=False"]
    assert got[("delete", 1)] == ["the verdict says abstain: simulator timeout"]
    assert ("reply", 0) not in got

    class Crashing:
        def __init__(self, inner):
            self.inner = inner

        def session(self, task=None):
            return self.inner.session(task)

        def verify(self, task, calls, mode=None):
            raise RuntimeError("simulator 500")

    crash = _flag([ok], Crashing(env))
    assert [r.detail for r in crash.items[0].reasons] == ["the verifier raised RuntimeError: simulator 500"]


def test_near_threshold(maker, tasks, env, gt):
    half = maker.row(tasks["reply"], gt(tasks["reply"]), 0, reward=0.5)
    half["officegym"]["verdict"]["reward"] = 0.5
    ratio = maker.row(tasks["move"], gt(tasks["move"]), 0, reward_components={"shaped/efficiency": 0.985, "outcome": 1.0})
    exact = maker.row(tasks["delete"], gt(tasks["delete"]), 0, reward_components={"shaped/efficiency": 1.0})
    report = _flag([half, ratio, exact], env, hard_difficulty=99)
    details = {it.ref.task_id: it.reasons[0].detail for it in report.items if it.reasons[0].code == "near_threshold"}
    assert details["reply"] == "reward 0.5 is 50% of the maximum 1"
    assert details["move"] == "shaped/efficiency = 0.985, just under 1"
    assert "delete" not in details
    # Shaped totals above 1: the band is a share of the run's largest reward.
    top = maker.row(tasks["delete"], gt(tasks["delete"]), 1, reward=1.4)
    mid = maker.row(tasks["delete"], gt(tasks["delete"]), 2, reward=0.7)
    got = _flag([top, mid], env)
    assert [r.detail for it in got.items for r in it.reasons if r.code == "near_threshold"] == [
        "reward 0.7 is 50% of the maximum 1.4"]


def test_odd_high_reward(maker, tasks, env, gt):
    task = tasks["reply"]
    invalid = [("email_reply_email", {"email_id": "12345678", "body": "x"}), ("no_such_tool", {}), *gt(task)]
    many = [("email_search_emails", {"query": f"q{i}"}) for i in range(6)] + gt(task)
    rows = [maker.row(task, invalid, 0), maker.row(task, many, 1), maker.row(task, gt(task), 2)]
    assert [r["reward"] for r in rows] == [1.0, 1.0, 1.0]
    report = _flag(rows, env)
    odd = {it.sample_index: r.detail for it in report.items for r in it.reasons if r.code == "odd_high_reward"}
    assert odd == {0: "reward 1 with 2 invalid calls", 1: "reward 1 with 7 calls against 1 in the ground truth"}
    # A reward for doing nothing where the ground truth writes: odd, and the verifier disagrees.
    nothing = maker.row(tasks["delete"], [], 0, reward=1.0)
    nothing["officegym"]["verdict"]["matched"] = True
    report = _flag([nothing], env)
    assert sorted(r.code for r in report.items[0].reasons) == ["odd_high_reward", "verifier_error"]
    assert report.items[0].priority == DEFAULT_WEIGHTS["odd_high_reward"] + DEFAULT_WEIGHTS["verifier_error"]


def test_modes_disagree(maker, tasks, env, gt):
    row = maker.row(tasks["reply"], gt(tasks["reply"]), 0)
    row["officegym"]["verdict"].update(modes_disagree=True, other_mode_reward=0.0)
    report = _flag([row], env)
    assert [(r.code, r.detail) for r in report.items[0].reasons] == [("modes_disagree", "outcome gives 1.0, nemo_gym gives 0.0")]


def test_random_audit_is_seeded_uniform_and_stable(maker, tasks, gt):
    rows = [maker.row(tasks["reply"], gt(tasks["reply"]), s) for s in range(40)]
    everything = _flag(rows, audit_share=1.0)
    assert len(everything.items) == 40 and everything.by_reason == {"random_audit": 40}
    assert _flag(rows, audit_share=0.0).items == []
    a = {it.key for it in _flag(rows, audit_share=0.25, seed=3).items}
    b = {it.key for it in _flag(rows, audit_share=0.25, seed=3).items}
    c = {it.key for it in _flag(rows, audit_share=0.25, seed=4).items}
    assert a == b and a != c and 3 <= len(a) <= 18
    draws = [audit_draw(0, f"k{i}") for i in range(4000)]
    assert 0.23 < sum(d < 0.25 for d in draws) / len(draws) < 0.27


def test_priority_is_the_weighted_sum_and_weights_are_configurable(maker, tasks, env, gt):
    wrong = ("email_reply_email", {"email_id": "00000039", "body": "OK"})
    broken = [maker.row(tasks["broken"], [wrong], s) for s in range(2)]
    hard = [maker.row(tasks["move"], gt(tasks["move"]), s) for s in range(2)]
    default = _flag(broken + hard, env)
    assert [(it.ref.task_id, it.priority) for it in default.items] == [("broken", 10.0), ("move", 5.0)]
    custom = _flag(broken + hard, env, weights={"all_pass_hard": 20.0})
    assert [(it.ref.task_id, it.priority) for it in custom.items] == [("move", 20.0), ("broken", 10.0)]
    try:
        FlagConfig(weights={"nope": 1.0})
    except ValueError as exc:
        assert "unknown flag reason" in str(exc)
    else:
        raise AssertionError("an unknown reason must be refused")


def test_reader_takes_any_folder_of_rows_files(tmp_path, maker, tasks, gt):
    """A GRPO-like folder: per-step files written concurrently (torn last line), other JSONL files
    and temp files around; groups are (step, task)."""
    run = tmp_path / "grpo"
    (run / "rollouts").mkdir(parents=True)
    for step in (1, 2):
        rows = [maker.row(tasks["reply"], gt(tasks["reply"]), s, step=step) for s in range(2)]
        text = "".join(json.dumps(r) + "\n" for r in rows)
        if step == 2:
            text += json.dumps(rows[0])[:50]  # the trainer is still writing this line
        (run / "rollouts" / f"step_{step:04d}.jsonl").write_text(text)
    (run / "tasks.jsonl").write_text(json.dumps(tasks["reply"].to_row()) + "\n")  # not rollouts: ignored
    (run / ".step_0003.jsonl.tmp.jsonl").write_text("garbage\n")  # hidden temp file: skipped
    (run / "rollouts" / "bad.jsonl").write_text(json.dumps(maker.row(tasks["reply"], [], 0)) + "\n{oops\n")
    read = read_run(run)
    assert read.files == ["rollouts/bad.jsonl", "rollouts/step_0001.jsonl", "rollouts/step_0002.jsonl"]
    assert len(read.rows) == 5
    assert read.problems == ["rollouts/bad.jsonl:2: not valid JSON (Expecting property name enclosed in double quotes); line skipped"]
    report = flag_rows(read.rows, FlagConfig(audit_share=1.0))
    groups = sorted({it.group["group"] for it in report.items})
    assert groups == ["rollouts/bad.jsonl|reply", "step 1|reply", "step 2|reply"]


def test_flag_run_queues_refreshes_and_keeps_decisions(tmp_path, review_run, envs, world_spec):
    store = Store(tmp_path / "review.sqlite")
    config = FlagConfig(audit_share=0.0)
    first = flag_run(review_run, store, config, world=world_spec, envs=envs)
    assert (first.added, first.refreshed) == (4, 0)
    assert first.report.by_reason == {"oracle_fails": 1, "distinct_rewarded_states": 2, "all_pass_hard": 1}
    top = store.list()[0]
    assert top["task_id"] == "broken" and top["priority"] == 10.0 and "row" not in top  # summaries omit rows
    assert store.get(top["id"])["world"] == world_spec
    store.decide(top["id"], "reject", "ann", "truth_wrong")
    again = flag_run(review_run, store, FlagConfig(audit_share=1.0), world=world_spec, envs=envs)
    assert (again.added, again.refreshed) == (8, 4)  # every rollout is audited now; the 4 are refreshed
    assert store.get(top["id"])["status"] == "rejected" and len(store.decisions(top["id"])) == 1
    assert store.count(Filters(reason="random_audit")) == 12
    assert [e["action"] for e in store.audit()] == ["flag", "reject", "flag"]  # newest first
    store.close()


def test_odd_rows_never_crash_flagging_or_the_item_page(maker, tasks, env, gt, tmp_path, envs):
    base = maker.row(tasks["reply"], gt(tasks["reply"]), 0)
    odd = []
    for k, (path, value) in enumerate([
        (("officegym", "verdict"), "not a dict"), (("officegym",), None), (("reward",), "abc"), (("reward",), float("nan")),
        (("response", "output"), [None, 3, {"type": "function_call", "name": 5, "arguments": [1]}, {"type": "message"}]),
        (("officegym", "call_status"), "xx"), (("officegym", "reward_components"), {"efficiency": "high"}),
        (("ground_truth",), "not a list"), (("officegym", "verdict", "diff"), {"emails": {"changed": [{"fields": {"a": 1}}]}}),
    ]):
        row = json.loads(json.dumps(base))
        row["officegym"]["sample_index"] = k
        target = row
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        odd.append(row)
    odd.append({**json.loads(json.dumps(base)), "responses_create_params": {"input": 5}})  # task unreadable
    report = flag_rows(_refs(odd), FlagConfig(audit_share=1.0), lambda ref, task: env)
    assert len(report.items) == len(odd) - 1 and any("task row unreadable" in p for p in report.problems)
    from fastapi.testclient import TestClient

    from officegym.review.app import create_app

    store = Store(tmp_path / "odd.sqlite")
    items = [{"key": it.key, "run": "r", "source": "f", "line": 1, "task_id": it.ref.task_id, "sample_index": it.sample_index,
              "reward": it.ref.reward, "priority": it.priority, "reasons": [r.to_dict() for r in it.reasons],
              "row": it.ref.row, "group": it.group, "world": None} for it in report.items]
    store.upsert_items(items)
    with TestClient(create_app(store, envs)) as c:
        for it in store.list(limit=100):
            assert c.get(f"/items/{it['id']}").status_code == 200
        assert c.get("/export/argilla_records.json").status_code == 200
    store.close()
