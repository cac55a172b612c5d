"""The active-learning round: flag, import reviews, export retraining data, count, summarise."""

from __future__ import annotations

import json

from officegym.review.actions import apply_action
from officegym.review.flag import FlagConfig
from officegym.review.loop import active_learning_round, write_summary
from officegym.review.store import Filters, Store


def test_two_rounds_and_their_summary(tmp_path, review_run, envs, world_spec, maker, tasks, gt, run_writer):
    store = Store(tmp_path / "review.sqlite")
    out = tmp_path / "loop"
    r1 = active_learning_round(review_run, store, out, config=FlagConfig(audit_share=0.0), world=world_spec, envs=envs)
    assert (r1.round, r1.rollouts, r1.flagged, r1.new_items, r1.needing_review) == (1, 12, 4, 4, 4)
    assert r1.training_only == 1 and r1.review_rate_per_1k == 1000 * 4 / 12
    assert (out / "round_001" / "manifest.json").exists() and r1.exported["rl_tasks"] == 0

    # Reviews made elsewhere (another store, same items) arrive as a decisions file.
    elsewhere = tmp_path / "elsewhere.jsonl"
    keys = [it["key"] for it in store.list()]
    elsewhere.write_text("".join(json.dumps({"item_key": k, "action": "accept", "reviewer": "remote", "at": "2024-01-01T00:00:00+00:00"})
                                 + "\n" for k in keys[:2]))
    # Round 2: a training run (per-step files) with every rollout in the audit.
    rows = [maker.row(tasks["reply"], gt(tasks["reply"]), s, step=7) for s in range(2)]
    rows += [maker.row(tasks["delete"], [], s, step=7) for s in range(2)]
    grpo = run_writer(tmp_path / "grpo" / "step_0007", rows)
    r2 = active_learning_round(grpo.parent, store, out, reviews=[elsewhere], config=FlagConfig(audit_share=1.0),
                               world=world_spec, envs=envs)
    assert (r2.round, r2.rollouts, r2.flagged, r2.new_items, r2.imported) == (2, 4, 4, 4, 2)
    assert r2.needing_review == 4 and r2.pending_total == 4 + 2  # round 2's own items; 2 of round 1 reviewed
    assert r2.audit_reviewed == 0 and r2.audit_verifier_error_rate is None
    audited = store.list(Filters(round=2, reason="random_audit"))
    apply_action(store, envs, audited[0]["id"], "reject", "ann", "verifier_too_strict")
    apply_action(store, envs, audited[1]["id"], "accept", "ann")
    apply_action(store, envs, audited[2]["id"], "skip", "ann")
    r2b = active_learning_round(grpo.parent, store, out, round=2, config=FlagConfig(audit_share=1.0), world=world_spec, envs=envs)
    assert (r2b.new_items, r2b.needing_review, r2b.audit_reviewed, r2b.audit_verifier_errors) == (0, 1, 2, 1)
    assert r2b.audit_verifier_error_rate == 0.5 and r2b.decided == {"pending": 1, "accepted": 1, "rejected": 1, "skipped": 1}
    assert [r["round"] for r in store.rounds()] == [1, 2]  # the re-run replaced round 2

    js, md = write_summary([r1, r2b], out)
    data = json.loads(js.read_text())
    assert [r["needing_review"] for r in data["rounds"]] == [4, 1]
    text = md.read_text()
    assert "| 1 | 12 | 4 | 4 | 4 | 333.3 |" in text and "| 2 | 4 | 4 | 0 | 1 | 1000.0 | 1 | 1 | 0 | 50.0% of 2 |" in text
    assert "random_audit" in text.split("## Flag reasons per round")[1]
    # The summary also takes the dicts the store kept.
    assert write_summary([r["summary"] for r in store.rounds()], tmp_path / "again")[1].read_text() == text
    store.close()


def test_round_with_a_store_path(tmp_path, review_run, envs, world_spec):
    summary = active_learning_round(review_run, tmp_path / "s.sqlite", config=FlagConfig(audit_share=0.0),
                                    world=world_spec, envs=envs)
    assert summary.flagged == 4 and summary.out_dir is None and summary.exported == {}
    with Store(tmp_path / "s.sqlite") as store:
        assert store.rounds()[0]["summary"]["flagged"] == 4
