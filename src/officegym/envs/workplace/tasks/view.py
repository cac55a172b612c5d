"""A read-only view of a world for task templates: typed rows, people and indexes, built once.

Templates compute their ground truth from this view (plain Python over the base tables); the
validator then replays it through the real tools, so the two paths check each other.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cached_property

from officegym.envs.workplace.world import World


def _text(cell) -> str | None:
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return None
    return str(cell)


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None


@dataclass(frozen=True)
class Email:
    id: str
    box: str
    address: str
    subject: str
    sent: datetime
    body: str


@dataclass(frozen=True)
class Event:
    id: str
    name: str
    participant: str
    start: datetime
    start_text: str
    minutes: int

    @property
    def end(self) -> datetime:
        return self.start + timedelta(minutes=self.minutes)


@dataclass(frozen=True)
class ProjectTask:
    id: str
    name: str
    assignee: str
    list_name: str
    due: str
    board: str


@dataclass(frozen=True)
class Customer:
    id: str
    assignee: str
    name: str
    email: str | None
    phone: str | None
    last_contact: str  # as stored ("YYYY-MM-DD 23:59:00" in NeMo-layout worlds)
    product: str
    status: str
    follow_up: str | None
    notes: str | None

    @property
    def last_contact_day(self) -> str:
        return self.last_contact[:10]

    @property
    def follow_up_day(self) -> str | None:
        return self.follow_up[:10] if self.follow_up else None


class WorldView:
    """Typed rows and indexes over a World. Rows that do not parse (a hand-edited CSV) are left
    out of the view, so templates never build tasks on them."""

    def __init__(self, world: World, world_id: str | None = None):
        self.world = world
        self.world_id = world_id or world.path
        self.now = datetime.strptime(world.now, "%Y-%m-%d %H:%M:%S")
        self.today = self.now.date()
        t = world.tables
        self.emails = [
            Email(r[0], r[1], r[2], r[3], when, _text(r[5]) or "")
            for r in t["emails"]
            if all(isinstance(c, str) for c in r[:4]) and (when := _when(_text(r[4])))
        ]
        self.events = []
        for r in t["calendar"]:
            start = _when(_text(r[3]))
            if start and all(isinstance(c, str) for c in r[:3]) and str(r[4]).isdigit():
                self.events.append(Event(r[0], r[1], r[2], start, r[3], int(r[4])))
        self.events.sort(key=lambda e: e.start)
        self.tasks = [ProjectTask(*r) for r in t["project_tasks"] if all(isinstance(c, str) for c in r)]
        self.customers = [
            Customer(r[0], r[1], r[2], _text(r[3]), _text(r[4]), r[5], r[6], r[7], _text(r[8]), _text(r[9]))
            for r in t["crm"]
            if all(isinstance(c, str) for c in (r[0], r[1], r[2], r[5], r[6], r[7]))
        ]
        self.directory = [a for a in world.directory if isinstance(a, str)]
        self._match_cache: dict[str, list[Email]] = {}

    # -- people -------------------------------------------------------------------------------
    @cached_property
    def people(self) -> dict[str, str]:
        """Address -> first name, for everyone whose first name finds exactly them in the directory."""
        out = {}
        for address in self.directory:
            first = address.split("@")[0].split(".")[0]
            if first.isalpha() and sum(first in a.lower() for a in self.directory) == 1:
                out[address] = first.capitalize()
        return out

    def first(self, address: str) -> str:
        return self.people[address]

    @cached_property
    def engineers(self) -> list[str]:
        """People who own project tasks (only they are valid assignees for new tasks)."""
        return sorted({t.assignee for t in self.tasks if t.assignee in self.people})

    @cached_property
    def sales(self) -> list[str]:
        return sorted({c.assignee for c in self.customers if c.assignee in self.people})

    @cached_property
    def board_of(self) -> dict[str, str]:
        """An engineer's usual board (where most of their tasks are)."""
        counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for t in self.tasks:
            counts[t.assignee][t.board] += 1
        return {a: max(c, key=lambda b: (c[b], b)) for a, c in counts.items()}

    @cached_property
    def boards(self) -> list[str]:
        return sorted({t.board for t in self.tasks})

    # -- indexes ------------------------------------------------------------------------------
    @cached_property
    def emails_by_address(self) -> dict[str, list[Email]]:
        out: dict[str, list[Email]] = defaultdict(list)
        for e in self.emails:
            out[e.address].append(e)
        for v in out.values():
            v.sort(key=lambda e: e.sent)
        return out

    @cached_property
    def events_by_day(self) -> dict[date, list[Event]]:
        out: dict[date, list[Event]] = defaultdict(list)
        for e in self.events:
            out[e.start.date()].append(e)
        return out

    @cached_property
    def events_by_person(self) -> dict[str, list[Event]]:
        out: dict[str, list[Event]] = defaultdict(list)
        for e in self.events:
            out[e.participant].append(e)
        return out

    @cached_property
    def tasks_by_assignee(self) -> dict[str, list[ProjectTask]]:
        out: dict[str, list[ProjectTask]] = defaultdict(list)
        for t in self.tasks:
            out[t.assignee].append(t)
        return out

    @cached_property
    def task_name_counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for t in self.tasks:
            out[t.name.lower()] += 1
        return out

    @cached_property
    def customers_by_assignee(self) -> dict[str, list[Customer]]:
        out: dict[str, list[Customer]] = defaultdict(list)
        for c in self.customers:
            out[c.assignee].append(c)
        return out

    @cached_property
    def customer_name_counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for c in self.customers:
            out[c.name.lower()] += 1
        return out

    @cached_property
    def visit_dates(self) -> list[str]:
        return list(self.world.dates)

    def visits(self, day: str) -> int:
        s = self.world.date_stats.get(day)
        return s.visits if s else 0

    def engaged(self, day: str) -> int:
        s = self.world.date_stats.get(day)
        return s.engaged if s else 0

    def source_visits(self, day: str, source: str) -> int:
        s = self.world.date_stats.get(day)
        return s.by_source.get(source, 0) if s else 0

    def average_duration(self, day: str) -> float | None:
        s = self.world.date_stats.get(day)
        if not s or s.bad_duration is not None:
            return None
        return s.duration_sum / s.visits

    @cached_property
    def _haystacks(self) -> list[tuple[str, Email]]:
        return [(f"{e.subject} {e.body} {e.address}".lower(), e) for e in self.emails]

    def email_matches(self, query: str) -> list[Email]:
        """What e-mail search returns for `query` (every word a substring of subject/body/address),
        most recent first."""
        cached = self._match_cache.get(query)  # templates ask the same queries many times
        if cached is None:
            words = query.lower().split()
            hits = [e for h, e in self._haystacks if all(w in h for w in words)]
            cached = self._match_cache[query] = sorted(hits, key=lambda e: e.sent, reverse=True)
        return cached

    @cached_property
    def nameable_customers(self) -> list[Customer]:
        """Customers whose name, searched as a substring, finds them alone."""
        names = [c.name.lower() for c in self.customers]
        return [c for c in self.customers if sum(c.name.lower() in n for n in names) == 1]

    @cached_property
    def nameable_tasks(self) -> list[ProjectTask]:
        """Tasks whose name, searched as a substring, finds them alone."""
        names = [t.name.lower() for t in self.tasks]
        return [t for t in self.tasks if sum(t.name.lower() in n for n in names) == 1]

    @cached_property
    def emails_by_subject(self) -> dict[str, list[Email]]:
        out: dict[str, list[Email]] = defaultdict(list)
        for e in self.emails:
            out[e.subject].append(e)
        return out
