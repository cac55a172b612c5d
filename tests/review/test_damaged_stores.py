"""Damaged and foreign review stores: every command (the UI's start included) ends with one line
and a non-zero exit, before anything is written to the file."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from officegym.review.cli import review_app
from officegym.review.store import ItemNotFoundError, Store
from officegym.review.store_schema import SCHEMA_VERSION, StoreError

runner = CliRunner()
PAGE = 4096


def _item(i: int) -> dict:
    return {"key": f"t{i}|0", "run": "r", "source": "rollouts.jsonl", "task_id": f"t{i}", "sample_index": 0,
            "priority": 1.0, "reasons": [{"code": "random_audit"}], "row": {"text": "x" * 5000}, "group": {}}


def _foreign(path: Path, version: int = 0, table: str = "t") -> Path:
    conn = sqlite3.connect(path)  # rollback journal, as most SQLite files are
    conn.execute(f"CREATE TABLE {table} (x)")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stores")
    with Store(root / "good.sqlite") as st:
        st.upsert_items([_item(i) for i in range(60)])
    data = (root / "good.sqlite").read_bytes()
    assert len(data) > 40 * PAGE
    files = {
        "garbage": b"this is not a database\n" * 400,
        "header_only": data[:100],
        "truncated": data[: len(data) // 2 + 100],
        # The last page (the end of an item's row) overwritten: only a full check sees it.
        "corrupt_page": data[:-PAGE] + random.Random(0).randbytes(PAGE),
    }
    out = {}
    for name, content in files.items():
        (root / name).write_bytes(content)
        out[name] = root / name
    out["foreign"] = _foreign(root / "foreign")
    out["foreign_versioned"] = _foreign(root / "foreign_versioned", version=2, table="items")
    newer = root / "newer"
    newer.write_bytes(data)
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    out["newer"] = newer
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("kind", ["garbage", "header_only", "truncated", "corrupt_page", "foreign", "foreign_versioned", "newer"])
@pytest.mark.parametrize("command", ["flag", "serve", "export", "import"])
def test_damaged_or_foreign_store_gives_one_line_and_exit_2(damaged, kind, command, tmp_path, monkeypatch):
    import uvicorn

    def no_server(*a, **k):
        raise AssertionError("the UI started on a store it cannot use")

    monkeypatch.setattr(uvicorn, "run", no_server)
    path = damaged[kind]
    before = _digest(path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "rollouts.jsonl").write_text("")
    (tmp_path / "decisions.jsonl").write_text("")
    args = {
        "flag": ["flag", str(tmp_path / "run"), "--no-replay"],
        "serve": ["serve"],
        "export": ["export", "--out", str(tmp_path / "out")],
        "import": ["import", str(tmp_path / "decisions.jsonl")],
    }[command]
    res = runner.invoke(review_app, [*args, "--store", str(path)])
    assert res.exit_code == 2, (res.output, res.exception)
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], res.output
    assert _digest(path) == before


def test_a_foreign_file_is_refused_before_anything_writes_to_it(tmp_path):
    for path in (_foreign(tmp_path / "app.db"), _foreign(tmp_path / "versioned.db", version=2, table="items")):
        before = _digest(path)
        with pytest.raises(StoreError, match="not a review store"):
            Store(path)
        # Byte for byte: no WAL switch in the header, and no -wal/-shm files beside it.
        assert _digest(path) == before
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(path.name)) == [path.name]
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        conn.close()


def test_ids_sqlite_cannot_hold_name_no_item(tmp_path):
    with Store(tmp_path / "s.sqlite") as st:
        st.upsert_items([_item(0)])
        for bad in (2**63, -(2**63) - 1, 2**64):
            with pytest.raises(ItemNotFoundError):
                st.get(bad)
            with pytest.raises(ItemNotFoundError):
                st.decide(bad, "accept", "ann")
        assert st.get(st.list()[0]["id"])["key"] == "t0|0"
