"""Canonical forms of a session's tables for the two verification modes.

`nemo_gym`: what the reference's `DataFrame.equals` sees after its lower-casing (SPEC 3.1.6, 1.7):
row labels in order, every cell lower-cased if it is a string and NA otherwise, except `status`,
`list_name` and `board`, which keep their raw value (any null is NA).

`outcome`: the content of each table. Rows of the base world are keyed by the base row they came
from; inserted rows form a multiset without their generated ids. Strings are case-insensitive where
the reference's are, a number equals its numeric string, null equals the empty string, and event
starts that denote the same instant are equal.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from officegym.envs.workplace.frame_ops import is_null
from officegym.envs.workplace.table import TableState
from officegym.envs.workplace.timestamps import parse_timestamp
from officegym.envs.workplace.world import COMPARED_TABLES, ID_COLUMNS, NAN, TABLE_COLUMNS

CASE_SENSITIVE_COLUMNS = frozenset({"status", "list_name", "board"})


class _NA:
    """The single missing value of canonical rows (pandas treats NaN and None alike here)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NA"


NA = _NA()


def _lower_plan(table: str) -> tuple[bool, ...]:
    return tuple(c not in CASE_SENSITIVE_COLUMNS for c in TABLE_COLUMNS[table])


LOWER_PLAN = {t: _lower_plan(t) for t in COMPARED_TABLES}


# Canonical rows by (table, row): replays of the same calls build equal rows again and again.
_CACHE_LIMIT = 200_000
_nemo_cache: dict[tuple[str, tuple], tuple] = {}
_outcome_cache: dict[tuple[str, tuple], tuple] = {}


def _cached(cache: dict, table: str, row: tuple, make) -> tuple:
    # Only rows of strings and missing values are cached: tuple equality would confuse 1, 1.0 and
    # True, which canonicalise differently.
    for c in row:
        if type(c) is not str and c is not None and c is not NAN:
            return make(table, row)
    key = (table, row)
    value = cache.get(key)
    if value is None:
        value = make(table, row)
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        cache[key] = value
    return value


def nemo_row(table: str, row: tuple) -> tuple:
    return _cached(_nemo_cache, table, row, _nemo_row)


def _nemo_row(table: str, row: tuple) -> tuple:
    out = []
    for cell, lower in zip(row, LOWER_PLAN[table]):
        if lower:
            out.append(cell.lower() if isinstance(cell, str) else NA)
        else:
            out.append(NA if is_null(cell) else cell)
    return tuple(out)


def nemo_tables_equal(table: str, a: TableState, b: TableState) -> bool:
    """Whether the reference would find the two tables equal (labels and lower-cased cells)."""
    if a.rows is b.rows and a._labels is b._labels:
        return True
    if len(a.rows) != len(b.rows) or a.labels != b.labels:
        return False
    for ra, rb in zip(a.rows, b.rows):
        if ra is not rb and nemo_row(table, ra) != nemo_row(table, rb):
            return False
    return True


def _outcome_cell(cell: Any, lower: bool, column: str) -> Any:
    if is_null(cell) or cell == "":
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, int):
        return str(cell)
    if isinstance(cell, float):
        return str(int(cell)) if cell.is_integer() else repr(cell)
    if isinstance(cell, str):
        if column == "event_start":
            instant = _instant(cell)
            if instant is not None:
                return instant
        return cell.lower() if lower else cell
    return "json:" + json.dumps(cell, sort_keys=True, default=str)


def _instant(text: str) -> str | None:
    try:
        ts = parse_timestamp(text)
    except (ValueError, TypeError, OverflowError):
        return None
    return None if ts is None else ts.isoformat(sep=" ")


def outcome_row(table: str, row: tuple) -> tuple:
    return _cached(_outcome_cache, table, row, _outcome_row)


def _outcome_row(table: str, row: tuple) -> tuple:
    return tuple(
        _outcome_cell(cell, lower, col) for cell, lower, col in zip(row, LOWER_PLAN[table], TABLE_COLUMNS[table])
    )


def display_row(table: str, row: tuple) -> dict[str, Any]:
    """A row as evidence: column -> value, nulls as None."""
    return {c: (None if is_null(v) else v) for c, v in zip(TABLE_COLUMNS[table], row)}


def outcome_diff(table: str, expected: TableState, got: TableState) -> tuple[list, list, list]:
    """Rows missing from `got`, extra in `got`, and changed base rows (field: [expected, got])."""
    if expected.rows is got.rows:
        return [], [], []
    missing: list = []
    extra: list = []
    changed: list = []
    exp_base: dict[int, tuple] = {}
    got_base: dict[int, tuple] = {}
    exp_new: list[tuple] = []
    got_new: list[tuple] = []
    e_orig, g_orig = expected.origins, got.origins
    if e_orig == g_orig:
        # Same base rows in the same places (the usual case): look only at rows that are not the
        # very same tuple on both sides.
        for erow, grow, origin in zip(expected.rows, got.rows, e_orig):
            if erow is not grow:
                if origin is None:
                    exp_new.append(erow)
                    got_new.append(grow)
                else:
                    exp_base[origin] = erow
                    got_base[origin] = grow
    else:
        for rows, origins, base, new in (
            (expected.rows, e_orig, exp_base, exp_new),
            (got.rows, g_orig, got_base, got_new),
        ):
            for row, origin in zip(rows, origins):
                if origin is None:
                    new.append(row)
                else:
                    base[origin] = row
    columns = TABLE_COLUMNS[table]
    for origin, erow in exp_base.items():
        grow = got_base.get(origin)
        if grow is None:
            missing.append(display_row(table, erow))
        elif grow is not erow:
            ecan, gcan = outcome_row(table, erow), outcome_row(table, grow)
            if ecan != gcan:
                fields = {
                    columns[i]: [display_row(table, erow)[columns[i]], display_row(table, grow)[columns[i]]]
                    for i in range(len(columns))
                    if ecan[i] != gcan[i]
                }
                changed.append({"row": display_row(table, erow), "fields": fields})
    for origin, grow in got_base.items():
        if origin not in exp_base:
            extra.append(display_row(table, grow))
    id_col = ID_COLUMNS[table]
    skip = columns.index(id_col) if id_col else None

    def key(row: tuple) -> tuple:
        can = outcome_row(table, row)
        return can if skip is None else can[:skip] + can[skip + 1 :]

    exp_count = Counter(key(r) for r in exp_new)
    got_count = Counter(key(r) for r in got_new)
    for rows, wanted, have, out in ((exp_new, exp_count, got_count, missing), (got_new, got_count, exp_count, extra)):
        surplus = wanted - have
        for r in rows:
            k = key(r)
            if surplus[k] > 0:
                surplus[k] -= 1
                out.append(display_row(table, r))
    return missing, extra, changed


def untouched(session) -> bool:
    """No compared table was ever written (so the state is the pristine world)."""
    return not any(session.table(t).owned for t in COMPARED_TABLES)
