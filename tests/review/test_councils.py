"""Councils in the review queue: council runs (councils.jsonl, written by the council runner with
scripted seats) read as items, the disagreement rules, the re-score by replaying acts, corrections
of the mediator's decision, the item page, and the export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from officegym.agent.council import CouncilConfig
from officegym.agent.council_file import COUNCILS, record_settings
from officegym.agent.council_run import run_council_folder
from officegym.agent.council_seats import scripted_seat
from officegym.core.registry import make
from officegym.core.rollout_row import RolloutRow
from officegym.review.actions import apply_action, correction_text
from officegym.review.cases import check_cases
from officegym.review.export import export_store
from officegym.review.flag import FlagConfig, flag_run
from officegym.review.replay import CorrectionError
from officegym.review.rows import read_run
from officegym.review.store import Filters, Store
from officegym.review.worlds import Environments

SEED, N = 7, 14


def _run(folder: Path, seats: dict[str, Any], specs: dict[str, str], tasks_file: Path | None = None) -> Path:
    tasks = make("roles/council").generate_tasks(N, SEED)
    record_settings(folder, {"specs": specs, "tasks": str(tasks_file) if tasks_file else None,
                             "seed": None if tasks_file else SEED, "difficulty": None if tasks_file else [1, 10],
                             "max_rounds": 4})
    run_council_folder(tasks, seats, folder, CouncilConfig(max_rounds=4), concurrency=4, specs=specs)
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Council folders as `officegym council` writes them: a truthful team, and a greedy mediator with
    a greedy cost member (who judges plans on the budget alone)."""
    root = tmp_path_factory.mktemp("councils")
    return {
        "scripted": _run(root / "scripted", {}, {}),
        "greedy": _run(root / "greedy", {"reconcile": scripted_seat("reconcile", "greedy", 4), "cost": scripted_seat("cost", "greedy")},
                       {"reconcile": "greedy", "cost": "greedy"}),
    }


def _councils(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / COUNCILS).read_text().splitlines()]


def _flagged(folder: Path, tmp_path: Path, **kw: Any):
    store = Store(tmp_path / f"{folder.name}.sqlite")
    result = flag_run(folder, store, FlagConfig(audit_share=0.0), envs=Environments(), **kw)
    return store, result


def test_councils_are_read_as_items_with_their_task(runs):
    read = read_run(runs["greedy"])
    assert len(read.rows) == N and read.problems == []
    assert sorted(RolloutRow(r.row).task().id for r in read.rows) == [f"council-{SEED}-{i:05d}" for i in range(N)]
    row = read.rows[0].row
    task = RolloutRow(row).task()
    assert task.environment_name == "roles/council" and task.id == _councils(runs["greedy"])[0]["task_id"]
    block = row["officegym"]["council"]
    assert set(block["trajectories"]) == {"cto", "cost", "risk", "reconcile"}
    assert all("prompt_ids" not in t for tr in block["trajectories"].values() for t in tr["turns"])
    assert row["officegym"]["verdict"]["graded"] and row["response"] == {"output": []}


def test_a_truthful_team_queues_only_its_escalations(runs, tmp_path):
    store, result = _flagged(runs["scripted"], tmp_path)
    councils = _councils(runs["scripted"])
    assert all(c["reward"] == 1.0 for c in councils)
    escalated = {c["task_id"] for c in councils if c["label"] == "correct_escalation"}
    assert escalated and {it.ref.task_id: [r.code for r in it.reasons] for it in result.report.items} == {
        t: ["escalated"] for t in escalated}
    store.close()


def test_disagreement_rules_follow_the_councils_acts(runs, tmp_path):
    store, result = _flagged(runs["greedy"], tmp_path)
    codes = {it.ref.task_id: {r.code: r.detail for r in it.reasons} for it in result.report.items}
    seen = 0
    for c in _councils(runs["greedy"]):
        got = codes.get(c["task_id"], {})
        committed = next((a for a in c["acts"] if a["act"] == "commit"), None)
        no_consensus = committed is not None and c["components"].get("consensus") == 0.0
        assert ("commit_without_consensus" in got) == no_consensus, c["task_id"]
        if c["components"].get("unresolved_objections", 0) > 0:
            assert "unresolved_objection" in got and "valid" in got["unresolved_objection"]
        if no_consensus:
            seen += 1
            plan = committed["plan_id"]
            members = {a["seat"] for a in c["acts"] if a.get("plan_id") == plan and a["act"] == "accept"}
            for seat in {"cto", "cost", "risk"} - members:
                assert seat in got["commit_without_consensus"]
        assert "verifier_error" not in got  # every council's acts replay to its recorded reward
    assert seen
    store.close()


def test_accepting_a_plan_after_an_objection_is_a_disagreement(runs, tmp_path):
    # A council in which one member accepted a plan in the round its objector objected; the
    # accept moved to the next round (after the member saw the objection) is a disagreement. The
    # score does not depend on the act's round, so the council still replays to its reward.
    councils = _councils(runs["greedy"])
    pick = None
    for c in councils:
        for a in c["acts"]:
            if a["act"] != "accept":
                continue
            objections = [o for o in c["acts"] if o["act"] == "object" and o["plan_id"] == a["plan_id"]
                          and o["seat"] != a["seat"] and o["round"] == a["round"]]
            if objections and c["acts"][-1]["round"] > a["round"]:
                pick, accept, objection = c, a, objections[0]
                break
        if pick:
            break
    assert pick is not None
    accept["round"] += 1
    folder = tmp_path / "edited"
    folder.mkdir()
    (folder / COUNCILS).write_text(json.dumps(pick) + "\n")
    (folder / "run.json").write_text((runs["greedy"] / "run.json").read_text())
    store, result = _flagged(folder, tmp_path)
    reasons = {r.code: r.detail for r in result.report.items[0].reasons}
    detail = reasons["accepted_over_objection"]
    assert f"{accept['seat']} accepted {accept['plan_id']} in round {accept['round']}" in detail
    assert f"{objection['seat']} objected to {accept['plan_id']}" in detail
    assert "verifier_error" not in reasons
    store.close()


def test_a_council_whose_acts_score_otherwise_is_a_verifier_error(runs, tmp_path):
    council = next(c for c in _councils(runs["scripted"]) if c["label"] == "correct")
    council["reward"], council["label"] = 0.5, "process"
    folder = tmp_path / "tampered"
    folder.mkdir()
    (folder / COUNCILS).write_text(json.dumps(council) + "\n")
    (folder / "run.json").write_text((runs["scripted"] / "run.json").read_text())
    store, result = _flagged(folder, tmp_path)
    detail = {r.code: r.detail for r in result.report.items[0].reasons}["verifier_error"]
    assert f"replaying the council's {len(council['acts'])} acts gives reward 1 (correct); the row records 0.5 (process)" == detail
    store.close()


def test_the_task_comes_from_the_run_settings_and_is_checked(runs, tmp_path):
    # From a task file the settings name (and --tasks overrides them).
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(t.to_row()) + "\n" for t in make("roles/council").generate_tasks(N, SEED)))
    folder = tmp_path / "from_file"
    folder.mkdir()
    (folder / COUNCILS).write_text((runs["greedy"] / COUNCILS).read_text())
    (folder / "run.json").write_text(json.dumps({"specs": {}, "tasks": str(tasks_file), "seed": None}))
    assert len(read_run(folder).rows) == N
    (folder / "run.json").write_text(json.dumps({"specs": {}, "tasks": str(tmp_path / "gone.jsonl"), "seed": None}))
    missing = read_run(folder)
    assert missing.rows == [] and "is not there (give it with --tasks)" in missing.problems[0]
    assert len(read_run(folder, tasks_file).rows) == N
    # Settings that name another difficulty range rebuild other tasks: where the briefs disagree the
    # council is skipped, and only the tasks that come out the same are kept.
    (folder / "run.json").write_text(json.dumps({"specs": {}, "tasks": None, "seed": SEED, "difficulty": [3, 3]}))
    narrow = read_run(folder)
    assert len(narrow.rows) + len(narrow.problems) == N and len(narrow.problems) >= N // 2
    assert all("brief is not the one the council was shown" in p for p in narrow.problems)
    assert all(RolloutRow(r.row).task().metadata["difficulty"] == 3 for r in narrow.rows)
    # Another seed names none of these councils: said once, nothing queued.
    (folder / "run.json").write_text(json.dumps({"specs": {}, "tasks": None, "seed": SEED + 1, "difficulty": [1, 10]}))
    other = read_run(folder)
    assert other.rows == [] and len(other.problems) == 1 and "give their task file with --tasks" in other.problems[0]


# -- corrections, the page, the export --------------------------------------------------------------


@pytest.fixture
def queued(runs, tmp_path):
    store, _ = _flagged(runs["greedy"], tmp_path)
    yield store, Environments()
    store.close()


def _optimal_decision(item: dict[str, Any]) -> list[dict[str, Any]]:
    gt = RolloutRow(item["row"]).task().ground_truth
    if gt[-1].name == "escalate":
        return [{"name": "escalate", "arguments": gt[-1].arguments}]
    return [{"name": "commit_plan", "arguments": {"selection": gt[-2].arguments["selection"],
                                                  "claimed_tco": gt[-1].arguments["claimed_tco"]}}]


def test_a_council_correction_is_verified_by_the_team_verifier(queued):
    store, envs = queued
    item = store.get(store.list(Filters(reason="commit_without_consensus"), limit=1)[0]["id"])
    task = RolloutRow(item["row"]).task()
    typed = json.loads(correction_text(envs, item))  # the committed plan, spelled out
    committed = next(a for a in item["row"]["officegym"]["council"]["acts"] if a["act"] == "commit")
    assert typed[0]["name"] == "commit_plan" and typed[0]["arguments"]["claimed_tco"] == committed["claimed_tco"]
    with pytest.raises(CorrectionError, match="the council's verifier does not accept this decision"):
        apply_action(store, envs, item["id"], "correct", "ann", calls=json.dumps(typed))
    with pytest.raises(CorrectionError, match=r"proposed no plan 'PLAN-9' \(its plans: PLAN-1"):
        apply_action(store, envs, item["id"], "correct", "ann",
                     calls=json.dumps([{"name": "commit_plan", "arguments": {"plan_id": "PLAN-9", "claimed_tco": 1}}]))
    with pytest.raises(CorrectionError, match="mediator's decision"):
        apply_action(store, envs, item["id"], "correct", "ann", calls=json.dumps([{"name": "propose_plan", "arguments": {}}]))
    wrong_act = "escalate" if not task.metadata["infeasible"] else "commit_plan"
    if wrong_act == "escalate":
        with pytest.raises(CorrectionError, match="wrong_escalation"):
            apply_action(store, envs, item["id"], "correct", "ann",
                         calls=json.dumps([{"name": "escalate", "arguments": {"reason": "deadlock"}}]))
    check = apply_action(store, envs, item["id"], "correct", "ann", calls=json.dumps(_optimal_decision(item))).check
    assert check.self_verdict.matched and check.self_verdict.reward == 1.0
    assert check.rescored.reward == item["reward"]  # the council itself, replayed
    assert [c.name for c in check.calls][:3] == ["request_facts"] * 3 and check.turns in ([3, 1], [3, 1, 1])
    assert store.get(item["id"])["status"] == "corrected"


def test_the_item_page_shows_the_council(queued):
    pytest.importorskip("fastapi")
    pytest.importorskip("jinja2")
    from fastapi.testclient import TestClient

    from officegym.review.app import create_app

    store, envs = queued
    item = store.get(store.list(Filters(reason="unresolved_objection"), limit=1)[0]["id"])
    committed = next(a for a in item["row"]["officegym"]["council"]["acts"] if a["act"] == "commit")["plan_id"]
    with TestClient(create_app(store, envs, reviewer="ann")) as c:
        page = c.get(f"/items/{item['id']}").text
        assert 'id="acts"' in page and 'id="plans"' in page
        assert f"{committed} <b>(committed)</b>" in page and "objected to PLAN-1" in page and "(valid)" in page
        for seat in ("cto", "cost", "risk", "reconcile"):
            assert f'id="seat-{seat}"' in page
        assert "verifier: TCO, broken requirements" in page and "Correct the mediator's decision" in page
        assert 'id="trajectory"' not in page  # the council's turns are the seats', not one trajectory
        assert "verifier: TCO" not in c.get(f"/items/{item['id']}", params={"blind": "1"}).text
        checked = c.post(f"/items/{item['id']}/correct", data={"calls": json.dumps(_optimal_decision(item)), "mode": "check"})
        assert checked.status_code == 200 and "The verifier gives the correction <b>reward 1 (correct" in checked.text
        refused = c.post(f"/items/{item['id']}/correct", data={"calls": correction_text(envs, item), "mode": "save"})
        assert refused.status_code == 422 and "Correction refused" in refused.text


def test_council_decisions_export_as_training_data(runs, tmp_path):
    from officegym.train.sft_data import BuildReport, rollout_conversations

    envs = Environments()
    store = Store(tmp_path / "both.sqlite")
    flag_run(runs["greedy"], store, FlagConfig(audit_share=0.0), envs=envs)
    flag_run(runs["scripted"], store, FlagConfig(audit_share=0.0), envs=envs, run="scripted")
    # (the two runs played the same tasks: a task's latest correction would override its acceptance)
    good = store.get(store.list(Filters(reason="escalated"), limit=1)[0]["id"])  # a truthful team's escalation
    apply_action(store, envs, good["id"], "accept", "ann")
    fixed = next(it for it in store.list(Filters(reason="commit_without_consensus")) if it["task_id"] != good["task_id"])
    apply_action(store, envs, fixed["id"], "correct", "ann", calls=json.dumps(_optimal_decision(store.get(fixed["id"]))))
    strict = next(it for it in store.list(Filters(reason="unresolved_objection"))
                  if it["task_id"] not in (fixed["task_id"], good["task_id"]))
    apply_action(store, envs, strict["id"], "reject", "bo", "verifier_too_strict", "the objection was petty")

    out = tmp_path / "export"
    bundle = export_store(store, out, envs)
    assert bundle.skipped == []
    rl = {r["id"]: r for r in map(json.loads, (out / "rl_tasks.jsonl").read_text().splitlines())}
    assert [g["name"] for g in rl[fixed["task_id"]]["ground_truth"]][:3] == ["request_facts"] * 3
    assert rl[fixed["task_id"]]["oracle_turns"] in ([3, 1], [3, 1, 1])
    sft = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    seats = sorted(c["metadata"].get("seat", "-") for c in sft if c["metadata"]["task_id"] == good["task_id"])
    assert seats == ["-", "cost", "cto", "reconcile", "risk"]  # the mediator form and every seat of the accepted council
    report = BuildReport()
    assert len(rollout_conversations([out / "sft_rollouts.jsonl"], 1.0, report)) == 2 and report.dropped == {}
    results = {r.case_id.split(":")[-1]: r for r in check_cases(out / "verifier_cases.jsonl", envs)}
    assert results["accepted"].passed and results["corrected_truth"].passed and results["rescored"].passed
    assert results["verifier_too_strict"].open and results["verifier_too_strict"].got is False
    cases = [json.loads(line) for line in (out / "verifier_cases.jsonl").read_text().splitlines()]
    assert all(("council" in c) == (not c["case_id"].endswith(":corrected_truth")) for c in cases)
    store.close()


def test_the_review_commands_take_a_council_folder(runs, tmp_path):
    from typer.testing import CliRunner

    from officegym.review.cli import review_app

    runner = CliRunner()
    folder = tmp_path / "council"
    folder.mkdir()
    (folder / COUNCILS).write_text((runs["greedy"] / COUNCILS).read_text())
    (folder / "run.json").write_text(json.dumps({"specs": {}, "tasks": "elsewhere/tasks.jsonl", "seed": None}))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t.to_row()) + "\n" for t in make("roles/council").generate_tasks(N, SEED)))
    res = runner.invoke(review_app, ["flag", str(folder), "--tasks", str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2 and "no such task file" in " ".join(res.output.split())
    res = runner.invoke(review_app, ["flag", str(folder)])  # run.json names a file that is not there
    out = " ".join(res.output.split())
    assert res.exit_code == 0 and "0 rollouts" in out and "give it with --tasks" in out
    res = runner.invoke(review_app, ["flag", str(folder), "--tasks", str(tasks), "--audit-share", "0"])
    out = " ".join(res.output.split())
    assert res.exit_code == 0 and f"{N} rollouts in {N} groups" in out and "commit_without_consensus" in out
    res = runner.invoke(review_app, ["export", str(folder)])
    assert res.exit_code == 0 and (folder / "review" / "export" / "sft_rollouts.jsonl").exists()
    res = runner.invoke(review_app, ["flag", str(folder), "--tasks", str(tasks), "--audit-share", "0"])
    assert res.exit_code == 0 and f"{N} rollouts in {N} groups" in " ".join(res.output.split())  # exports not re-read
