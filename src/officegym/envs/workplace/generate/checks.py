"""Consistency checks for a world: generated worlds run them on every generation; any loaded world can too.

`find_problems` returns a list of readable problems (empty when the world is consistent);
`check_tables` / `check_world` raise `WorldCheckError` listing them. What is checked:

* ids: unique, 8 digits, exactly 00000000..n-1 (analytics visitor ids: 4 digits);
* addresses: the directory is unique and well formed, the user is not in it (no address contains the
  user's first name, so the directory tool finds nothing for it); every address used anywhere (e-mail
  counterparts, event participants, task and customer assignees, addresses quoted in subjects and
  bodies) is in the directory, except customers' own addresses, which must be well formed;
* dates and times parse in the stored formats and sit in range (e-mails and visits not after "now",
  CRM dates "YYYY-MM-DD 23:59:00" with follow-up after last contact, optional per-table windows);
* enums: inbox/outbox, durations, list names, boards, statuses, products, traffic sources;
* calendar: weekdays, starts on the hour or half hour between 09:00 and 15:30, ends by 18:00,
  no two events of the user overlap;
* project management: every assignee is in the directory and nobody both owns tasks and customers
  (the sales team owns the CRM; `create_task` only accepts current task owners), and with `teams`
  every task sits on its assignee's board;
* analytics: page views and durations are non-negative integers and `user_engaged` is exactly
  "duration > 10 and page_views > 1".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any

EMAIL_DIRECTIONS = ("inbox", "outbox")
DURATIONS = ("30", "60", "90", "120")
LIST_NAMES = ("Backlog", "In Progress", "In Review", "Completed")
BOARDS = ("Back end", "Front end", "Design")
STATUSES = ("Qualified", "Won", "Lost", "Lead", "Proposal")
PRODUCTS = ("Software", "Hardware", "Services", "Consulting", "Training")
TRAFFIC_SOURCES = ("direct", "referral", "search engine", "social media")

# The address shape NeMo's project-management search accepts (a TLD of two or more letters).
ADDRESS_RE = re.compile(r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}")
# Reference-style customer addresses without a TLD ("first.last@company") pass only when require_tld=False.
LOOSE_ADDRESS_RE = re.compile(r"[a-z0-9._%+-]+@[a-z0-9.-]+")
ADDRESS_IN_TEXT_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*")
ID_RE = re.compile(r"\d{8}")
VISITOR_RE = re.compile(r"\d{4}")
DATETIME_RE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
CRM_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2} 23:59:00")
PHONE_RE = re.compile(r"\d{3}-\d{3}-\d{4}")

MAX_LISTED = 40
DAY_START = 9 * 60  # minutes after midnight
LAST_START = 15 * 60 + 30
DAY_END = 18 * 60


class WorldCheckError(ValueError):
    """A world failed its consistency checks; `problems` lists every failure."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        shown = self.problems[:MAX_LISTED]
        more = len(self.problems) - len(shown)
        lines = "\n".join(f"  - {p}" for p in shown)
        tail = f"\n  ... and {more} more" if more else ""
        super().__init__(f"world failed {len(self.problems)} consistency check(s):\n{lines}{tail}")


def _cell(value: Any) -> str | None:
    """A cell as a string, or None when missing (None, NaN or empty)."""
    if value is None or (isinstance(value, float) and value != value) or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def _parse_datetime(value: str | None) -> datetime | None:
    if value is None or not DATETIME_RE.fullmatch(value):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _parse_date(value: str | None) -> date | None:
    if value is None or not DATE_RE.fullmatch(value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def _window(windows: Mapping[str, tuple[str, str]] | None, name: str) -> tuple[date, date] | None:
    if not windows or name not in windows:
        return None
    lo, hi = windows[name]
    return date.fromisoformat(lo[:10]), date.fromisoformat(hi[:10])


def _check_ids(problems: list[str], table: str, ids: Sequence[Any]) -> None:
    seen: dict[str, int] = {}
    bad = 0
    for i, raw in enumerate(ids):
        value = _cell(raw)
        if value is None or not ID_RE.fullmatch(value):
            problems.append(f"{table} row {i}: id {raw!r} is not an 8-digit string")
            bad += 1
            continue
        if value in seen:
            problems.append(f"{table} row {i}: duplicate id {value} (also row {seen[value]})")
            bad += 1
        seen[value] = i
    if not bad and sorted(seen) != [f"{i:08d}" for i in range(len(ids))]:
        problems.append(f"{table}: ids are not exactly 00000000..{len(ids) - 1:08d}")


def find_problems(
    tables: Mapping[str, Sequence[Sequence[Any]]],
    directory: Sequence[Any],
    now: str,
    *,
    user: str | None = None,
    teams: Mapping[str, Iterable[str]] | None = None,
    windows: Mapping[str, tuple[str, str]] | None = None,
    require_tld: bool = True,
) -> list[str]:
    """Every consistency problem of a world, as readable lines (empty when consistent).

    `tables` maps emails, calendar, analytics, project_tasks and crm to rows of cells in the
    csv_data column order; missing cells may be None, NaN or "", and `user_engaged` may be the
    stored "True"/"False" or a bool. `now` is "YYYY-MM-DD HH:MM:SS". `teams` maps a team (a board
    name, or "Sales") to its members' addresses; `windows` maps a table to inclusive (first, last)
    dates that its main date column must sit in. `require_tld=False` accepts customer addresses
    without a top-level domain (the reference's "first.last@company").
    """
    problems: list[str] = []
    now_dt = _parse_datetime(now)
    if now_dt is None:
        return [f"now {now!r} is not 'YYYY-MM-DD HH:MM:SS'"]
    today = now_dt.date()

    # Directory and the user.
    people: set[str] = set()
    for i, raw in enumerate(directory):
        addr = _cell(raw)
        if addr is None or not ADDRESS_RE.fullmatch(addr):
            problems.append(f"directory line {i + 1}: {raw!r} is not a well-formed lower-case address")
        elif addr in people:
            problems.append(f"directory line {i + 1}: duplicate address {addr}")
        else:
            people.add(addr)
    if user:
        hits = sorted(a for a in people if user.lower() in a)
        if hits:
            problems.append(f"the user {user!r} would be found in the directory: {', '.join(hits[:5])}")

    def known(addr: str | None, where: str) -> None:
        if addr is None:
            problems.append(f"{where}: address is missing")
        elif addr not in people:
            problems.append(f"{where}: address {addr!r} is not in the directory")

    customer_addresses: set[str] = set()
    for row in tables.get("crm", ()):
        if (addr := _cell(row[3])) is not None:
            customer_addresses.add(addr)

    def quoted(text: str | None, where: str) -> None:
        if not text or "@" not in text:
            return
        for match in ADDRESS_IN_TEXT_RE.finditer(text):
            addr = match.group(0).rstrip(".").lower()
            if addr not in people and addr not in customer_addresses:
                problems.append(f"{where}: mentions {addr!r}, which is neither in the directory nor a customer")

    # E-mails.
    emails = tables.get("emails", ())
    _check_ids(problems, "emails", [r[0] for r in emails])
    win = _window(windows, "emails")
    sent_seen: dict[datetime, str] = {}
    for i, row in enumerate(emails):
        email_id, direction, counterpart, subject, sent, body = (_cell(c) for c in row)
        where = f"emails row {i} (id {email_id})"
        if direction not in EMAIL_DIRECTIONS:
            problems.append(f"{where}: inbox/outbox is {direction!r}")
        known(counterpart, where)
        if not subject:
            problems.append(f"{where}: empty subject")
        if not body:
            problems.append(f"{where}: empty body")
        elif "\n" in body or "\r" in body:
            problems.append(f"{where}: body holds a real line break (bodies use the two characters \\n)")
        quoted(subject, where)
        quoted(body, where)
        ts = _parse_datetime(sent)
        if ts is None:
            problems.append(f"{where}: sent_datetime {sent!r} is not 'YYYY-MM-DD HH:MM:SS'")
            continue
        if ts > now_dt:
            problems.append(f"{where}: sent {sent}, after now ({now})")
        if win and not win[0] <= ts.date() <= win[1]:
            problems.append(f"{where}: sent {sent}, outside {win[0]}..{win[1]}")
        if ts in sent_seen:
            problems.append(f"{where}: sent_datetime {sent} repeats (also id {sent_seen[ts]})")
        sent_seen[ts] = email_id or "?"

    # Calendar.
    events = tables.get("calendar", ())
    _check_ids(problems, "calendar", [r[0] for r in events])
    win = _window(windows, "calendar")
    by_day: dict[date, list[tuple[int, int, str]]] = {}
    for i, row in enumerate(events):
        event_id, name, participant, start, duration = (_cell(c) for c in row)
        where = f"calendar row {i} (id {event_id})"
        if not name:
            problems.append(f"{where}: empty event name")
        known(participant, where)
        if duration not in DURATIONS:
            problems.append(f"{where}: duration {duration!r} is not one of {', '.join(DURATIONS)}")
            continue
        ts = _parse_datetime(start)
        if ts is None:
            problems.append(f"{where}: event_start {start!r} is not 'YYYY-MM-DD HH:MM:SS'")
            continue
        begin = ts.hour * 60 + ts.minute
        end = begin + int(duration)
        if ts.weekday() >= 5:
            problems.append(f"{where}: starts on a {ts:%A} ({start})")
        if ts.minute not in (0, 30) or ts.second or not DAY_START <= begin <= LAST_START or end > DAY_END:
            problems.append(f"{where}: {start} for {duration} min is outside working hours "
                            "(start on :00/:30 between 09:00 and 15:30, end by 18:00)")
        if win and not win[0] <= ts.date() <= win[1]:
            problems.append(f"{where}: starts {start}, outside {win[0]}..{win[1]}")
        by_day.setdefault(ts.date(), []).append((begin, end, event_id or "?"))
    for day in sorted(by_day):
        latest: tuple[int, int, str] | None = None  # the event that ends last so far
        for b1, e1, id1 in sorted(by_day[day]):
            if latest is not None and b1 < latest[1]:
                b0, e0, id0 = latest
                problems.append(f"calendar: events {id0} and {id1} overlap on {day} "
                                f"({b0 // 60:02d}:{b0 % 60:02d}-{e0 // 60:02d}:{e0 % 60:02d} and "
                                f"{b1 // 60:02d}:{b1 % 60:02d}-{e1 // 60:02d}:{e1 % 60:02d})")
            if latest is None or e1 > latest[1]:
                latest = (b1, e1, id1)

    # Analytics.
    win = _window(windows, "analytics")
    for i, row in enumerate(tables.get("analytics", ())):
        day_s, visitor, views, duration, source, engaged = row
        day_s, visitor, views, duration, source = (_cell(c) for c in (day_s, visitor, views, duration, source))
        where = f"analytics row {i}"
        day = _parse_date(day_s)
        if day is None:
            problems.append(f"{where}: date_of_visit {day_s!r} is not 'YYYY-MM-DD'")
        elif day > today or (win and not win[0] <= day <= win[1]):
            problems.append(f"{where}: visit on {day_s} is out of range")
        if visitor is None or not VISITOR_RE.fullmatch(visitor):
            problems.append(f"{where}: visitor_id {visitor!r} is not 4 digits")
        if source not in TRAFFIC_SOURCES:
            problems.append(f"{where}: traffic_source {source!r} is not one of {', '.join(TRAFFIC_SOURCES)}")
        if isinstance(engaged, str):
            if engaged not in ("True", "False"):
                problems.append(f"{where}: user_engaged {engaged!r} is not 'True' or 'False'")
                continue
            engaged = engaged == "True"
        if not (views and views.isdigit() and int(views) >= 1 and duration and duration.isdigit()):
            problems.append(f"{where}: page_views {views!r} / session_duration_seconds {duration!r} are not counts")
            continue
        expected = int(duration) > 10 and int(views) > 1
        if bool(engaged) != expected:
            problems.append(f"{where}: user_engaged is {bool(engaged)} but duration={duration} and page_views={views}")

    # Project tasks.
    tasks = tables.get("project_tasks", ())
    _check_ids(problems, "project_tasks", [r[0] for r in tasks])
    win = _window(windows, "project_tasks")
    team_of: dict[str, str] = {}
    for team, members in (teams or {}).items():
        for m in members:
            team_of[m] = team
    task_owners: set[str] = set()
    for i, row in enumerate(tasks):
        task_id, name, assignee, list_name, due, board = (_cell(c) for c in row)
        where = f"project_tasks row {i} (id {task_id})"
        if not name:
            problems.append(f"{where}: empty task name")
        known(assignee, where)
        if assignee:
            task_owners.add(assignee)
        if list_name not in LIST_NAMES:
            problems.append(f"{where}: list_name {list_name!r} is not one of {', '.join(LIST_NAMES)}")
        if board not in BOARDS:
            problems.append(f"{where}: board {board!r} is not one of {', '.join(BOARDS)}")
        elif team_of and assignee in team_of and team_of[assignee] != board:
            problems.append(f"{where}: {assignee} is on the {team_of[assignee]} team, not {board}")
        d = _parse_date(due)
        if d is None:
            problems.append(f"{where}: due_date {due!r} is not 'YYYY-MM-DD'")
        elif win and not win[0] <= d <= win[1]:
            problems.append(f"{where}: due {due}, outside {win[0]}..{win[1]}")

    # CRM.
    customers = tables.get("crm", ())
    _check_ids(problems, "crm", [r[0] for r in customers])
    win = _window(windows, "crm")
    names_seen: dict[str, str] = {}
    customer_re = ADDRESS_RE if require_tld else LOOSE_ADDRESS_RE
    for i, row in enumerate(customers):
        cid, assignee, name, email, phone, last, product, status, follow, _notes = (_cell(c) for c in row)
        where = f"crm row {i} (id {cid})"
        known(assignee, where)
        if assignee in task_owners:
            problems.append(f"{where}: {assignee} owns customers and project tasks (the CRM belongs to sales)")
        if not name:
            problems.append(f"{where}: empty customer name")
        elif name in names_seen:
            problems.append(f"{where}: customer name {name!r} repeats (also id {names_seen[name]})")
        else:
            names_seen[name] = cid or "?"
        if email is None or not customer_re.fullmatch(email):
            problems.append(f"{where}: customer_email {email!r} is not a well-formed address")
        elif email in people:
            problems.append(f"{where}: customer_email {email} is an employee's address")
        if phone is not None and not PHONE_RE.fullmatch(phone):
            problems.append(f"{where}: customer_phone {phone!r} is not NNN-NNN-NNNN")
        if product not in PRODUCTS:
            problems.append(f"{where}: product_interest {product!r} is not one of {', '.join(PRODUCTS)}")
        if status not in STATUSES:
            problems.append(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
        dates = []
        for column, value in (("last_contact_date", last), ("follow_up_by", follow)):
            if value is None or not CRM_DATE_RE.fullmatch(value) or _parse_date(value[:10]) is None:
                problems.append(f"{where}: {column} {value!r} is not 'YYYY-MM-DD 23:59:00'")
            else:
                dates.append(date.fromisoformat(value[:10]))
        if len(dates) == 2:
            last_d, follow_d = dates
            if last_d > today:
                problems.append(f"{where}: last contact {last_d} is after now ({today})")
            if follow_d < last_d:
                problems.append(f"{where}: follow-up {follow_d} is before the last contact {last_d}")
            if win and not win[0] <= last_d <= win[1]:
                problems.append(f"{where}: last contact {last_d}, outside {win[0]}..{win[1]}")
    return problems


def check_tables(tables, directory, now, **options) -> None:
    """Raise `WorldCheckError` when `find_problems` finds anything (same arguments)."""
    problems = find_problems(tables, directory, now, **options)
    if problems:
        raise WorldCheckError(problems)


def world_tables(world) -> dict[str, list[tuple]]:
    """A loaded `World`'s rows in the shape `find_problems` takes."""
    tables = {name: list(world.tables[name]) for name in ("emails", "calendar", "project_tasks", "crm")}
    tables["analytics"] = list(world.analytics)
    return tables


def world_problems(world, meta: Mapping[str, Any] | None = None, **options) -> list[str]:
    """`find_problems` for a loaded `World`; `meta` (a world.json) supplies user, teams and windows."""
    meta = meta or {}
    for key in ("user", "teams", "windows"):
        if key in meta and key not in options:
            options[key] = meta[key]
    return find_problems(world_tables(world), world.directory, world.now, **options)


def check_world(world, meta: Mapping[str, Any] | None = None, **options) -> None:
    """Raise `WorldCheckError` when a loaded world is inconsistent (see `world_problems`)."""
    problems = world_problems(world, meta, **options)
    if problems:
        raise WorldCheckError(problems)


def date_window(center: date, before: int, after: int) -> tuple[str, str]:
    """Inclusive (first, last) ISO dates around `center`."""
    return (center - timedelta(days=before)).isoformat(), (center + timedelta(days=after)).isoformat()
