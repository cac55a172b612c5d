"""pandas 3's `str` columns as the reference's tools meet them (reference_compat "pandas3", compat.py).

Each function is the `str`-column counterpart of one in frame_ops.py, for what differs: which
values a write accepts, which comparisons raise and with what text, and how `str.contains` matches
(pyarrow's RE2, or Python's `re` for the patterns RE2 would read differently). A column holds
strings and missing cells only (NaN), as pandas 3 keeps it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from officegym.envs.workplace.patterns import check_pattern_length, search_pattern
from officegym.envs.workplace.world import NAN

try:
    from re import _parser
except ImportError:  # pragma: no cover - Python < 3.11 has no re._parser (pandas 3 needs 3.11)
    import sre_parse as _parser  # type: ignore[no-redef]

SET_LENGTHS = "Must have equal len keys and value when setting with an iterable"
_ARRAY_VALUE = "Invalid value for dtype 'str'. Value should be a string or missing value (or array of those)."
_COMPARE_NAMES = {">=": "ge", "<=": "le", "==": "eq"}


def _null(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _not_implemented(op: str, value: Any) -> NotImplementedError:
    return NotImplementedError(f"{_COMPARE_NAMES[op]} not implemented for {type(value)}")


# -- writes


def check_text(value: str) -> None:
    """pyarrow stores text as UTF-8: a lone surrogate raises UnicodeEncodeError, as in pandas 3."""
    value.encode("utf-8")


def check_new_row(row: tuple) -> None:
    """A created row becomes a one-row frame first, where every string is pyarrow text."""
    for cell in row:
        if isinstance(cell, str):
            check_text(cell)


def _texts(values: list[Any]) -> list[Any]:
    """Values a `str` column accepts, missing ones as NaN; TypeError for any other."""
    if not all(isinstance(v, str) or _null(v) for v in values):
        raise TypeError(_ARRAY_VALUE)
    for v in values:
        if isinstance(v, str):
            check_text(v)
    return [NAN if _null(v) else v for v in values]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def assign_values(n_matched: int, value: Any) -> list[Any]:
    """What `df.loc[mask, col] = value` writes into a `str` column's matched rows, or the error
    pandas 3 raises (nothing is written then). A missing value is stored as NaN."""
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, list) for v in value) and len({len(v) for v in value}) == 1:
            # a list of lists is a 2-D array: one column of at least as many rows is written
            if len(value[0]) != 1:
                raise ValueError("Must have equal len keys and value when setting with an ndarray")
            column = _texts([v[0] for v in value])
            if len(column) < n_matched:
                raise ValueError(f"Replacement array must be of appropriate length (expected {n_matched} items "
                                 f"but got {len(column)} items)")
            return column[:n_matched]
        if len(value) != n_matched:
            raise ValueError(SET_LENGTHS)
        return _texts(list(value))
    if isinstance(value, dict):
        # a dict is a Series aligned on row labels (ints; JSON keys are text): all missing. One of
        # numbers only is a float column, which a `str` column refuses.
        if all(_number(v) for v in value.values()):
            raise TypeError(_ARRAY_VALUE)
        return [NAN] * n_matched
    if _null(value):
        return [NAN] * n_matched
    if not isinstance(value, str):
        raise TypeError(f"Invalid value '{value}' for dtype 'str'. Value should be a string or missing value, "
                        f"got '{type(value).__name__}' instead.")
    check_text(value)
    return [value] * n_matched


# -- comparisons


def check_eq(value: Any) -> None:
    """`series == value`: only a dict differs from an object column (pandas 3 refuses it)."""
    if isinstance(value, dict):
        raise _not_implemented("==", value)


def check_compare(op: str, value: Any, n_cells: int) -> None:
    """`series >= value` / `<=`: a dict raises; so does a scalar that is no string, unless the
    column has no rows to compare (lists as before)."""
    if isinstance(value, dict):
        raise _not_implemented(op, value)
    if n_cells and not isinstance(value, list | tuple | str):
        raise TypeError(f"Invalid comparison between dtype=str and {type(value).__name__}")


def array_contains(cells: list[Any] | tuple, value: Any) -> bool:
    """`value in series.values`, where `.values` is pandas 3's string array: a list is first
    tested for being missing (one truth value only for a one-element list), then compared whole."""
    if isinstance(value, list | tuple):
        if not value:
            raise ValueError("The truth value of an empty array is ambiguous. Use `array.size > 0` to check "
                             "that an array is not empty.")
        if len(value) > 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. "
                             "Use a.any() or a.all()")
        if _null(value[0]):
            return False
        if len(cells) != 1:
            raise ValueError("Lengths must match to compare")
        return (not _null(cells[0])) and cells[0] == value[0]
    if isinstance(value, dict):
        raise _not_implemented("==", value)
    if _null(value):
        return False
    return any((not _null(c)) and c == value for c in cells)


def column_max(cells: list[Any] | tuple) -> Any:
    """`series.max()`: the largest string, missing cells skipped; NaN when there is none."""
    texts = [c for c in cells if isinstance(c, str)]
    return max(texts) if texts else NAN


# -- str.contains(pattern, case=False)

# Python's `\Z` is RE2's `\z`; an escaped backslash before the Z is kept.
_END_ANCHOR = re.compile(r"(?<!\\)((?:\\\\)*)\\Z")
# \u, \U and \N{...}: escapes RE2 does not know.
_UNICODE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\(?:[uU]|N\{)")
_REPEATS = {_parser.MAX_REPEAT, _parser.MIN_REPEAT, getattr(_parser, "POSSESSIVE_REPEAT", _parser.MAX_REPEAT)}
_CONTAINERS = {_parser.IN, getattr(_parser, "ATOMIC_GROUP", _parser.IN)}
_PYTHON_ONLY = {_parser.ASSERT, _parser.ASSERT_NOT, _parser.GROUPREF}
_SPACE = {_parser.CATEGORY_SPACE, _parser.CATEGORY_NOT_SPACE}
_ASCII_ONLY_IN_RE2 = {
    (_parser.CATEGORY, _parser.CATEGORY_WORD), (_parser.CATEGORY, _parser.CATEGORY_NOT_WORD),
    (_parser.CATEGORY, _parser.CATEGORY_DIGIT), (_parser.CATEGORY, _parser.CATEGORY_NOT_DIGIT),
    (_parser.AT, _parser.AT_BOUNDARY), (_parser.AT, _parser.AT_NON_BOUNDARY),
}


def _nodes(tokens: Any) -> list[tuple[Any, Any]]:
    """Every (op, argument) of a parsed pattern, looking into groups, branches, repeats and sets
    (not into lookarounds: those send the pattern to `re` anyway)."""
    out: list[tuple[Any, Any]] = []
    stack = [iter(tokens)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        op, arg = item
        out.append((op, arg))
        if op == _parser.SUBPATTERN:
            stack.append(iter(arg[3]))
        elif op == _parser.BRANCH:
            stack.extend(iter(branch) for branch in reversed(arg[1]))
        elif op in _REPEATS:
            stack.append(iter(arg[2]))
        elif op in _CONTAINERS:
            stack.append(iter(arg))
    return out


def needs_python_regex(pattern: str, cells: list[Any]) -> bool:
    """Whether pandas 3 matches `pattern` with Python's `re` rather than pyarrow's RE2: features RE2
    lacks (lookarounds, backreferences, \\u escapes), `\\s` (RE2's misses some whitespace), `\\w`
    `\\d` `\\b` when the column holds non-ASCII text, `$` when it holds a newline. A pattern `re`
    cannot parse goes to RE2, which has its own syntax and error texts."""
    if _UNICODE_ESCAPE.search(pattern):
        return True
    try:
        nodes = _nodes(_parser.parse(pattern))
    except re.error:
        return False
    if any(op in _PYTHON_ONLY or (op == _parser.CATEGORY and arg in _SPACE) for op, arg in nodes):
        return True
    texts = [c for c in cells if isinstance(c, str)]
    if any(op in (_parser.CATEGORY, _parser.AT) and (op, arg) in _ASCII_ONLY_IN_RE2 for op, arg in nodes) \
            and not all(t.isascii() for t in texts):
        return True
    return (_parser.AT, _parser.AT_END) in nodes and any("\n" in t for t in texts)


def contains_mask(cells: list[Any], pattern: Any) -> list[bool]:
    """`series.str.contains(pattern, case=False)` on a `str` column: a missing cell is no match."""
    if not isinstance(pattern, str) or needs_python_regex(pattern, cells):
        rx = search_pattern(pattern)  # re's errors for a pattern that is no string, as pandas gives
        return [isinstance(c, str) and rx.matches(c) for c in cells]
    check_pattern_length(pattern)
    if not cells:  # pyarrow compiles the pattern only to match something
        return []
    import pyarrow as pa
    import pyarrow.compute as pc

    values = pa.array([c if isinstance(c, str) else None for c in cells], type=pa.large_string())
    try:
        matched = pc.match_substring_regex(values, _END_ANCHOR.sub(r"\1\\z", pattern), ignore_case=True)
    except pa.ArrowInvalid as exc:  # "Invalid regular expression: missing ): ("
        raise ValueError(str(exc)) from None
    return [bool(m) for m in matched.fill_null(False).to_pylist()]
