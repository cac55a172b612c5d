"""The few pandas operations the reference tools use, re-done over lists of cells.

Each function reproduces what the reference's pandas expression does for the values a model can
send (JSON scalars, lists, objects), including which inputs raise and with what message, because a
raised error becomes the text the model sees and decides whether state changes. With `str_dtype`,
a column has pandas 3's `str` dtype (reference_compat "pandas3"); what differs then is in
str_dtype.py.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from officegym.envs.workplace import str_dtype as pandas3
from officegym.envs.workplace.patterns import SearchPattern, search_pattern
from officegym.envs.workplace.timestamps import parse_timestamp
from officegym.envs.workplace.world import NAN


class _NaT:
    """pandas' NaT as the tools meet it: truthy, and every ordering comparison is False."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        if isinstance(other, datetime.date) and not isinstance(other, datetime.datetime):
            raise TypeError("Cannot compare NaT with datetime.date object")
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def date(self) -> _NaT:
        return self

    def __repr__(self) -> str:
        return "NaT"


NAT = _NaT()


def timestamp(value: Any) -> Any:
    """`pd.Timestamp(value)`: a datetime, or NAT where pandas gives NaT; raises like pandas."""
    ts = parse_timestamp(value)
    return NAT if ts is None else ts


def is_null(value: Any) -> bool:
    """A missing cell as pandas sees it: None or NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _list_like(value: Any) -> bool:
    # pandas compares a list elementwise; a dict (the only other JSON container) is a scalar
    return isinstance(value, list | tuple)


def eq_mask(cells: list[Any], value: Any, str_dtype: bool = False) -> list[bool]:
    """`series == value`: elementwise for a scalar; a list must match the length (pandas rule)."""
    if str_dtype:
        pandas3.check_eq(value)
    if _list_like(value):
        if len(value) != len(cells):
            raise ValueError(("Lengths must match to compare", (len(cells),), (len(value),)))
        return [(not is_null(c)) and c == v for c, v in zip(cells, list(value))]
    if is_null(value):
        return [False] * len(cells)
    return [(not is_null(c)) and c == value for c in cells]


def ne_mask(cells: list[Any], value: Any, str_dtype: bool = False) -> list[bool]:
    """`series != value` (nulls are unequal to everything)."""
    if str_dtype and isinstance(value, dict):
        raise NotImplementedError(f"ne not implemented for {type(value)}")
    return [not m for m in eq_mask(cells, value)]


def array_contains(cells: list[Any] | tuple, value: Any, str_dtype: bool = False) -> bool:
    """`value in series.values` (numpy: any elementwise ==, broadcasting a one-element list)."""
    if str_dtype:
        return pandas3.array_contains(cells, value)
    if isinstance(value, list | tuple):
        if len(value) == 1:
            value = value[0]
        elif len(value) == len(cells):
            return any(c == v for c, v in zip(cells, value))
        else:
            raise ValueError(
                f"operands could not be broadcast together with shapes ({len(cells)},) ({len(value)},) "
            )
    return any(c == value for c in cells)


_NEG_INF = float("-inf")


def column_max(cells: list[Any] | tuple, str_dtype: bool = False) -> Any:
    """`series.max()` of an object column: NaN when empty or all null; otherwise nulls become
    -inf and numpy keeps `best if best >= next else next`, so a null or a number among string ids
    raises TypeError with pandas' message."""
    if str_dtype:
        return pandas3.column_max(cells)
    if all(is_null(c) for c in cells):
        return NAN
    values = [_NEG_INF if is_null(c) else c for c in cells]
    best = values[0]
    for v in values[1:]:
        if not best >= v:
            best = v
    return best


def regex(pattern: Any) -> SearchPattern:
    """The pattern `str.contains(pattern, case=False)` compiles (a bad pattern raises re.error),
    matched within a time budget (patterns.py)."""
    return search_pattern(pattern)


def contains_mask(cells: list[Any], pattern: Any, na: bool | None = None, str_dtype: bool = False) -> list[bool]:
    """`series.str.contains(pattern, case=False[, na=...])` used as a boolean mask.

    With `na=None` (the default) a non-string cell yields NaN, and masking a frame with it raises,
    so the reference tool errors out; `na=False` treats such cells as non-matching. A `str` column
    treats a missing cell as no match either way.
    """
    if str_dtype:
        return pandas3.contains_mask(cells, pattern)
    rx = regex(pattern)
    out = []
    for c in cells:
        if isinstance(c, str):
            out.append(rx.matches(c))
        elif na is None:
            raise ValueError("Cannot mask with non-boolean array containing NA / NaN values")
        else:
            out.append(bool(na))
    return out


def compare_mask(cells: list[Any], op: str, value: Any, str_dtype: bool = False) -> list[bool]:
    """`series >= value` / `series <= value` on an object column (nulls give False)."""
    if str_dtype:
        pandas3.check_compare(op, value, len(cells))
    if _list_like(value):
        if len(value) != len(cells):
            raise ValueError(("Lengths must match to compare", (len(cells),), (len(value),)))
        pairs = list(zip(cells, list(value)))
    else:
        pairs = [(c, value) for c in cells]
    if op == ">=":
        return [False if is_null(c) else bool(c >= v) for c, v in pairs]
    return [False if is_null(c) else bool(c <= v) for c, v in pairs]


def lowered(cell: Any) -> Any:
    """`series.str.lower()` for one cell: non-strings become NaN."""
    return cell.lower() if isinstance(cell, str) else NAN


def assign_values(n_matched: int, value: Any, split_blocks: bool = False, str_dtype: bool = False) -> list[Any]:
    """What `df.loc[mask, col] = value` writes into each matched row.

    A list as long as the match is written element by element. Otherwise pandas' answer depends
    on the frame's internal layout: a single-block frame spreads a one-element list over all rows
    and rejects other lengths; a frame split into several blocks (see TableState.split_blocks)
    rejects every other length. A dict is aligned on row labels, which it never shares: NaN."""
    if str_dtype:
        return pandas3.assign_values(n_matched, value)
    if isinstance(value, list | tuple):
        if len(value) == n_matched:
            return list(value)
        if split_blocks:
            raise ValueError("Must have equal len keys and value when setting with an iterable")
        if len(value) == 1:
            return [value[0]] * n_matched
        raise ValueError("setting an array element with a sequence.")
    if isinstance(value, dict):
        return [NAN] * n_matched
    return [value] * n_matched
