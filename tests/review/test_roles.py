"""Role rollouts in the review queue: flagging rules on rollouts of the role baselines (oracle,
greedy, role-random) and on crafted ones, corrections re-verified by the role's verifier, and the
export read back by the SFT data loader and the pipeline's pool builder."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import make_policy
from officegym.core.registry import make
from officegym.core.rollout_row import rollout_row
from officegym.core.task import Task, read_tasks
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall
from officegym.review.actions import apply_action, correction_text
from officegym.review.cases import check_cases
from officegym.review.export import build_export, export_store
from officegym.review.flag import FlagConfig, flag_rows, flag_run
from officegym.review.loop import active_learning_round
from officegym.review.replay import CorrectionError
from officegym.review.rows import RolloutRef, read_run
from officegym.review.store import Filters, Store
from officegym.review.worlds import Environments

ROLES = ("roles/cto", "roles/coo", "roles/cost", "roles/reconcile", "roles/risk")
POLICIES = ("oracle", "greedy", "role-random:1")
N_TASKS = 24


def _rollouts(env_name: str, spec: str, tasks: list[Task]) -> list[dict[str, Any]]:
    env = make(env_name)
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], make_policy(spec), LoopConfig(max_steps=6)))
    return [rollout_row(t, tr) for t, tr in zip(tasks, trajs)]


@pytest.fixture(scope="module")
def role_rows() -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(environment, policy) -> one rollout row per task, N_TASKS tasks per role (7.5 % infeasible)."""
    out = {}
    for name in ROLES:
        tasks = make(name).generate_tasks(N_TASKS, 11)
        for spec in POLICIES:
            out[(name, spec)] = _rollouts(name, spec, tasks)
    return out


def _flag(rows: list[dict[str, Any]], **config: Any):
    config.setdefault("audit_share", 0.0)
    refs = [RolloutRef(r, "rollouts.jsonl", i + 1) for i, r in enumerate(rows)]
    envs = Environments()
    return flag_rows(refs, FlagConfig(**config), lambda ref, task: envs.get(task.environment_name, None))


def _codes(report) -> dict[str, list[str]]:
    return {it.ref.task_id: sorted(r.code for r in it.reasons) for it in report.items}


def _verdict(row: dict[str, Any]) -> dict[str, Any]:
    return row["officegym"]["verdict"]


def play(env_name: str, task: Task, turns: list[list[ToolCall]], **og: Any) -> dict[str, Any]:
    """A rollout row of `turns` (lists of calls) played in a real session and really verified."""
    env = make(env_name)
    session = env.session(task)
    traj = Trajectory(task_id=task.id, policy="crafted", stop_reason="answered")
    for k, calls in enumerate(turns):
        turn = Turn(text="")
        for i, c in enumerate(calls):
            call = ToolCall(c.name, c.arguments, call_id=f"call_{k}_{i}")
            result = session.execute(call.name, call.arguments)
            turn.executions.append(ToolExecution(call, result.text, result.status))
        traj.turns.append(turn)
    traj.turns.append(Turn(text="Submitted."))
    verdict = env.verify(task, traj.calls)
    traj.verdict, traj.reward, traj.reward_components = verdict.to_dict(), verdict.reward, {"outcome": verdict.reward}
    row = rollout_row(task, traj)
    row["officegym"].update(og)
    return row


def _task(env_name: str, *, infeasible: bool = False, lookups: bool = True, seed: int = 11) -> Task:
    for t in make(env_name).generate_tasks(80, seed, difficulty=(5, 8) if lookups else (1, 2)):
        gt = t.ground_truth
        if t.metadata["infeasible"] == infeasible and (len(gt) > 1) == lookups:
            return t
    raise AssertionError("no such task")


def _split(task: Task) -> tuple[list[ToolCall], ToolCall]:
    return list(task.ground_truth[:-1]), task.ground_truth[-1]


# -- flagging -------------------------------------------------------------------------------------


def test_oracle_rollouts_queue_only_their_correct_escalations(role_rows):
    for name in ROLES:
        rows = role_rows[(name, "oracle")]
        assert all(r["reward"] == 1.0 for r in rows)
        report = _flag(rows)
        infeasible = {r["id"] for r in rows if r["infeasible"]}
        assert infeasible, name  # 7.5 % of 24 tasks
        assert _codes(report) == {tid: ["escalated"] for tid in infeasible}, name
        detail = report.items[0].reasons[0].detail
        assert "correctly escalated" in detail and "does not read the reason" in detail


def test_escalation_rules_follow_the_scenario_and_the_answer(role_rows):
    seen = {"escalation_wrong": 0, "escalation_missed": 0, "escalated": 0}
    for name in ROLES:
        for spec in ("greedy", "role-random:1"):
            rows = role_rows[(name, spec)]
            codes = _codes(_flag(rows))
            for r in rows:
                label, got = _verdict(r)["label"], codes.get(r["id"], [])
                escalated = _verdict(r).get("answer_tool") == "escalate"
                expected = {("escalated", True): "escalated", ("escalated", False): "escalation_wrong",
                            ("answered", True): "escalation_missed"}.get(("escalated" if escalated else "answered", r["infeasible"]))
                for code in seen:
                    assert (code in got) == (code == expected), (name, spec, r["id"], label, got)
                if expected:
                    seen[expected] += 1
    assert all(seen.values()), seen  # the baselines make every kind of escalation decision


REPLAYED = {"verifier_error", "distinct_rewarded_states", "oracle_fails", "all_fail_unchecked"}


def _rule_codes(codes: dict[str, list[str]]) -> dict[str, list[str]]:
    return {t: [c for c in v if c not in REPLAYED] for t, v in codes.items() if set(v) - REPLAYED}


def test_without_replay_the_role_rules_still_apply(role_rows):
    """With replay off the rules come from the environment the task names (built without a world);
    only the replay-based checks go."""
    for name in ROLES:
        rows = role_rows[(name, "greedy")]
        refs = [RolloutRef(r, "rollouts.jsonl", i + 1) for i, r in enumerate(rows)]
        off = _codes(flag_rows(refs, FlagConfig(audit_share=0.0, replay=False)))
        on = _codes(_flag(rows))
        assert _rule_codes(off) == _rule_codes(on) and _rule_codes(on), name


def test_low_margin_marks_near_ties_and_partial_credit_only(role_rows):
    config = FlagConfig()
    near_optimal = partial = 0
    for name in ROLES:
        rows = role_rows[(name, "greedy")]
        report = _flag(rows)
        low = {it.ref.task_id: next(r.detail for r in it.reasons if r.code == "low_margin")
               for it in report.items if any(r.code == "low_margin" for r in it.reasons)}
        for r in rows:
            v = _verdict(r)
            comps = v["components"]
            q = comps.get("quality_ratio")
            tie = (comps.get("feasible") == 1.0 and comps.get("optimal") == 0.0 and q is not None
                   and config.ratio_band[0] <= q < 1.0)
            halfway = 0 < v["reward"] < 1 and config.partial_band[0] <= v["reward"] <= config.partial_band[1]
            if tie:
                near_optimal += 1
                assert "from the optimum" in low[r["id"]]
            if halfway:
                partial += 1
                assert "partial credit" in low[r["id"]]
            if v["matched"] and v["reward"] == 1.0:  # full credit is on no boundary...
                assert r["id"] not in low or "tolerance" in low[r["id"]]  # ...unless its claim is near the tolerance
    assert near_optimal and partial


def test_a_claim_near_the_tolerance_is_a_low_margin_on_both_sides():
    task = _task("roles/cto")
    lookups, answer = _split(task)
    tco = answer.arguments["claimed_tco"]
    tolerance = max(0.5, 0.005 * tco)
    rows = []
    for i, off in enumerate((0.8 * tolerance, 1.3 * tolerance, 3 * tolerance)):
        claimed = ToolCall(answer.name, {**answer.arguments, "claimed_tco": tco + off})
        rows.append(play("roles/cto", task, [lookups, [claimed]], sample_index=i))
    assert [r["reward"] for r in rows] == [1.0, 0.0, 0.0]  # the verifier's tolerance decides
    assert [_verdict(r)["label"] for r in rows] == ["correct", "hallucinated_number", "hallucinated_number"]
    report = _flag(rows)
    details = {it.sample_index: [r.detail for r in it.reasons if r.code == "low_margin"] for it in report.items}
    assert "0.80x the tolerance" in details[0][0] and "(within the tolerance)" in details[0][0]
    assert "1.30x the tolerance" in details[1][0] and "scored 0 as a wrong figure" in details[1][0]
    assert 2 not in details or not details[2]  # 3x the tolerance is plainly wrong, not a near call


def test_full_credit_without_reading_is_odd_and_a_tampered_grade_is_a_verifier_error():
    task = _task("roles/cost")
    lookups, answer = _split(task)
    blind = play("roles/cost", task, [[answer]])
    assert blind["reward"] == 1.0  # the verifier grades the answer alone
    odd = [r.detail for it in _flag([blind]).items for r in it.reasons if r.code == "odd_high_reward"]
    assert odd and f"looks up {len(lookups)} time(s)" in odd[0]
    assert _flag([play("roles/cost", task, [lookups, [answer]])]).items == []
    tampered = play("roles/cost", task, [lookups, [answer]])
    tampered["officegym"]["verdict"]["reward"] = 0.75
    errors = [r.detail for it in _flag([tampered]).items for r in it.reasons if r.code == "verifier_error"]
    assert errors == ["recorded graded reward 0.75 but a fresh verify gives 1 (correct)"]


def test_rewarded_samples_compare_decisions_not_rationales():
    task = _task("roles/cto")
    lookups, answer = _split(task)
    worded = [ToolCall(answer.name, {**answer.arguments, "rationale": text}) for text in ("cheapest", "meets every SLO")]
    rows = [play("roles/cto", task, [lookups, [c]], sample_index=i) for i, c in enumerate(worded)]
    assert all(r["reward"] == 1.0 for r in rows)
    assert _flag(rows, hard_difficulty=99).items == []  # one decision, two wordings
    # A second "rewarded" decision (recorded so, the verifier disagrees): two decisions queued.
    other = dict(answer.arguments["selection"])
    component = next(iter(other))
    options = json.loads(make("roles/cto").session(task).call("list_options", {"component": component}))["output"]
    tco = {o["id"]: 12 * o["monthly_usd"] + o["migration_usd"] for o in options}
    # the option whose cost is farthest from the chosen one's, so that the claim is plainly wrong (no near call)
    other[component] = max((o for o in tco if o != other[component]), key=lambda o: abs(tco[o] - tco[other[component]]))
    wrong = play("roles/cto", task, [lookups, [ToolCall(answer.name, {**answer.arguments, "selection": other})]], sample_index=2)
    wrong["officegym"]["verdict"]["matched"] = True
    report = _flag([rows[0], wrong], hard_difficulty=99)
    assert {it.sample_index: sorted(r.code for r in it.reasons) for it in report.items} == {
        0: ["distinct_rewarded_states"], 2: ["distinct_rewarded_states", "verifier_error"]}


def test_a_mediator_rollout_is_checked_for_disagreement(role_rows):
    tasks = make("roles/council").generate_tasks(12, 4)
    rows = _rollouts("roles/council", "greedy", tasks)
    codes = _codes(_flag(rows))
    for r in rows:
        comps = _verdict(r)["components"]
        committed = _verdict(r).get("answer_tool") == "commit_plan"
        assert ("commit_without_consensus" in codes.get(r["id"], [])) == (committed and comps.get("consensus") == 0.0), r["id"]
        if comps.get("unresolved_objections", 0) > 0:
            assert "unresolved_objection" in codes[r["id"]]
    assert any("commit_without_consensus" in c for c in codes.values())


# -- corrections ----------------------------------------------------------------------------------


@pytest.fixture
def queued(tmp_path, role_rows):
    """The greedy and role-random CTO rollouts flagged into a store: (store, envs, run folder)."""
    run = tmp_path / "cto"
    run.mkdir()
    rows = role_rows[("roles/cto", "greedy")] + [
        {**r, "officegym": {**r["officegym"], "sample_index": 1}} for r in role_rows[("roles/cto", "role-random:1")]]
    (run / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = Store(run / "review" / "review.sqlite")
    envs = Environments()
    flag_run(run, store, FlagConfig(audit_share=0.0), envs=envs)
    yield store, envs, run
    store.close()


def _item(store: Store, reason: str) -> dict[str, Any]:
    return store.get(store.list(Filters(reason=reason), limit=1)[0]["id"])


def _answer_json(call: ToolCall) -> str:
    return json.dumps([{"name": call.name, "arguments": call.arguments}])


def test_a_correction_is_re_verified_by_the_role_verifier(queued):
    store, envs, _ = queued
    item = _item(store, "escalation_wrong")  # escalated a feasible scenario
    task = RolloutRef(item["row"], "", 0).task()
    reads, answer = _split(task)
    # The form starts from the rollout's own answer; saving it unchanged is refused with the evidence.
    typed = correction_text(envs, item)
    assert json.loads(typed)[0]["name"] == "escalate"
    with pytest.raises(CorrectionError, match=r"wrong_escalation.*scenario is feasible.*verifier too strict"):
        apply_action(store, envs, item["id"], "correct", "ann", calls=typed)
    assert store.get(item["id"])["status"] == "pending" and store.audit()[0]["action"] == "correct_refused"
    # A read is no answer; a suboptimal answer is refused with the grade.
    with pytest.raises(CorrectionError, match="final answer: one call of escalate or submit_architecture"):
        apply_action(store, envs, item["id"], "correct", "ann", calls=json.dumps([reads[0].to_nemo()]))
    worse = dict(answer.arguments["selection"])
    component = next(iter(worse))
    options = json.loads(envs.get("roles/cto", None).session(task).call("list_options", {"component": component}))["output"]
    worse[component] = next(o["id"] for o in options if o["id"] != worse[component])
    with pytest.raises(CorrectionError, match="does not accept"):
        apply_action(store, envs, item["id"], "correct", "ann",
                     calls=_answer_json(ToolCall(answer.name, {"selection": worse, "claimed_tco": answer.arguments["claimed_tco"]})))
    # The optimal answer: saved, after the rollout's own reads, with the rollout re-scored.
    check = apply_action(store, envs, item["id"], "correct", "ann", note="the budget allows it",
                         calls=_answer_json(answer)).check
    assert check.self_verdict.matched and check.self_verdict.reward == 1.0
    assert check.rescored.details["label"] == "wrong_escalation"
    assert check.turns == [len(check.calls) - 1, 1] and check.calls[-1].name == answer.name
    assert all(c.name != "escalate" for c in check.calls[:-1])
    payload = store.decisions(item["id"])[-1]["payload"]
    assert payload["typed"] == [answer.to_nemo()] and payload["turns"] == check.turns
    assert store.get(item["id"])["status"] == "corrected"


def test_correcting_an_infeasible_scenario_needs_an_escalation(queued):
    store, envs, _ = queued
    item = _item(store, "escalation_missed")
    task = RolloutRef(item["row"], "", 0).task()
    assert task.metadata["infeasible"]
    with pytest.raises(CorrectionError, match="missed_escalation"):
        apply_action(store, envs, item["id"], "correct", "ann", calls=correction_text(envs, item))
    check = apply_action(store, envs, item["id"], "correct", "ann",
                         calls=_answer_json(ToolCall("escalate", {"reason": "no plan meets the budget"}))).check
    assert check.self_verdict.details["label"] == "correct_escalation"


def test_the_item_page_shows_the_grade_and_corrects_the_answer(queued):
    pytest.importorskip("fastapi")
    pytest.importorskip("jinja2")
    from fastapi.testclient import TestClient

    from officegym.review.app import create_app

    store, envs, _ = queued
    item = _item(store, "escalation_wrong")
    _, answer = _split(RolloutRef(item["row"], "", 0).task())
    evidence = item["row"]["officegym"]["verdict"]["evidence"][0]
    with TestClient(create_app(store, envs, reviewer="ann")) as c:
        page = c.get(f"/items/{item['id']}").text
        assert "<h3>Verifier: wrong_escalation</h3>" in page and "escalated, but the scenario is feasible" in evidence
        assert 'id="evidence"' in page and 'id="diff"' not in page and "feasible</p>" in page
        assert "<th>escalation_correct</th>" in page.split('id="grade"')[1]  # the verdict's components
        assert "Correct the final answer" in page and "&#34;escalate&#34;" in page.split('id="calls"')[1][:400]
        checked = c.post(f"/items/{item['id']}/correct", data={"calls": _answer_json(answer), "mode": "check"})
        assert checked.status_code == 200 and "The verifier gives the correction <b>reward 1 (correct)" in checked.text
        assert "the reviewed rollout scores 0 (wrong_escalation)" in checked.text
        refused = c.post(f"/items/{item['id']}/correct", data={"calls": correction_text(envs, item), "mode": "save"})
        assert refused.status_code == 422 and "verifier does not accept" in refused.text
        saved = c.post(f"/items/{item['id']}/correct", data={"calls": _answer_json(answer), "mode": "save"},
                       follow_redirects=False)
        assert saved.status_code == 303
        again = c.get(f"/items/{item['id']}").text  # the form now shows the saved answer
        assert answer.name in again.split('id="calls"')[1][:200]
    assert store.get(item["id"])["status"] == "corrected"


# -- export ---------------------------------------------------------------------------------------


def test_export_is_training_data_the_sft_loader_and_the_pool_read(queued, tmp_path):
    from officegym.pipeline.review import build_pool
    from officegym.train.sft_data import BuildReport, ground_truth_conversations, rollout_conversations

    store, envs, run = queued
    fixed = _item(store, "escalation_wrong")
    _, answer = _split(RolloutRef(fixed["row"], "", 0).task())
    apply_action(store, envs, fixed["id"], "correct", "ann", calls=_answer_json(answer))
    right = _item(store, "escalated")  # a correct escalation, confirmed
    apply_action(store, envs, right["id"], "accept", "ann")
    near = _item(store, "low_margin")
    apply_action(store, envs, near["id"], "accept", "bo")  # the verifier was right to give partial credit
    wrong = _item(store, "escalation_missed")
    apply_action(store, envs, wrong["id"], "reject", "bo", "verifier_too_strict", "answering was fine here")

    out = tmp_path / "export"
    bundle = export_store(store, out, envs)
    assert bundle.skipped == []
    assert (bundle.counts["rl_tasks"], bundle.counts["sft"], bundle.counts["sft_rollouts"]) == (3, 3, 3)
    rl = {r["id"]: r for r in map(json.loads, (out / "rl_tasks.jsonl").read_text().splitlines())}
    corrected = rl[fixed["task_id"]]
    assert corrected["review"]["status"] == "corrected" and corrected["ground_truth"][-1]["name"] == answer.name
    assert corrected["oracle_turns"] == [len(corrected["ground_truth"]) - 1, 1]

    # sft.jsonl: the lookups in one turn, their outputs, then the answer in the next.
    sft = {c["metadata"]["task_id"]: c for c in map(json.loads, (out / "sft.jsonl").read_text().splitlines())}
    roles_seen = [m["role"] for m in sft[fixed["task_id"]]["messages"]]
    n_reads = len(corrected["ground_truth"]) - 1
    assert roles_seen == ["system", "user", "assistant", *["tool"] * n_reads, "assistant", "tool", "assistant"]

    # sft_rollouts.jsonl through the SFT trainer's own reader (sft.source=rollouts).
    report = BuildReport()
    conversations = rollout_conversations([out / "sft_rollouts.jsonl"], 1.0, report)
    assert len(conversations) == 3 and report.dropped == {}
    by_source = {json.loads(line)["id"]: json.loads(line) for line in (out / "sft_rollouts.jsonl").read_text().splitlines()}
    assert by_source[fixed["task_id"]]["officegym"]["policy"] == "review:corrected"
    assert by_source[right["task_id"]]["officegym"]["policy"] == "greedy"  # the accepted rollout itself
    assert by_source[near["task_id"]]["officegym"]["policy"] == "review:accepted"  # its oracle, not its partial answer
    assert all(r["reward"] == 1.0 for r in by_source.values())
    last_calls = [[m for m in c.messages if m.get("tool_calls")][-1]["tool_calls"][-1]["function"]["name"] for c in conversations]
    assert answer.name in last_calls

    # rl_tasks.jsonl through the ground-truth replay (sft.source=ground_truth): every one verifies.
    report = BuildReport()
    replayed = ground_truth_conversations(make("roles/cto"), read_tasks(out / "rl_tasks.jsonl"), "one", "Done.", None, report)
    assert len(replayed) == 3 and report.dropped == {}

    # The verifier cases: the rejected one is open (the current verifier still says not matched).
    results = {r.case_id.split(":")[-1]: r for r in check_cases(out / "verifier_cases.jsonl", envs)}
    assert set(results) == {"accepted", "corrected_truth", "rescored", "verifier_too_strict"}
    assert results["verifier_too_strict"].open and not results["verifier_too_strict"].passed
    assert all(r.passed for k, r in results.items() if k != "verifier_too_strict")

    # The pipeline's pool: the corrected task replaces its original, the others stay.
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(t.to_row()) + "\n" for t in make("roles/cto").generate_tasks(N_TASKS, 11)))
    counts = build_pool(train, out, set(), tmp_path / "pool.jsonl")
    assert counts == {"train": N_TASKS, "removed": 0, "replaced": 3, "added": 0, "held_out_skipped": 0, "pool": N_TASKS}
    pool = {t.id: t for t in read_tasks(tmp_path / "pool.jsonl")}
    assert pool[fixed["task_id"]].ground_truth[-1].name == answer.name

    # Exports live beside the store: flagging the run again reads the same rollouts, not the gold rows.
    assert len(read_run(run).rows) == 2 * N_TASKS
    assert build_export(store, envs).files == bundle.files  # deterministic


def test_an_active_learning_round_over_a_role_run(tmp_path, role_rows):
    run = tmp_path / "eval"
    run.mkdir()
    rows = role_rows[("roles/risk", "greedy")]
    (run / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "run.json").write_text(json.dumps({"policy": "greedy", "world": None, "env": "roles/risk"}))
    summary = active_learning_round(run, tmp_path / "review.sqlite", tmp_path / "rounds", config=FlagConfig(audit_share=0.0))
    assert summary.rollouts == N_TASKS and summary.flagged == summary.needing_review > 0 and summary.problems == []
    assert set(summary.by_reason) <= {"low_margin", "escalated", "escalation_wrong", "escalation_missed"}
    assert Path(summary.out_dir, "sft_rollouts.jsonl").exists()


def test_a_run_folder_never_feeds_its_own_exports_back(tmp_path, role_rows):
    run = tmp_path / "run"
    run.mkdir()
    rows = role_rows[("roles/cto", "greedy")]
    (run / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    envs = Environments()
    with Store(run / "review.sqlite") as store:  # a store at the run's root, its export beside it
        flag_run(run, store, FlagConfig(audit_share=0.0), envs=envs)
        apply_action(store, envs, _item(store, "escalated")["id"], "accept", "ann")
        assert export_store(store, run / "export", envs).counts["sft_rollouts"] == 1
    (run / "copies").mkdir()  # gold rows copied anywhere else are known by their review block
    (run / "copies" / "gold.jsonl").write_text((run / "export" / "sft_rollouts.jsonl").read_text())
    assert len(read_run(run).rows) == N_TASKS
