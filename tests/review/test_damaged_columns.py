"""A review store whose JSON columns were damaged (by hand, another tool, a disk): the UI answers
every page without a 500, export says which items in one line, nothing crashes (issue 47 N5)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from officegym.review.app import create_app
from officegym.review.cli import review_app

runner = CliRunner()


@pytest.fixture
def damaged_store(flagged):
    store, envs, ids = flagged
    some = sorted(ids.values())
    store.decide(some[0], "accept", "ann", reason="looks right")
    store.save_round(1, "run", {"accuracy": 0.5})
    conn = sqlite3.connect(store.path)
    conn.execute("UPDATE items SET row = '{\"broken', grp = 'null]', world = '[[' WHERE id = ?", (some[0],))
    conn.execute("UPDATE items SET reasons = 'not json' WHERE id = ?", (some[1],))
    conn.execute("UPDATE decisions SET payload = '{{'")
    conn.execute("UPDATE audit SET detail = '\"unterminated'")
    conn.execute("UPDATE rounds SET summary = '{'")
    conn.commit()
    conn.close()
    return store, envs, some


def test_every_page_answers_and_names_the_damage(damaged_store):
    store, envs, ids = damaged_store
    with TestClient(create_app(store, envs, reviewer="ann")) as c:
        for path in ("/queue", "/audit", "/export", f"/items/{ids[0]}", f"/items/{ids[1]}", f"/items/{ids[2]}",
                     "/api/items", f"/api/items/{ids[0]}", f"/api/items/{ids[1]}", "/api/counts"):
            r = c.get(path)
            assert r.status_code == 200, (path, r.status_code, r.text[:300])
        page = c.get(f"/items/{ids[0]}").text
        assert "damaged" in page.lower()
        assert c.get(f"/api/items/{ids[0]}").json()["damaged"] == ["row", "grp", "world"]
        for name in ("labels.jsonl", "corrections.jsonl"):
            assert c.get(f"/export/{name}").status_code in (200, 404, 409)
        r = c.post(f"/items/{ids[1]}/reject", data={"reason": "wrong"})
        assert r.status_code < 500


def test_export_names_the_damaged_items_in_one_line(damaged_store, tmp_path):
    store, _, ids = damaged_store
    path = store.path
    store.close()
    res = runner.invoke(review_app, ["export", "--out", str(tmp_path / "out"), "--store", str(path)])
    assert res.exit_code == 0, (res.output, res.exception)
    said = " ".join(res.output.split())
    assert f"skipped item {ids[0]} " in said and "its stored row, grp, world is damaged, left out" in said
    assert f"skipped item {ids[1]} " in said and "its stored reasons is damaged" in said
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["counts"]["items"] == len(ids) - 2 and len(manifest["skipped"]) >= 2



def test_a_correction_whose_calls_are_damaged_leaves_its_item_out(flagged, tmp_path):
    from officegym.review.export import build_export

    store, envs, ids = flagged
    item = sorted(ids.values())[0]
    conn = sqlite3.connect(store.path)
    conn.execute("INSERT INTO decisions (item_id, action, reason, note, payload, reviewer, at) "
                 "VALUES (?, 'correct', 'fixed', NULL, '{\"typed\": []}', 'ann', '2026-12-07T00:00:00')", (item,))
    conn.commit()
    conn.close()
    [decision] = store.decisions(item)
    assert decision["payload"] is None and decision["damaged"] == ["payload"]
    bundle = build_export(store, envs)
    assert any(s.startswith(f"item {item} ") and "payload is damaged" in s for s in bundle.skipped)
    assert bundle.counts["decisions"] == 0
