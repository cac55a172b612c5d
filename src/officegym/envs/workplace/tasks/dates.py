"""Dates in words, relative to the world's "now", with exactly one reading each.

Every phrase a template uses resolves to a single date: "this coming Friday" is the next Friday
strictly after today (2-6 days ahead), "last Friday" the most recent Friday strictly before
today (2-6 days back), "two weeks ago" is today minus 14 days. Forms that readers resolve
differently ("next Friday" said on a Thursday) are never generated.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")


def iso(d: date) -> str:
    return d.isoformat()


def month_day(d: date) -> str:
    return f"{MONTHS[d.month - 1]} {d.day}"


def long_date(d: date) -> str:
    return f"{WEEKDAYS[d.weekday()]}, {MONTHS[d.month - 1]} {d.day}"


def day_phrase(d: date, today: date, r: random.Random, relative: bool = True) -> tuple[str, bool]:
    """A phrase naming day `d` ("on December 1", "tomorrow", "this coming Friday"), with its
    preposition, and whether reading it needs date arithmetic. Relative forms are preferred (70%)
    when one exists and `relative` is allowed."""
    delta = (d - today).days
    explicit = [(f"on {month_day(d)}", False), (f"on {long_date(d)}", False)]
    rel = None
    if delta == 0:
        rel = "today"
    elif delta == 1:
        rel = "tomorrow"
    elif delta == -1:
        rel = "yesterday"
    elif 2 <= delta <= 6:
        rel = f"this coming {WEEKDAYS[d.weekday()]}"
    elif -6 <= delta <= -2:
        rel = f"last {WEEKDAYS[d.weekday()]}"
    if relative and rel and r.random() < 0.7:
        return rel, True
    return r.choice(explicit)


def since_phrase(d: date, today: date, r: random.Random) -> tuple[str, bool]:
    """A phrase for "since <d>" that names d exactly."""
    delta = (today - d).days
    options: list[tuple[str, bool]] = [(month_day(d), False), (long_date(d), False)]
    if delta in (7, 14, 21, 28):
        words = {7: "a week ago", 14: "two weeks ago", 21: "three weeks ago", 28: "four weeks ago"}[delta]
        options += [(words, True)] * 2
    if d.day == 1 and 0 < delta < 31:
        options += [("the start of the month", True)] * 2
    if 2 <= delta <= 6:
        options += [(f"last {WEEKDAYS[d.weekday()]}", True)] * 2
    if delta == 1:
        options.append(("yesterday", True))
    return r.choice(options)


def parse_iso(text: str) -> date:
    return date.fromisoformat(text[:10])


def add_days(d: date, n: int) -> date:
    return d + timedelta(days=n)


def next_weekday(today: date, offset: int = 1) -> date:
    """The first weekday (Mon-Fri) at least `offset` days after today."""
    d = today + timedelta(days=offset)
    while d.weekday() >= 5:
        d += timedelta(days=1)
    return d
