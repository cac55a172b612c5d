"""What a review store file is: its schema, as versioned migrations, and a read-only check that a
file is one this code can open (review/store.py opens and writes it).

Tables: `items` (a flagged rollout: its row, reasons, priority, status), `item_reasons` (one row
per reason, for filtering), `decisions` (every action a reviewer took, append-only), `audit` (who
did what and when, for every change), `rounds` (active-learning rounds).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# Schema migrations: migration i brings the file from user_version i to i + 1. Never edit a
# released migration; append a new one.
MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            run TEXT NOT NULL,
            source TEXT NOT NULL,
            line INTEGER,
            task_id TEXT NOT NULL,
            step TEXT,
            sample_index INTEGER NOT NULL,
            category TEXT,
            difficulty REAL,
            reward REAL,
            priority REAL NOT NULL,
            reasons TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            row TEXT NOT NULL,
            grp TEXT NOT NULL,
            world TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        "CREATE INDEX items_queue ON items (status, priority DESC, id)",
        "CREATE INDEX items_task ON items (task_id)",
        """CREATE TABLE item_reasons (
            item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            code TEXT NOT NULL,
            PRIMARY KEY (item_id, code)
        )""",
        "CREATE INDEX item_reasons_code ON item_reasons (code, item_id)",
        """CREATE TABLE decisions (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items(id),
            action TEXT NOT NULL,
            reason TEXT,
            note TEXT,
            payload TEXT,
            reviewer TEXT NOT NULL,
            at TEXT NOT NULL
        )""",
        "CREATE INDEX decisions_item ON decisions (item_id, id)",
        """CREATE TABLE audit (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            item_id INTEGER,
            detail TEXT
        )""",
    ],
    [
        """CREATE TABLE rounds (
            round INTEGER PRIMARY KEY,
            run_dir TEXT NOT NULL,
            at TEXT NOT NULL,
            summary TEXT NOT NULL
        )""",
        "ALTER TABLE items ADD COLUMN round INTEGER",
        "CREATE INDEX items_round ON items (round)",
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(RuntimeError):
    """A store this code cannot use (made by a newer version, or not a review store)."""


def _tables(conn: sqlite3.Connection) -> dict[str, set[str]]:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {n: {r[0] for r in conn.execute("SELECT name FROM pragma_table_info(?)", (n,))} for n in names}


def _expected_tables(version: int) -> dict[str, set[str]]:
    """The tables and columns of a store at `version`: its migrations, run in memory."""
    conn = sqlite3.connect(":memory:")
    try:
        for migration in MIGRATIONS[:version]:
            for statement in migration:
                conn.execute(statement)
        return _tables(conn)
    finally:
        conn.close()


def inspect_file(path: Path, integrity: bool = False, timeout_s: float = 30.0) -> int:
    """Check, without writing, that `path` is missing, empty or a review store this code can
    open; returns its schema version, or raises StoreError with a one-line reason. `integrity`
    also runs SQLite's quick_check, which reads every page (damage shows up only there)."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a review store")
    if not path.exists() or path.stat().st_size == 0:
        return 0
    try:
        # Read-only: a foreign file is left exactly as it is, header and journal mode included.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=timeout_s)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open ({exc})") from None
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = _tables(conn)
        damage = None
        if integrity:
            first = conn.execute("PRAGMA quick_check(1)").fetchone()
            damage = None if first and first[0] == "ok" else " ".join(str(first and first[0]).split())
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not a usable SQLite file ({exc})") from None
    finally:
        conn.close()
    if damage:
        raise StoreError(f"{path}: damaged review store ({damage})")
    if version == 0 and tables:
        raise StoreError(f"{path} is an SQLite file but not a review store")
    expected = _expected_tables(min(version, SCHEMA_VERSION))
    missing = [t for t in expected if t not in tables]
    missing += [f"{t}.{c}" for t in expected if t in tables for c in sorted(expected[t] - tables[t])]
    if missing:
        raise StoreError(f"{path} is an SQLite file but not a review store (it lacks {', '.join(missing[:3])})")
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path} has schema version {version}; this officegym knows up to {SCHEMA_VERSION} (upgrade it)")
    return version
