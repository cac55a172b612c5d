"""Pure-Python stand-in for one-argument ``pandas.Timestamp(value)``.

The workplace simulator only needs three things from ``pd.Timestamp``: whether a
value is accepted, the point in time it denotes, and its ``.date()``.  This
module reproduces pandas 2.3 behaviour for those, without importing pandas.

Strings go through the same stages, in the same order, as pandas:

1. ``""`` and the NaT spellings (``NaT nat NAT nan NaN NAN``) -> ``None``;
   exactly ``"now"`` / ``"today"`` -> local wall-clock time (naive).
2. pandas' own ISO-8601 reader (re-implemented in ``_iso``): ``YYYY``,
   ``YYYY-MM``, ``YYYY-MM-DD[( |T)HH[:MM[:SS[.fff...]]]][ ][Z|+HH[:MM]]`` with
   ``-./\\`` or space as date separator, compact ``YYYYMMDD[THHMMSS]`` too.
   Anything it rejects, even an out-of-range month, falls through.
3. Bare numbers below 1000 (``"12"``, ``"1.5"``) and ``a m p t`` -> ValueError.
4. ``H:MM`` / ``HH:MM`` led strings -> dateutil with *today* as default date.
5. ``MM/DD/YYYY``-like fixed-width dates (day and month swapped when the month
   is > 12), then quarters (``2023Q1``), bare years, ``%Y-%m``, ``%b %Y``.
6. dateutil's tokenizer (private ``parser()._parse``, as pandas uses it) with
   a default of 0001-01-01: so ``"10am"`` is 0001-01-01 10:00, ``"Dec 1"`` is
   0001-12-01.  Unknown zone names are dropped, a zone name equal to
   ``time.tzname`` gives ``tzlocal()``, two-digit years follow dateutil's
   rolling century.

Representation: results are ``datetime`` objects, naive or aware
(``timezone`` offsets for ISO input, dateutil tz objects otherwise, as pandas).
NaT is represented by ``None``.  Precision is the microsecond: sub-microsecond
digits and the nanoseconds of int/float input are floored away.  Where pandas
would keep nanoseconds (ISO text with > 6 fraction digits; dateutil text whose
first ``H:MM:SS.f`` has > 6 digits and a whole-millisecond value) the value must
still fit pandas' 1677..2262 range: ValueError if not, OverflowError if only
its UTC value does not (both as pandas).  ints and floats are nanoseconds since
1970 (floats truncated towards zero), -2**63 is NaT.

Known differences from pandas (asserted by the tests, so the list stays true):

* Year 0 and negative years, which pandas' ISO reader accepts (``"0000"``,
  ``"0000-01-01"``, ``"-2023-01-01"``, ``"/12"``, ``".5"``), cannot be held by
  ``datetime``: we raise ValueError.  (pandas' ``.date()`` fails on them too.)
* We raise plain ValueError where pandas raises its ValueError subclasses
  (DateParseError, OutOfBoundsDatetime), and we emit none of its warnings.
* Types: str, int, float, None, ``date`` and ``datetime`` are understood,
  anything else raises TypeError; pandas also accepts numpy scalars.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import InvalidOperation
from functools import lru_cache

from dateutil import parser as _du_parser
from dateutil import tz as _du_tz

__all__ = ["is_timestamp", "parse_timestamp"]

_EPOCH = datetime(1970, 1, 1)
_US = timedelta(microseconds=1)
_NAT_NS = -(2**63)  # pandas' NaT sentinel in int64 nanoseconds
_MAX_NS = 2**63 - 1
_NAT_STRINGS = frozenset({"NaT", "nat", "NAT", "nan", "NaN", "NAN"})
_DEFAULT = datetime(1, 1, 1)
_FIELDS = ("year", "month", "day", "hour", "minute", "second", "microsecond")
_PARSER = _du_parser.parser()
_TZLOCAL = _du_tz.tzlocal()
_TZUTC = _du_tz.tzutc()
_VOLATILE = object()  # result depends on the wall clock: never cache it

# pandas' C code only knows ASCII digits and C-locale whitespace; str.isdigit()
# and str.isspace() are wider, hence explicit sets.
_DIG = frozenset("0123456789")
_CSPACE = frozenset(" \t\n\v\f\r")
_YMD_SEPS = frozenset("-./\\ ")
_DELIMS = frozenset(" /-\\.")
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# Hot path: these shapes are all pandas' ISO reader, so fromisoformat suffices.
_CANONICAL = re.compile(r"\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d)?)?", re.ASCII).fullmatch
_NUMBER = re.compile(
    r"[ \t\n\v\f\r]*[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?[ \t\n\v\f\r]*", re.ASCII
).fullmatch
_FROMISO = datetime.fromisoformat
_SUBSECOND = re.compile(r"\d:\d{2}:\d{2}\.(\d+)").search  # Unicode digits, as pandas


class _Error(str):
    """A cached ValueError message."""


def parse_timestamp(value):
    """Like ``pandas.Timestamp(value)`` for one argument.

    Returns a datetime (naive, or aware when the input carries an offset), or
    None where pandas returns NaT (None, "", "NaT", float nan, -2**63).
    Raises ValueError for unparsable or out-of-range input (message like
    pandas'), TypeError for unsupported types.
    """
    if value.__class__ is str or isinstance(value, str):
        r = _parse_cached(value)
        if r.__class__ is datetime or r is None:
            return r
        if r is _VOLATILE:
            return _parse_volatile(value)
        raise ValueError(str(r))
    if value is None:
        return None
    if value is True or value is False:
        raise TypeError(f"Cannot convert input [{value}] of type {type(value)} to Timestamp")
    if isinstance(value, int):
        return _from_ns(value, f"Out of bounds nanosecond timestamp {value}")
    if isinstance(value, float):
        if value != value:
            return None
        msg = f"cannot convert input {value} with the unit 'None'"
        if value in (float("inf"), float("-inf")):
            raise ValueError(msg)
        return _from_ns(int(value), msg)  # pandas truncates towards zero
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    raise TypeError(f"Cannot convert input [{value}] of type {type(value)} to Timestamp")


def is_timestamp(value) -> bool:
    """True iff ``parse_timestamp(value)`` does not raise (NaT inputs count as True)."""
    try:
        parse_timestamp(value)
    except (ValueError, TypeError, OverflowError):
        return False
    return True


def _from_ns(ns, msg):
    """Epoch nanoseconds -> naive datetime, floored to the microsecond."""
    if ns == _NAT_NS:
        return None
    if not _NAT_NS < ns <= _MAX_NS:
        raise ValueError(msg)
    return _EPOCH + timedelta(microseconds=ns // 1000)


@lru_cache(maxsize=8192)
def _parse_cached(s):
    """Clock-independent part of string parsing; errors are cached as messages."""
    try:
        return _parse_static(s)
    except ValueError as e:
        return _Error(e)


def _parse_volatile(s):
    """Strings whose value depends on the current time."""
    if s == "now" or s == "today":
        return datetime.now()
    today = datetime.now().replace(hour=0, minute=0, second=0, microsecond=0)
    return _dateutil(s, today)


def _parse_static(s):
    """pandas' stages in order; _VOLATILE where the answer needs the clock."""
    if not s or s in _NAT_STRINGS:
        return None
    if s == "now" or s == "today":
        return _VOLATILE
    if _CANONICAL(s) is not None:
        try:
            return _FROMISO(s)
        except ValueError:
            pass  # e.g. month 13, hour 24, year 0: let the general stages decide
    r = _iso(s)
    if r is not None:
        return r
    if not _looks_like_datetime(s):
        raise ValueError(f'Given date string "{s}" not likely a datetime')
    if _looks_like_time(s):
        return _VOLATILE
    return _delimited(s) or _abbreviated(s) or _dateutil(s, _DEFAULT)


def _iso(s):
    """pandas' ISO-8601 reader: a datetime, or None where pandas falls back.

    Raises ValueError when pandas accepts the string but the value cannot be
    had (year <= 0, nanosecond precision outside 1677..2262).
    """
    n = len(s)
    i = 0
    while i < n and s[i] in _CSPACE:
        i += 1
    if i < n and s[i] == "-":
        i += 1
    if i == n:
        return None
    year = 0  # pandas leaves the year at 0 unless four digits lead
    if i + 4 <= n and all(c in _DIG for c in s[i : i + 4]):
        year = int(s[i : i + 4])
        i += 4
    if s[0] == "-":  # the sign is looked up at position 0, before whitespace
        year = -year
    if i == n:
        return _iso_result(s, year, 1, 1, 0, 0, 0, "", None)

    # Month, day: one digit is enough only when separators are used.
    sep = None
    if s[i] not in _DIG:
        if s[i] not in _YMD_SEPS:
            return None
        sep = s[i]
        i += 1
        if i == n or s[i] not in _DIG:
            return None
    month, i, two = _digits12(s, i)
    if not two and sep is None:
        return None
    if not 1 <= month <= 12:
        return None
    if i == n:
        if sep is None:
            return None  # YYYYMM is refused
        return _iso_result(s, year, month, 1, 0, 0, 0, "", None)
    if sep is not None:
        if s[i] != sep or i == n - 1:
            return None
        i += 1
    if s[i] not in _DIG:
        return None
    day, i, two = _digits12(s, i)
    if not two and sep is None:
        return None
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= day <= _DAYS[month - 1] + (month == 2 and leap):
        return None
    if i == n:
        return _iso_result(s, year, month, day, 0, 0, 0, "", None)

    # Time: 'T' or one space, then HH[:MM[:SS[.f]]] or compact HHMMSS.
    if s[i] not in "T " or i == n - 1:
        return None
    i += 1
    if s[i] not in _DIG:
        return None
    hour, i, two = _digits12(s, i)
    if two and hour >= 24:
        return None
    if i == n:
        return _iso_result(s, year, month, day, hour, 0, 0, "", None) if two else None
    colon = s[i] == ":"
    if colon:
        i += 1
        if i == n or s[i] not in _DIG:
            return None
    elif s[i] not in _DIG:
        if not two:
            return None
        return _iso_tz(s, i, year, month, day, hour, 0, 0, "")
    minute, i, two = _digits12(s, i)
    if not two and not colon:
        return None
    if two and minute >= 60:
        return None
    if i == n:
        return _iso_result(s, year, month, day, hour, minute, 0, "", None)
    if colon and s[i] == ":":
        i += 1
        if i == n or s[i] not in _DIG:
            return None
    elif colon or s[i] not in _DIG:
        return _iso_tz(s, i, year, month, day, hour, minute, 0, "")
    second, i, two = _digits12(s, i)
    if not two and not colon:
        return None
    if two and second >= 60:
        return None
    frac = ""
    if i < n and s[i] == ".":
        i += 1
        j = i
        while j < n and j - i < 18 and s[j] in _DIG:
            j += 1
        frac = s[i:j]
        i = j
    return _iso_tz(s, i, year, month, day, hour, minute, second, frac)


def _digits12(s, i):
    """Read one digit and an optional second: (value, new index, had two)."""
    v = ord(s[i]) - 48
    i += 1
    if i < len(s) and s[i] in _DIG:
        return v * 10 + ord(s[i]) - 48, i + 1, True
    return v, i, False


def _iso_tz(s, i, *fields):
    """Optional whitespace, then Z or +HH[[:]MM], then only whitespace."""
    n = len(s)
    while i < n and s[i] in _CSPACE:
        i += 1
    offset = None
    if i < n and s[i] == "Z":
        offset = 0
        i += 1
    elif i < n and s[i] in "+-":
        sign = -1 if s[i] == "-" else 1
        i += 1
        if i == n or s[i] not in _DIG:
            return None
        hours, i, two = _digits12(s, i)
        if two and hours >= 24:
            return None
        minutes = 0
        if i < n:
            if s[i] == ":":
                i += 1
            if i == n or s[i] not in _DIG:
                return None
            minutes, i, two = _digits12(s, i)
            if two and minutes >= 60:
                return None
        offset = sign * (hours * 60 + minutes)
    while i < n and s[i] in _CSPACE:
        i += 1
    if i != n:
        return None
    return _iso_result(s, *fields, offset)


def _iso_result(s, year, month, day, hour, minute, second, frac, offset):
    if not 1 <= year <= 9999:
        # pandas returns a Timestamp here that datetime cannot hold.
        raise ValueError(f"year {year} is out of range: {s}")
    tz = None
    if offset is not None:
        tz = UTC if offset == 0 else timezone(timedelta(minutes=offset))
    us = int(frac[:6].ljust(6, "0"))
    dt = datetime(year, month, day, hour, minute, second, us, tz)
    if len(frac) > 6:
        # Nanosecond resolution: pandas then needs the value to fit int64 ns,
        # both as written and in UTC.
        nanos = int(frac[6:9].ljust(3, "0"))
        local = dt.replace(tzinfo=None)
        if not _fits_ns(local, nanos) or not _fits_ns(local - timedelta(minutes=offset or 0), nanos):
            raise ValueError(f"Out of bounds nanosecond timestamp: {s}")
    return dt


def _fits_ns(naive, nanos=0):
    """Whether a naive datetime fits pandas' int64 nanoseconds (1677..2262)."""
    return _NAT_NS < (naive - _EPOCH) // _US * 1000 + nanos <= _MAX_NS


def _looks_like_datetime(s):
    """False for plain numbers below 1000 and a few lone letters, as pandas."""
    if s[0] == "0":
        return True
    if s in ("a", "A", "m", "M", "p", "P", "t", "T"):
        return False
    m = _NUMBER(s)
    if m is None or not (m.group(1) or m.group(2)):
        return True
    exponent = int(m.group(3) or 0) - len(m.group(2) or "")
    if not -1021 <= exponent <= 1024:  # pandas' strtod reports a range error
        return True
    return float(s.strip(" \t\n\v\f\r")) >= 1000


def _looks_like_time(s):
    """'H:MM...' or 'HH:MM...' with a valid hour and minute."""
    if len(s) < 4:
        return False
    if s[1] == ":":
        h, mm = s[0], s[2:4]
    elif s[2] == ":":
        h, mm = s[0:2], s[3:5]
    else:
        return False
    if len(mm) != 2 or not all(c in _DIG for c in h + mm):
        return False
    return int(h) <= 23 and int(mm) <= 59


def _num(s):
    """Int value of an all-ASCII-digit string, else -1."""
    return int(s) if all(c in _DIG for c in s) else -1


def _delimited(s):
    """Fixed-width M/D/YYYY-like dates and MM/YYYY; None if not that shape."""
    n = len(s)
    day = 1
    swap = True
    if n == 10 and s[2] in _DELIMS and s[5] in _DELIMS:
        month, day, year = _num(s[0:2]), _num(s[3:5]), _num(s[6:10])
    elif n == 9 and s[1] in _DELIMS and s[4] in _DELIMS:
        month, day, year = _num(s[0]), _num(s[2:4]), _num(s[5:9])
    elif n == 9 and s[2] in _DELIMS and s[4] in _DELIMS:
        month, day, year = _num(s[0:2]), _num(s[3]), _num(s[5:9])
    elif n == 8 and s[1] in _DELIMS and s[3] in _DELIMS:
        month, day, year = _num(s[0]), _num(s[2]), _num(s[4:8])
    elif n == 7 and s[2] in _DELIMS and s[2] != ".":  # "10.2010" may be a float
        month, year = _num(s[0:2]), _num(s[3:7])
        swap = False
    else:
        return None
    if month < 0 or day < 0 or year < 1000:
        return None
    if not (1 <= month <= 31 and 1 <= day <= 31 and (month <= 12 or day <= 12)):
        raise ValueError(f"Invalid date specified ({month}/{day})")
    if month > 12 and swap:
        month, day = day, month
    return datetime(year, month, day)  # ValueError for e.g. 02/30/2023


def _abbreviated(s):
    """Bare years, quarters (2023Q1, 2Q2005, 05Q1) and month strings; or None."""
    u = s.upper()
    n = len(u)
    if n == 4:
        try:
            return datetime(int(u), 1, 1)
        except ValueError:
            pass
    quarter = year = None
    if 4 <= n <= 7 and u.isascii():  # pandas measures this in UTF-8 bytes
        q = u.find("Q", 1, 6)
        try:
            if q == 1 and (n == 4 or (n == 5 and u[2] == "-")):
                quarter, year = _num(u[0]), 2000 + int(u[-2:])
            elif q == 1 and (n == 6 or (n == 7 and u[2] == "-")):
                quarter, year = _num(u[0]), int(u[-4:])
            elif q in (2, 3) and (n == 4 or (n == 5 and u[q - 1] == "-")):
                quarter, year = _num(u[-1]), 2000 + int(u[:2])
            elif q in (4, 5) and (n == 6 or (n == 7 and u[q - 1] == "-")):
                quarter, year = _num(u[-1]), int(u[:4])
        except ValueError:
            pass  # the year part is no number: not a quarter after all
    if quarter is not None:
        if not 1 <= quarter <= 4:
            raise ValueError(f"Incorrect quarterly string is given, quarter must be between 1 and 4: {u}")
        try:
            return datetime(year, 3 * quarter - 2, 1)
        except ValueError:
            pass
    for fmt in ("%Y-%m", "%b %Y", "%b-%Y"):
        try:
            return datetime.strptime(u, fmt)
        except ValueError:
            pass
    return None


def _dateutil(s, default):
    """dateutil's tokenizer, with pandas' rules for building the result."""
    try:
        res, _ = _PARSER._parse(s, dayfirst=False, yearfirst=False)
    except InvalidOperation:
        res = None
    if res is None:
        raise ValueError(f"Unknown datetime string format, unable to parse: {s}")
    repl = {f: v for f in _FIELDS if (v := getattr(res, f)) is not None}
    if not repl:
        raise ValueError(f"Unable to parse datetime string: {s}")
    try:
        dt = default.replace(**repl)
    except OverflowError:
        raise ValueError(f'Parsing "{s}" to datetime overflows') from None
    except ValueError as e:
        raise ValueError(f"{e}: {s}") from None
    if res.weekday is not None and not res.day:
        raise ValueError("Parsing datetimes with weekday but no day information is not supported")
    if res.tzname and res.tzname in time.tzname:
        dt = dt.replace(tzinfo=_TZLOCAL)
    elif res.tzoffset == 0:
        dt = dt.replace(tzinfo=_TZUTC)
    elif res.tzoffset:
        dt = dt.replace(tzinfo=_du_tz.tzoffset(res.tzname, res.tzoffset))
        try:
            dt.utcoffset()
        except ValueError:
            raise ValueError(
                f'Parsed string "{s}" gives an invalid tzoffset, which must '
                "be between -timedelta(hours=24) and timedelta(hours=24)"
            ) from None
    # An unrecognised zone name is dropped (pandas warns, and will raise in 3.0).
    last = next(f for f in reversed(_FIELDS) if f in repl)
    if last == "second" or (last == "microsecond" and res.microsecond % 1000 == 0):
        # pandas then takes the resolution from the first 'H:MM:SS.fff' in the
        # text: more than 6 digits means nanoseconds, hence the int64 range.
        m = _SUBSECOND(s)
        if m is not None and len(m.group(1)) > 6:
            naive = dt.replace(tzinfo=None)
            if not _fits_ns(naive):
                raise ValueError(f"Out of bounds nanosecond timestamp: {s}")
            if not _fits_ns(naive - (dt.utcoffset() or timedelta())):
                raise OverflowError("Python int too large to convert to C long")  # as pandas
    return dt
