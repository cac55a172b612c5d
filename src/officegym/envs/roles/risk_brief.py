"""The Risk dossier in prose: each item one sentence in one of many forms per area (its facts as the
phrases of risk_phrases.py), advisories against packages, updates that supersede an earlier fact,
hearsay that must be ignored, figures that belong to nothing, spread over the brief and documents
(e-mail, meeting notes, ticket) read through `read_document`; a document that cannot be read makes
the dossier impossible to assess.

Forms and phrase styles are data: a held-out task writes every item in a held-out form with at least
one fact in a held-out phrase, among trained phrases, updates, hearsay and noise.
"""

from __future__ import annotations

import random
from typing import Any

from officegym.envs.roles.names import COMPANIES
from officegym.envs.roles.prose import (
    HELDOUT,
    PEOPLE,
    TRAINED,
    Forms,
    document_ids,
    document_kinds,
    spread,
    write_documents,
)
from officegym.envs.roles.risk_model import ARTIFACTS, FIELDS, REGIONS
from officegym.envs.roles.risk_phrases import MONEY, PHRASES, Say

FORMS = {  # per area: (trained frames, held-out frames); slots are the area's facts and {item}
    "architecture": Forms("architecture", (
        "{item}, in the {tier}, runs on {replicas} with {failover} and had {incidents_90d}.",
        "Architecture review: {item} ({tier}) has {replicas}, {failover} and {incidents_90d}.",
        "{item} is deployed as {replicas} with {failover}; it sits in the {tier} and recorded {incidents_90d}.",
        "For {item} ({tier}) we run {replicas} with {failover}, and it logged {incidents_90d}.",
        "{item}: {replicas}, {failover}, {tier}, {incidents_90d}.",
        "The component {item} ({tier}) has {replicas} and {failover}, with {incidents_90d}.",
        "We counted {incidents_90d} on {item}, which runs {replicas} with {failover} in the {tier}.",
    ), (
        "Behind {item} there are {replicas} and {failover}; it is rated {tier} and caused {incidents_90d}.",
        "Look at {item}, classed {tier}: {replicas}, {failover}, and {incidents_90d} to its name.",
        "{item} keeps {replicas} alive, has {failover}, counts as {tier} and was behind {incidents_90d}.",
    )),
    "certificates": Forms("certificates", (
        "The certificate for {item} ({tier}) has {days_to_expiry} and {auto_renew}.",
        "Certificates: {item}, {tier}, {days_to_expiry}, {auto_renew}.",
        "{item} ({tier}) shows {days_to_expiry} on its certificate, with {auto_renew}.",
        "TLS certificate of {item}: {days_to_expiry}, {auto_renew}, {tier}.",
        "We checked the certificate on {item}: {days_to_expiry}, {auto_renew}; it is in the {tier}.",
        "{item}'s certificate has {auto_renew} and {days_to_expiry} ({tier}).",
        "Certificate status for {item} in the {tier}: {days_to_expiry}, {auto_renew}.",
    ), (
        "The TLS cert behind {item} (rated {tier}) has {days_to_expiry} and {auto_renew}.",
        "{item}, counted as {tier}, serves a cert with {days_to_expiry} and {auto_renew}.",
        "As for the cert on {item}: {days_to_expiry}, {auto_renew}, classed {tier}.",
    )),
    "dependencies": Forms("dependencies", (
        "{item} ({version}, {license}) is {scope} and {internet_facing}.",
        "Dependencies: {item} {version} under {license}; it is {scope} and {internet_facing}.",
        "We use {item} at {version} with {license}; the package is {scope} and {internet_facing}.",
        "{item}, {version}, {license}: {scope}, {internet_facing}.",
        "The package {item} ({license}) is pinned to {version}, is {scope} and {internet_facing}.",
        "{item} is {scope} and {internet_facing}; we pin {version} under {license}.",
        "Package {item}: {version}, {license}, {scope}, {internet_facing}.",
    ), (
        "Our build pulls in {item} as {version}, licensed under {license}; it is {scope} and {internet_facing}.",
        "{item} ({version}) comes under {license}, and it is {scope} and {internet_facing}.",
        "Among the third-party code, {item} at {version} carries {license}, is {scope} and is {internet_facing}.",
    )),
    "advisory": Forms("advisory", (
        "{cve} ({cvss}) affects {item} {fixed_in}.",
        "Security advisory {cve}: {item} {fixed_in}, {cvss}.",
        "{cve} hits {item} {fixed_in}; it carries {cvss}.",
        "The scanner reports {cve} against {item} {fixed_in} ({cvss}).",
        "{item} {fixed_in} is affected by {cve}, {cvss}.",
        "Advisory {cve} ({cvss}) covers {item} {fixed_in}.",
        "{cve}, {cvss}, applies to {item} {fixed_in}.",
    ), (
        "{item} {fixed_in} carries the flaw {cve}, with {cvss}.",
        "A flaw tracked as {cve} and given {cvss} sits in {item} {fixed_in}.",
        "Watch out for {cve} in {item} {fixed_in}; it was given {cvss}.",
    )),
    "staffing": Forms("staffing", (
        "{item} has {maintainers} and {trained_backup}; {attrition_risk}, {criticality}.",
        "Staffing: {item} - {maintainers}, {trained_backup}, {attrition_risk}, {criticality}.",
        "The {item} system ({criticality}) is looked after by {maintainers} with {trained_backup} and {attrition_risk}.",
        "{item}: {maintainers}, {trained_backup}; {criticality} and {attrition_risk}.",
        "For {item} there are {maintainers} and {trained_backup}, with {attrition_risk} and {criticality}.",
        "{item} ({criticality}, {attrition_risk}) runs on {maintainers} with {trained_backup}.",
        "Team check on {item}: {maintainers}, {trained_backup}, {criticality}, {attrition_risk}.",
    ), (
        "{item} depends on {maintainers}, with {trained_backup}; there is {attrition_risk}, and it holds {criticality}.",
        "Knowledge of {item} rests with {maintainers} and {trained_backup}; {attrition_risk}, and {criticality}.",
        "In the people review, {item} came up with {maintainers}, {trained_backup}, {attrition_risk} and {criticality}.",
    )),
    "backups": Forms("backups", (
        "{item} holds {data_class} and takes {backup_interval_hours} against {rpo_hours}, with {continuous_replication}.",
        "Backups: {item} - {backup_interval_hours}, {rpo_hours}, {continuous_replication}, {data_class}.",
        "The {item} store ({data_class}) has {rpo_hours} and {backup_interval_hours}, with {continuous_replication}.",
        "For {item} we run {backup_interval_hours} with {continuous_replication}; it has {rpo_hours} and holds {data_class}.",
        "{item}: {data_class}, {rpo_hours}, {backup_interval_hours}, {continuous_replication}.",
        "Backup schedule of {item}: {backup_interval_hours}, {rpo_hours}, {continuous_replication} ({data_class}).",
        "{item} ({data_class}) is set to {backup_interval_hours}, has {rpo_hours} and {continuous_replication}.",
    ), (
        "{item} keeps {data_class}; it gets {backup_interval_hours}, allows {rpo_hours}, and has {continuous_replication}.",
        "Data protection for {item}: {backup_interval_hours}, {rpo_hours}, {continuous_replication}; it stores {data_class}.",
        "Our recovery setup gives {item} ({data_class}) {backup_interval_hours}, with {rpo_hours} and {continuous_replication}.",
    )),
    "data_stores": Forms("data_stores", (
        "{item} stores {records_millions} with {contains_pii} in {region}, under {allowed_regions}.",
        "Data stores: {item} - {records_millions}, {contains_pii}, {region}, {allowed_regions}.",
        "{item} lives in {region} and holds {records_millions} with {contains_pii}; {allowed_regions}.",
        "The {item} store ({records_millions}, {contains_pii}) is hosted in {region}, with {allowed_regions}.",
        "{item}: {region}, {allowed_regions}, {records_millions}, {contains_pii}.",
        "In {region} we keep {item}: {records_millions} with {contains_pii}, {allowed_regions}.",
        "{item} has {records_millions} and {contains_pii}; it runs in {region} with {allowed_regions}.",
    ), (
        "{item} sits in {region} with {records_millions} holding {contains_pii}, and the contract sets {allowed_regions}.",
        "Hosting for {item}: {region}; contents: {records_millions}, {contains_pii}; rule: {allowed_regions}.",
        "Physically, {item} and its {records_millions} ({contains_pii}) are in {region}, and legal requires {allowed_regions}.",
    )),
    "capacity_forecast": Forms("capacity_forecast", (
        "{item} ({tier}) sees {current_peak_rps} with {monthly_growth_pct} over {horizon_months}, against "
        "{capacity_rps} and {autoscaling_max_rps}.",
        "Capacity forecast for {item}: {current_peak_rps}, {monthly_growth_pct}, {horizon_months}, {capacity_rps}, "
        "{autoscaling_max_rps}; {tier}.",
        "{item} in the {tier} has {capacity_rps} and {autoscaling_max_rps}; it shows {current_peak_rps} and "
        "{monthly_growth_pct} on {horizon_months}.",
        "For {item} ({tier}) we plan on {horizon_months}: {current_peak_rps}, {monthly_growth_pct}, {capacity_rps}, "
        "{autoscaling_max_rps}.",
        "{item}: {tier}, {capacity_rps}, {autoscaling_max_rps}, {current_peak_rps}, {monthly_growth_pct}, {horizon_months}.",
        "The {item} service ({tier}) has {capacity_rps} with {autoscaling_max_rps} and sees {current_peak_rps}, "
        "{monthly_growth_pct} over {horizon_months}.",
        "Load planning, {item}: {current_peak_rps} and {monthly_growth_pct} across {horizon_months}, {capacity_rps}, "
        "{autoscaling_max_rps} ({tier}).",
    ), (
        "Traffic to {item} ({tier}) stands at {current_peak_rps} with {monthly_growth_pct}; over {horizon_months} it "
        "has {capacity_rps} and {autoscaling_max_rps}.",
        "{item}, counted as {tier}, has {capacity_rps} and {autoscaling_max_rps}, while demand is {current_peak_rps} "
        "with {monthly_growth_pct} for {horizon_months}.",
        "Over {horizon_months}, {item} (rated {tier}) goes from {current_peak_rps} with {monthly_growth_pct}, and has "
        "{capacity_rps} and {autoscaling_max_rps}.",
    )),
    "budget": Forms("budget", (
        "{item} has {budget_cap_usd}, {spent_usd}, {monthly_burn_usd} and {months_remaining}, with {approved_increase_usd}.",
        "Budget: {item} - {budget_cap_usd}; {spent_usd}; {monthly_burn_usd}; {months_remaining}; {approved_increase_usd}.",
        "The {item} workstream runs on {budget_cap_usd} with {approved_increase_usd}; {spent_usd} so far, "
        "{monthly_burn_usd}, {months_remaining}.",
        "Finance on {item}: {spent_usd} against {budget_cap_usd}, {monthly_burn_usd}, {months_remaining}, "
        "{approved_increase_usd}.",
        "{item}: {budget_cap_usd}, {approved_increase_usd}, {spent_usd}, {monthly_burn_usd}, {months_remaining}.",
        "For {item} we have {months_remaining} at {monthly_burn_usd}, {spent_usd}, {budget_cap_usd} and "
        "{approved_increase_usd}.",
        "{item} reports {spent_usd} and {monthly_burn_usd} with {months_remaining}; it has {budget_cap_usd} and "
        "{approved_increase_usd}.",
    ), (
        "Money for {item}: {budget_cap_usd} in total, {spent_usd}, {monthly_burn_usd} for {months_remaining}, and "
        "{approved_increase_usd}.",
        "{item} was given {budget_cap_usd}; {spent_usd}, with {monthly_burn_usd} over {months_remaining}, and "
        "{approved_increase_usd}.",
        "The sponsors of {item} see {spent_usd} out of {budget_cap_usd}, {monthly_burn_usd} for {months_remaining}; "
        "{approved_increase_usd}.",
    )),
    "vendor_contracts": Forms("vendor_contracts", (
        "The contract with {item} runs {term_months} with {exit_clause}, at {annual_value_usd}.",
        "Vendor contracts: {item} - {term_months}, {exit_clause}, {annual_value_usd}.",
        "{item} is on {term_months} with {exit_clause}; {annual_value_usd}.",
        "Our deal with {item}: {annual_value_usd}, {term_months}, {exit_clause}.",
        "We signed {item} for {term_months} at {annual_value_usd}, with {exit_clause}.",
        "{item} ({annual_value_usd}) comes with {term_months} and {exit_clause}.",
        "Procurement lists {item} with {exit_clause}, {term_months} and {annual_value_usd}.",
    ), (
        "Signing with {item} tied us to {term_months} for {annual_value_usd}, and we have {exit_clause}.",
        "{item} bills {annual_value_usd} under an agreement of {term_months} with {exit_clause}.",
        "For {annual_value_usd}, {item} holds us for {term_months}, with {exit_clause}.",
    )),
    "incidents": Forms("incidents", (
        "{item} ({severity}, {root_cause} in {service}) had {occurrences_90d}, with {fix_status}.",
        "Incidents: {item} - {severity}, {root_cause} in {service}, {occurrences_90d}, {fix_status}.",
        "{item} was {severity}: {root_cause} in {service}, {occurrences_90d}, {fix_status}.",
        "Post-mortem {item} ({root_cause}, {service}): {severity}, {occurrences_90d}, {fix_status}.",
        "{item}: {root_cause} on {service}, {severity}, {occurrences_90d} and {fix_status}.",
        "The {root_cause} in {service} ({item}, {severity}) came back with {occurrences_90d}; {fix_status}.",
        "{item}, a {severity} {root_cause} in {service}, shows {occurrences_90d} with {fix_status}.",
    ), (
        "{item}, a {root_cause} hitting {service}, rated {severity}: {occurrences_90d}, {fix_status}.",
        "The {root_cause} behind {item} struck {service} at {severity}; {occurrences_90d}, and {fix_status}.",
        "Under {item} we logged a {root_cause} in {service}: {severity}, {occurrences_90d}, {fix_status}.",
    )),
    # a fact that changed: {old} is superseded by {new} (both phrases of the same fact)
    "update": Forms("update", (
        "Update: {item} now has {new} (the earlier note said {old}).",
        "Correction on {item}: {new}, not {old}.",
        "Since the review, {item} has changed from {old} to {new}.",
    ), (
        "{item} no longer has {old}; as of this week it has {new}.",
        "Scratch what we had for {item} ({old}): the current picture is {new}.",
    )),
    # a value nobody decided: it must be ignored
    "hearsay": Forms("hearsay", (
        "(Overheard at lunch: someone thinks {item} has {v}. Nothing official.)",
        "A vendor rep claimed that {item} has {v}; nobody here has confirmed it.",
        "Rumour has it {item} now has {v}, but that is unconfirmed.",
        "Ignore the old draft that gave {item} {v}; it was never approved.",
        "Someone in sales heard {item} has {v} (unconfirmed).",
    ), (
        "My cousin at the vendor reckons {item} has {v}; take that with a pinch of salt.",
        "There was corridor chatter that {item} has {v}; disregard it.",
        "Per an unverified chat message, {item} has {v}.",
    )),
    # what read_document answers for a document the agent may not read
    "restricted": Forms("restricted", (
        "{doc}: access restricted, pending approval from the data owner.",
        "{doc} is restricted; the data owner has not approved access yet.",
        "Access to {doc} is restricted until the data owner approves it.",
    ), (
        "{doc} is locked until the data owner signs off.",
        "You lack clearance for {doc}; its owner has to say yes first.",
    )),
}
AREA_FORMS = tuple(ARTIFACTS)
# facts an update or hearsay may be about, the mitigating one first (updates of risks and decoys pick it)
UPDATABLE = {"architecture": ("failover", "replicas", "incidents_90d"), "certificates": ("auto_renew", "days_to_expiry"),
             "dependencies": ("version",), "staffing": ("trained_backup", "maintainers"),
             "backups": ("continuous_replication", "backup_interval_hours"), "data_stores": ("contains_pii", "region"),
             "capacity_forecast": ("autoscaling_max_rps", "capacity_rps"),
             "budget": ("approved_increase_usd", "monthly_burn_usd"), "vendor_contracts": ("exit_clause", "term_months"),
             "incidents": ("fix_status", "occurrences_90d")}
NOISE = (  # figures that belong to no fact of the rule book
    "{item} was first deployed in {year}.", "The steering committee meets in {n} days.",
    "The {item} dashboard has {n} panels.", "Last quarter the team closed {n} tickets.",
    "The previous risk review took {n} minutes.", "We have {n} open pull requests on {item}.",
    "{item} was renamed {n} months ago.", "The project has {n} people across {k} teams.",
)
ASIDES = ("The committee prefers a short register, but every risk the rule book defines must be on it.",
          "Please stick to the mitigation codes of the rule book.", "Coffee is on the fourth floor this week.")
TITLES = {"email": ("Re: dossier for the steering committee", "Facts for the risk register", "Risk review inputs"),
          "notes": ("Risk review", "Steering committee prep", "Weekly ops sync"),
          "ticket": ("Risk register inputs", "Audit findings", "Ops facts for the register")}
PROJECTS = ("Atlas", "Beacon", "Cobalt", "Delta", "Ember", "Fjord", "Granite", "Harbor")


def _other(field: str, row: dict[str, Any], rng: random.Random) -> Any:
    """A plausible different value of a fact (what an update supersedes, or what hearsay claims)."""
    v = row[field]
    if isinstance(v, bool):
        return not v
    if field in ("replicas", "maintainers"):
        return rng.choice((2, 3)) if v == 1 else 1
    if field == "incidents_90d":
        return rng.choice([x for x in range(6) if x != v])
    if field == "days_to_expiry":
        return v + rng.randint(60, 200) if v <= 30 else rng.randint(2, 30)
    if field == "version":
        a, b, c = (int(x) for x in v.split("."))
        return f"{a}.{b}.{c - 1}" if c > 0 else f"{a}.{b + 1}.{c}"
    if field == "backup_interval_hours":
        return max(1, row["rpo_hours"] // 2) if v > row["rpo_hours"] else row["rpo_hours"] * rng.choice((2, 3))
    if field == "region":
        inside = [x for x in REGIONS if x in row["allowed_regions"]]
        return rng.choice([x for x in REGIONS if x not in inside] if v in inside else inside)
    if field == "autoscaling_max_rps":
        return None if v else row["capacity_rps"] * 2
    if field == "capacity_rps":
        return max(200, v + 100 * rng.randint(5, 20) * rng.choice((-1, 1)))
    if field == "approved_increase_usd":
        return 0 if v else row["budget_cap_usd"] // 5000 * 1000
    if field == "monthly_burn_usd":
        return max(1000, v + 1000 * rng.randint(2, 20) * rng.choice((-1, 1)))
    if field == "term_months":
        return rng.choice([x for x in (6, 12, 24, 36, 48) if x != v])
    if field == "fix_status":
        return "open" if v == "deployed" else "deployed"
    if field == "occurrences_90d":
        return 1 if v >= 2 else rng.choice((2, 3))
    raise ValueError(field)


class Writer:
    """Renders facts in one task's pool of forms and styles, recording every feature drawn."""

    def __init__(self, rng: random.Random, subset: str):
        self.rng, self.subset, self.features = rng, subset, []

    def form(self, kind: str, pool: str) -> str:
        feature, form = FORMS[kind].pick(self.rng, pool)
        self.features.append(feature)
        return form

    def styles(self, fields: list[str], pool: str) -> dict[str, str]:
        """A phrase style per fact; in a held-out pool each is held out with probability 1/2, at least one."""
        held = {f for f in fields if pool == HELDOUT and self.rng.random() < 0.5}
        if pool == HELDOUT and not held:
            held = {self.rng.choice(fields)}
        out = {}
        for f in fields:
            names = sorted(PHRASES[f][1 if f in held else 0])
            out[f] = self.rng.choice(names)
            self.features.append(f"{f}_style:{out[f]}")
        return out

    def say(self, pool: str) -> Say:
        trained, heldout = MONEY
        style = self.rng.choice(heldout if pool == HELDOUT and self.rng.random() < 0.5 else trained)
        self.features.append(f"money_style:{style}")
        return Say("words" if self.rng.random() < 0.3 else "digits", style)

    def phrase(self, field: str, value: Any, style: str, say: Say) -> str:
        trained, heldout = PHRASES[field]
        return (trained.get(style) or heldout[style])(value, say)

    def fill(self, kind: str, pool: str, values: dict[str, Any], plain: dict[str, str]) -> str:
        """One sentence of `kind` stating `values` (facts, rendered as phrases) and `plain` slots."""
        styles, say = self.styles(list(values), pool), self.say(pool)
        return self.form(kind, pool).format(**plain, **{f: self.phrase(f, v, styles[f], say) for f, v in values.items()})


def statements(w: Writer, public: dict[str, Any], kinds: dict[tuple[str, str], str], difficulty: int) -> list[tuple[str, bool]]:
    """The sentences of the dossier as (text, states a fact)."""
    rng, out = w.rng, []
    update_share = min(0.4, 0.05 * difficulty)
    rows = [(a, row) for a, rs in public["artifacts"].items() for row in rs]
    for area, row in rows:
        name = row[ARTIFACTS[area][1]]
        facts = {f: row[f] for f in FIELDS[area] if f != "advisories"}
        plain = {"item": name, **({k: row[k] for k in ("service", "root_cause")} if area == "incidents" else {})}
        if rng.random() < update_share:
            planted = kinds.get((area, name), "clean") != "clean"
            field = UPDATABLE[area][0] if planted and rng.random() < 0.7 else rng.choice(UPDATABLE[area])
            old = _other(field, row, rng)
            styles, say = w.styles([field], w.subset), w.say(w.subset)
            new_text, old_text = (w.phrase(field, v, styles[field], say) for v in (row[field], old))
            out.append((w.form("update", w.subset).format(item=name, old=old_text, new=new_text), True))
            facts[field] = old  # the item's own sentence states the superseded value
        out.append((w.fill(area, w.subset, facts, plain), True))
        for a in row.get("advisories", ()):
            out.append((w.fill("advisory", w.subset, {"fixed_in": a["fixed_in"], "cvss": a["cvss"]},
                               {"item": name, "cve": a["cve"]}), True))
    for _ in range(0 if difficulty < 2 else 1 if difficulty < 6 else 2):
        area, row = rng.choice(rows)
        field = rng.choice(UPDATABLE[area])
        pool = w.subset if rng.random() < 0.5 else TRAINED
        styles, say = w.styles([field], pool), w.say(pool)
        fake = w.phrase(field, _other(field, row, rng), styles[field], say)
        out.append((w.form("hearsay", pool).format(item=row[ARTIFACTS[area][1]], v=fake), False))
    for form in rng.sample(NOISE, 1 + difficulty // 3):
        item = rng.choice([row[ARTIFACTS[a][1]] for a, row in rows])
        out.append((form.format(item=item, n=rng.randint(3, 40), k=rng.randint(2, 6), year=rng.randint(2015, 2023)), False))
    if rng.random() < 0.5:
        out.append((rng.choice(ASIDES), False))
    rng.shuffle(out)
    return out


def compose(rng: random.Random, public: dict[str, Any], kinds: dict[tuple[str, str], str], difficulty: int,
            subset: str, restricted: bool) -> tuple[str, dict[str, str], list[str], str | None]:
    """(brief, documents by id, features, the restricted document's id or None)."""
    # the documents first: their ids (and the escalation naming one) are the same in both wordings
    kinds_of_docs = document_kinds(rng, difficulty)
    ids = document_ids(rng, [*kinds_of_docs, *(["memo"] if restricted else [])])
    w = Writer(rng, subset)
    said = statements(w, public, kinds, difficulty)
    n_open = len(kinds_of_docs)
    buckets = spread(rng, said, n_open)  # every open document holds at least one fact
    documents = write_documents(rng, kinds_of_docs, ids, buckets, PEOPLE, TITLES, w.features)
    locked = None
    if restricted:
        locked = ids[-1]
        documents[locked] = w.form("restricted", subset).format(doc=locked)
    rng.shuffle(ids)
    areas = list(public["artifacts"])
    intro = (f"{rng.choice(COMPANIES)} takes project {rng.choice(PROJECTS)} to the steering committee next week. "
             f"Build its risk register from the dossier, which covers {len(areas)} area(s): {', '.join(areas)}.")
    parts = [intro, *buckets[0]]
    if ids:
        parts.append("The other facts are in " + ", ".join(ids) + " (read them with read_document).")
    return " ".join(parts), documents, w.features, locked
