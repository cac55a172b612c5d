"""The Cost brief in prose: each requirement or contract term one sentence in one of many forms,
values in several styles (digits, words, other units: seconds, hourly or yearly money, prices per
thousand or per million tokens, per vCPU-hour or per vCPU-month), updates that supersede an earlier
figure, hearsay that must be ignored, figures that belong to nothing, and documents (e-mail, meeting
notes, ticket) that hold some of the statements and are read through `read_document`.

Forms and value styles are data (`FORMS`, `STYLES`): a held-out task draws only held-out ones for the
statements it writes in held-out wording.
"""

from __future__ import annotations

import random
from typing import Any

from officegym.envs.roles.cost_model import HOURS_PER_MONTH, Item
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

KINDS = ("floor", "latency", "mean", "spot", "pipeline", "discount", "commitment", "rate")
FORMS = {
    # {w}: a workload id; {v}: a quality score
    "floor": Forms("floor", (
        "{w} needs a benchmark quality of at least {v}.",
        "The quality floor for {w} is {v}.",
        "Whatever runs {w} must score {v} or more on quality.",
        "Minimum quality for {w}: {v}.",
        "Do not let the quality of {w} drop below {v}.",
        "Product insists on a quality score of no less than {v} for {w}.",
        "Quality for {w} has to reach {v} on the benchmark.",
        "Set the quality floor of {w} at {v}.",
    ), (
        "For {w}, anything rated under {v} on the benchmark gets sent back by the product owner.",
        "Customers of {w} notice as soon as its benchmark result falls beneath {v}.",
        "We will not accept an option for {w} that benchmarks worse than {v}.",
        "Only options that benchmark at {v} or better are good enough to carry {w}.",
    )),
    # {w}: a workload id; {v}: a latency
    "latency": Forms("latency", (
        "{w} must answer within {v}.",
        "The latency limit for {w} is {v}.",
        "Latency of {w}: at most {v}.",
        "Keep the benchmark latency of {w} at or under {v}.",
        "{w} cannot take longer than {v} per request.",
        "Latency for {w} may not exceed {v}.",
        "SRE has set a latency ceiling of {v} on {w}.",
        "Anything slower than {v} is unacceptable for {w}.",
    ), (
        "Callers of {w} give up if they wait more than {v} for it.",
        "Each request to {w} has to come back to the caller in {v} or less.",
        "The longest {w} may keep a caller waiting is {v}.",
    )),
    # {v}: a quality score
    "mean": Forms("mean", (
        "The mean quality over all workloads must be at least {v}.",
        "Average benchmark quality across the plan: {v} minimum.",
        "Across every workload, quality has to average {v} or more.",
        "Keep the average quality of the plan at or above {v}.",
        "Quality, averaged over the workloads, may not fall below {v}.",
        "The board wants a mean quality score of no less than {v}.",
        "Our average quality bar for the whole plan is {v}.",
        "Mean quality of the chosen options: at least {v}.",
    ), (
        "Add up every workload's benchmark result and divide by how many there are: that must come to {v} or more.",
        "Taken together, the portfolio has to benchmark at {v} or better per workload, even if single ones dip lower.",
        "One workload may benchmark low if others make up for it, as long as the typical result per workload stays at {v} or more.",
    )),
    # {v}: a number of workloads, noun included
    "spot": Forms("spot", (
        "At most {v} may run on spot pricing.",
        "No more than {v} on spot instances.",
        "Spot capacity is capped at {v}.",
        "Finance allows spot pricing for up to {v}.",
        "Limit spot usage to {v} at most.",
        "The spot cap is {v}.",
        "Keep the number of workloads on spot at or below {v}.",
        "Only {v} may use spot capacity.",
    ), (
        "Interruptible capacity is fine for {v} and no more.",
        "We can live with preemptions on {v}; beyond that, no.",
        "Instances that the provider may reclaim at short notice: {v} at the very most.",
    )),
    # {v}: a latency
    "pipeline": Forms("pipeline", (
        "The latencies of the LLM steps must add up to at most {v}.",
        "End-to-end latency of the LLM pipeline: {v} maximum.",
        "The LLM pipeline has a latency budget of {v}.",
        "Summed over the LLM steps, latency may not exceed {v}.",
        "Keep the total latency of the LLM steps within {v}.",
        "The chained LLM calls must finish within {v} in total.",
        "Our LLM pipeline latency budget is {v}.",
        "All LLM steps together may take no more than {v}.",
    ), (
        "From the first model call to the last, a request through the AI chain gets {v} and not a moment longer.",
        "The language-model stages, run one after another, have {v} between them.",
        "A customer waits for every generative step in turn, and the combined wait may not pass {v}.",
    )),
    # {p}: a provider; {t}: a monthly spend threshold; {r}: a discount rate
    "discount": Forms("discount", (
        "{p} gives us a volume discount of {r} on spend above {t}.",
        "Under the {p} contract, spend over {t} is discounted by {r}.",
        "Volume discount from {p}: {r} on whatever we spend beyond {t}.",
        "Once our spend with {p} passes {t}, {p} discounts the excess by {r}.",
        "{p} discounts the part of our bill above {t} by {r}.",
        "Procurement confirmed the volume tier of {p}: a {r} discount above {t}.",
        "With {p}, everything we spend past {t} gets a {r} discount.",
        "The {p} discount is {r} of spend beyond {t}.",
    ), (
        "{p} hands back {r} of every dollar we pay them past the first {t}.",
        "Beyond the first {t} with {p}, they refund {r} of what we pay.",
        "{p} rebates {r} on whatever we pay them above {t}.",
    )),
    # {p}: a provider; {v}: a monthly amount
    "commitment": Forms("commitment", (
        "We committed to {v} of reserved spend with {p}.",
        "{p} requires a reserved commitment of {v}.",
        "If we run anything on {p} reserved pricing, the minimum reserved charge is {v}.",
        "The {p} savings plan commits us to {v} of reserved usage.",
        "Reserved minimum at {p}: {v}.",
        "Using reserved instances at {p} means paying for at least {v} of reservations.",
        "Reserved spend with {p} is billed at no less than {v}.",
        "Our reserved-instance commitment with {p} is {v}.",
    ), (
        "If we book any of the term-priced capacity of {p}, we owe them {v} whether we use it or not.",
        "Taking even one term-priced instance from {p} brings a floor of {v} on that part of the bill.",
        "Signing up for one-year capacity at {p} means paying them {v} for it at the least.",
    )),
    # {s}: an option id; {v}: a unit price with its unit
    "rate": Forms("rate", (
        "We negotiated {v} for {s}.",
        "Our contract price for {s} is {v}.",
        "{s} is billed to us at {v}, not the list price.",
        "Procurement secured a rate of {v} on {s}.",
        "For {s} we pay the negotiated rate of {v}.",
        "The list price of {s} does not apply to us: we pay {v}.",
        "Contract rate for {s}: {v}.",
        "Our agreed price on {s} comes to {v}.",
    ), (
        "Thanks to the enterprise agreement, {s} costs us just {v}.",
        "Sales at the provider cut {s} down to {v} for our account.",
        "{s} runs on special terms for our account: {v}.",
    )),
    # a figure that changed: {old} is superseded by {new}
    "update": Forms("update", (
        "Update: {noun} changed from {old} to {new}.",
        "Correction to my earlier note: {new}, not {old}, is {noun}.",
        "Earlier we said {old}; {noun} is now {new}.",
    ), (
        "We have moved off the {old} figure; going forward, {noun} is {new}.",
        "{new} replaces the {old} we had pencilled in for {noun}.",
    )),
    # a figure nobody decided: it must be ignored
    "hearsay": Forms("hearsay", (
        "(Overheard at lunch: someone thinks {noun} could be {v}. Nothing official.)",
        "A vendor rep claimed on a call that {v} would be fine for {noun}; that is not our requirement.",
        "Rumour has it {noun} might change to {v}, but nothing has been decided.",
        "Ignore the {v} for {noun} in the old draft; it was never approved.",
        "Someone in sales heard {noun} was {v} (unconfirmed).",
    ), (
        "My cousin at one of the providers reckons {noun} should be {v}; take that with a pinch of salt.",
        "There was corridor chatter about {v} for {noun}; disregard it.",
        "Per an unverified chat message, {noun} is {v}.",
    )),
}
NOUNS = {"floor": "the quality floor of {w}", "latency": "the latency limit of {w}",
         "mean": "the mean-quality floor", "spot": "the spot cap", "pipeline": "the LLM latency budget",
         "commitment": "the reserved commitment with {p}", "discount": "the discount rate of {p}",
         "rate": "the price of {s}"}
UPDATABLE = ("floor", "latency", "mean", "spot", "pipeline", "commitment")
NOISE = (  # figures that belong to no requirement
    "Last month's total cloud bill came to ${m:,}.", "{w} handled {n},000 requests a day last week.",
    "The FinOps team has {n} people.", "{p} raised its list prices by {n}% last year.",
    "Our previous agreement with {p} expired in {year}.", "Peak traffic reached {n},000 requests per second.",
    "The quarterly review is booked for {n} minutes.", "We run {n} Kubernetes clusters today.",
)
PREFERENCES = (
    "We would rather keep the number of providers small, but cost and the requirements come first.",
    "Nice to have, not required: {w} on the provider it runs on today.",
    "If two plans cost the same, the team prefers the one with fewer spot workloads.",
)
STYLES = {  # value renderings per kind of value: (trained, held out)
    "quality": (("digits", "of_100", "words"), ("unit_fraction",)),
    "latency": (("ms", "milliseconds", "words"), ("seconds",)),
    "count": (("digits", "words"), ("of_total",)),
    "threshold": (("dollars", "k", "usd", "words"), ("yearly", "grand")),
    "discount_rate": (("percent", "percent_word", "words"), ("cents", "per_cent")),
    "commitment": (("monthly", "monthly_usd", "monthly_words", "hourly", "hourly_per"), ("yearly", "cents_hourly")),
    "llm_price": (("per_million", "per_1m", "per_thousand"), ("per_billion", "cents_thousand")),
    "compute_price": (("hourly", "monthly"), ("yearly", "cents_hour")),
}
VALUE_KIND = {"floor": "quality", "mean": "quality", "latency": "latency", "pipeline": "latency", "spot": "count",
              "commitment": "commitment"}


def _dollars(x: float) -> str:
    return f"{x:,.2f}" if x != int(x) else f"{int(x):,}"


def render_value(kind: str, value: Any, style: str, total: int = 0) -> str:
    """One value in one style; `total` is the number of workloads (a count "of the N workloads")."""
    if kind == "quality":
        v = value
        return {"digits": f"{v}", "of_100": f"{v}/100", "words": words(int(v)),
                "unit_fraction": f"{trim(v / 100)} on a 0-1 scale"}[style]
    if kind == "latency":
        v = int(value)
        return {"ms": f"{v} ms", "milliseconds": f"{v} milliseconds", "words": f"{words(v)} milliseconds",
                "seconds": f"{trim(v / 1000)} seconds"}[style]
    if kind == "count":
        noun = "workload" if value == 1 else "workloads"
        return {"digits": f"{value} {noun}", "words": f"{words(value)} {noun}",
                "of_total": f"{value} of the {total} workloads"}[style]
    if kind == "threshold":
        v = int(value)
        return {"dollars": f"${v:,} a month", "k": f"${trim(v / 1000)}k per month", "usd": f"{v:,} dollars a month",
                "words": f"{words(v)} dollars a month", "yearly": f"${12 * v:,} a year",
                "grand": f"{trim(v / 1000)} grand a month"}[style]
    if kind == "discount_rate":
        pct = round(value * 100)
        return {"percent": f"{pct}%", "percent_word": f"{pct} percent", "words": f"{words(pct)} percent",
                "cents": f"{pct} cents on the dollar", "per_cent": f"{pct} per cent"}[style]
    if kind == "commitment":
        v, hourly = int(value), value / HOURS_PER_MONTH
        return {"monthly": f"${v:,} a month", "monthly_usd": f"{v:,} dollars per month",
                "monthly_words": f"{words(v)} dollars a month", "hourly": f"${hourly:.2f} an hour",
                "hourly_per": f"${hourly:.2f} per hour", "yearly": f"${12 * v:,} a year",
                "cents_hourly": f"{round(hourly * 100)} cents an hour"}[style]
    if kind == "llm_price":  # value: dollars per million tokens
        return {"per_million": f"${trim(value)} per million tokens", "per_1m": f"${trim(value)} per 1M tokens",
                "per_thousand": f"${trim(value / 1000)} per thousand tokens",
                "per_billion": f"${_dollars(round(value * 1000, 2))} per billion tokens",
                "cents_thousand": f"{trim(value / 10)} cents per thousand tokens"}[style]
    if kind == "compute_price":  # value: dollars per vCPU-hour
        return {"hourly": f"${trim(value)} per vCPU-hour", "monthly": f"${trim(value * HOURS_PER_MONTH)} per vCPU-month",
                "yearly": f"${trim(value * HOURS_PER_MONTH * 12)} per vCPU-year",
                "cents_hour": f"{trim(value * 100)} cents per vCPU-hour"}[style]
    raise ValueError(kind)


def _style(rng: random.Random, kind: str, subset: str) -> str:
    trained, heldout = STYLES[kind]
    return rng.choice(heldout if subset == HELDOUT else trained)


def _other_value(rng: random.Random, kind: str, value: Any) -> Any:
    """A plausible different figure of the same kind (hearsay, or the superseded one)."""
    if kind == "quality":
        return max(40, min(99, value + rng.choice([-1, 1]) * rng.randint(3, 10))) if value < 99 else value - 5
    if kind == "latency":
        return value + rng.choice([-1, 1]) * 10 * rng.randint(1, 8) if value > 100 else value + rng.randint(5, 30)
    if kind == "count":
        return value + rng.randint(1, 2) if value < 2 or rng.random() < 0.5 else value - 1
    if kind == "commitment":
        return value + HOURS_PER_MONTH // 2 * rng.randint(1, 4)
    if kind == "discount_rate":
        return rng.choice([r for r in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35) if abs(r - value) > 1e-9])
    digits = 2 if kind == "llm_price" else 4
    return round(value * rng.uniform(1.1, 1.6), digits)


class Stater:
    """Writes the sentences of one brief; `features` collects the forms and styles drawn."""

    def __init__(self, rng: random.Random, public: dict[str, Any], subset: str, difficulty: int):
        self.rng, self.public, self.subset, self.difficulty = rng, public, subset, difficulty
        self.total = len(public["workloads"])
        self.features: list[str] = []
        self.names = {w["id"] for w in public["workloads"]} | set(public["skus"]) | \
            {s["provider"] for s in public["skus"].values()}

    def value_of(self, item: Item) -> tuple[str, Any]:
        """(kind of value, value) of a stated item (a discount: its rate)."""
        kind, key = item
        public = self.public
        if kind in ("floor", "latency"):
            w = next(x for x in public["workloads"] if x["id"] == key)
            return VALUE_KIND[kind], w["quality_floor" if kind == "floor" else "latency_limit_ms"]
        if kind in ("mean", "spot", "pipeline"):
            name = {"mean": "min_mean_quality", "spot": "max_spot_workloads", "pipeline": "llm_pipeline_latency_ms"}
            return VALUE_KIND[kind], public["policy"][name[kind]]
        if kind == "commitment":
            return "commitment", public["terms"][key]["reserved_commitment_usd"]
        if kind == "discount":
            return "discount_rate", public["terms"][key]["discount_rate"]
        return f"{public['skus'][key]['kind']}_price", public["negotiated"][key]

    def render(self, value_kind: str, value: Any, pool: str, style: str | None = None) -> str:
        style = style or _style(self.rng, value_kind, pool)
        return render_value(value_kind, value, style, self.total)

    def ids(self, item: Item) -> dict[str, str]:
        kind, key = item
        return {"w": key} if kind in ("floor", "latency") else {"p": key} if kind in ("discount", "commitment") \
            else {"s": key} if kind == "rate" else {}

    def requirement(self, item: Item, pool: str) -> str:
        rng, kind = self.rng, item[0]
        value_kind, value = self.value_of(item)
        style = _style(rng, value_kind, pool)
        self.features.append(f"{value_kind}_style:{style}")
        text = self.render(value_kind, value, pool, style)
        ids = self.ids(item)
        if kind in UPDATABLE and rng.random() < min(0.5, 0.06 * self.difficulty):
            old = self.render(value_kind, _other_value(rng, value_kind, value), pool, style)
            feature, form = FORMS["update"].pick(rng, pool)
            sentence = form.format(noun=NOUNS[kind].format(**ids), old=old, new=text)
        elif kind == "discount":
            feature, form = FORMS[kind].pick(rng, pool)
            t_style = _style(rng, "threshold", pool)
            self.features.append(f"threshold_style:{t_style}")
            threshold = render_value("threshold", self.public["terms"][item[1]]["discount_threshold_usd"], t_style)
            sentence = form.format(r=text, t=threshold, **ids)
        else:
            feature, form = FORMS[kind].pick(rng, pool)
            sentence = form.format(v=text, **ids)
        self.features.append(feature)
        return _capital(sentence, self.names)

    def hearsay(self, item: Item, pool: str) -> str:
        value_kind, value = self.value_of(item)
        feature, form = FORMS["hearsay"].pick(self.rng, pool)
        self.features.append(feature)
        fake = self.render(value_kind, _other_value(self.rng, value_kind, value), pool)
        return _capital(form.format(noun=NOUNS[item[0]].format(**self.ids(item)), v=fake), self.names)


def _capital(sentence: str, ids: set[str]) -> str:
    """Capitalised unless it opens with an id (ids keep their case: the tools take them as written)."""
    first = sentence.split(" ", 1)[0].rstrip(".:,;")
    return sentence if first in ids else sentence[:1].upper() + sentence[1:]


def statements(rng: random.Random, public: dict[str, Any], items: list[Item], subset: str, difficulty: int,
               features: list[str]) -> list[tuple[str, bool]]:
    """The sentences of the brief and documents, as (text, states a requirement or term)."""
    stater = Stater(rng, public, subset, difficulty)
    # A held-out brief mixes: one statement is in held-out wording, each other one with probability
    # one half, so that a reader must cope with unseen sentences among familiar ones.
    forced = rng.randrange(len(items))
    out = []
    for j, item in enumerate(items):
        pool = subset if subset != HELDOUT or j == forced or rng.random() < 0.5 else TRAINED
        out.append((stater.requirement(item, pool), True))
    for _ in range(0 if difficulty < 2 else 1 if difficulty < 6 else 2):
        pool = subset if rng.random() < 0.5 else TRAINED
        out.append((stater.hearsay(rng.choice(items), pool), False))
    ids = [w["id"] for w in public["workloads"]]
    providers = sorted({s["provider"] for s in public["skus"].values()} - {"self-hosted"}) or ["nimbus"]
    for form in rng.sample(NOISE, 1 + difficulty // 3):
        text = form.format(n=rng.randint(3, 40), m=rng.randint(40, 900) * 100, year=rng.randint(2018, 2024),
                           w=rng.choice(ids), p=rng.choice(providers))
        out.append((_capital(text, stater.names), False))
    if rng.random() < 0.5:
        out.append((rng.choice(PREFERENCES).format(w=rng.choice(ids)), False))
    rng.shuffle(out)
    features += stater.features
    return out


TITLES = {"email": ("Re: cloud and AI spend", "Contract terms and limits", "Numbers for the cost review"),
          "notes": ("FinOps review", "Cost steering meeting", "Platform and AI budget sync"),
          "ticket": ("Spend constraints", "FinOps: limits for the new plan", "Cost plan requirements")}


def compose(rng: random.Random, public: dict[str, Any], items: list[Item], difficulty: int,
            subset: str) -> tuple[str, dict[str, str], list[str]]:
    """(brief, documents by id, features): the statements spread over the brief and the documents."""
    features: list[str] = []
    said = statements(rng, public, items, subset, difficulty, features)
    company, _ = company_and_product(rng)
    ids_w = [w["id"] for w in public["workloads"]]
    kinds_of_docs = document_kinds(rng, difficulty)
    ids = document_ids(rng, kinds_of_docs)
    buckets = spread(rng, said, len(ids))  # every document holds at least one statement
    documents = write_documents(rng, kinds_of_docs, ids, buckets, PEOPLE, TITLES, features)
    intro = (f"{company}'s cloud and AI bill is under review. Choose one option for each of these {len(ids_w)} "
             f"workloads: {', '.join(ids_w)}, at the lowest monthly bill that meets every requirement.")
    parts = [intro, *buckets[0]]
    if ids:
        parts.append("The other requirements and contract terms are in " + ", ".join(ids)
                     + " (read them with read_document).")
    return " ".join(parts), documents, features
