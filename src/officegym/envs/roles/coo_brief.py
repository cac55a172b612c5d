"""The COO brief in prose: each staffing rule one sentence in one of many forms, figures in several
styles (digits, words, days, ordinals), projects named by id, name or place on the list, updates
that supersede an earlier figure, hearsay that must be ignored (rules nobody decided, each one the
best allocation would break), unrelated figures, and documents (e-mail, meeting notes, ticket) that
hold some of the rules and are read through `read_document`.

Forms and styles are data (`FORMS`, `STYLES`): a held-out task draws held-out ones for at least one
kind of rule, and only held-out tasks ever do.
"""

from __future__ import annotations

import random
from typing import Any

from officegym.envs.roles.coo_model import DAY_HOURS, KINDS, MAX_WEEK, PEOPLE
from officegym.envs.roles.names import company_and_product
from officegym.envs.roles.prose import (
    HELDOUT,
    TRAINED,
    Forms,
    document_ids,
    document_kinds,
    spread,
    words,
    write_documents,
)
from officegym.envs.roles.prose import PEOPLE as AUTHORS

FORMS = {
    "capacity": Forms("capacity", (
        "{p} can give at most {v} this quarter.",
        "{p} has {v} available for project work.",
        "Cap {p} at {v} in total.",
        "The capacity of {p} is {v}.",
        "Do not book {p} for more than {v}.",
        "{p} is limited to {v} of project time.",
        "Capacity for {p}: {v}.",
        "{p} cannot put more than {v} into these projects.",
    ), (
        "Beyond {v}, {p} is committed elsewhere.",
        "Everything {p} takes on together has to fit inside {v}.",
        "{p} is only free for {v} over the quarter.",
    )),
    "max_projects": Forms("max_projects", (
        "{p} can take on at most {v}.",
        "Give {p} no more than {v}.",
        "{p} should not lead more than {v} at once.",
        "Limit {p} to {v}.",
        "{p} has room for {v} at most.",
        "Maximum for {p}: {v}.",
        "{p} may carry up to {v} this quarter.",
        "No more than {v} for {p}.",
    ), (
        "{p} would burn out juggling more than {v}.",
        "Anything past {v} on the plate of {p} is too much.",
        "The manager of {p} will lend them for {v} and nothing beyond that.",
    )),
    "must_do": Forms("must_do", (
        "{a} is a must-do this quarter.",
        "{a} must be staffed.",
        "We cannot skip {a}.",
        "{a} is mandatory.",
        "Whatever else happens, {a} has to be staffed.",
        "{a} is non-negotiable: it must go ahead.",
        "Leadership has committed to {a}, so it must be staffed.",
        "{a} cannot be left unstaffed.",
    ), (
        "The board will ask about {a} first, so someone owns it no matter what.",
        "Leaving {a} without an owner is off the table.",
        "{a} was promised to a customer in writing; it happens.",
    )),
    "exclusive": Forms("exclusive", (
        "{a} and {b} cannot share staff.",
        "{a} and {b} must go to different people.",
        "Nobody may work on both {a} and {b}.",
        "Keep {a} and {b} with separate owners.",
        "The same person cannot take {a} and {b}.",
        "{a} and {b} need different people.",
        "Do not give {a} and {b} to one person.",
        "Staff {a} and {b} with two different people.",
    ), (
        "Whoever runs {a} audits {b}; a single owner for the two would be a conflict of interest.",
        "Splitting {a} and {b} between two owners is a compliance rule here.",
        "{a} reviews the work of {b}, so their owners may not coincide.",
    )),
    # {a} may be staffed only if {b} is
    "prerequisite": Forms("prerequisite", (
        "{a} depends on {b}: staff {a} only if {b} is staffed too.",
        "{a} requires {b}; without {b}, {a} cannot go ahead.",
        "Do not staff {a} unless {b} is staffed as well.",
        "{a} builds on {b}, so {a} is only worth staffing if {b} is.",
        "{a} needs {b} in place: no {b}, no {a}.",
        "{b} is a prerequisite for {a}.",
        "{b} has to be staffed for {a} to be staffed.",
        "Without {b}, there is no point in staffing {a}.",
    ), (
        "{a} sits on top of whatever {b} delivers; on its own it is pointless.",
        "If {b} is dropped, {a} goes with it.",
        "Nobody should pick up {a} while {b} has no owner.",
    )),
    "deadline": Forms("deadline", (
        "{a} must be finished by the end of {v}.",
        "{a} is due in {v}.",
        "Deadline for {a}: {v}.",
        "{a} has to ship no later than {v}.",
        "We need {a} done by {v}.",
        "{a} must be complete by {v} at the latest.",
        "The deadline for {a} is {v}.",
        "Finish {a} by {v}.",
    ), (
        "Past {v}, {a} is worthless to the client.",
        "{a} goes live at the close of {v}, so the work has to be wrapped up by then.",
        "Whoever takes {a} hands it over by the close of {v}.",
    )),
    # a rule whose figure changed: {old} is superseded by {new}
    "update": Forms("update", (
        "Update: {noun} changed from {old} to {new}.",
        "Correction to my earlier note: {noun} is {new}, not {old}.",
        "Earlier we said {old}; {noun} is now {new}.",
    ), (
        "We have moved off the {old} figure; {noun} going forward is {new}.",
        "{new} replaces the {old} we had pencilled in as {noun}.",
    )),
    # a rule nobody decided ({claim}): it must be ignored
    "hearsay": Forms("hearsay", (
        "(Overheard at lunch: {claim}. Nothing official.)",
        "A recruiter claimed on a call that {claim}; that is not our requirement.",
        "Rumour has it that {claim}, but nothing has been decided.",
        "Ignore the old draft that said {claim}; it was never approved.",
        "Someone in sales heard that {claim} (unconfirmed).",
    ), (
        "My cousin in finance reckons {claim}; take that with a pinch of salt.",
        "There was corridor chatter that {claim}; disregard it.",
        "Per an unverified chat message, {claim}.",
    )),
}
CLAIMS = {
    "capacity": "{p} can give at most {v}", "max_projects": "{p} can take on at most {v}",
    "must_do": "{a} must be staffed", "exclusive": "{a} and {b} cannot share staff",
    "prerequisite": "{a} requires {b}", "deadline": "{a} is due by {v}",
}
NOUNS = {"capacity": "the capacity of {p}", "max_projects": "the project limit for {p}",
         "deadline": "the deadline for {a}"}
NOISE = (  # figures that belong to no rule
    "The quarter has {weeks} working weeks.", "Last quarter the team shipped {n} projects.",
    "The average contractor rate is ${rate} an hour.", "The all-hands takes {few} hours out of week {w}.",
    "{p} logged {h} hours of overtime last quarter.", "{p} has been with the company for {n} years.",
    "The {a} kickoff is scheduled for week {w}.", "{a} was first estimated at {h} hours back in {year}.",
)
PREFERENCES = (
    "We would rather keep {p} on familiar work where that costs nothing, but it is not a rule.",
    "Nice to have, not required: fewer people spread over more projects.",
    "If it makes no difference to the result, give {a} to someone senior.",
)
STYLES = {  # renderings per figure or reference: (trained, held out)
    "capacity": (("hours", "h", "words"), ("days", "day_words")),
    "max_projects": (("digits", "words"), ("collective",)),
    "deadline": (("week", "week_words"), ("day", "ordinal")),
    "project": (("id", "name", "name_id"), ("ordinal",)),
}
PERSON_STYLES = ("name", "name_id", "id")
ORDINALS = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
            "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth")
COLLECTIVE = {1: "a single project", 2: "a pair of projects", 3: "a trio of projects"}


def render_value(kind: str, value: int, style: str) -> str:
    if kind == "capacity":
        days = value // DAY_HOURS
        return {"hours": f"{value} hours", "h": f"{value} h", "words": f"{words(value)} hours",
                "days": f"{days} eight-hour days", "day_words": f"{words(days)} working days of eight hours"}[style]
    if kind == "max_projects":
        noun = "project" if value == 1 else "projects"
        return {"digits": f"{value} {noun}", "words": f"{words(value)} {noun}",
                "collective": COLLECTIVE.get(value, f"{value} {noun}")}[style]
    if kind == "deadline":
        return {"week": f"week {value}", "week_words": f"week {words(value)}", "day": f"day {7 * value}",
                "ordinal": f"the {ORDINALS[value]} week"}[style]
    raise ValueError(kind)


class Writer:
    """Renders rules, decoys and distractors for one scenario, recording the features it draws."""

    def __init__(self, rng: random.Random, public: dict[str, Any], features: list[str]):
        self.rng, self.features = rng, features
        self.projects = {p["id"]: (i, p) for i, p in enumerate(public["projects"])}
        self.people = {s["id"]: s for s in public["staff"]}

    def project(self, pid: str, pool: str) -> str:
        i, p = self.projects[pid]
        style = "ordinal" if pool == HELDOUT and self.rng.random() < 0.5 else self.rng.choice(STYLES["project"][0])
        self.features.append(f"project_style:{style}")
        return {"id": pid, "name": p["name"], "name_id": f"{p['name']} ({pid})",
                "ordinal": f"the {ORDINALS[i + 1]} project on the list"}[style]

    def person(self, sid: str) -> str:
        s = self.people[sid]
        return {"name": s["name"], "name_id": f"{s['name']} ({sid})", "id": sid}[self.rng.choice(PERSON_STYLES)]

    def style(self, kind: str, pool: str) -> str:
        trained, heldout = STYLES[kind]
        style = self.rng.choice(heldout if pool == HELDOUT else trained)
        self.features.append(f"{kind}_style:{style}")
        return style

    def slots(self, rule: tuple, pool: str) -> dict[str, str]:
        kind = rule[0]
        if kind in ("capacity", "max_projects"):
            return {"p": self.person(rule[1])}
        if kind in ("exclusive", "prerequisite"):
            return {"a": self.project(rule[1], pool), "b": self.project(rule[2], pool)}
        return {"a": self.project(rule[1], pool)}

    def rule(self, rule: tuple, pool: str, update_share: float) -> str:
        kind = rule[0]
        slots = self.slots(rule, pool)
        if kind in NOUNS:
            style = self.style(kind, pool)
            new = render_value(kind, rule[2], style)
            if self.rng.random() < update_share:
                old = render_value(kind, self._other(kind, rule[2]), style)
                feature, form = FORMS["update"].pick(self.rng, pool)
                self.features.append(feature)
                return _sentence(form.format(noun=NOUNS[kind].format(**slots), old=old, new=new))
            slots["v"] = new
        feature, form = FORMS[kind].pick(self.rng, pool)
        self.features.append(feature)
        return _sentence(form.format(**slots))

    def hearsay(self, decoy: tuple, pool: str) -> str:
        kind = decoy[0]
        slots = self.slots(decoy, pool)
        if kind in NOUNS:
            slots["v"] = render_value(kind, decoy[2], self.style(kind, pool))
        feature, form = FORMS["hearsay"].pick(self.rng, pool)
        self.features.append(feature)
        return _sentence(form.format(claim=CLAIMS[kind].format(**slots)))

    def _other(self, kind: str, value: int) -> int:
        """A different figure for the same rule (the superseded one)."""
        rng = self.rng
        if kind == "capacity":
            other = value + DAY_HOURS * rng.choice((-1, 1)) * rng.randint(2, 6)
            return other if other >= DAY_HOURS else value + DAY_HOURS * rng.randint(2, 6)
        if kind == "max_projects":
            return rng.choice([n for n in (1, 2, 3) if n != value])
        return rng.choice([w for w in range(max(1, value - 3), min(MAX_WEEK, value + 3) + 1) if w != value])

    def noise(self, form: str) -> str:
        rng = self.rng
        slots: dict[str, Any] = {"weeks": rng.choice((12, 13)), "n": rng.randint(3, 30), "rate": rng.randint(45, 160),
                                 "h": rng.randint(2, 60), "few": rng.randint(2, 6), "w": rng.randint(1, MAX_WEEK), "year": rng.randint(2015, 2023)}
        if "{p}" in form:
            slots["p"] = self.person(rng.choice(list(self.people)))
        if "{a}" in form:
            slots["a"] = self.project(rng.choice(list(self.projects)), TRAINED)
        return _sentence(form.format(**slots))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def statements(rng: random.Random, public: dict[str, Any], rules: list[tuple], decoys: list[tuple], subset: str,
               difficulty: int, features: list[str]) -> list[tuple[str, bool]]:
    """The sentences of the brief and documents, as (text, states a rule)."""
    writer = Writer(rng, public, features)
    kinds = sorted({r[0] for r in rules}, key=KINDS.index)
    # A held-out brief mixes: one kind of rule is stated in held-out forms, each other kind is with
    # probability one half, so a reader must cope with unseen sentences among familiar ones.
    forced = rng.choice(kinds)
    pools = {k: subset if subset != HELDOUT or k == forced or rng.random() < 0.5 else TRAINED for k in kinds}
    update_share = min(0.5, 0.08 * difficulty)
    out = [(writer.rule(r, pools[r[0]], update_share), True) for r in rules]
    for decoy in rng.sample(decoys, min(len(decoys), 0 if difficulty < 2 else 1 if difficulty < 6 else 2)):
        out.append((writer.hearsay(decoy, subset if rng.random() < 0.5 else TRAINED), False))
    for form in rng.sample(NOISE, 1 + difficulty // 3):
        out.append((writer.noise(form), False))
    if rng.random() < 0.5:
        out.append((writer.noise(rng.choice(PREFERENCES)), False))
    rng.shuffle(out)
    return out


TITLES = {"email": ("Re: staffing for next quarter", "Who can do what", "Constraints from the delivery leads"),
          "notes": ("Portfolio review", "Resourcing sync", "Delivery steering committee"),
          "ticket": ("Q3 staffing constraints", "Portfolio: resourcing rules", "Staffing plan inputs")}
# document authors whose first names are not staff names (a reader must not take them for staff)
WRITERS = tuple(a for a in AUTHORS if a.split()[0] not in PEOPLE)


def compose(rng: random.Random, public: dict[str, Any], rules: list[tuple], decoys: list[tuple], difficulty: int,
            subset: str) -> tuple[str, dict[str, str], list[str]]:
    """(brief, documents by id, features): the rules stated over the brief and the documents."""
    features: list[str] = []
    said = statements(rng, public, rules, decoys, subset, difficulty, features)
    company, _ = company_and_product(rng)
    kinds_of_docs = document_kinds(rng, difficulty)
    ids = document_ids(rng, kinds_of_docs)
    buckets = spread(rng, said, len(ids))  # every document holds at least one rule
    documents = write_documents(rng, kinds_of_docs, ids, buckets, WRITERS, TITLES, features)
    projects, staff = public["projects"], public["staff"]
    intro = [
        f"{company} must staff next quarter's portfolio of {len(projects)} projects with {len(staff)} people. Each "
        "project is done entirely by one person who has its skill, or left unstaffed. Choose who does what so that "
        "the total value of the staffed projects minus their labour cost (hourly cost x effort hours) is as high as "
        "the staffing rules allow.",
        "Projects, in list order: " + ", ".join(f"{p['id']} {p['name']}" for p in projects) + ".",
        "People: " + ", ".join(f"{s['id']} {s['name']}" for s in staff) + ".",
        "Skills, effort hours, values, hourly costs and weekly hours are in list_projects and list_staff. A "
        "person's hours and number of projects are limited only where a rule says so.",
    ]
    rest = " ".join(buckets[0])
    if ids:
        rest += (" " if rest else "") + "The other rules are in " + ", ".join(ids) + " (read them with read_document)."
    return "\n".join([*intro, rest]), documents, features
