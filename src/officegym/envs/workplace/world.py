"""A world: the five mutable tables plus the read-only directory and visit log, loaded once.

Loads any folder in NeMo Gym's `csv_data` layout. Cells are strings; empty cells (and the other
spellings pandas reads as missing) become None, exactly as the reference reads them with
`pd.read_csv(dtype=str)`. Everything here is immutable and shared by all sessions.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# A missing CSV cell. pandas reads it as float NaN, which is truthy, renders as "nan" and differs
# from a None that a replayed call stores; one shared object keeps those semantics.
NAN = float("nan")

# The strings pandas' read_csv turns into NaN by default (keep_default_na=True).
_CSV_MISSING = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
)

EMAIL_COLUMNS = ("email_id", "inbox/outbox", "sender/recipient", "subject", "sent_datetime", "body")
CALENDAR_COLUMNS = ("event_id", "event_name", "participant_email", "event_start", "duration")
ANALYTICS_COLUMNS = (
    "date_of_visit", "visitor_id", "page_views", "session_duration_seconds", "traffic_source", "user_engaged",
)
PLOT_COLUMNS = ("file_path",)
TASK_COLUMNS = ("task_id", "task_name", "assigned_to_email", "list_name", "due_date", "board")
CRM_COLUMNS = (
    "customer_id", "assigned_to_email", "customer_name", "customer_email", "customer_phone",
    "last_contact_date", "product_interest", "status", "follow_up_by", "notes",
)

FILES = {
    "emails": ("processed", "emails.csv", EMAIL_COLUMNS),
    "calendar": ("processed", "calendar_events.csv", CALENDAR_COLUMNS),
    "analytics": ("processed", "analytics_data.csv", ANALYTICS_COLUMNS),
    "project_tasks": ("processed", "project_tasks.csv", TASK_COLUMNS),
    "crm": ("processed", "customer_relationship_manager_data.csv", CRM_COLUMNS),
}
DIRECTORY_FILE = ("raw", "email_addresses.csv")

# The reference's clock: new e-mails are stamped with it.
REFERENCE_NOW = "2023-11-30 23:59:00"
_NOW_RE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")

# The five tables whose final state decides the reward, in the reference's comparison order.
COMPARED_TABLES = ("calendar", "emails", "plots", "project_tasks", "crm")
ID_COLUMNS = {"emails": "email_id", "calendar": "event_id", "project_tasks": "task_id", "crm": "customer_id", "plots": None}
TABLE_COLUMNS = {
    "emails": EMAIL_COLUMNS,
    "calendar": CALENDAR_COLUMNS,
    "plots": PLOT_COLUMNS,
    "project_tasks": TASK_COLUMNS,
    "crm": CRM_COLUMNS,
}


class WorldFormatError(ValueError):
    """A world folder that does not have the csv_data layout (says which file and why)."""


@dataclass(frozen=True)
class DateStats:
    """Per-date aggregates of the visit log (what the analytics tools group by)."""

    visits: int
    engaged: int
    duration_sum: float
    by_source: dict[str, int]
    bad_duration: str | None = None


@dataclass(frozen=True, eq=False)
class World:
    """An immutable company: base rows of every table (tuples of cells) and derived indexes."""

    path: str
    now: str
    tables: dict[str, tuple[tuple, ...]]
    directory: tuple[str, ...]
    analytics: tuple[tuple, ...]
    # Derived, computed once at load.
    dates: tuple[str, ...] = field(default=())
    date_stats: dict[str, DateStats] = field(default_factory=dict)
    visitors: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # (search haystack, parsed sent_datetime or None when it does not parse, row) per base e-mail,
    # in table order, and the same entries by id(row) for sessions whose e-mail table changed.
    email_entries: tuple[tuple[str, Any, tuple], ...] = ()
    email_index: dict[int, tuple[str, Any, tuple]] = field(default_factory=dict)
    ids: dict[str, tuple] = field(default_factory=dict)
    # id(base calendar row) -> its parsed start, for starts that parse to a time
    event_starts: dict[int, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={len(v)}" for k, v in self.tables.items())
        return f"World({self.path!r}, now={self.now!r}, {sizes}, directory={len(self.directory)})"

    def new_session(self):
        from officegym.envs.workplace.session import WorkplaceSession

        return WorkplaceSession(self)

    def __reduce__(self) -> tuple[Any, tuple]:
        # Pickled as its base rows and rebuilt (a Ray worker gets a world this way): the derived
        # indexes are keyed by id(row) and would point at nothing in another process.
        tables = {name: rows for name, rows in self.tables.items() if name != "plots"}
        return _rebuild_world, (self.path, tables, self.directory, self.analytics, self.now)


def _read_csv(path: Path, columns: tuple[str, ...]) -> tuple[tuple, ...]:
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise WorldFormatError(f"{path}: empty file")
            if tuple(header) != columns:
                raise WorldFormatError(f"{path}: header {header} does not match the expected columns {list(columns)}")
            rows = []
            for lineno, rec in enumerate(reader, 2):
                if not rec:
                    continue
                if len(rec) != len(columns):
                    raise WorldFormatError(f"{path}:{lineno}: {len(rec)} fields, expected {len(columns)}")
                rows.append(tuple(NAN if cell in _CSV_MISSING else cell for cell in rec))
    except FileNotFoundError:
        raise WorldFormatError(f"missing file {path}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise WorldFormatError(f"{path}: {exc}") from None
    return tuple(rows)


def _parsed_or_none(value: Any) -> Any:
    from officegym.envs.workplace.timestamps import parse_timestamp

    try:
        return parse_timestamp(value)
    except (ValueError, TypeError, OverflowError):
        return None


def email_haystack(row: tuple) -> str:
    """What e-mail search matches against: subject, body and sender, lower-cased."""
    # Same f-string as the reference: a missing CSV cell (NaN) renders as "nan" and matches on it.
    return f"{row[3]} {row[5]} {row[2]}".lower()


def load_world(path: str | os.PathLike[str]) -> World:
    """Load a world from a folder with `processed/*.csv` and `raw/email_addresses.csv`.

    The folder itself or a parent holding `csv_data/` are both accepted.
    """
    root = Path(path)
    if (root / "csv_data").is_dir():
        root = root / "csv_data"
    if not root.is_dir():
        raise WorldFormatError(f"{root} is not a folder")
    tables = {name: _read_csv(root / sub / fname, cols) for name, (sub, fname, cols) in FILES.items()}
    dir_path = root.joinpath(*DIRECTORY_FILE)
    try:
        with open(dir_path, newline="", encoding="utf-8") as fh:
            directory = tuple(
                NAN if rec[0] in _CSV_MISSING else rec[0] for rec in csv.reader(fh) if rec
            )
    except FileNotFoundError:
        raise WorldFormatError(f"missing file {dir_path}") from None
    analytics = tuple((*row[:5], row[5] == "True") for row in tables.pop("analytics"))
    return build_world(str(root), tables, directory, analytics, now=_read_now(root))


def _read_now(root: Path) -> str:
    """The world's clock: `world.json` {"now": "YYYY-MM-DD HH:MM:SS"} beside the CSVs, else the reference's."""
    meta = root / "world.json"
    if not meta.exists():
        return REFERENCE_NOW
    try:
        now = json.loads(meta.read_text(encoding="utf-8")).get("now", REFERENCE_NOW)
    except (ValueError, AttributeError) as exc:
        raise WorldFormatError(f"{meta}: {exc}") from None
    if not isinstance(now, str) or not _NOW_RE.fullmatch(now):
        raise WorldFormatError(f"{meta}: 'now' must be 'YYYY-MM-DD HH:MM:SS', got {now!r}")
    return now


def _rebuild_world(path: str, tables: dict[str, tuple[tuple, ...]], directory: tuple, analytics: tuple[tuple, ...],
                   now: str) -> World:
    """A pickled World: its rows with every missing cell this module's NAN again (unpickled, they
    are another NaN object, and code tells a missing CSV cell by identity)."""

    def cells(row: tuple) -> tuple:
        return tuple(NAN if isinstance(c, float) and c != c else c for c in row)

    tables = {name: tuple(cells(r) for r in rows) for name, rows in tables.items()}
    directory = cells(directory)
    return build_world(path, tables, directory, tuple(cells(r) for r in analytics), now=now)


def build_world(
    path: str,
    tables: dict[str, tuple[tuple, ...]],
    directory: tuple,
    analytics: tuple[tuple, ...],
    now: str = "2023-11-30 23:59:00",
) -> World:
    """Assemble a World and its derived indexes from in-memory rows (used by loaders and tests)."""
    tables = {**tables, "plots": ()}
    stats: dict[str, list] = {}
    visitors: dict[str, list[int]] = {}
    for i, (date, visitor, _views, duration, source, engaged) in enumerate(analytics):
        s = stats.setdefault(date, [0, 0, [], {}])
        s[0] += 1
        s[1] += bool(engaged)
        s[2].append(duration)
        s[3][source] = s[3].get(source, 0) + 1
        visitors.setdefault(visitor, []).append(i)
    date_stats = {}
    for date, (n, engaged, durations, by_source) in stats.items():
        total, bad = 0.0, None
        for d in durations:
            try:
                total += float(d)
            except (TypeError, ValueError):
                total, bad = float("nan"), d  # the average tool reports this conversion error itself
                break
        date_stats[date] = DateStats(n, engaged, total, by_source, bad)
    dates = tuple(sorted(d for d in stats if isinstance(d, str)))
    entries = tuple((email_haystack(row), _parsed_or_none(row[4]), row) for row in tables["emails"])
    index = {id(e[2]): e for e in entries}
    ids = {name: tuple(r[0] for r in rows) for name, rows in tables.items()}
    starts = {id(r): ts for r in tables["calendar"] if (ts := _parsed_or_none(r[3])) is not None}
    return World(
        path=path,
        now=now,
        tables=tables,
        directory=directory,
        analytics=analytics,
        dates=dates,
        date_stats=date_stats,
        visitors={k: tuple(v) for k, v in visitors.items()},
        email_entries=entries,
        email_index=index,
        ids=ids,
        event_starts=starts,
    )
