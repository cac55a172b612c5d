"""Export: RL pool edits, SFT conversations replayed in the environment, verifier regression
cases, Argilla and Label Studio files; importing decisions back; the item-page views."""

from __future__ import annotations

import json
import uuid
import xml.etree.ElementTree as ET

import pytest

from officegym.review.actions import apply_action
from officegym.review.cases import check_cases, read_cases
from officegym.review.export import build_export, export_store
from officegym.review.flag import FlagConfig, flag_run
from officegym.review.imports import import_reviews
from officegym.review.store import Store
from officegym.review.views import diff_tables, trajectory_turns

GOOD = [{"name": "email_reply_email", "arguments": {"email_id": "00000039", "body": "OK"}}]


def _decide(store, envs, ids):
    apply_action(store, envs, ids[("broken", 0)], "correct", "ann", note="the id was wrong", calls=json.dumps(GOOD))
    apply_action(store, envs, ids[("reply", 0)], "accept", "ann")
    apply_action(store, envs, ids[("reply", 1)], "reject", "bo", "verifier_too_lenient", "lower case passes")
    apply_action(store, envs, ids[("move", 0)], "reject", "bo", "task_ill_posed", "which task?")


@pytest.fixture
def reviewed(flagged):
    store, envs, ids = flagged
    _decide(store, envs, ids)
    return store, envs, ids


def _lines(bundle, name):
    return [json.loads(x) for x in bundle.files[name].decode().splitlines()]


def test_rl_pool_edits_and_sft_conversations(reviewed, env):
    store, envs, _ = reviewed
    bundle = build_export(store, envs)
    rl = _lines(bundle, "rl_tasks.jsonl")
    assert [r["id"] for r in rl] == ["broken", "reply"]
    assert rl[0]["ground_truth"] == [{"name": "email_reply_email", "arguments": '{"email_id": "00000039", "body": "OK"}'}]
    assert rl[0]["review"]["status"] == "corrected" and rl[1]["review"]["status"] == "accepted"
    assert "response" not in rl[0] and "officegym" not in rl[0]  # task rows, not rollouts
    assert _lines(bundle, "rl_removed.jsonl")[0] | {"at": None} == {
        "id": "move", "reason": "task_ill_posed", "item": "run|rollouts.jsonl|move|0", "reviewer": "bo", "at": None,
        "note": "which task?"}
    sft = {c["metadata"]["task_id"]: c for c in _lines(bundle, "sft.jsonl")}
    conv = sft["broken"]["messages"]
    assert [m["role"] for m in conv] == ["system", "user", "assistant", "tool", "assistant"]
    assert conv[2]["tool_calls"][0]["function"] == {"name": "email_reply_email", "arguments": '{"email_id": "00000039", "body": "OK"}'}
    # The tool output is the environment's own answer to that call.
    assert conv[3]["content"] == env.session().call("email_reply_email", {"email_id": "00000039", "body": "OK"})
    assert conv[3]["tool_call_id"] == conv[2]["tool_calls"][0]["id"]
    assert len(sft["broken"]["tools"]) == 27 and sft["broken"]["tools"][0]["type"] == "function"
    assert sft["reply"]["messages"][-1] == {"role": "assistant", "content": "Done."}  # the accepted rollout's answer
    assert bundle.counts == {"items": 4, "decisions": 4, "rl_tasks": 2, "rl_removed": 1, "sft": 2, "sft_rollouts": 2,
                             "verifier_cases": 4, "verifier_cases_open": 1}
    # Gold rollout rows: the accepted rewarded rollout as it was, the correction replayed and verified.
    gold = {r["id"]: r for r in _lines(bundle, "sft_rollouts.jsonl")}
    assert gold["reply"]["officegym"]["policy"] == "crafted" and gold["reply"]["officegym"]["review"]["status"] == "accepted"
    assert gold["broken"]["officegym"]["policy"] == "review:corrected" and gold["broken"]["reward"] == 1.0
    assert [i["type"] for i in gold["broken"]["response"]["output"]] == ["function_call", "function_call_output", "message"]
    assert build_export(store, envs).files == bundle.files  # deterministic


def test_verifier_cases_load_and_check(reviewed, tmp_path):
    store, envs, _ = reviewed
    export_store(store, tmp_path / "out", envs)
    path = tmp_path / "out" / "verifier_cases.jsonl"
    cases = {c["case_id"].split(":")[-1]: c for c in read_cases(path)}
    assert set(cases) == {"corrected_truth", "rescored", "accepted", "verifier_too_lenient"}
    lenient = cases["verifier_too_lenient"]
    assert lenient["kind"] == "verifier_wrong" and lenient["open"] is True and lenient["expected"] == {"matched": False}
    assert lenient["world"] == {"generated": {"seed": 0, "size": "small"}}
    results = {r.case_id.split(":")[-1]: r for r in check_cases(path, envs)}
    assert all(results[k].passed for k in ("corrected_truth", "rescored", "accepted"))
    # The open case records the verifier's known mistake: it fails until the verifier is fixed.
    assert results["verifier_too_lenient"].got is True and not results["verifier_too_lenient"].passed
    # A fresh Environments regenerates the world from the case's spec alone.
    assert [r.passed for r in check_cases(path)] == [r.passed for r in check_cases(path, envs)]
    assert store.audit()[0]["action"] == "export"


def test_argilla_and_label_studio_files(reviewed):
    store, envs, _ids = reviewed
    bundle = build_export(store, envs)
    settings = json.loads(bundle.files["argilla_settings.json"])
    assert [f["name"] for f in settings["fields"]] == ["task", "trajectory", "diff", "ground_truth"]
    decision_q = settings["questions"][0]
    assert decision_q["settings"]["type"] == "label_selection"
    labels = [o["value"] for o in decision_q["settings"]["options"]]
    records = json.loads(bundle.files["argilla_records.json"])
    assert len(records) == 4
    for rec in records:
        assert set(rec) == {"id", "fields", "metadata", "suggestions", "responses", "vectors", "_server_id"}
        assert set(rec["fields"]) == {f["name"] for f in settings["fields"]}
        assert rec["suggestions"]["decision"]["agent"] == "officegym-flagger"
        assert rec["suggestions"]["decision"]["value"] in labels and 0 <= rec["suggestions"]["decision"]["score"] <= 1
        for answers in rec["responses"].values():
            for a in answers:
                uuid.UUID(a["user_id"])
                assert a["status"] == "submitted"
    by_id = {r["id"]: r for r in records}
    assert by_id["run|rollouts.jsonl|reply|1"]["responses"]["decision"][0]["value"] == "verifier_too_lenient"
    broken = by_id["run|rollouts.jsonl|broken|0"]
    assert broken["suggestions"]["decision"]["value"] == "truth_wrong"
    assert json.loads(broken["responses"]["corrected_calls"][0]["value"])[0]["name"] == "email_reply_email"

    config = ET.fromstring(bundle.files["label_studio_config.xml"])
    variables = {el.get("value")[1:] for el in config if el.tag == "Text"}
    choices = [c.get("value") for c in config.find("Choices")]
    assert choices == labels
    tasks = json.loads(bundle.files["label_studio_tasks.json"])
    for t in tasks:
        assert variables <= set(t["data"])
        pred = t["predictions"][0]
        assert pred["result"][0]["value"]["choices"][0] in choices and 0 <= pred["score"] <= 1
        assert all(r["from_name"] in {"decision", "corrected_calls", "note"} and r["to_name"] == "trajectory"
                   for a in t["annotations"] for r in a["result"])
    move = next(t for t in tasks if t["data"]["item_key"].endswith("|move|0"))
    assert move["annotations"][0]["result"][0]["value"] == {"choices": ["task_ill_posed"]}


def _fresh(tmp_path, name, review_run, envs, world_spec):
    store = Store(tmp_path / name)
    flag_run(review_run, store, FlagConfig(audit_share=0.0), world=world_spec, envs=envs)
    return store


def _statuses(store):
    return {it["key"]: it["status"] for it in store.list()}


@pytest.mark.parametrize("fmt", ["decisions.jsonl", "label_studio_tasks.json", "argilla_records.json"])
def test_import_round_trip_is_idempotent(reviewed, tmp_path, review_run, world_spec, fmt):
    store, envs, _ = reviewed
    export_store(store, tmp_path / "out", envs)
    other = _fresh(tmp_path, "other.sqlite", review_run, envs, world_spec)
    first = import_reviews(other, tmp_path / "out" / fmt, envs)
    assert first.imported == 4 and not first.refused and not first.unknown_items
    assert _statuses(other) == _statuses(store)
    again = import_reviews(other, tmp_path / "out" / fmt, envs)
    assert again.imported == 0 and again.already == 4
    corrected = next(d for d in other.decisions() if d["action"] == "correct")
    assert corrected["payload"]["calls"][0]["arguments"] == '{"email_id": "00000039", "body": "OK"}'  # re-verified
    other.close()


def test_import_refuses_a_bad_correction(flagged, tmp_path):
    store, envs, ids = flagged
    path = tmp_path / "d.jsonl"
    rows = [{"item_key": "run|rollouts.jsonl|broken|0", "action": "correct", "reviewer": "x", "at": "2024-01-01T00:00:00+00:00",
             "calls": [{"name": "email_reply_email", "arguments": {"email_id": "99999999", "body": "OK"}}]},
            {"item_key": "nope|0", "action": "accept", "reviewer": "x"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = import_reviews(store, path, envs)
    assert res.imported == 0 and res.unknown_items == ["nope|0"]
    assert len(res.refused) == 1 and "Email not found." in res.refused[0]
    assert store.get(ids[("broken", 0)])["status"] == "pending"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"x": 1}\n')
    with pytest.raises(ValueError, match="not a decision row"):
        import_reviews(store, bad, envs)


def test_views_turns_and_changed_cells(maker, tasks):
    wrong = ("project_management_update_task", {"task_id": "00000024", "field": "list_name", "new_value": "In Progress"})
    row = maker.row(tasks["move"], [("no_such_tool", {}), wrong], text="Moved it.")
    turns = trajectory_turns(row)
    assert [len(t["calls"]) for t in turns] == [2, 0] and turns[1]["text"] == "Moved it."
    assert [c["failed"] for c in turns[0]["calls"]] == [True, False]
    assert "Error executing tool" in turns[0]["calls"][0]["output"]
    (table,) = diff_tables(row["officegym"]["verdict"])
    assert table["table"] == "project_tasks"
    (changed,) = table["rows"]
    assert changed["kind"] == "changed"
    assert changed["cells"]["list_name"] == {"expected": "In Review", "actual": "In Progress", "changed": True}
    assert changed["cells"]["task_id"] == {"value": "00000024"}
