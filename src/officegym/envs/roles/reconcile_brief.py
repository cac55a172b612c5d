"""The ReconcileGPT brief in prose: the governance rule, each stakeholder's weights, status quo,
vetoes (hard constraints) and bargaining weight, each one sentence in one of many forms, figures in
digits or words, budgets and timelines in several units, scores named several ways; updates that
supersede a figure, soft preferences that are not vetoes, hearsay about vetoes nobody decided (each
would change the answer if believed), unrelated figures, and documents (e-mail, meeting notes,
ticket) that hold some of the memos and are read through `read_document`.

Forms and styles are data (`FORMS`, `STYLES`): a held-out task draws held-out ones for at least one
kind of statement, and only held-out tasks ever do.
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
from officegym.envs.roles.reconcile_model import ATTRIBUTES, BARGAINING_FROM

_VETO_HELD = ("{s} signs off only where the {what} {reach} {v} or {more}.",
              "{s} walks out if the {what} {cross} {v}.",
              "Before agreeing to anything, {s} needs the {what} at {v} or {better}.")
FORMS = {
    "rule_utilitarian": Forms("rule_utilitarian", (
        "The council decides by the utilitarian rule.",
        "Governance rule: utilitarian (the largest sum of normalised gains wins).",
        "We pick the plan with the highest sum of normalised gains.",
        "The chair applies the utilitarian rule this time.",
        "Decision rule for this round: utilitarian.",
        "Sum the normalised gains and take the best plan: that is the governance rule.",
        "By charter, this decision is utilitarian.",
    ), (
        "The chair will total how much of each stakeholder's achievable improvement a plan delivers, and go with "
        "the biggest total.",
        "Each party's fraction of its attainable gain is added up across the table; the top total carries the day.",
        "Whatever adds up to the most shared progress, each party counted by the share of its own possible gain, wins.",
    )),
    "rule_maxmin": Forms("rule_maxmin", (
        "The council decides by the max-min rule.",
        "Governance rule: max-min (the largest smallest normalised gain wins).",
        "We pick the plan whose smallest normalised gain is highest.",
        "The chair applies the egalitarian rule this time.",
        "Decision rule for this round: max-min.",
        "Maximise the minimum normalised gain: that is the governance rule.",
        "By charter, this decision is egalitarian (max-min).",
    ), (
        "The plan that leaves the worst-off party best off wins, each party judged by the share of its possible "
        "gain it gets.",
        "Look after the least satisfied stakeholder first: the plan where the unhappiest party gets the largest "
        "share of its attainable improvement carries the day.",
        "Nobody is left behind: judge each plan by the party that gains least, in proportion to what it could "
        "gain, and take the plan where that party does best.",
    )),
    "rule_nash": Forms("rule_nash", (
        "The council decides by weighted Nash bargaining.",
        "Governance rule: Nash bargaining (the largest weighted product of gains wins).",
        "We pick the plan with the highest product of gains over the status quo, each raised to its bargaining "
        "weight.",
        "The chair applies the Nash bargaining rule this time.",
        "Decision rule for this round: Nash.",
        "Maximise the weighted Nash product: that is the governance rule.",
        "By charter, this decision goes by Nash bargaining.",
    ), (
        "Multiply together what every party gains over where it stands today, each gain raised to that party's "
        "power, and take the largest result.",
        "The winning plan is the one whose improvements, multiplied across the table with each party's power as "
        "the exponent, come out highest.",
        "Take each stakeholder's improvement over today, raise it to its power, multiply everything, and choose "
        "the top.",
    )),
    "weight": Forms("weight", (
        "{s} puts a weight of {v} on {a}.",
        "{s} weighs {a} at {v}.",
        "In the memo of {s}, {a} counts {v}.",
        "For {s}, the weight on {a} is {v}.",
        "{s} gives {a} a weight of {v}.",
        "The weight of {a} for {s} is {v}.",
        "{s} scores {a} with weight {v}.",
        "Weight of {a} for {s}: {v}.",
    ), (
        "Every point of {a} is worth {v} to {s}.",
        "{s} gains {v} for each point of {a}.",
        "To {s}, one more point of {a} means {v} more utility.",
    )),
    "status_quo": Forms("status_quo", (
        "The status quo utility of {s} is {v}.",
        "Without an agreement, {s} keeps a utility of {v}.",
        "{s} has a status quo of {v}.",
        "Status quo for {s}: {v}.",
        "The fallback of {s} is worth {v}.",
        "{s} walks away with {v} if no plan is agreed.",
        "If nothing is agreed, {s} stays at {v}.",
        "{s} only signs a plan that beats its status quo of {v}.",
    ), (
        "Doing nothing leaves {s} at {v}.",
        "{s} is sitting on {v} today, and a plan has to do better than that.",
        "Today's arrangement is worth {v} to {s}.",
    )),
    "bargaining": Forms("bargaining", (
        "{s} has a bargaining weight of {v}.",
        "In the bargaining, {s} has weight {v}.",
        "Bargaining weight for {s}: {v}.",
        "{s} bargains with weight {v}.",
        "The bargaining power of {s} is {v}.",
        "The exponent of {s} in the Nash product is {v}.",
        "Give {s} a bargaining weight of {v}.",
        "{s} negotiates with a bargaining weight of {v}.",
    ), (
        "The gain of {s} is raised to the power {v} when gains are multiplied.",
        "The seat of {s} carries {v} votes when the gains are multiplied together.",
        "When improvements are multiplied across the table, the one of {s} enters with power {v}.",
    )),
    "veto_vendor": Forms("veto_vendor", (
        "{s} vetoes any plan with {x}.",
        "{s} will veto plans that use {x}.",
        "{s} has a veto on {x}.",
        "No plan with {x} gets past {s}: it is a veto.",
        "{s} rejects any plan that uses {x} outright.",
        "{s} cannot accept {x} under any circumstances.",
        "Hard constraint from {s}: no {x}.",
        "{s} will block every plan built on {x}.",
    ), (
        "{x} is a non-starter as far as {s} is concerned.",
        "{s} has said it will walk out of the room if {x} is chosen.",
        "Signing with {x} would breach terms that bind {s}, so that is off the table.",
    )),
    "veto_min": Forms("veto_min", (
        "{s} vetoes any plan with a {what} below {v}.",
        "{s} will veto plans whose {what} is under {v}.",
        "{s} rejects any plan with a {what} of less than {v}.",
        "Hard constraint from {s}: a {what} of at least {v}.",
        "{s} blocks plans with a {what} lower than {v}.",
        "{s} cannot accept a {what} below {v}.",
        "{s} has a veto on any {what} under {v}.",
        "Any plan with a {what} below {v} will be vetoed by {s}.",
    ), tuple(f.replace("{reach}", "reaches").replace("{more}", "more").replace("{cross}", "falls short of")
             .replace("{better}", "better") for f in _VETO_HELD)),
    "veto_max": Forms("veto_max", (
        "{s} vetoes any plan with a {what} above {v}.",
        "{s} will veto plans whose {what} is over {v}.",
        "{s} rejects any plan with a {what} of more than {v}.",
        "Hard constraint from {s}: a {what} of at most {v}.",
        "{s} blocks plans with a {what} higher than {v}.",
        "{s} cannot accept a {what} above {v}.",
        "{s} has a veto on any {what} over {v}.",
        "Any plan with a {what} above {v} will be vetoed by {s}.",
    ), tuple(f.replace("{reach}", "stays at").replace("{more}", "less").replace("{cross}", "goes past")
             .replace("{better}", "lower") for f in _VETO_HELD)),
    # a veto nobody has: a stated preference ({cond} is "plans with ...")
    "soft": Forms("soft", (
        "{s} would prefer to avoid {cond}, but it is not a veto.",
        "{s} dislikes {cond}, though it can live with them.",
        "Soft preference from {s}: no {cond} if possible (not a hard constraint).",
        "{s} is not keen on {cond}; that is a preference, not a veto.",
        "{s} would rather not see {cond}, but will not block them.",
        "Ideally {s} avoids {cond}; it has waived its veto on them.",
        "{s} grumbles about {cond} but accepts them if needed.",
    ), (
        "{s} has withdrawn its veto on {cond}; it is unhappy but will go along.",
        "{s} once rejected {cond}, but the last review lifted that objection.",
        "A veto from {s} on {cond} was discussed and dropped.",
    )),
    # a veto nobody decided ({claim}): it must be ignored
    "hearsay": Forms("hearsay", (
        "(Overheard at lunch: {claim}. Nothing official.)",
        "A consultant claimed on a call that {claim}; that is not in any memo.",
        "Rumour has it that {claim}, but nothing has been decided.",
        "Ignore the old draft that said {claim}; it was never approved.",
        "Someone in sales heard that {claim} (unconfirmed).",
        "An early slide deck suggested that {claim}; it was superseded before the vote.",
        "Gossip from the last offsite: {claim}. Not a position anyone has taken.",
    ), (
        "My cousin in finance reckons {claim}; take that with a pinch of salt.",
        "There was corridor chatter that {claim}; disregard it.",
        "Per an unverified chat message, {claim}.",
    )),
    # a figure that changed: {old} is superseded by {new}
    "update": Forms("update", (
        "Update: {noun} changed from {old} to {new}.",
        "Correction to my earlier note: {noun} is {new}, not {old}.",
        "Earlier we said {old}; {noun} is now {new}.",
        "Revised: {noun} moves from {old} to {new}.",
        "Please note {noun} was {old} and is now {new}.",
    ), (
        "We have moved off the {old} figure; {noun} going forward is {new}.",
        "{new} replaces the {old} we had pencilled in as {noun}.",
        "Scratch the {old}: {noun} ended up at {new}.",
    )),
}
KINDS = ("rule", "weight", "status_quo", "bargaining", "veto_vendor", "veto_min", "veto_max")
NOUNS = {"weight": "the weight {s} puts on {a}", "status_quo": "the status quo utility of {s}",
         "bargaining": "the bargaining weight of {s}"}
ATTRIBUTE_NAMES = {  # (trained, held out)
    "delivery_speed": (("delivery speed", "speed of delivery", "delivery_speed"), ("time to market", "pace of rollout")),
    "cost_savings": (("cost savings", "savings", "cost_savings"), ("money saved", "thrift")),
    "risk_reduction": (("risk reduction", "reducing risk", "risk_reduction"), ("de-risking", "safety of the rollout")),
    "scope_coverage": (("scope coverage", "scope", "scope_coverage"), ("breadth of features", "feature breadth")),
    "compliance": (("compliance", "regulatory compliance"), ("audit readiness", "regulatory standing")),
}
STYLES = {  # renderings per unit or reference: (trained, held out)
    "weeks": (("weeks", "week_words"), ("days",)),
    "money": (("k", "dollars"), ("million", "words")),
    "attribute": (("name",), ("paraphrase",)),
}
STAKEHOLDER_STYLES = ("{n}", "the {n} agent", "the {n} seat")
NOISE = (  # figures that belong to no memo
    "The steering committee meets every {few} weeks.", "{s} reviewed {n} contracts last quarter.",
    "The previous delivery plan ran {few} weeks late.", "{s} has sat on the council for {n} months.",
    "The council has {n} open action items.", "Vendor onboarding usually takes {n} days.",
    "The last programme cost ${m}k in total.", "{s} filed {n} tickets during the pilot.",
)
PREFERENCES = (
    "Everyone would like the plan to ship before the summer, but that is not a rule.",
    "It would be nice, not required, if the plan kept the current team together.",
    "Nobody minds which plan wins as long as the memos are respected.",
)


class Writer:
    """Renders the statements of one scenario, recording the features it draws."""

    def __init__(self, rng: random.Random, features: list[str]):
        self.rng, self.features = rng, features

    def who(self, name: str) -> str:
        return self.rng.choice(STAKEHOLDER_STYLES).format(n=name)

    def style(self, kind: str, pool: str) -> str:
        trained, heldout = STYLES[kind]
        style = self.rng.choice(heldout if pool == HELDOUT else trained)
        self.features.append(f"{kind}_style:{style}")
        return style

    def attribute(self, attr: str, pool: str) -> str:
        trained, heldout = ATTRIBUTE_NAMES[attr]
        if pool == HELDOUT and self.rng.random() < 0.5:
            self.features.append("attribute_style:paraphrase")
            return self.rng.choice(heldout)
        return self.rng.choice(trained)

    def number(self, n: int | float) -> str:
        return words(n) if isinstance(n, int) and n >= 0 and self.rng.random() < 0.4 else trim(n)

    def what(self, field: str, pool: str) -> str:
        if field in ATTRIBUTES:
            return f"{self.attribute(field, pool)} score"
        return {"timeline_weeks": "timeline", "budget_k_usd": "budget"}[field]

    def amount(self, field: str, value: int, pool: str) -> str:
        if field == "timeline_weeks":
            style = self.style("weeks", pool)
            return {"weeks": f"{value} weeks", "week_words": f"{words(value)} weeks", "days": f"{7 * value} days"}[style]
        if field == "budget_k_usd":
            style = self.style("money", pool)
            return {"k": f"${value}k", "dollars": f"${value * 1000:,}", "million": f"${trim(value / 1000)} million",
                    "words": f"{words(value * 1000)} dollars"}[style]
        return self.number(value)

    def pick(self, kind: str, pool: str) -> str:
        feature, form = FORMS[kind].pick(self.rng, pool)
        self.features.append(feature)
        return form

    def figure(self, ref: tuple, value: Any, pool: str, old: Any = None) -> str:
        kind = ref[0]
        slots = {"s": self.who(ref[1])}
        if kind == "weight":
            slots["a"] = self.attribute(ref[2], pool)
        new = self.number(value)
        if old is not None:
            noun = NOUNS[kind].format(**slots)
            return _sentence(self.pick("update", pool).format(noun=noun, old=self.number(old), new=new))
        return _sentence(self.pick(kind, pool).format(v=new, **slots))

    def veto(self, agent: str, veto: dict[str, Any], pool: str) -> str:
        s = self.who(agent)
        if "equals" in veto:
            return _sentence(self.pick("veto_vendor", pool).format(s=s, x=veto["equals"]))
        side = "below" if "below" in veto else "above"
        form = self.pick("veto_min" if side == "below" else "veto_max", pool)
        value = self.amount(veto["field"], veto[side], pool)
        return _sentence(form.format(s=s, what=self.what(veto["field"], pool), v=value))

    def condition(self, veto: dict[str, Any], pool: str) -> str:
        if "equals" in veto:
            return f"plans with {veto['equals']}"
        side = "below" if "below" in veto else "above"
        return f"plans with a {self.what(veto['field'], pool)} {side} {self.amount(veto['field'], veto[side], pool)}"

    def decoy(self, agent: str, veto: dict[str, Any], pool: str) -> str:
        cond = self.condition(veto, pool)
        if self.rng.random() < 0.5:
            return _sentence(self.pick("soft", pool).format(s=self.who(agent), cond=cond))
        claim = f"{self.who(agent)} will veto {cond}"
        return _sentence(self.pick("hearsay", pool).format(claim=claim))

    def noise(self, form: str, names: list[str]) -> str:
        rng = self.rng
        return _sentence(form.format(few=rng.randint(2, 6), n=rng.randint(3, 40), m=rng.randint(120, 900),
                                     s=self.who(rng.choice(names))))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def statements(rng: random.Random, drawn: dict[str, Any], subset: str, difficulty: int,
               features: list[str]) -> list[tuple[str, bool]]:
    """The sentences of the brief and documents, as (text, states a memo figure or rule)."""
    public = drawn["public"]
    writer = Writer(rng, features)
    memos = public["memos"]
    stated_bargaining = difficulty >= BARGAINING_FROM
    present = ["rule", "weight", "status_quo", *(["bargaining"] if stated_bargaining else [])]
    present += sorted({"veto_vendor" if "equals" in v else "veto_min" if "below" in v else "veto_max"
                       for m in memos for v in m["vetoes"]}, key=KINDS.index)
    # A held-out brief mixes: one kind of statement is written in held-out forms, each other kind is with
    # probability one half, so a reader must cope with unseen sentences among familiar ones.
    forced = rng.choice(present)
    pools = {k: subset if subset != HELDOUT or k == forced or rng.random() < 0.5 else TRAINED for k in present}
    updates = dict(drawn["updates"])
    out = [(_sentence(writer.pick(f"rule_{public['rule']}", pools["rule"])), True)]
    for m in memos:
        refs: list[tuple] = [("status_quo", m["agent"])]
        refs += [("weight", m["agent"], a) for a in ATTRIBUTES if m["weights"][a]]
        refs += [("bargaining", m["agent"])] if stated_bargaining else []
        for ref in refs:
            value = (m["weights"][ref[2]] if ref[0] == "weight" else m["status_quo_utility"] if ref[0] == "status_quo"
                     else m["bargaining_weight"])
            out.append((writer.figure(ref, value, pools[ref[0]], updates.get(ref)), True))
        for v in m["vetoes"]:
            kind = "veto_vendor" if "equals" in v else "veto_min" if "below" in v else "veto_max"
            out.append((writer.veto(m["agent"], v, pools[kind]), True))
    for agent, veto in drawn["decoys"]:
        out.append((writer.decoy(agent, veto, subset if rng.random() < 0.5 else TRAINED), False))
    names = [m["agent"] for m in memos]
    for form in rng.sample(NOISE, 1 + difficulty // 3):
        out.append((writer.noise(form, names), False))
    if rng.random() < 0.5:
        out.append((rng.choice(PREFERENCES), False))
    rng.shuffle(out)
    return out


TITLES = {"email": ("Re: where each seat stands", "Positions before the vote", "Memos for the delivery decision"),
          "notes": ("Council pre-read", "Stakeholder alignment", "Delivery steering committee"),
          "ticket": ("Delivery plan: stakeholder positions", "Council decision inputs", "Plan selection memos")}


def compose(rng: random.Random, drawn: dict[str, Any], difficulty: int, subset: str
            ) -> tuple[str, dict[str, str], list[str]]:
    """(brief, documents by id, features): the rule and the memos stated over the brief and documents."""
    features: list[str] = []
    public = drawn["public"]
    said = statements(rng, drawn, subset, difficulty, features)
    company, product = company_and_product(rng)
    kinds_of_docs = document_kinds(rng, difficulty)
    ids = document_ids(rng, kinds_of_docs)
    buckets = spread(rng, said, len(ids))  # every document holds at least one statement
    documents = write_documents(rng, kinds_of_docs, ids, buckets, PEOPLE, TITLES, features)
    names = public["stakeholders"]
    council = ", ".join(names[:-1]) + f" and {names[-1]}"
    intro = [
        f"The {council} agents of {company} disagree about the delivery plan for the {product}.",
        "The candidate plans, with their levers and their five scores from 0 to 10 (delivery speed, cost savings, "
        "risk reduction, scope coverage, compliance), are in list_plans.",
        "Each stakeholder's memo sets out its weights, its status quo utility"
        + (", its bargaining weight" if difficulty >= BARGAINING_FROM else "")
        + " and any vetoes. A weight that is not stated is zero; a bargaining weight that is not stated is 1.",
        "Choose the acceptable plan that scores best under the governance rule, and report its score, the "
        "conflicting pairs and the binding vetoes; if no plan is acceptable, escalate.",
    ]
    rest = " ".join(buckets[0])
    if ids:
        rest += (" " if rest else "") + "The rest is in " + ", ".join(ids) + " (read them with read_document)."
    return "\n".join([*intro, rest]), documents, features
