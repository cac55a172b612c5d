"""The review store: migrations, decisions and the audit log, readers running while one writes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from officegym.review.store import Filters, ItemNotFoundError, Store
from officegym.review.store_schema import MIGRATIONS, SCHEMA_VERSION, StoreError

BATCH = 10


def _item(key: str, priority: float = 1.0, reasons=("random_audit",), category="c1") -> dict:
    return {
        "key": key, "run": "r", "source": "rollouts.jsonl", "line": 1, "task_id": key.split("|")[0], "step": None,
        "sample_index": 0, "category": category, "difficulty": None, "reward": 1.0, "priority": priority,
        "reasons": [{"code": c, "detail": "d"} for c in reasons], "row": {"id": key}, "group": {"samples": []},
        "world": None,
    }


def test_migrations_bring_an_old_store_up_and_refuse_a_newer_one(tmp_path):
    path = tmp_path / "old.sqlite"
    old = Store(path, migrate=False)
    assert old.migrate(target=1) == 1 and old.version() == 1
    with old.write() as conn:  # an item written by the version-1 schema
        conn.execute(
            "INSERT INTO items (key, run, source, task_id, sample_index, priority, reasons, row, grp, created_at, updated_at) "
            "VALUES ('t|0', 'r', 'f', 't', 0, 3.0, '[]', '{}', '{}', 'x', 'x')")
    old.close()
    with Store(path) as store:
        assert store.version() == SCHEMA_VERSION == len(MIGRATIONS) == 2
        item = store.get_by_key("t|0")
        assert item["round"] is None and item["priority"] == 3.0  # the new column, the old data
        assert store.rounds() == [] and store.next_round() == 1
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version 3"):
        Store(path)
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a review store"):
        Store(other)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite file"):
        Store(junk)


def test_items_decisions_filters_and_audit(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        added, refreshed = store.upsert_items([
            _item("a|0", 5.0, ("oracle_fails",)), _item("b|0", 2.0, ("near_threshold", "random_audit"), "c2"),
            _item("c|0", 2.0), _item("d|0", 9.0, ("verifier_error",))], round=1)
        assert (added, refreshed) == (4, 0)
        ids = store.ids_by_keys(["a|0", "b|0", "c|0", "d|0"])
        assert [i["key"] for i in store.list()] == ["d|0", "a|0", "b|0", "c|0"]
        assert store.counts()["reason"] == {"oracle_fails": 1, "near_threshold": 1, "random_audit": 2, "verifier_error": 1}
        assert store.count(Filters(reason="random_audit", category="c1")) == 1
        assert store.neighbours(ids["a|0"]) == (ids["d|0"], ids["b|0"])
        assert store.next_pending(ids["a|0"]) == ids["b|0"]
        with pytest.raises(ValueError, match="needs a reason"):
            store.decide(ids["a|0"], "reject", "ann")
        with pytest.raises(ValueError, match="reviewer"):
            store.decide(ids["a|0"], "accept", " ")
        with pytest.raises(ItemNotFoundError):
            store.decide(999, "accept", "ann")
        store.decide(ids["a|0"], "reject", "ann", "truth_wrong", "the id does not exist")
        store.decide(ids["b|0"], "accept", "bo")
        store.decide(ids["b|0"], "note", "bo", note="second look: fine")
        assert store.get(ids["b|0"])["status"] == "accepted"  # a note does not change the status
        assert store.counts()["status"] == {"pending": 2, "accepted": 1, "rejected": 1, "corrected": 0, "skipped": 0}
        assert store.next_pending(ids["d|0"]) == ids["c|0"]
        assert {d["item_id"]: d["action"] for d in store.latest_decisions().values()} == {ids["a|0"]: "reject", ids["b|0"]: "accept"}
        log = store.audit()
        assert [(e["actor"], e["action"]) for e in log] == [("bo", "note"), ("bo", "accept"), ("ann", "reject"), ("flagger", "flag")]
        assert log[2]["detail"]["reason"] == "truth_wrong" and log[2]["item_id"] == ids["a|0"] and log[2]["at"].endswith("+00:00")
        assert [e["action"] for e in store.audit(actor="bo")] == ["note", "accept"]


def _writer(path, batches: int) -> None:
    with Store(path) as store:
        for b in range(batches):
            store.upsert_items([_item(f"t{b}|{i}") for i in range(BATCH)])
            time.sleep(0.005)  # let the readers in between batches


def test_readers_see_whole_batches_while_one_writer_writes(tmp_path):
    """Threads and other processes read while a thread writes batches of 10 items, each one
    transaction: every reader sees a multiple of 10, never fewer than before, and no errors."""
    path = tmp_path / "busy.sqlite"
    store = Store(path)
    batches = 40
    seen: dict[str, list[int]] = {}
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader(name: str) -> None:
        counts = seen.setdefault(name, [])
        try:
            while not stop.is_set():
                c = store.counts()
                assert c["total"]["items"] == c["status"]["pending"] == c["reason"].get("random_audit", 0)
                counts.append(c["total"]["items"])
                store.list(limit=5)
        except BaseException as exc:  # reported below; a reader must not die silently
            errors.append(exc)

    script = (
        "import sys, time\n"
        "from officegym.review.store import Store\n"
        "s = Store(sys.argv[1]); last = -1; seen = set(); t = time.time()\n"
        "print('ready', flush=True)\n"
        "while time.time() - t < float(sys.argv[2]) and last < int(sys.argv[3]):\n"
        "    c = s.count()\n"
        "    assert c % 10 == 0 and c >= last, (c, last)\n"
        "    last = c; seen.add(c)\n"
        "print(len(seen), last)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), "20", str(batches * BATCH)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    threads = [threading.Thread(target=reader, args=(f"r{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    writer = threading.Thread(target=_writer, args=(path, batches))
    writer.start()
    writer.join(timeout=60)
    time.sleep(0.1)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    outs = [p.communicate(timeout=30) for p in procs]
    store.close()
    assert not errors, errors
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        distinct, last = out.split()
        assert int(last) == batches * BATCH and int(distinct) > 2  # it saw the store grow
    # The readers really ran during the writes: they saw states between empty and full.
    assert any(0 < c < batches * BATCH for counts in seen.values() for c in counts)
    for counts in seen.values():
        assert counts and all(c % BATCH == 0 for c in counts)
        assert counts == sorted(counts)
        assert counts[-1] == batches * BATCH
