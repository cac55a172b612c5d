"""Copy-on-write table state of one session, with the reference's row labels.

Rows are tuples. A fresh session's table points at the world's immutable tuple of rows; the first
write copies the list (not the rows). Row labels follow pandas exactly as the reference produces
them (SPEC 1.7): deletes leave gaps, inserts either relabel everything 0..n-1, append label 0
(calendar), or append label n (plots). `origins` remembers which base row each row came from
(None for inserted rows), which the outcome verifier keys on.

Id lookups have a fast path for string ids (what every well-formed call sends) that gives the same
answer as the general pandas-faithful path in `frame_ops`, which handles everything else.

`str_columns` are the columns pandas 3 holds with its `str` dtype (reference_compat "pandas3"):
set by the session, given up by a column once a created row brings it a cell that is no string.
"""

from __future__ import annotations

import sys
from typing import Any

from officegym.envs.workplace import frame_ops, str_dtype

RELABEL_ALL = "relabel"  # concat(..., ignore_index=True)
LABEL_ZERO = "zero"  # concat without ignore_index: the new one-row frame brings label 0
LABEL_NEXT = "next"  # df.loc[len(df)] = row


# An int object in a labels or origins list (values past CPython's small-int cache are objects).
_INT_BYTES = 32
_SMALL_INTS = 257
_LIST_HEADER_BYTES = 56
_NO_COLUMNS: frozenset[int] = frozenset()  # shared: a fresh frozenset() is an object of its own


def value_bytes(value: Any) -> int:
    """Memory a cell value holds (containers walked; objects met twice counted once). An upper
    bound for a cell that shares its text with another row."""
    if type(value) is str:
        return sys.getsizeof(value)
    total, stack, seen = 0, [value], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        total += sys.getsizeof(v)
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
    return total


def row_bytes(row: tuple) -> int:
    return sys.getsizeof(row) + sum(value_bytes(c) for c in row)


class TableState:
    __slots__ = ("_ids", "_labels", "_new_bytes", "_origins", "_peak_rows", "columns", "insert_rule", "owned",
                 "rows", "split_blocks", "str_columns")

    def __init__(self, columns: tuple[str, ...], rows: tuple[tuple, ...], insert_rule: str, ids: tuple | None = None):
        self.columns = columns
        self.rows: tuple[tuple, ...] | list[tuple] = rows
        self.insert_rule = insert_rule
        self.owned = False
        self._labels: list[int] | None = None  # None: contiguous 0..n-1
        self._origins: list[int | None] | None = None  # None: row i is base row i
        self._ids: tuple | list | None = ids  # the first column, kept in step with rows
        # Whether the reference's DataFrame now holds several blocks: a concat that reorders
        # columns or brings a numeric cell splits it for good, and pandas' list assignment rules
        # differ then (frame_ops.assign_values).
        self.split_blocks = False
        self.str_columns: frozenset[int] = _NO_COLUMNS  # pandas 3 `str` columns; none under pandas 2
        self._new_bytes = 0  # rows this session made (appended or rewritten), never less after deletes
        self._peak_rows = 0  # the most rows the owned lists held: a list keeps its room after deletes

    def held_bytes(self) -> int:
        """Memory this session's copy of the table holds beyond the world's shared rows: its lists
        (rows, ids, labels, origins) and the rows it made. 0 until the first write."""
        if not self.owned:
            return 0
        n = self._peak_rows
        lists = 2 + (self._labels is not None) + (self._origins is not None)
        ints = (self._labels is not None) + (self._origins is not None)
        # A list object's header (56 bytes) plus CPython's growth rule (n + n/8 + 6 slots).
        return lists * (_LIST_HEADER_BYTES + 8 * (n + n // 8 + 6)) + ints * _INT_BYTES * max(0, n - _SMALL_INTS) + self._new_bytes

    @property
    def labels(self) -> list[int]:
        return list(range(len(self.rows))) if self._labels is None else list(self._labels)

    @property
    def origins(self) -> list[int | None]:
        return list(range(len(self.rows))) if self._origins is None else list(self._origins)

    # -- reads -------------------------------------------------------------------------------------

    def ids(self) -> tuple | list:
        if self._ids is None:
            self._ids = [r[0] for r in self.rows]
        return self._ids

    def is_str(self, column: int) -> bool:
        return column in self.str_columns

    def has_id(self, value: Any) -> bool:
        """`value in df[id].values`."""
        if type(value) is str:
            return value in self.ids()  # identity shortcut is harmless: ids are never the NaN object
        return frame_ops.array_contains(self.ids(), value, self.is_str(0))

    def id_positions(self, value: Any) -> list[int]:
        """Positions where `df[id] == value` (raises like pandas for list values of the wrong length)."""
        ids = self.ids()
        if type(value) is str:
            out, start = [], 0
            try:
                while True:
                    i = ids.index(value, start)
                    out.append(i)
                    start = i + 1
            except ValueError:
                return out
        return [i for i, hit in enumerate(frame_ops.eq_mask(list(ids), value, self.is_str(0))) if hit]

    def max_id(self) -> Any:
        """`df[id].max()`: string max when all ids are strings, else pandas' object rules."""
        ids = self.ids()
        if ids:
            try:
                best = max(ids)
            except TypeError:
                best = None
            # max() raised TypeError if any id were not a string next to string ids
            if type(best) is str:
                return best
        return frame_ops.column_max(ids, self.is_str(0))

    # -- writes ------------------------------------------------------------------------------------

    def _own(self) -> list[tuple]:
        if not self.owned:
            self.rows = list(self.rows)
            if self._ids is not None:
                self._ids = list(self._ids)
            self.owned = True
        self._peak_rows = max(self._peak_rows, len(self.rows) + 1)
        return self.rows  # type: ignore[return-value]

    def append(self, row: tuple, reorders_columns: bool = False) -> None:
        if reorders_columns or any(type(c) in (int, float, bool) for c in row):
            self.split_blocks = True
        if self.str_columns:
            str_dtype.check_new_row(row)  # pandas 3 refuses the row before anything changes
            lost = [i for i in self.str_columns if not isinstance(row[i], str)]
            if lost:  # concat keeps `str` only where the new cell is a string too
                self.str_columns = self.str_columns.difference(lost)
                self._new_bytes += sys.getsizeof(self.str_columns)
        rows = self._own()
        n = len(rows)
        if self._origins is None:
            self._origins = list(range(n))
        self._origins.append(None)
        if self.insert_rule == RELABEL_ALL:
            self._labels = None
        elif self.insert_rule == LABEL_ZERO:
            if self._labels is None:
                self._labels = list(range(n))
            self._labels.append(0)
        elif self._labels is not None:  # LABEL_NEXT keeps contiguity when there were no gaps
            self._labels.append(n)
        rows.append(row)
        self._new_bytes += row_bytes(row)
        if self._ids is not None:
            self._ids.append(row[0])  # type: ignore[union-attr]

    def delete_id(self, value: Any) -> None:
        """`df = df[df[id] != value]`: drop every row whose id equals value; labels keep gaps."""
        if type(value) is not str:
            self.keep(frame_ops.ne_mask(list(self.ids()), value, self.is_str(0)))
            return
        positions = self.id_positions(value)
        rows = self._own()
        n = len(rows)
        if self._labels is None:
            self._labels = list(range(n))
        if self._origins is None:
            self._origins = list(range(n))
        ids = self.ids()
        for i in reversed(positions):
            del rows[i], self._labels[i], self._origins[i], ids[i]  # type: ignore[union-attr]

    def keep(self, mask: list[bool]) -> None:
        """Keep the rows where mask is True (a delete); labels and origins keep their gaps."""
        rows = self._own()
        n = len(rows)
        labels = self._labels if self._labels is not None else range(n)
        origins = self._origins if self._origins is not None else range(n)
        self.rows = [r for r, k in zip(rows, mask) if k]
        self._labels = [lab for lab, k in zip(labels, mask) if k]
        self._origins = [o for o, k in zip(origins, mask) if k]
        self._ids = None

    def set_cell(self, index: int, column: int, value: object) -> None:
        rows = self._own()
        row = list(rows[index])
        row[column] = value
        rows[index] = tuple(row)
        self._new_bytes += sys.getsizeof(rows[index]) + value_bytes(value)
        if column == 0 and self._ids is not None:
            self._ids[index] = value  # type: ignore[index]

    def set_where_id(self, id_value: Any, column: int, value: Any) -> None:
        """`df.loc[df[id] == id_value, column] = value`."""
        hits = self.id_positions(id_value)
        for i, v in zip(hits, frame_ops.assign_values(len(hits), value, self.split_blocks, self.is_str(column))):
            self.set_cell(i, column, v)
