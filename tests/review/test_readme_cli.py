"""The README's `officegym review ...` commands, parsed from README.md and run as written against a
small run folder: the store and the export land in the run folder, never in the current one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from officegym.review.cli import review_app

README = Path(__file__).resolve().parents[2] / "README.md"
PLACEHOLDERS = {"RUN"}
runner = CliRunner()


def readme_review_commands() -> list[list[str]]:
    """Every `officegym review ...` code span of the README as argument lists, with a table's
    escaped alternatives (`flag\\|serve`) expanded."""
    commands = []
    for span in re.findall(r"`officegym review ([^`]+)`", README.read_text(encoding="utf-8")):
        words = span.replace("\\|", "|").split()
        commands += [[sub, *words[1:]] for sub in words[0].split("|")]
    return commands


def test_the_readme_review_commands_run_as_written(tmp_path, review_run, world_dir, monkeypatch):
    pytest.importorskip("httpx")
    uvicorn = pytest.importorskip("uvicorn")
    from fastapi.testclient import TestClient

    commands = readme_review_commands()
    assert {c[0] for c in commands} >= {"flag", "serve", "export"}, commands
    for words in commands:
        unknown = {w for w in words if w.isupper()} - PLACEHOLDERS
        assert not unknown, f"README placeholder this test cannot fill: {unknown}"
    # run.json names the world, as `officegym eval --world` writes it.
    (review_run / "run.json").write_text(json.dumps({"policy": "crafted", "world": str(world_dir)}))
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    served: dict = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **kw: served.update(app=app, host=host, port=port))
    store = review_run / "review" / "review.sqlite"

    for words in commands:
        res = runner.invoke(review_app, [str(review_run) if w == "RUN" else w for w in words])
        assert res.exit_code == 0, (words, res.output)
        if words[0] == "flag":
            assert store.is_file() and "4 items" in " ".join(res.output.split())
        if words[0] == "serve":
            with TestClient(served["app"], base_url=f"http://{served['host']}:{served['port']}") as c:
                queue = c.get("/queue")
                assert queue.status_code == 200 and 'data-count="pending">4<' in queue.text
                first = c.get("/api/items").json()["items"][0]["id"]
                assert c.post(f"/items/{first}/accept", follow_redirects=False).status_code == 303
                # Served on the address it is bound to, not on a name rebound to it.
                assert c.get("/queue", headers={"host": f"attacker.example:{served['port']}"}).status_code == 400
        if words[0] == "export":
            manifest = json.loads((review_run / "review" / "export" / "manifest.json").read_text())
            assert manifest["counts"]["items"] == 4
    assert list(here.iterdir()) == []  # nothing written where the commands ran


def test_run_folder_commands_say_what_is_missing(tmp_path, review_run):
    res = runner.invoke(review_app, ["serve"])
    assert res.exit_code == 2 and "name the run folder" in res.output
    res = runner.invoke(review_app, ["serve", str(review_run)])  # not flagged yet
    assert res.exit_code == 2 and "officegym review flag" in res.output and "review.sqlite" in res.output
    res = runner.invoke(review_app, ["export", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "no such run folder" in res.output
    res = runner.invoke(review_app, ["import", str(review_run / "rollouts.jsonl")])
    assert res.exit_code == 2 and "--store" in res.output  # no run folder to guess a store from
    assert not (review_run / "review").exists()
