"""The review store: one SQLite file per review project (WAL; its schema and migrations are in
review/store_schema.py).

Concurrency: WAL lets readers run while one writer writes; every write is one `BEGIN IMMEDIATE`
transaction, so a reader sees a batch of items whole or not at all. Each thread gets its own
connection (a web server's worker threads, a flagging job, several processes all share a file).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from officegym.review.store_schema import MIGRATIONS, SCHEMA_VERSION, StoreError, inspect_file

STATUSES = ("pending", "accepted", "rejected", "corrected", "skipped")
ACTIONS = {"accept": "accepted", "reject": "rejected", "correct": "corrected", "skip": "skipped", "note": None}
REJECT_REASONS: dict[str, str] = {
    "task_ill_posed": "task ill-posed or ambiguous",
    "truth_wrong": "ground truth wrong",
    "verifier_too_strict": "verifier too strict (a right answer got no reward)",
    "verifier_too_lenient": "verifier too lenient (a wrong answer got the reward)",
    "trajectory_wrong": "trajectory wrong in a way the verifier cannot see",
}


class ItemNotFoundError(KeyError):
    def __str__(self) -> str:
        return f"no review item {self.args[0]!r}"


INT64_MAX = 2**63 - 1


def _row_id(value: Any) -> int:
    """An item id as SQLite stores it; a number SQLite cannot hold names no item (instead of an
    OverflowError from the driver)."""
    n = int(value)
    if not -INT64_MAX - 1 <= n <= INT64_MAX:
        raise ItemNotFoundError(value)
    return n


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Filters:
    status: str | None = None
    reason: str | None = None
    category: str | None = None
    round: int | None = None

    def where(self) -> tuple[str, list[Any]]:
        clauses, args = [], []
        if self.status:
            clauses.append("items.status = ?")
            args.append(self.status)
        if self.reason:
            clauses.append("items.id IN (SELECT item_id FROM item_reasons WHERE code = ?)")
            args.append(self.reason)
        if self.category:
            clauses.append("items.category = ?")
            args.append(self.category)
        if self.round is not None:
            clauses.append("items.round = ?")
            args.append(self.round)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _decode(d: dict[str, Any], column: str, kind: type | tuple[type, ...], fallback: Any) -> None:
    """Decode d[column] (JSON) in place. A column that is not JSON of `kind` (edited by hand, another
    tool, a bad disk) becomes `fallback` and is named in d["damaged"], so that pages and exports
    can say so instead of failing."""
    text = d.get(column)
    if text is None:
        d[column] = None if fallback is None else fallback
        return
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        value = _DAMAGED
    if value is _DAMAGED or not isinstance(value, kind):
        d[column] = fallback
        d.setdefault("damaged", []).append(column)
    else:
        d[column] = value


_DAMAGED = object()


def _item(row: sqlite3.Row, full: bool = True) -> dict[str, Any]:
    d = dict(row)
    _decode(d, "reasons", list, [])
    if full:
        _decode(d, "row", dict, {})
        _decode(d, "grp", dict, {})
        if d.get("world"):
            _decode(d, "world", (dict, str), None)
        else:
            d["world"] = None
    return d


_SUMMARY_COLUMNS = (
    "id, key, run, source, task_id, step, sample_index, category, difficulty, reward, priority, reasons, status, "
    "created_at, updated_at, round"
)


class Store:
    """A review store at `path` (created and migrated on open). Safe to share between threads.

    A file that is not a review store, is damaged (with `integrity`, which reads it whole) or is
    newer than this code raises StoreError before anything is written to it."""

    def __init__(self, path: str | Path, timeout_s: float = 30.0, migrate: bool = True, integrity: bool = False):
        self.path = Path(path)
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Look first: connecting switches the file to WAL, which rewrites a foreign file's header.
        inspect_file(self.path, integrity, timeout_s)
        try:
            if migrate:
                self.migrate()
            else:
                self._check_version()
        except BaseException:
            self.close()  # no -wal/-shm files left beside a file we refused
            raise

    # -- connections and transactions ---------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (taken at once, so writers queue instead of deadlocking)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every query inside sees the same snapshot."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- schema ---------------------------------------------------------------------------------

    def version(self) -> int:
        return int(self._conn().execute("PRAGMA user_version").fetchone()[0])

    def _check_version(self) -> None:
        v = self.version()
        if v > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has schema version {v}; this officegym knows up to {SCHEMA_VERSION} (upgrade it)")

    def migrate(self, target: int = SCHEMA_VERSION) -> int:
        """Apply the migrations the file lacks, up to `target`; returns the version reached."""
        try:
            with self.write() as conn:
                v = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if v > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path} has schema version {v}; this officegym knows up to {SCHEMA_VERSION} (upgrade it)")
                if v == 0 and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise StoreError(f"{self.path} is an SQLite file but not a review store")
                for i in range(v, target):
                    for statement in MIGRATIONS[i]:
                        conn.execute(statement)
                if target > v:
                    conn.execute(f"PRAGMA user_version = {int(target)}")
                return max(v, target)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable SQLite file ({exc})") from None

    # -- items ----------------------------------------------------------------------------------

    def upsert_items(self, items: Sequence[dict[str, Any]], actor: str = "flagger", round: int | None = None) -> tuple[int, int]:
        """Add flagged items, or refresh the reasons, priority and row of items already there
        (their status and decisions are kept). One transaction. Returns (added, refreshed)."""
        added = refreshed = 0
        at = now()
        with self.write() as conn:
            for it in items:
                reasons = json.dumps(it["reasons"], ensure_ascii=False)
                values = (
                    it["run"], it["source"], it.get("line"), str(it["task_id"]),
                    None if it.get("step") is None else str(it["step"]), int(it["sample_index"]),
                    it.get("category"), it.get("difficulty"), it.get("reward"), float(it["priority"]), reasons,
                    json.dumps(it["row"], ensure_ascii=False, default=str), json.dumps(it["group"], ensure_ascii=False, default=str),
                    json.dumps(it["world"]) if it.get("world") is not None else None,
                )
                cur = conn.execute("SELECT id FROM items WHERE key = ?", (it["key"],)).fetchone()
                if cur is None:
                    item_id = conn.execute(
                        "INSERT INTO items (run, source, line, task_id, step, sample_index, category, difficulty, reward, "
                        "priority, reasons, row, grp, world, key, created_at, updated_at, round) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (*values, it["key"], at, at, round),
                    ).lastrowid
                    added += 1
                else:
                    item_id = cur["id"]
                    conn.execute(
                        "UPDATE items SET run=?, source=?, line=?, task_id=?, step=?, sample_index=?, category=?, "
                        "difficulty=?, reward=?, priority=?, reasons=?, row=?, grp=?, world=?, updated_at=? WHERE id=?",
                        (*values, at, item_id),
                    )
                    conn.execute("DELETE FROM item_reasons WHERE item_id = ?", (item_id,))
                    refreshed += 1
                conn.executemany(
                    "INSERT OR IGNORE INTO item_reasons (item_id, code) VALUES (?, ?)",
                    [(item_id, r["code"]) for r in it["reasons"]],
                )
            self._audit(conn, actor, "flag", None, {"added": added, "refreshed": refreshed, "round": round})
        return added, refreshed

    def get(self, item_id: int) -> dict[str, Any]:
        row = self._conn().execute("SELECT * FROM items WHERE id = ?", (_row_id(item_id),)).fetchone()
        if row is None:
            raise ItemNotFoundError(item_id)
        return _item(row)

    def get_by_key(self, key: str) -> dict[str, Any]:
        row = self._conn().execute("SELECT * FROM items WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise ItemNotFoundError(key)
        return _item(row)

    def ids_by_keys(self, keys: Sequence[str]) -> dict[str, int]:
        conn = self._conn()
        out = {}
        for key in keys:
            row = conn.execute("SELECT id FROM items WHERE key = ?", (key,)).fetchone()
            if row is not None:
                out[key] = row["id"]
        return out

    def list(self, filters: Filters | None = None, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """Items in queue order (priority, then age), without their rows."""
        where, args = (filters or Filters()).where()
        rows = self._conn().execute(
            f"SELECT {_SUMMARY_COLUMNS} FROM items{where} ORDER BY priority DESC, id LIMIT ? OFFSET ?",
            (*args, int(limit), int(offset)),
        ).fetchall()
        return [_item(r, full=False) for r in rows]

    def all_items(self) -> list[dict[str, Any]]:
        return [_item(r) for r in self._conn().execute("SELECT * FROM items ORDER BY id").fetchall()]

    def count(self, filters: Filters | None = None) -> int:
        where, args = (filters or Filters()).where()
        return int(self._conn().execute(f"SELECT count(*) FROM items{where}", args).fetchone()[0])

    def counts(self, filters: Filters | None = None) -> dict[str, dict[str, int]]:
        """Item counts by status, reason and category, under the given filters (one snapshot)."""
        where, args = (filters or Filters()).where()
        with self.read() as conn:
            status = dict(conn.execute(f"SELECT status, count(*) FROM items{where} GROUP BY status", args).fetchall())
            reason = dict(conn.execute(
                f"SELECT item_reasons.code, count(*) FROM item_reasons JOIN items ON items.id = item_reasons.item_id"
                f"{where} GROUP BY item_reasons.code", args).fetchall())
            category = dict(conn.execute(
                f"SELECT coalesce(category, '-'), count(*) FROM items{where} GROUP BY category", args).fetchall())
            total = int(conn.execute(f"SELECT count(*) FROM items{where}", args).fetchone()[0])
        return {"status": {s: status.get(s, 0) for s in STATUSES}, "reason": reason, "category": category,
                "total": {"items": total}}

    def neighbours(self, item_id: int, filters: Filters | None = None) -> tuple[int | None, int | None]:
        """The items before and after `item_id` in queue order under the filters."""
        item = self.get(item_id)
        where, args = (filters or Filters()).where()
        glue = " AND " if where else " WHERE "
        prev = self._conn().execute(
            f"SELECT id FROM items{where}{glue}(priority > ? OR (priority = ? AND id < ?)) "
            "ORDER BY priority ASC, id DESC LIMIT 1",
            (*args, item["priority"], item["priority"], item_id),
        ).fetchone()
        nxt = self._conn().execute(
            f"SELECT id FROM items{where}{glue}(priority < ? OR (priority = ? AND id > ?)) "
            "ORDER BY priority DESC, id LIMIT 1",
            (*args, item["priority"], item["priority"], item_id),
        ).fetchone()
        return (prev["id"] if prev else None), (nxt["id"] if nxt else None)

    def next_pending(self, after: int | None = None, filters: Filters | None = None) -> int | None:
        """The next pending item in queue order after `after` (or the first one)."""
        f = Filters(status="pending", reason=(filters or Filters()).reason, category=(filters or Filters()).category)
        if after is not None:
            try:
                _, nxt = self.neighbours(after, f)
            except ItemNotFoundError:
                nxt = None
            if nxt is not None:
                return nxt
        first = self.list(f, limit=1)
        return first[0]["id"] if first and first[0]["id"] != after else None

    def siblings(self, item: dict[str, Any]) -> dict[str, int]:
        """Queued items of the same group: key -> id."""
        keys = [s["key"] for s in item["grp"].get("samples", [])]
        return self.ids_by_keys(keys)

    # -- decisions and the audit log ------------------------------------------------------------

    def decide(
        self,
        item_id: int,
        action: str,
        reviewer: str,
        reason: str | None = None,
        note: str | None = None,
        payload: dict[str, Any] | None = None,
        at: str | None = None,
    ) -> int:
        """Record a reviewer's action on an item and move its status; returns the decision id."""
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}; known: {', '.join(ACTIONS)}")
        if action == "reject" and reason not in REJECT_REASONS:
            raise ValueError(f"a rejection needs a reason, one of: {', '.join(REJECT_REASONS)}")
        if not reviewer or not reviewer.strip():
            raise ValueError("a decision needs a reviewer name")
        at = at or now()
        item_id = _row_id(item_id)
        with self.write() as conn:
            if conn.execute("SELECT 1 FROM items WHERE id = ?", (item_id,)).fetchone() is None:
                raise ItemNotFoundError(item_id)
            decision_id = conn.execute(
                "INSERT INTO decisions (item_id, action, reason, note, payload, reviewer, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (int(item_id), action, reason, note or None,
                 json.dumps(payload, ensure_ascii=False, default=str) if payload is not None else None, reviewer.strip(), at),
            ).lastrowid
            status = ACTIONS[action]
            if status is not None:
                conn.execute("UPDATE items SET status = ?, updated_at = ? WHERE id = ?", (status, at, int(item_id)))
            detail = {"decision": decision_id, "reason": reason, "note": note or None}
            self._audit(conn, reviewer.strip(), action, int(item_id), detail, at)
        return int(decision_id)

    def decisions(self, item_id: int | None = None) -> list[dict[str, Any]]:
        if item_id is None:
            rows = self._conn().execute("SELECT * FROM decisions ORDER BY id").fetchall()
        else:
            rows = self._conn().execute("SELECT * FROM decisions WHERE item_id = ? ORDER BY id", (_row_id(item_id),)).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            _decode(d, "payload", dict, None)
            payload = d["payload"]
            if d["action"] == "correct" and payload is not None and not isinstance(payload.get("calls"), list):
                d["payload"] = None  # a correction without its calls cannot be used
                d.setdefault("damaged", []).append("payload")
            out.append(d)
        return out

    def latest_decisions(self) -> dict[int, dict[str, Any]]:
        """Each item's latest status-changing decision (notes do not change a verdict)."""
        latest: dict[int, dict[str, Any]] = {}
        for d in self.decisions():
            if ACTIONS.get(d["action"]) is not None:
                latest[d["item_id"]] = d
        return latest

    def has_decision(self, item_id: int, action: str, reviewer: str, at: str | None = None,
                     reason: str | None = None, note: str | None = None) -> bool:
        """Whether this decision is already recorded: same time when `at` is known, else the same
        reason and note (imports use it to stay idempotent)."""
        if at is not None:
            sql = "SELECT 1 FROM decisions WHERE item_id = ? AND action = ? AND reviewer = ? AND at = ?"
            args: tuple[Any, ...] = (int(item_id), action, reviewer, at)
        else:
            sql = ("SELECT 1 FROM decisions WHERE item_id = ? AND action = ? AND reviewer = ? "
                   "AND reason IS ? AND note IS ?")
            args = (int(item_id), action, reviewer, reason, note or None)
        return self._conn().execute(sql, args).fetchone() is not None

    def _audit(self, conn: sqlite3.Connection, actor: str, action: str, item_id: int | None,
               detail: dict[str, Any] | None, at: str | None = None) -> None:
        conn.execute(
            "INSERT INTO audit (at, actor, action, item_id, detail) VALUES (?, ?, ?, ?, ?)",
            (at or now(), actor, action, item_id, json.dumps(detail, ensure_ascii=False, default=str) if detail else None),
        )

    def log(self, actor: str, action: str, detail: dict[str, Any] | None = None, item_id: int | None = None) -> None:
        """Add an audit entry for something that is not a decision (an export, a refused correction)."""
        with self.write() as conn:
            self._audit(conn, actor, action, item_id, detail)

    def audit(self, limit: int = 200, offset: int = 0, actor: str | None = None, item_id: int | None = None) -> list[dict[str, Any]]:
        clauses, args = [], []
        if actor:
            clauses.append("actor = ?")
            args.append(actor)
        if item_id is not None:
            clauses.append("item_id = ?")
            args.append(_row_id(item_id))
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self._conn().execute(
            f"SELECT * FROM audit{where} ORDER BY id DESC LIMIT ? OFFSET ?", (*args, int(limit), int(offset))
        ).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            _decode(d, "detail", dict, None)
            out.append(d)
        return out

    # -- rounds ---------------------------------------------------------------------------------

    def next_round(self) -> int:
        row = self._conn().execute("SELECT max(round) FROM rounds").fetchone()
        return 1 if row[0] is None else int(row[0]) + 1

    def save_round(self, round: int, run_dir: str, summary: dict[str, Any], actor: str = "loop") -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO rounds (round, run_dir, at, summary) VALUES (?, ?, ?, ?)",
                (int(round), run_dir, now(), json.dumps(summary, ensure_ascii=False, default=str)),
            )
            self._audit(conn, actor, "round", None, {"round": round, "run_dir": run_dir})

    def rounds(self) -> list[dict[str, Any]]:
        rows = self._conn().execute("SELECT * FROM rounds ORDER BY round").fetchall()
        out = []
        for r in rows:
            d = dict(r)
            _decode(d, "summary", dict, {})
            out.append(d)
        return out
