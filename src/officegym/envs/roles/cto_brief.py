"""The CTO brief in prose: each requirement one sentence in one of many forms, values in several
styles (digits, words, other units), updates that supersede an earlier figure, hearsay that must be
ignored, figures that belong to nothing, and documents (e-mail, meeting notes, ticket) that hold
some of the requirements and are read through `read_document`.

Forms and value styles are data (`FORMS`, `STYLES`): a held-out task draws only held-out ones.
"""

from __future__ import annotations

import random
from typing import Any

from officegym.envs.roles.names import company_and_product
from officegym.envs.roles.prose import (
    HELDOUT,
    PEOPLE,
    TRAINED,
    Forms,
    document_ids,
    document_kinds,
    spread,
    trim,
    words,
    write_documents,
)

KINDS = ("budget", "compliance", "latency", "availability", "skill")
FORMS = {
    "budget": Forms("budget", (
        "The 12-month budget is {v}.",
        "We can spend at most {v} over the first year, migration included.",
        "Total cost of ownership for the first twelve months must not exceed {v}.",
        "Finance has capped the first-year spend at {v}.",
        "Keep the 12-month TCO at or below {v}.",
        "Budget: {v} for year one (monthly fees plus migration).",
        "Whatever we pick has to fit in {v} for the first year.",
        "The CFO signed off on up to {v} for the first twelve months.",
    ), (
        "Anything above {v} in year one is a non-starter for the money people.",
        "{v} is all the money there is for this over twelve months.",
        "Spend ceiling, first year, all-in: {v}.",
        "We were given {v} to cover a full year of fees and the move itself.",
    )),
    "compliance": Forms("compliance", (
        "Every component must be certified for {v}.",
        "Compliance requires {v} on all chosen options.",
        "Only pick options that carry {v}.",
        "Legal says {v} is mandatory for each service we use.",
        "All vendors need {v}.",
        "Non-negotiable: {v} across the whole stack.",
        "We cannot use anything without {v}.",
        "Certification needed everywhere: {v}.",
    ), (
        "Audit will fail us if a single piece of the stack lacks {v}.",
        "Each vendor has to show paperwork for {v}.",
        "The stack is only acceptable if it is {v} end to end.",
    )),
    "latency": Forms("latency", (
        "The critical-path p95 latencies must add up to at most {v}.",
        "End-to-end p95 latency on the critical path: {v} maximum.",
        "Keep the summed p95 latency of the critical path within {v}.",
        "Our latency SLO is {v} at p95 across the critical path.",
        "p95 latency over the critical-path components may not exceed {v}.",
        "Latency budget for the critical path (p95, summed): {v}.",
        "The product team wants critical-path p95 latency no higher than {v}.",
        "Users must see responses within {v} at p95 along the critical path.",
    ), (
        "Requests have to come back in {v} or less for 95 in 100 users, counting every hop on the request path.",
        "Nineteen out of twenty requests should finish within {v}, every hop included.",
        "Slowest-5% cutoff for a request through the stack: {v}.",
        "No more than {v} of waiting at the 95th percentile, summed over the hops a request takes.",
    )),
    "availability": Forms("availability", (
        "Combined availability of all chosen options must be at least {v}.",
        "The availability SLO for the whole stack is {v}.",
        "Multiply the availabilities together: the result may not drop below {v}.",
        "Overall uptime must stay at or above {v}.",
        "We promise customers {v} availability for the stack as a whole.",
        "Availability target (product over all components): {v}.",
        "The stack needs an end-to-end availability of {v} or better.",
        "Uptime across every chosen option, multiplied, has to reach {v}.",
    ), (
        "Our biggest customer's contract pays out penalties if the stack is up less than {v} of the time.",
        "{v} of the time, the whole chain must be reachable.",
        "Reliability bar: the system as a whole is reachable {v} of the time or more.",
    )),
    "skill": Forms("skill", (
        "The team's average skill fit over the chosen options must be at least {v}.",
        "Average skill fit across the picks: {v} minimum.",
        "We need an average skill-fit score of {v} or more.",
        "Hiring is frozen, so the mean skill fit of the stack must reach {v}.",
        "Keep the average team skill fit at or above {v}.",
        "Skill fit, averaged over components, must not fall below {v}.",
        "Staffing constraint: mean skill fit of at least {v}.",
        "The engineers must know the stack: average skill fit {v} or higher.",
    ), (
        "On average, the people who will run this should be at home with it: at least {v} on our familiarity scale.",
        "Our engineers' familiarity with the picks, averaged, cannot be lower than {v}.",
        "We will only go ahead if the crew knows the tools well enough: {v} average familiarity or better.",
    )),
    # a requirement whose figure changed: {old} is superseded by {new}
    "update": Forms("update", (
        "Update: the {noun} changed from {old} to {new}.",
        "Correction to my earlier note: {new}, not {old}, is the {noun}.",
        "Earlier we said {old}; the {noun} is now {new}.",
    ), (
        "We have moved off the {old} figure; the {noun} going forward is {new}.",
        "{new} replaces the {old} we had pencilled in for the {noun}.",
    )),
    # a figure for a requirement that nobody decided: it must be ignored
    "hearsay": Forms("hearsay", (
        "(Overheard at lunch: someone thinks the {noun} could be {v}. Nothing official.)",
        "A vendor rep claimed on a call that {v} would be fine for the {noun}; that is not our requirement.",
        "Rumour has it the {noun} might change to {v}, but nothing has been decided.",
        "Ignore the {noun} of {v} in the old draft; it was never approved.",
        "Someone in sales heard the {noun} was {v} (unconfirmed).",
    ), (
        "My cousin at the vendor reckons a {noun} of {v} is what everyone uses; take that with a pinch of salt.",
        "There was corridor chatter about {v} as the {noun}; disregard it.",
        "Per an unverified chat message, the {noun} is {v}.",
    )),
}
NOUNS = {"budget": "budget", "latency": "latency target", "availability": "availability target",
         "skill": "skill-fit bar"}
NOISE = (  # figures that belong to no requirement
    "The team has {n} engineers on call.", "Our current monthly bill is ${m:,}.",
    "Today's median latency is {ms} ms, for reference only.", "The migration window is {n} weeks.",
    "Last quarter's worst incident took {ms} minutes to resolve.", "We serve {n},000 requests per second at peak.",
    "The previous platform cost us ${m:,} to set up in {year}.", "Vendor quotes are valid for {n} days.",
)
PREFERENCES = (
    "The team would rather avoid vendor lock-in where that is free, but it is not a requirement.",
    "Nice to have, not required: managed services over self-hosted ones.",
    "We would like to keep the number of vendors small, but price and the requirements come first.",
)
TAG_NAMES = {  # (trained renderings, held-out renderings)
    "eu_residency": (("EU data residency", "eu_residency", "data residency in the EU"),
                     ("keeping all data inside the European Union",)),
    "hipaa": (("HIPAA", "HIPAA compliance", "hipaa"), ("the US health-records privacy certification (HIPAA)",)),
    "soc2": (("SOC 2", "SOC2", "soc2"), ("a SOC-two audit report",)),
}
STYLES = {  # value renderings per kind: (trained, held out)
    "budget": (("dollars", "k", "usd", "words"), ("grand", "thousand")),
    "latency": (("ms", "milliseconds", "words"), ("seconds",)),
    "availability": (("fraction", "percent", "percent_word"), ("per_cent",)),
    "skill": (("fraction", "percent", "of_100"), ("hundredths",)),
}


def render_value(kind: str, value: Any, style: str) -> str:
    if kind == "budget":
        v = int(value)
        return {"dollars": f"${v:,}", "k": f"${v // 1000}k", "usd": f"{v:,} dollars", "words": f"{words(v)} dollars",
                "grand": f"{v // 1000} grand", "thousand": f"{v // 1000} thousand dollars"}[style]
    if kind == "latency":
        v = int(value)
        return {"ms": f"{v} ms", "milliseconds": f"{v} milliseconds", "words": f"{words(v)} milliseconds",
                "seconds": f"{trim(v / 1000)} seconds"}[style]
    if kind == "availability":
        pct = trim(round(value * 100, 4))
        return {"fraction": trim(value), "percent": f"{pct}%", "percent_word": f"{pct} percent",
                "per_cent": f"{pct} per cent"}[style]
    if kind == "skill":
        pct = round(value * 100)
        return {"fraction": trim(value), "percent": f"{pct}%", "of_100": f"{pct} out of 100",
                "hundredths": f"{words(pct)} hundredths"}[style]
    raise ValueError(kind)


def _tags(rng: random.Random, tags: list[str], subset: str) -> str:
    names = [rng.choice(TAG_NAMES[t][1 if subset == HELDOUT else 0]) for t in tags]
    return " and ".join(names)


def _style(rng: random.Random, kind: str, subset: str) -> str:
    trained, heldout = STYLES[kind]
    return rng.choice(heldout if subset == HELDOUT else trained)


def _other_value(rng: random.Random, kind: str, value: Any) -> Any:
    """A plausible different figure for the same requirement (hearsay, or the superseded one)."""
    if kind == "budget":
        return int(value) + 1000 * rng.choice([-1, 1]) * rng.randint(5, 40) if value > 50000 else int(value) + 1000 * rng.randint(5, 30)
    if kind == "latency":
        return int(value) + rng.choice([-1, 1]) * rng.randint(10, 40) if value > 60 else int(value) + rng.randint(10, 40)
    if kind == "availability":
        return rng.choice([0.99, 0.995, 0.999, 0.9999, 0.9995, 0.98])
    return round(max(0.3, min(0.95, value + rng.choice([-1, 1]) * rng.randint(5, 15) / 100)), 2)


def statements(rng: random.Random, req: dict[str, Any], kinds: list[str], subset: str, difficulty: int,
               features: list[str]) -> list[tuple[str, bool]]:
    """The sentences of the brief and documents, as (text, states a requirement); features drawn are
    appended to `features`."""
    values = {"budget": req["budget_tco_usd"], "latency": req.get("latency_slo_ms"),
              "availability": req.get("availability_slo"), "skill": req.get("min_avg_skill_fit")}
    out: list[tuple[str, bool]] = []
    update_share = min(0.5, 0.08 * difficulty)
    # A held-out brief mixes: one requirement besides the budget (which binds only when it is short)
    # is stated in held-out forms, each other one is with probability one half, so a reader must cope
    # with unseen sentences among familiar ones.
    forced = rng.choice([k for k in kinds if k != "budget"])
    pools = {k: subset if subset != HELDOUT or k == forced or rng.random() < 0.5 else TRAINED for k in kinds}
    for kind in kinds:
        subset_here = pools[kind]
        if kind == "compliance":
            feature, form = FORMS["compliance"].pick(rng, subset_here)
            features.append(feature)
            out.append((form.format(v=_tags(rng, req["required_compliance"], subset_here)), True))
            continue
        style = _style(rng, kind, subset_here)
        features.append(f"{kind}_style:{style}")
        text = render_value(kind, values[kind], style)
        if rng.random() < update_share:
            old = _other_value(rng, kind, values[kind])
            feature, form = FORMS["update"].pick(rng, subset_here)
            sentence = form.format(noun=NOUNS[kind], old=render_value(kind, old, style), new=text)
        else:
            feature, form = FORMS[kind].pick(rng, subset_here)
            sentence = form.format(v=text)
        features.append(feature)
        out.append((sentence[:1].upper() + sentence[1:], True))
    numeric = [k for k in kinds if k != "compliance"]
    for _ in range(0 if difficulty < 2 else 1 if difficulty < 6 else 2):
        kind = rng.choice(numeric)
        pool = subset if rng.random() < 0.5 else TRAINED
        feature, form = FORMS["hearsay"].pick(rng, pool)
        features.append(feature)
        fake = render_value(kind, _other_value(rng, kind, values[kind]), _style(rng, kind, pool))
        out.append((form.format(noun=NOUNS[kind], v=fake), False))
    for form in rng.sample(NOISE, 1 + difficulty // 3):
        out.append((form.format(n=rng.randint(3, 40), m=rng.randint(20, 400) * 100, ms=rng.randint(20, 300),
                                year=rng.randint(2015, 2023)), False))
    if rng.random() < 0.5:
        out.append((rng.choice(PREFERENCES), False))
    rng.shuffle(out)
    return out


TITLES = {"email": ("Re: platform requirements", "Numbers for the re-platforming", "Constraints from finance and ops"),
          "notes": ("Architecture review", "Re-platforming sync", "Steering committee"),
          "ticket": ("Platform constraints", "Re-platform: non-functional requirements", "NFRs for the new stack")}


def compose(rng: random.Random, public: dict[str, Any], kinds: list[str], difficulty: int,
            subset: str) -> tuple[str, dict[str, str], list[str]]:
    """(brief, documents by id, features): the requirements stated over the brief and the documents."""
    features: list[str] = []
    said = statements(rng, public["requirements"], kinds, subset, difficulty, features)
    company, product = company_and_product(rng)
    comps = [c["component"] for c in public["components"]]
    kinds_of_docs = document_kinds(rng, difficulty)
    ids = document_ids(rng, kinds_of_docs)
    buckets = spread(rng, said, len(ids))  # every document holds at least one requirement
    documents = write_documents(rng, kinds_of_docs, ids, buckets, PEOPLE, TITLES, features)
    intro = (f"{company} is re-platforming its {product}. Choose one option for each of these {len(comps)} "
             f"components: {', '.join(comps)}, at the lowest 12-month cost that meets every requirement.")
    parts = [intro, *buckets[0]]
    if ids:
        parts.append("The other requirements are in " + ", ".join(ids) + " (read them with read_document).")
    return " ".join(parts), documents, features
