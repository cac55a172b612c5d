"""The user's mailbox: threads about the world's own tasks, meetings, customers and projects.

Every thread starts with a mail from an employee (inbox) or from the user (outbox) and may carry
replies ("RE: <subject>") in both directions. Mails about a task come from its assignee and match
its list (a "Done:" mail for a completed task); mails about a meeting come from its participant
before (agenda) or after (notes) it; mails about a customer come from its sales owner around the
last contact date and match its status.

Bodies are one line with the two characters backslash + n where a line break would be, exactly
like the reference data (the CSV stays one row per line, and a model sees the same kind of text in
both worlds). Times are working hours on (mostly) weekdays over the ~2 months before "now"; no
two mails share a timestamp and no subject repeats on one day.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from officegym.envs.workplace.generate.world import Company, Employee, permuted_ids

NL = "\\n"  # two characters: a backslash and an n

GREETINGS = ("Hi {user},", "Hello {user},", "{user},", "Hey {user},", "Hi {user} -")
SIGNOFFS = ("Thanks", "Best regards", "Cheers", "Talk soon", "Regards", "Many thanks", "All the best", "Speak soon")
CLOSERS = (
    "Let me know if you have questions.", "Happy to walk you through it.", "I'll keep you posted.",
    "Thoughts welcome.", "No action needed from you for now.", "", "", "",
)
COVER_LINE = "{colleague} ({colleague_email}) can answer questions while I'm out on {weekday}."

TASK_SUBJECTS = {
    "any": ("Status: {task}", "Question: {task}", "Timeline check: {task}"),
    "Completed": ("Done: {task}", "Completed: {task}"),
    "In Review": ("Review request: {task}", "Ready for review: {task}"),
    "In Progress": ("In progress: {task}", "Progress report: {task}"),
    "Backlog": ("Not started: {task}", "Priority check: {task}"),
}
TASK_LINES = {
    "Completed": (
        "I finished '{task}' and pushed the last changes this morning.",
        "'{task}' is done; the card is in Completed on the {board} board.",
        "Quick note that '{task}' is complete. {colleague} helped with the testing.",
    ),
    "In Review": (
        "'{task}' is ready for review. Could you take a look before {due_day}?",
        "I opened the review for '{task}' and asked {colleague} to be the second reviewer.",
        "The work on '{task}' is waiting for review; the feedback so far is minor.",
    ),
    "In Progress": (
        "I'm still working on '{task}' and expect to finish by {due_day}.",
        "About half of '{task}' is done. The rest depends on a decision about {project}.",
        "Progress on '{task}' is steady; I'll share a first version in a few days.",
    ),
    "Backlog": (
        "I haven't started '{task}' yet. It's due {due_day}; should it come before my other work?",
        "'{task}' is still in the backlog. Could we talk about where it fits with {project}?",
        "Before I pick up '{task}', I need the requirements from {colleague}.",
    ),
}

MEETING_BEFORE = (
    (("Agenda for {event}", "Prep for {event}", "Before our {event}"), (
        "For {event} on {event_day} I'd like to cover {topic} and {topic2}.",
        "Ahead of {event} at {event_time} on {event_day}, could you skim my notes on {topic}?",
        "Can we keep {event} to {duration} minutes? I'd like to focus on {topic}.",
    )),
    (("Can we move {event}?", "Reschedule {event}?"), (
        "Something came up on {event_day}. Could we move {event} to later that week?",
        "I'm double-booked at {event_time} on {event_day}. Is another slot fine for {event}?",
    )),
)
MEETING_AFTER = (
    (("Notes from {event}", "Follow-ups from {event}", "Recap: {event}"), (
        "Thanks for {event} on {event_day}. The main takeaway is that {takeaway}.",
        "Here is my summary of {event}: {takeaway}.",
        "After {event} I wrote down the action items; the big one is that {takeaway}.",
    )),
)
TOPICS = (
    "the {project} timeline", "the {product} backlog", "hiring for the {team} team", "next quarter's budget",
    "customer feedback on {product}", "{industry_topic}", "the {service}",
)
TAKEAWAYS = (
    "{project} needs one more week", "we should prioritise {product}", "the budget for {project} is approved",
    "we will pilot {product} with two customers first", "we need a decision on {industry_topic}",
    "the {service} needs an owner",
)

CUSTOMER_SUBJECTS = (
    "Call recap: {customer}", "{firm}: next steps", "Follow-up with {customer}", "{customer}: {interest} interest",
    "News on the {firm} account",
)
CUSTOMER_LINES = {
    "Lead": (
        "{customer} from {firm} asked about our {interest} offering. I'll qualify the lead before {follow_day}.",
        "New lead: {customer} at {firm} is curious about {industry_topic}.",
    ),
    "Qualified": (
        "{customer} at {firm} has budget and a clear need for {interest}. Next step is a proposal.",
        "I qualified {firm}; {customer} wants to start this quarter.",
    ),
    "Proposal": (
        "We sent {firm} a proposal for {interest}. {customer} promised an answer by {follow_day}.",
        "{customer} is reviewing our proposal; the open question is {industry_topic}.",
    ),
    "Won": (
        "Good news: {firm} signed for {interest}! {customer} ({customer_email}) will be our main contact.",
        "{customer} confirmed the deal with {firm}. I'll set up the kickoff.",
    ),
    "Lost": (
        "{firm} decided not to go ahead with {interest} for now. {customer} said the timing was wrong.",
        "We lost {firm}; {customer} chose a cheaper option.",
    ),
}

PROJECT_MAILS = (
    ("{project} timeline", ("The {project} team wants to ship the first milestone by {date_day}.",
                            "The {project} plan slipped by a week because of {risk}.")),
    ("Budget for {project}", ("We are about {pct}% over the planned budget for {project}; I'd like to discuss options.",
                              "The {project} budget is on track so far.")),
    ("Risks on {project}", ("The biggest risk for {project} right now is {risk}.",)),
    ("{product} release plan", ("The {product} release is planned for {date_day}, pending QA sign-off.",)),
    ("Staffing for {project}", ("We could use one more person from {team} on {project} for the next two sprints.",)),
    ("{project} weekly summary", ("This week on {project}: {n} tasks closed, {m} still open, no blockers.",)),
)
RISKS = (
    "a dependency on the {service}", "unclear requirements for the {feature}", "the holiday season",
    "the vendor contract", "test coverage of the {service}",
)
GENERAL_MAILS = (
    ("Website traffic this week", ("Visits to our site went up this week, mostly from social media.",
                                   "Traffic from search engines dipped this week; I'm looking into it.")),
    ("Office closed on {date_day}", ("Heads up: the office is closed on {date_day} for maintenance.",)),
    ("Expense reports due {date_day}", ("Friendly reminder that expense reports are due {date_day}.",)),
    ("Team lunch on {weekday}?", ("A few of us are going to lunch on {weekday}. Want to join?",)),
    ("Conference talk proposal", ("I'd like to submit a talk about {product} to a conference. Could you review the abstract?",)),
    ("New teammate joining {team}", ("A new colleague joins the {team} team next week; I'll set up the onboarding.",)),
    ("{metric_title} this month", ("Our {metric} grew about {pct}% compared with last month.",)),
)

ASK_TASK = (
    ("Can you check {task}?", "Could you give me a quick status on '{task}'? It's due {due_day}."),
    ("About {task}", "Is anything blocking '{task}'? Happy to help unblock it."),
)
ASK_PROJECT = (
    ("Quick question on {project}", "Do we have a date for the next {project} milestone?"),
    ("Thank you!", "Thanks for your help with {project} last week; it made a real difference."),
)
ASK_MEETING = (("Before {event}", "Could you send me the materials for {event} before {event_day}?"),)
ASK_CUSTOMER = (("Intro to {firm}", "Could you introduce me to {customer} at {firm}? I'd like to hear how they use {interest}."),)

USER_REPLIES = (
    "Thanks, {first}. That works for me.", "Sounds good. Let's discuss it at our next catch-up.",
    "Could you send me the details by {weekday}?", "Great work, thanks for the update.",
    "Noted. Please keep me posted.", "Let's involve {colleague} before we decide.",
)
EMPLOYEE_REPLIES = (
    "Will do.", "Sure, I'll send it over by {weekday}.", "Done. Let me know what you think.",
    "Good question; I'll check and get back to you.", "Yes, that's fine with me.",
)


def day_text(d: date) -> str:
    return f"{d:%A}, {d:%B} {d.day}"


@dataclass
class Message:
    inbox: bool
    person: Employee
    subject: str
    body: str
    when: datetime


class Mailbox:
    """Draws threads until the mailbox holds `n` mails."""

    def __init__(self, rng: random.Random, *, now: datetime, first_day: date, user: str,
                 employees: Sequence[Employee], company: Company, tasks, events, customers, firms):
        self.rng = rng
        self.now = now
        self.first_day = first_day
        self.today = now.date()
        self.user = user
        self.employees = list(employees)
        self.by_email = {e.email: e for e in employees}
        # who a mail may name as a colleague: the sender's teammates (anyone else in a tiny team)
        self.mates = {
            p.email: [e for e in employees if e.team == p.team and e is not p] or [e for e in employees if e is not p]
            for p in employees
        }
        self.company = company
        self.tasks = list(tasks)
        self.customers = [c for c in customers if c[5][:10] >= first_day.isoformat()]
        self.firms = firms
        soon = (self.today + timedelta(days=14)).isoformat()
        self.events_before = [e for e in events if first_day.isoformat() < e[3][:10] <= soon]
        self.events_after = [e for e in events if first_day.isoformat() <= e[3] and _event_end(e) < now]
        self.used_times: set[datetime] = set()
        self.used_subjects: set[tuple[str, date]] = set()

    # ---- time
    def pick_day(self, lo: date, hi: date) -> date | None:
        lo, hi = max(lo, self.first_day), min(hi, self.today)
        if lo > hi:
            return None
        span = (hi - lo).days
        for _ in range(4):
            d = lo + timedelta(days=self.rng.randint(0, span))
            if d.weekday() < 5 or self.rng.random() < 0.15:
                break
        return d

    def work_time(self, d: date, earliest: datetime | None = None) -> datetime | None:
        for _ in range(6):
            t = datetime(d.year, d.month, d.day, self.rng.randint(8, 18), self.rng.randrange(60), self.rng.randrange(60))
            if t <= self.now and (earliest is None or t > earliest):
                return t
        return None

    def later(self, t: datetime) -> datetime | None:
        r = t + timedelta(minutes=self.rng.randint(15, 1800))
        if r.hour >= 19 or r.hour < 8 or r.weekday() >= 5:
            d = r.date() + timedelta(days=1 if r.hour >= 19 else 0)
            while d.weekday() >= 5:
                d += timedelta(days=1)
            r = datetime(d.year, d.month, d.day, self.rng.randint(8, 10), self.rng.randrange(60), self.rng.randrange(60))
        return r if r <= self.now else None

    def claim(self, t: datetime, subject: str) -> datetime | None:
        """Reserve a unique timestamp for a subject not yet used on that day."""
        if (subject, t.date()) in self.used_subjects:
            return None
        while t in self.used_times:
            t += timedelta(seconds=1)
        if t > self.now:
            return None
        self.used_times.add(t)
        self.used_subjects.add((subject, t.date()))
        return t

    # ---- text
    def fills(self, person: Employee, day: date, **extra) -> dict:
        """Template values for a mail written by or to `person` on `day`."""
        rng, comp = self.rng, self.company
        ind = comp.industry
        colleague = rng.choice(self.mates[person.email])
        values = {
            "user": self.user, "first": person.first, "project": rng.choice(comp.projects),
            "product": rng.choice(comp.products), "team": person.team,
            "industry_topic": rng.choice(ind.topics), "service": rng.choice(ind.services),
            "feature": rng.choice(ind.features), "metric": ind.metric, "metric_title": ind.metric.capitalize(),
            "colleague": colleague.first, "colleague_email": colleague.email,
            "weekday": rng.choice(("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")),
            "pct": rng.randint(3, 25), "n": rng.randint(2, 9), "m": rng.randint(1, 12),
        }
        values["date_day"] = day_text(day + timedelta(days=rng.randint(2, 30)))
        values.update(extra)
        for key, pool in (("topic", TOPICS), ("topic2", TOPICS), ("takeaway", TAKEAWAYS), ("risk", RISKS)):
            if key not in values:
                values[key] = rng.choice(pool).format(**values)
        return values

    def employee_body(self, person: Employee, lines: Sequence[str], values: dict, closers: bool = True) -> str:
        rng = self.rng
        text = rng.choice(lines).format(**values)
        closer = rng.choice(CLOSERS) if closers else ""
        if closers and rng.random() < 0.08:
            closer = COVER_LINE.format(**values)
        paragraph = f"{text} {closer}".rstrip()
        greeting = rng.choice(GREETINGS).format(user=self.user)
        return f"{greeting}{NL}{NL}{paragraph}{NL}{NL}{rng.choice(SIGNOFFS)},{NL}{person.first}"

    def user_body(self, person: Employee, text: str) -> str:
        sign = self.rng.choice(("Thanks", "Best", "Cheers", "Thank you"))
        return f"Hi {person.first},{NL}{NL}{text}{NL}{NL}{sign},{NL}{self.user}"

    # ---- thread starters: (inbox, person, subject, body, day, not-before time) or None
    def task_thread(self):
        task = self.rng.choice(self.tasks)
        person = self.by_email[task[2]]
        status = task[3]
        day = self.pick_day(self.first_day, self.today)
        values = self.fills(person, day, task=task[1], board=task[5], due_day=day_text(date.fromisoformat(task[4])))
        subject = self.rng.choice(TASK_SUBJECTS["any"] + TASK_SUBJECTS[status]).format(**values)
        return True, person, subject, self.employee_body(person, TASK_LINES[status], values), day, None

    def meeting_thread(self):
        rng = self.rng
        before = rng.random() < 0.5
        pool = self.events_before if before else self.events_after
        if not pool:
            return None
        event = rng.choice(pool)
        person = self.by_email[event[2]]
        start = datetime.fromisoformat(event[3])
        if before:
            day, after = self.pick_day(start.date() - timedelta(days=6), start.date() - timedelta(days=1)), None
        else:
            day, after = self.pick_day(start.date(), start.date() + timedelta(days=2)), _event_end(event)
        if day is None:
            return None
        values = self.fills(person, day, event=event[1], event_day=day_text(start.date()),
                            event_time=f"{start:%H:%M}", duration=event[4])
        subjects, lines = rng.choice(MEETING_BEFORE if before else MEETING_AFTER)
        return True, person, rng.choice(subjects).format(**values), self.employee_body(person, lines, values), day, after

    def customer_values(self, customer, person: Employee, day: date) -> dict:
        return self.fills(
            person, day, customer=customer[2], firm=self.firms[customer[3]], customer_email=customer[3],
            interest=customer[6].lower(), follow_day=day_text(date.fromisoformat(customer[8][:10])),
        )

    def customer_thread(self):
        if not self.customers:
            return None
        customer = self.rng.choice(self.customers)
        person = self.by_email[customer[1]]
        last = date.fromisoformat(customer[5][:10])
        day = self.pick_day(last - timedelta(days=2), last)
        if day is None:
            return None
        values = self.customer_values(customer, person, day)
        subject = self.rng.choice(CUSTOMER_SUBJECTS).format(**values)
        return True, person, subject, self.employee_body(person, CUSTOMER_LINES[customer[7]], values), day, None

    def project_thread(self, mails=PROJECT_MAILS):
        person = self.rng.choice(self.employees)
        day = self.pick_day(self.first_day, self.today)
        values = self.fills(person, day)
        subject, lines = self.rng.choice(mails)
        return True, person, subject.format(**values), self.employee_body(person, lines, values), day, None

    def general_thread(self):
        return self.project_thread(GENERAL_MAILS)

    def ask_thread(self):
        rng = self.rng
        kind = rng.random()
        if kind < 0.4:
            task = rng.choice(self.tasks)
            person = self.by_email[task[2]]
            day = self.pick_day(self.first_day, self.today)
            values = self.fills(person, day, task=task[1], due_day=day_text(date.fromisoformat(task[4])))
            subject, text = rng.choice(ASK_TASK)
        elif kind < 0.6 and self.events_before:
            event = rng.choice(self.events_before)
            person = self.by_email[event[2]]
            start = datetime.fromisoformat(event[3])
            day = self.pick_day(start.date() - timedelta(days=5), start.date() - timedelta(days=1))
            if day is None:
                return None
            values = self.fills(person, day, event=event[1], event_day=day_text(start.date()))
            subject, text = rng.choice(ASK_MEETING)
        elif kind < 0.75 and self.customers:
            customer = rng.choice(self.customers)
            person = self.by_email[customer[1]]
            day = self.pick_day(self.first_day, self.today)
            values = self.customer_values(customer, person, day)
            subject, text = rng.choice(ASK_CUSTOMER)
        else:
            person = rng.choice(self.employees)
            day = self.pick_day(self.first_day, self.today)
            values = self.fills(person, day)
            subject, text = rng.choice(ASK_PROJECT)
        return False, person, subject.format(**values), self.user_body(person, text.format(**values)), day, None

    # ---- assembly
    def thread(self) -> list[Message]:
        rng = self.rng
        starters: tuple[tuple[Callable, float], ...] = (
            (self.task_thread, 0.28), (self.meeting_thread, 0.18), (self.customer_thread, 0.14),
            (self.project_thread, 0.12), (self.general_thread, 0.1), (self.ask_thread, 0.18),
        )
        for _ in range(20):
            starter = rng.choices([s for s, _ in starters], [w for _, w in starters])[0]
            drawn = starter()
            if drawn is None:
                continue
            inbox, person, subject, body, day, after = drawn
            t = self.work_time(day, after)
            if t is None or (t := self.claim(t, subject)) is None:
                continue
            messages = [Message(inbox, person, subject, body, t)]
            self.replies(messages)
            return messages
        raise RuntimeError("could not draw an e-mail thread")  # pragma: no cover - needs an empty world

    def replies(self, messages: list[Message]) -> None:
        rng = self.rng
        first = messages[0]
        user_turn = first.inbox  # who answers next: the user answers an inbox mail
        chance = 0.35 if first.inbox else 0.6
        while len(messages) < 3 and rng.random() < chance:
            t = self.later(messages[-1].when)
            subject = f"RE: {first.subject}"
            t = self.claim(t, subject) if t is not None else None
            if t is None:
                return
            person = first.person
            values = self.fills(person, t.date())
            if user_turn:
                body = self.user_body(person, rng.choice(USER_REPLIES).format(**values))
            else:
                body = self.employee_body(person, EMPLOYEE_REPLIES, values, closers=False)
            messages.append(Message(not user_turn, person, subject, body, t))
            user_turn = not user_turn
            chance = 0.3


def _event_end(event) -> datetime:
    return datetime.fromisoformat(event[3]) + timedelta(minutes=int(event[4]))


def make_emails(rng: random.Random, n: int, *, now: datetime, first_day: date, user: str, employees,
                company: Company, tasks, events, customers, firms) -> tuple[tuple[str, ...], ...]:
    """`n` mails (rows in EMAIL_COLUMNS order), sorted by sent time, ids permuted."""
    box = Mailbox(rng, now=now, first_day=first_day, user=user, employees=employees, company=company,
                  tasks=tasks, events=events, customers=customers, firms=firms)
    messages: list[Message] = []
    while len(messages) < n:
        messages.extend(box.thread()[: n - len(messages)])
    messages.sort(key=lambda m: m.when)
    ids = permuted_ids(rng, len(messages))
    return tuple(
        (i, "inbox" if m.inbox else "outbox", m.person.email, m.subject, f"{m.when:%Y-%m-%d %H:%M:%S}", m.body)
        for i, m in zip(ids, messages)
    )
