"""Read calls that reveal the ids a task needs, sized so that every target is on the first page.

Each helper mirrors the tool's matching rules over the WorldView (sort order, pagination,
substring matching) to choose the arguments; the validator later checks, through the real tool,
that the ids really appear in what the call returns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime

from officegym.core.types import ToolCall
from officegym.envs.workplace.tasks.base import NoTask, call
from officegym.envs.workplace.tasks.view import Customer, Email, Event, ProjectTask, WorldView

PAGE_SIZES = (5, 10, 20, 50)
# "." is left out: in an address it matches itself (and an unlikely other character).
_REGEX_SPECIAL = re.compile(r"[\\^$|?*+()\[\]{}]")


def _page_size(hits: list, targets: Iterable) -> int | None:
    """The smallest page size that puts every target on page 1 (None: the default, 5)."""
    ids = {t.id for t in targets}
    positions = [i for i, h in enumerate(hits) if h.id in ids]
    if len(positions) != len(ids):
        raise NoTask  # a target the search would not find: choose another task
    for size in PAGE_SIZES:
        if max(positions) < size:
            return None if size == 5 else size
    raise NoTask


def plain(text: str) -> bool:
    """Safe as a regex pattern: the tools treat several filters as regular expressions."""
    return not _REGEX_SPECIAL.search(text)


def search_emails(w: WorldView, targets: list[Email], query: str = "", day_min: date | None = None,
                  day_max: date | None = None) -> ToolCall:
    hits = w.email_matches(query)
    if day_min:
        hits = [e for e in hits if e.sent.date() >= day_min]
    if day_max:
        hits = [e for e in hits if e.sent.date() <= day_max]
    return call("email_search_emails", query=query or None,
                date_min=day_min.isoformat() if day_min else None,
                date_max=day_max.isoformat() if day_max else None,
                page_size=_page_size(hits, targets))


def event_hits(w: WorldView, query: str = "", start: datetime | None = None, end: datetime | None = None) -> list[Event]:
    q = query.lower()
    hits = [e for e in w.events if q in e.name.lower() or q in e.participant.lower()]
    if start:
        hits = [e for e in hits if e.start >= start]
    if end:
        hits = [e for e in hits if e.start <= end]
    return sorted(hits, key=lambda e: e.start, reverse=True)


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def search_events(w: WorldView, targets: list[Event], query: str = "", start: datetime | None = None,
                  end: datetime | None = None) -> ToolCall:
    if query and not plain(query):
        raise NoTask
    hits = event_hits(w, query, start, end)
    return call("calendar_search_events", query=query or None,
                time_min=stamp(start) if start else None, time_max=stamp(end) if end else None,
                page_size=_page_size(hits, targets))


def day_bounds(d: date) -> tuple[datetime, datetime]:
    return datetime(d.year, d.month, d.day, 0, 0, 0), datetime(d.year, d.month, d.day, 23, 59, 59)


def task_hits(w: WorldView, task_name: str | None = None, assignee: str | None = None,
              list_name: str | None = None, due: str | None = None, board: str | None = None) -> list[ProjectTask]:
    def ok(t: ProjectTask) -> bool:
        return ((task_name is None or task_name.lower() in t.name.lower())
                and (assignee is None or assignee.lower() == t.assignee.lower())
                and (list_name is None or list_name.lower() in t.list_name.lower())
                and (due is None or due in t.due)
                and (board is None or board.lower() in t.board.lower()))
    return [t for t in w.tasks if ok(t)]


def search_tasks(w: WorldView, task_name: str | None = None, assignee: str | None = None,
                 list_name: str | None = None, due: str | None = None, board: str | None = None) -> ToolCall:
    for text in (task_name, list_name, board):
        if text is not None and not plain(text):
            raise NoTask
    return call("project_management_search_tasks", task_name=task_name, assigned_to_email=assignee,
                list_name=list_name, due_date=due, board=board)


def customer_hits(w: WorldView, name: str | None = None, product: str | None = None, status: str | None = None,
                  assignee: str | None = None, contact_max: str | None = None, contact_min: str | None = None,
                  follow_max: str | None = None, follow_min: str | None = None) -> list[Customer]:
    def has(value: str | None, needle: str | None) -> bool:
        return needle is None or (value is not None and needle.lower() in value.lower())

    def ok(c: Customer) -> bool:
        return (has(c.name, name) and has(c.product, product) and has(c.status, status) and has(c.assignee, assignee)
                and (contact_max is None or c.last_contact <= contact_max)
                and (contact_min is None or c.last_contact >= contact_min)
                and (follow_max is None or (c.follow_up is not None and c.follow_up <= follow_max))
                and (follow_min is None or (c.follow_up is not None and c.follow_up >= follow_min)))
    return [c for c in w.customers if ok(c)]


def search_customers(w: WorldView, targets: list[Customer], **filters) -> ToolCall:
    names = {"name": "customer_name", "product": "product_interest", "status": "status", "assignee": "assigned_to_email",
             "contact_max": "last_contact_date_max", "contact_min": "last_contact_date_min",
             "follow_max": "follow_up_by_max", "follow_min": "follow_up_by_min"}
    for key in ("name", "product", "status"):
        if filters.get(key) is not None and not plain(filters[key]):
            raise NoTask
    hits = customer_hits(w, **filters)
    args = {names[k]: v for k, v in filters.items() if v is not None}
    return call("customer_relationship_manager_search_customers", **args, page_size=_page_size(hits, targets))
