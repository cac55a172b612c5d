"""Generate a synthetic company world from a seed: people, mail, meetings, visits, tasks, customers.

Choices (see also the package docstring):

* Determinism. Every table draws from its own `random.Random` stream seeded with
  "officegym-world:<seed>:<stream>" (string seeds are hashed with SHA-512 by `random`, so they
  do not depend on PYTHONHASHSEED), so adding a table or changing one table's generator never
  shifts the others. Nothing iterates a set or a hash-ordered container into the output.
* "now" defaults to a seed-dependent weekday between 2022 and 2026 at 23:59:00, the reference's
  time of day: "today" is then a whole past day (its mail and visits exist), "tomorrow" is the
  next date, and CRM dates stored at 23:59:00 compare with "now" as in the reference.
* Rows are sorted the way the reference's are (e-mails and events by time ascending, tasks by due
  date, customers by last contact descending, visits unsorted) but ids are a random permutation
  of 00000000..n-1, as in the reference, so an id says nothing about recency.
* The company (name, domain, industry vocabulary, products, project code names) and the user's
  first name depend only on the seed, so a world's small and reference sizes are the same company.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from officegym.envs.workplace.generate import names as vocab
from officegym.envs.workplace.generate.checks import (
    BOARDS,
    LIST_NAMES,
    PRODUCTS,
    STATUSES,
    check_tables,
    date_window,
    find_problems,
)

FORMAT_VERSION = 1
TABLE_NAMES = ("emails", "calendar", "analytics", "project_tasks", "crm")


@dataclass(frozen=True)
class SizeSpec:
    """Row counts and time spans (days relative to "now") of one world size."""

    per_team: int
    emails: int
    events: int
    visits: int
    tasks: int
    customers: int
    email_days: int = 61  # mail from the ~2 months before now
    calendar_back: int = 120  # events from ~4 months back ...
    calendar_ahead: int = 21  # ... to 3 weeks ahead
    max_events_per_day: int = 5
    analytics_days: int = 91  # visits on the 91 days up to and including today
    task_due: tuple[int, int] = (-6, 21)  # due dates from 6 days ago (overdue) to 3 weeks ahead
    crm_days: int = 61  # last contact within ~2 months
    follow_up: tuple[int, int] = (7, 30)  # follow-up 7..30 days after last contact
    unique_first_names: bool = True  # a first name identifies exactly one address in the directory

    @property
    def employees(self) -> int:
        return 4 * self.per_team


SIZES: dict[str, SizeSpec] = {
    "small": SizeSpec(per_team=2, emails=50, events=30, visits=100, tasks=30, customers=20),
    "reference": SizeSpec(per_team=5, emails=500, events=300, visits=1000, tasks=300, customers=200),
    # Ten times the rows. The user's calendar cannot hold 3,000 meetings in 141 days without
    # overlaps, so the large calendar spans ~2.5 years back and 5 months ahead (~4 a weekday).
    "large": SizeSpec(per_team=50, emails=5000, events=3000, visits=10000, tasks=3000, customers=2000,
                      calendar_back=900, calendar_ahead=150, max_events_per_day=6, unique_first_names=False),
}


@dataclass(frozen=True)
class Company:
    name: str
    domain: str
    industry: vocab.Industry
    products: tuple[str, ...]
    projects: tuple[str, ...]


@dataclass(frozen=True)
class Employee:
    first: str
    last: str
    email: str
    team: str  # "Back end", "Front end", "Design" (task owners) or "Sales" (customer owners)

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass(frozen=True, eq=False)
class GeneratedWorld:
    """A generated world in memory: the csv_data tables as rows of strings ("" for an empty cell,
    `user_engaged` as "True"/"False"), in the column order of `officegym.envs.workplace.world`."""

    seed: int
    size: str
    now: str
    company: Company
    user: str
    employees: tuple[Employee, ...]
    directory: tuple[str, ...]
    tables: dict[str, tuple[tuple[str, ...], ...]]
    windows: dict[str, tuple[str, str]] = field(default_factory=dict)
    customer_companies: dict[str, str] = field(default_factory=dict)  # customer id -> company name

    @property
    def teams(self) -> dict[str, tuple[str, ...]]:
        return {t: tuple(e.email for e in self.employees if e.team == t) for t in vocab.TEAMS}

    @property
    def counts(self) -> dict[str, int]:
        return {"employees": len(self.directory), **{name: len(self.tables[name]) for name in TABLE_NAMES}}

    def metadata(self) -> dict[str, Any]:
        """What world.json holds: the clock, how the world was made, and facts task templates need."""
        return {
            "now": self.now,
            "seed": self.seed,
            "size": self.size,
            "company": self.company.name,
            "domain": self.company.domain,
            "industry": self.company.industry.key,
            "user": self.user,
            "products": list(self.company.products),
            "projects": list(self.company.projects),
            "teams": {team: list(members) for team, members in self.teams.items()},
            "windows": {name: list(span) for name, span in self.windows.items()},
            "customer_companies": dict(self.customer_companies),
            "counts": self.counts,
            "generator": f"officegym.world/{FORMAT_VERSION}",
        }

    def problems(self) -> list[str]:
        """What the consistency checks find (empty for every world `generate_world` returns)."""
        return find_problems(self.tables, self.directory, self.now, **self._check_options())

    def _check_options(self) -> dict[str, Any]:
        return {"user": self.user, "teams": self.teams, "windows": self.windows}

    def to_world(self, path: str = "<generated>"):
        """The same world as `load_world` would give after `write_world`, without touching disk."""
        from officegym.envs.workplace.world import NAN, build_world

        def cells(row):
            return tuple(NAN if c == "" else c for c in row)

        tables = {name: tuple(cells(r) for r in self.tables[name]) for name in ("emails", "calendar", "project_tasks", "crm")}
        analytics = tuple((*r[:5], r[5] == "True") for r in self.tables["analytics"])
        return build_world(path, tables, self.directory, analytics, now=self.now)


def stream(seed: int, name: str) -> random.Random:
    """The random stream of one part of the world (independent of every other part)."""
    return random.Random(f"officegym-world:{seed}:{name}")


def generate_world(
    seed: int,
    size: str = "reference",
    now: str | None = None,
    company: str | None = None,
    user: str | None = None,
) -> GeneratedWorld:
    """A new world for `seed`, checked for consistency (raises `WorldCheckError` if not).

    size: "small" (a tenth of the reference), "reference" (the reference's row counts) or
    "large" (ten times). now: "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DD" (23:59:00); default a
    seed-dependent weekday at 23:59:00. company: the company's name (the domain is derived from it);
    default seed-dependent. user: the first name of the mailbox owner; default seed-dependent.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    spec = SIZES[size]
    now_dt = parse_now(now) if now is not None else default_now(stream(seed, "clock"))
    comp = make_company(stream(seed, "company"), company)
    user_name = _check_user(user) if user is not None else stream(seed, "user").choice(vocab.USER_NAMES)
    employees = make_employees(stream(seed, "people"), spec, comp.domain, user_name)
    teams = {t: [e for e in employees if e.team == t] for t in vocab.TEAMS}
    today = now_dt.date()

    tasks = make_tasks(stream(seed, "project_tasks"), spec, today, comp, teams)
    crm, firms = make_crm(stream(seed, "crm"), spec, today, teams["Sales"], employees)
    calendar = make_calendar(stream(seed, "calendar"), spec, today, comp, employees)
    analytics = make_analytics(stream(seed, "analytics"), spec, today)

    from officegym.envs.workplace.generate.mail import make_emails

    emails = make_emails(
        stream(seed, "emails"), spec.emails, now=now_dt, first_day=today - timedelta(days=spec.email_days),
        user=user_name, employees=employees, company=comp, tasks=tasks, events=calendar, customers=crm, firms=firms,
    )
    windows = {
        "emails": date_window(today, spec.email_days, 0),
        "calendar": date_window(today, spec.calendar_back, spec.calendar_ahead),
        "analytics": date_window(today, spec.analytics_days - 1, 0),
        "project_tasks": date_window(today, -spec.task_due[0], spec.task_due[1]),
        "crm": date_window(today, spec.crm_days, 0),
    }
    world = GeneratedWorld(
        seed=seed,
        size=size,
        now=f"{now_dt:%Y-%m-%d %H:%M:%S}",
        company=comp,
        user=user_name,
        employees=tuple(employees),
        directory=tuple(e.email for e in employees),
        tables={"emails": emails, "calendar": calendar, "analytics": analytics, "project_tasks": tasks, "crm": crm},
        windows=windows,
        customer_companies={row[0]: firms[row[3]] for row in sorted(crm)},
    )
    check_tables(world.tables, world.directory, world.now, **world._check_options())
    return world


# ---------------------------------------------------------------------------------------- clock


def parse_now(value: str) -> datetime:
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
        try:
            parsed = datetime.strptime(value, fmt)
        except (TypeError, ValueError):
            continue
        return parsed if fmt != "%Y-%m-%d" else datetime.combine(parsed.date(), time(23, 59))
    raise ValueError(f"now must be 'YYYY-MM-DD HH:MM:SS' or 'YYYY-MM-DD', got {value!r}")


def default_now(rng: random.Random) -> datetime:
    """A weekday between 2022-01-03 and 2026-12-31 at 23:59:00."""
    first = date(2022, 1, 3)
    day = first + timedelta(days=rng.randrange((date(2026, 12, 31) - first).days + 1))
    while day.weekday() >= 5:
        day -= timedelta(days=1)
    return datetime.combine(day, time(23, 59))


def _check_user(user: str) -> str:
    if not isinstance(user, str) or not re.fullmatch(r"[A-Za-z][A-Za-z-]*", user):
        raise ValueError(f"user must be a first name (letters), got {user!r}")
    return user


# -------------------------------------------------------------------------------- company, people


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def make_company(rng: random.Random, name: str | None = None) -> Company:
    industry = rng.choice(vocab.INDUSTRIES)
    word = rng.choice(vocab.COMPANY_WORDS)
    suffix = rng.choice(industry.suffixes)
    tld = rng.choice(vocab.COMPANY_TLDS)
    if name is None:
        name = f"{word} {suffix}"
    slug = _slug(name)
    if not slug:
        raise ValueError(f"company name {name!r} has no letters or digits for a domain")
    products = tuple(rng.sample(industry.products, 5))
    projects = tuple(rng.sample(vocab.PROJECT_CODENAMES, 5))
    return Company(name=name, domain=f"{slug}.{tld}", industry=industry, products=products, projects=projects)


def unique_address(first: str, last: str, domain: str, taken: set[str]) -> str:
    """first.last@domain, or first.last2@domain, first.last3@... when that address is taken."""
    local = f"{_slug(first)}.{_slug(last)}"
    address, n = f"{local}@{domain}", 1
    while address in taken:
        n += 1
        address = f"{local}{n}@{domain}"
    return address


def make_employees(rng: random.Random, spec: SizeSpec, domain: str, user: str) -> list[Employee]:
    """Employees team by team (the directory's order). With unique first names, each first name is
    found by the directory tool in exactly one address (it is no substring of any other address
    or of the domain); the user's first name is found in none."""
    user_l = user.lower()
    employees: list[Employee] = []
    taken: set[str] = set()
    firsts: list[str] = []
    if spec.unique_first_names:
        pool = [f for f in vocab.FIRST_NAMES if user_l not in f.lower()]
        rng.shuffle(pool)
        lasts = list(vocab.LAST_NAMES)
        rng.shuffle(lasts)
        for first in pool:
            if len(employees) == spec.employees:
                break
            fl = first.lower()
            if fl in domain or any(fl in e.email for e in employees):
                continue
            for j, last in enumerate(lasts):
                address = unique_address(first, last, domain, taken)
                if user_l not in address and not any(f in address for f in firsts):
                    lasts.pop(j)
                    break
            else:
                continue
            employees.append(Employee(first, last, address, vocab.TEAMS[len(employees) // spec.per_team]))
            taken.add(address)
            firsts.append(fl)
        if len(employees) < spec.employees:
            raise ValueError(f"could not pick {spec.employees} employees with unique first names")
        return employees
    for i in range(spec.employees):
        while True:
            first, last = rng.choice(vocab.FIRST_NAMES), rng.choice(vocab.LAST_NAMES)
            address = unique_address(first, last, domain, taken)
            if user_l not in address:
                break
        employees.append(Employee(first, last, address, vocab.TEAMS[i // spec.per_team]))
        taken.add(address)
    return employees


def permuted_ids(rng: random.Random, n: int) -> list[str]:
    """Ids 00000000..n-1 in a random order (row i gets ids[i])."""
    order = list(range(n))
    rng.shuffle(order)
    return [f"{i:08d}" for i in order]


# ------------------------------------------------------------------------------- project tasks

# Backlog / In Progress / In Review / Completed, as the reference's generator draws them.
LIST_WEIGHTS = (0.7, 0.04, 0.16, 0.1)
# Tasks already due are more often finished (so "overdue" is a minority, as in the reference).
PAST_DUE_LIST_WEIGHTS = (0.45, 0.1, 0.15, 0.3)


def task_name(rng: random.Random, board: str, company: Company) -> str:
    ind = company.industry
    template = rng.choice(vocab.TASKS_BY_BOARD[board])
    return template.format(
        service=rng.choice(ind.services), feature=rng.choice(ind.features), design=rng.choice(ind.designs),
        product=rng.choice(company.products), project=rng.choice(company.projects),
    )


def make_tasks(rng: random.Random, spec: SizeSpec, today: date, company: Company, teams) -> tuple[tuple[str, ...], ...]:
    """Tasks split evenly over the three boards, each board's team members owning at least one."""
    rows = []
    names_seen: set[str] = set()
    lo, hi = spec.task_due
    for b, board in enumerate(BOARDS):
        n = spec.tasks // 3 + (1 if b < spec.tasks % 3 else 0)
        members = [e.email for e in teams[board]]
        owners = members + [rng.choice(members) for _ in range(n - len(members))]
        exhausted = 0  # once unseen names get hard to find (large worlds), stop insisting
        for owner in owners:
            for _ in range(20 if exhausted < 3 else 1):  # prefer unseen names
                name = task_name(rng, board, company)
                if name not in names_seen:
                    break
            else:
                exhausted += 1
            names_seen.add(name)
            due = today + timedelta(days=rng.randint(lo, hi))
            weights = PAST_DUE_LIST_WEIGHTS if due < today else LIST_WEIGHTS
            list_name = rng.choices(LIST_NAMES, weights)[0]
            rows.append([name, owner, list_name, due.isoformat(), board])
    rng.shuffle(rows)
    rows.sort(key=lambda r: r[3])  # by due date, ties in random order
    ids = permuted_ids(rng, len(rows))
    return tuple((i, *r) for i, r in zip(ids, rows))


# ------------------------------------------------------------------------------------------ CRM


def make_crm(rng: random.Random, spec: SizeSpec, today: date, sales: list[Employee], employees):
    """Customers with distinct names, company addresses, status, interest and follow-up dates.

    Returns the rows and each customer address's company name."""
    employee_names = {e.name for e in employees}
    sales_emails = [e.email for e in sales]
    owners = sales_emails + [rng.choice(sales_emails) for _ in range(spec.customers - len(sales_emails))]
    rng.shuffle(owners)
    seen_names: set[str] = set()
    seen_emails: set[str] = set()
    firms: dict[str, str] = {}
    rows = []
    for owner in owners:
        while True:
            first, last = rng.choice(vocab.FIRST_NAMES), rng.choice(vocab.LAST_NAMES)
            full = f"{first} {last}"
            if full not in seen_names and full not in employee_names:
                break
        seen_names.add(full)
        firm = f"{rng.choice(vocab.CUSTOMER_COMPANY_WORDS)} {rng.choice(vocab.CUSTOMER_COMPANY_SUFFIXES)}"
        email = unique_address(first, last, f"{_slug(firm)}.{rng.choice(vocab.CUSTOMER_TLDS)}", seen_emails)
        seen_emails.add(email)
        firms[email] = firm
        phone = f"{rng.randint(201, 989)}-{rng.randint(200, 999)}-{rng.randint(0, 9999):04d}" if rng.random() < 0.5 else ""
        last_contact = today - timedelta(days=rng.randint(0, spec.crm_days))
        follow_up = last_contact + timedelta(days=rng.randint(*spec.follow_up))
        notes = []
        for _ in range(rng.choices((0, 1, 2, 3), (0.2, 0.35, 0.3, 0.15))[0]):
            day = last_contact - timedelta(days=rng.randint(0, 40))
            notes.append((day.isoformat(), rng.choice(vocab.CRM_NOTES)))
        notes.sort()
        rows.append([
            owner, full, email, phone, f"{last_contact.isoformat()} 23:59:00",
            rng.choice(PRODUCTS), rng.choice(STATUSES), f"{follow_up.isoformat()} 23:59:00",
            "".join(f"{d}: {text} " for d, text in notes),
        ])
    rng.shuffle(rows)
    rows.sort(key=lambda r: r[4], reverse=True)  # most recent contact first, as the reference
    ids = permuted_ids(rng, len(rows))
    return tuple((i, *r) for i, r in zip(ids, rows)), firms


# ------------------------------------------------------------------------------------- calendar

SLOT_MINUTES = 30
DAY_SLOTS = 17  # 09:00 .. 17:30 in half hours
LAST_START_SLOT = 13  # 15:30
DURATION_SLOTS = (1, 2, 3, 4)  # 30, 60, 90, 120 minutes
DURATION_WEIGHTS = (0.28, 0.27, 0.25, 0.2)


def day_layout(rng: random.Random, k: int) -> list[tuple[int, int]] | None:
    """k non-overlapping (start slot, length in slots) in one working day, or None if none found."""
    for _ in range(40):
        lengths = rng.choices(DURATION_SLOTS, DURATION_WEIGHTS, k=k)
        free = DAY_SLOTS - sum(lengths)
        if free < 0:
            continue
        # Spread the free slots over the k+1 gaps uniformly (stars and bars).
        bars = sorted(rng.sample(range(free + k), k))
        starts, pos, prev = [], 0, -1
        for bar, length in zip(bars, lengths):
            pos += bar - prev - 1
            starts.append(pos)
            pos += length
            prev = bar
        if all(s <= LAST_START_SLOT for s in starts):
            return list(zip(starts, lengths))
    return None


def meeting_name(rng: random.Random, person: Employee, company: Company) -> str:
    kind = rng.random()
    if kind < 0.45:
        pool = vocab.MEETINGS_FORMAL
    elif kind < 0.75:
        pool = vocab.MEETINGS_INFORMAL
    else:
        pool = vocab.MEETINGS_BY_TEAM[person.team]
    return rng.choice(pool).format(
        project=rng.choice(company.projects), product=rng.choice(company.products), first=person.first,
    )


def make_calendar(rng: random.Random, spec: SizeSpec, today: date, company: Company, employees) -> tuple[tuple[str, ...], ...]:
    """Meetings with one participant each, on weekdays in working hours, never overlapping,
    no meeting name twice on a day."""
    first = today - timedelta(days=spec.calendar_back)
    days = [first + timedelta(days=i) for i in range(spec.calendar_back + spec.calendar_ahead + 1)]
    days = [d for d in days if d.weekday() < 5]
    cap = spec.max_events_per_day
    if len(days) * cap < spec.events:
        raise ValueError("calendar span too short for the number of events")
    counts = [0] * len(days)
    placed = 0
    while placed < spec.events:
        i = rng.randrange(len(days))
        if counts[i] < cap:
            counts[i] += 1
            placed += 1
    layouts: list[list[tuple[int, int]]] = []
    leftover = 0
    for k in counts:
        layout = day_layout(rng, k) if k else []
        while layout is None:  # too crowded: the meeting goes to another day below
            k, leftover = k - 1, leftover + 1
            layout = day_layout(rng, k)
        layouts.append(layout)
    while leftover:
        i = rng.randrange(len(days))
        if len(layouts[i]) < cap and (layout := day_layout(rng, len(layouts[i]) + 1)) is not None:
            layouts[i] = layout
            leftover -= 1
    rows = []
    for day, layout in zip(days, layouts):
        used: set[str] = set()
        for start, length in layout:
            person = rng.choice(employees)
            name = meeting_name(rng, person, company)
            while name in used:
                name = meeting_name(rng, person, company)
            used.add(name)
            minutes = 9 * 60 + start * SLOT_MINUTES
            rows.append((f"{day.isoformat()} {minutes // 60:02d}:{minutes % 60:02d}:00", name, person.email,
                         str(length * SLOT_MINUTES)))
    rows.sort(key=lambda r: r[0])
    ids = permuted_ids(rng, len(rows))
    return tuple((i, r[1], r[2], r[0], r[3]) for i, r in zip(ids, rows))


# ------------------------------------------------------------------------------------ analytics

TRAFFIC = (("direct", "social media", "search engine", "referral"), (0.5, 0.3, 0.1, 0.1))


def make_analytics(rng: random.Random, spec: SizeSpec, today: date) -> tuple[tuple[str, ...], ...]:
    """Visits with the reference's distributions (SPEC 2.4), in no particular order.

    page_views = int(Exp(mean 5) + 1), session_duration_seconds = int(Exp(mean 20)),
    traffic source direct/social media/search engine/referral with p = .5/.3/.1/.1,
    user_engaged = duration > 10 and page_views > 1, stored "True"/"False".
    """
    sources, weights = TRAFFIC
    cum = [sum(weights[: i + 1]) for i in range(len(weights))]
    rows = []
    for _ in range(spec.visits):
        day = today - timedelta(days=rng.randrange(spec.analytics_days))
        views = int(rng.expovariate(1 / 5) + 1)
        duration = int(rng.expovariate(1 / 20))
        source = rng.choices(sources, cum_weights=cum)[0]
        engaged = "True" if duration > 10 and views > 1 else "False"
        rows.append((day.isoformat(), f"{rng.randrange(10000):04d}", str(views), str(duration), source, engaged))
    return tuple(rows)
