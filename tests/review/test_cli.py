"""`officegym review flag | export | import` through Typer's runner (the sub-app the main CLI mounts)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from officegym.review.cli import review_app
from officegym.review.store import Store

runner = CliRunner()


def _out(res) -> str:
    return " ".join(res.output.split())  # rich wraps long lines


def test_flag_export_import(tmp_path, review_run, world_dir):
    store = tmp_path / "r.sqlite"
    res = runner.invoke(review_app, ["flag", str(review_run), "--store", str(store), "--world", str(world_dir), "--audit-share", "0"])
    assert res.exit_code == 0, res.output
    assert "12 rollouts in 4 groups -> 4 items (4 new, 0 refreshed)" in _out(res)
    assert "oracle_fails" in _out(res) and "too hard for the policy" in _out(res)
    with Store(store) as st:
        item = st.list()[0]
        # The world is recorded by path and by how to generate it again.
        assert st.get(item["id"])["world"]["generated"] == {"seed": 0, "size": "small", "now": "2024-08-13 23:59:00",
                                                              "company": st.get(item["id"])["world"]["generated"]["company"],
                                                              "user": "Dana"}
        st.decide(item["id"], "accept", "ann")
    out = tmp_path / "out"
    res = runner.invoke(review_app, ["export", "--store", str(store), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "manifest.json").read_text())["counts"]["decisions"] == 1
    other = tmp_path / "o.sqlite"
    runner.invoke(review_app, ["flag", str(review_run), "--store", str(other), "--world", str(world_dir), "--audit-share", "0"])
    res = runner.invoke(review_app, ["import", str(out / "decisions.jsonl"), "--store", str(other)])
    assert res.exit_code == 0 and "imported 1, already there 0, refused 0" in _out(res)


def test_clear_errors(tmp_path):
    res = runner.invoke(review_app, ["flag", str(tmp_path / "nope"), "--store", str(tmp_path / "s.sqlite")])
    assert res.exit_code == 2 and "no such run folder" in _out(res)
    res = runner.invoke(review_app, ["export", "--store", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no such review store" in _out(res)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"x" * 4096)
    res = runner.invoke(review_app, ["export", "--store", str(junk), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "not a usable SQLite file" in _out(res)
    res = runner.invoke(review_app, ["serve", "--store", str(tmp_path / "s.sqlite"), "--world", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no such world folder" in _out(res)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = runner.invoke(review_app, ["import", str(bad), "--store", str(tmp_path / "s.sqlite")])
    assert res.exit_code == 2 and "no such review store" in _out(res)  # an import needs the reviewed items
    Store(tmp_path / "s.sqlite").close()
    res = runner.invoke(review_app, ["serve", "--store", str(tmp_path / "s.sqlite"), "--allowed-hosts", "a/b"])
    assert res.exit_code == 2 and "not a host or host:port: 'a/b'" in _out(res)
    res = runner.invoke(review_app, ["import", str(bad), "--store", str(tmp_path / "s.sqlite")])
    assert res.exit_code == 2 and "not valid JSON" in _out(res)
