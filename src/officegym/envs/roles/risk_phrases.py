"""How each fact of a Risk dossier is said: per fact, phrase styles (trained and held out) that render
its value as a self-describing noun phrase ("1 replica", "no failover", "an RPO of 4 hours"), with
numbers in digits or words and money in several styles. risk_brief.py puts phrases into sentences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from officegym.envs.roles.prose import trim, words


@dataclass(frozen=True)
class Say:
    """How this sentence writes numbers ("digits" or "words") and money (a MONEY style)."""

    number: str = "digits"
    money_style: str = "dollars"

    def n(self, x: int) -> str:
        return words(x) if self.number == "words" and 0 <= x < 10**9 else f"{x:,}"

    def m(self, x: int) -> str:
        k = x // 1000
        return {"dollars": f"${x:,}", "usd": f"{x:,} dollars", "k": f"${k:,}k", "words": f"{words(x)} dollars",
                "grand": f"{k:,} grand", "thousand": f"{k:,} thousand dollars"}[self.money_style]


MONEY = (("dollars", "usd", "k", "words"), ("grand", "thousand"))  # (trained, held out)
Phrase = Callable[[Any, Say], str]


def _count(one: str, many: str, zero: str | None = None) -> Phrase:
    def f(v: Any, say: Say) -> str:
        if v == 0 and zero is not None:
            return zero
        return (one if v == 1 else many).format(n=say.n(v))
    return f


def _flag(yes: str, no: str) -> Phrase:
    return lambda v, say: yes if v else no


def _table(table: dict[str, str]) -> Phrase:
    return lambda v, say: table[v]


def _fmt(text: str) -> Phrase:
    return lambda v, say: text.format(v=v)


def _money(text: str, zero: str | None = None) -> Phrase:
    return lambda v, say: zero if not v and zero is not None else text.format(m=say.m(int(v)))


def _hours(one: str, many: str) -> Phrase:
    return lambda v, say: one if v == 1 else many.format(n=say.n(int(v)))


def _join(items: list[str], last: str) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {last} " + items[-1]


CITIES = {"eu-west": "Dublin", "eu-central": "Frankfurt", "us-east": "Virginia", "us-west": "Oregon", "ap-south": "Mumbai"}
SPELLED = {"GPL-3.0": "the GNU General Public License v3", "AGPL-3.0": "the Affero General Public License v3",
           "LGPL-2.1": "the Lesser General Public License v2.1", "MIT": "the X11-style permissive terms",
           "Apache-2.0": "the Apache Foundation terms v2", "BSD-3-Clause": "the three-clause Berkeley terms"}
YEARS = {6: "half a year", 12: "one year", 24: "two years", 36: "three years", 48: "four years"}


def _years(v: Any, say: Say) -> str:
    return YEARS.get(v) or f"{trim(v / 12)} years"


# field -> ({trained style: phrase}, {held-out style: phrase})
PHRASES: dict[str, tuple[dict[str, Phrase], dict[str, Phrase]]] = {
    "replicas": ({"replicas": _count("{n} replica", "{n} replicas")},
                 {"copies": _count("{n} running copy", "{n} running copies")}),
    "failover": ({"failover": _flag("failover configured", "no failover"),
                  "automatic": _flag("automatic failover", "failover disabled")},
                 {"standby": _flag("a hot standby that takes over on its own", "nothing standing by to take over")}),
    "tier": ({"tier": _table({"internal": "internal tier", "customer": "customer tier", "revenue": "revenue tier"}),
              "facing": _table({"internal": "internal-only tier", "customer": "customer-facing tier",
                                "revenue": "revenue-critical tier"})},
             {"grade": _table({"internal": "back-office grade", "customer": "client-facing grade",
                               "revenue": "payment-path grade"})}),
    "incidents_90d": ({"incidents": _count("{n} incident in the last 90 days", "{n} incidents in the last 90 days",
                                           "no incidents in the last 90 days"),
                       "ninety": _count("{n} incident in the past ninety days", "{n} incidents in the past ninety days",
                                        "no incidents in the past ninety days")},
                      {"outages": _count("{n} outage over the past three months", "{n} outages over the past three months",
                                         "no outages over the past three months")}),
    "days_to_expiry": ({"expiry_in": _count("expiry in {n} day", "expiry in {n} days"),
                        "to_expiry": _count("{n} day to expiry", "{n} days to expiry")},
                       {"nights": _count("{n} night of validity left", "{n} nights of validity left")}),
    "auto_renew": ({"renewal": _flag("auto-renewal on", "no auto-renewal"),
                    "renew": _flag("auto-renew enabled", "auto-renew disabled")},
                   {"reissue": _flag("an unattended reissue by the registrar", "only a manual reissue")}),
    "version": ({"version": _fmt("version {v}"), "v": _fmt("v{v}")}, {"release": _fmt("release {v}")}),
    "license": ({"code": _fmt("licence {v}"), "named": _fmt("the {v} licence")}, {"spelled": _table(SPELLED)}),
    "scope": ({"scope": _table({"runtime": "in runtime scope", "dev": "in dev scope"}),
               "dependency": _table({"runtime": "a runtime dependency", "dev": "a dev-only dependency"})},
              {"ships": _table({"runtime": "shipped inside the product", "dev": "used only by the build tooling"})}),
    "internet_facing": ({"facing": _flag("internet-facing", "not internet-facing"),
                         "exposed": _flag("exposed to the internet", "internal only")},
                        {"web": _flag("reachable from the public web", "walled off from outside traffic")}),
    "fixed_in": ({"before": _fmt("versions before {v}"), "below": _fmt("releases below {v}")},
                 {"older": _fmt("builds older than {v}")}),
    "cvss": ({"cvss": _fmt("CVSS {v}"), "score": _fmt("a CVSS score of {v}")},
             {"rating": _fmt("a severity rating of {v} out of 10")}),
    "maintainers": ({"maintainers": _count("{n} maintainer", "{n} maintainers")},
                    {"people": _count("{n} person who knows the code", "{n} people who know the code")}),
    "trained_backup": ({"trained": _flag("a trained backup", "no trained backup"),
                        "backup": _flag("a backup maintainer trained", "no backup maintainer trained")},
                       {"step_in": _flag("a colleague ready to step in", "nobody ready to step in")}),
    "attrition_risk": ({"attrition": _fmt("{v} attrition risk"), "rated": _fmt("attrition risk rated {v}")},
                       {"losing": _table({"low": "little chance of losing them", "medium": "some chance of losing them",
                                          "high": "a real chance of losing them"})}),
    "criticality": ({"criticality": _fmt("{v} criticality"), "rated": _fmt("criticality rated {v}")},
                    {"place": _table({"low": "a peripheral place in the business", "medium": "a notable place in the "
                                      "business", "high": "a central place in the business"})}),
    "backup_interval_hours": ({"backups": _hours("backups every hour", "backups every {n} hours"),
                               "a_backup": _hours("a backup every hour", "a backup every {n} hours")},
                              {"minutes": lambda v, say: f"a snapshot every {say.n(int(v * 60))} minutes"}),
    "rpo_hours": ({"rpo": _hours("an RPO of 1 hour", "an RPO of {n} hours"),
                   "objective": _hours("a recovery point objective of 1 hour", "a recovery point objective of {n} hours")},
                  {"minutes": lambda v, say: f"a tolerance of {say.n(int(v * 60))} minutes of lost data"}),
    "continuous_replication": ({"continuous": _flag("continuous replication", "no continuous replication"),
                                "streaming": _flag("streaming replication on", "streaming replication off")},
                               {"live": _flag("a live copy kept in sync", "no live copy kept in sync")}),
    "data_class": ({"data": _fmt("{v} data"), "classed": _fmt("data classed {v}")},
                   {"records": _table({"internal": "staff-only records", "confidential": "commercially sensitive records",
                                       "regulated": "records under regulator oversight"})}),
    "contains_pii": ({"personal": _flag("personal data", "no personal data"), "pii": _flag("PII", "no PII")},
                     {"identify": _flag("details that identify people", "nothing that identifies a person")}),
    "region": ({"the_region": _fmt("the {v} region"), "region": _fmt("region {v}")},
               {"city": lambda v, say: f"a data centre in {CITIES[v]}"}),
    "allowed_regions": ({"allowed": lambda v, say: "allowed regions " + _join(list(v), "and"),
                         "only": lambda v, say: "a policy allowing only " + _join(list(v), "or")},
                        {"cities": lambda v, say: "a mandate to stay within " + _join([CITIES[x] for x in v], "and")}),
    "records_millions": ({"million": lambda v, say: f"{trim(v)} million records",
                          "m": lambda v, say: f"{trim(v)}M records"},
                         {"entries": lambda v, say: f"{round(v * 1e6):,} entries"}),
    "current_peak_rps": ({"peak": lambda v, say: f"a peak of {say.n(v)} rps today",
                          "current": lambda v, say: f"a current peak of {say.n(v)} requests per second"},
                         {"minute": lambda v, say: f"{say.n(v * 60)} requests a minute at the busiest moment today"}),
    "monthly_growth_pct": ({"pct": lambda v, say: f"{v}% monthly growth",
                            "percent": lambda v, say: f"growth of {say.n(v)} percent a month"},
                           {"per_cent": lambda v, say: f"a rise of {say.n(v)} per cent each month"}),
    "horizon_months": ({"horizon": lambda v, say: f"a {v}-month horizon",
                        "of": lambda v, say: f"a horizon of {say.n(v)} months"},
                       {"quarters": lambda v, say: f"a planning window of {say.n(v // 3)} quarters"}),
    "capacity_rps": ({"of": lambda v, say: f"a capacity of {say.n(v)} rps",
                      "for": lambda v, say: f"capacity for {say.n(v)} requests per second"},
                     {"room": lambda v, say: f"room for {say.n(v * 60)} requests a minute"}),
    "autoscaling_max_rps": ({"up_to": lambda v, say: f"autoscaling up to {say.n(v)} rps" if v else "no autoscaling",
                             "maximum": lambda v, say: (f"autoscaling to a maximum of {say.n(v)} requests per second"
                                                        if v else "autoscaling off")},
                            {"elastic": lambda v, say: (f"elastic headroom to {say.n(v * 60)} requests a minute"
                                                        if v else "no elastic headroom")}),
    "budget_cap_usd": ({"cap": _money("a cap of {m}"), "budget_cap": _money("a budget cap of {m}")},
                       {"envelope": _money("an envelope of {m}")}),
    "spent_usd": ({"spent": _money("{m} spent"), "to_date": _money("spend to date of {m}")},
                  {"gone": _money("{m} already gone")}),
    "monthly_burn_usd": ({"burn": _money("a burn of {m} a month"), "monthly": _money("a monthly burn of {m}")},
                         {"out": _money("{m} going out every month")}),
    "months_remaining": ({"remaining": _count("{n} month remaining", "{n} months remaining"),
                          "to_go": _count("{n} month to go", "{n} months to go")},
                         {"work": _count("{n} more month of work", "{n} more months of work")}),
    "approved_increase_usd": ({"approved": _money("an approved increase of {m}", "no approved increase"),
                               "increase": _money("an increase of {m} approved", "no increase approved")},
                              {"funding": _money("extra funding of {m} signed off", "no extra funding signed off")}),
    "exit_clause": ({"exit": _flag("an exit clause", "no exit clause"),
                     "invoke": _flag("an exit clause we can invoke", "no exit clause at all")},
                    {"walk": _flag("a way to walk away early", "no way to walk away early")}),
    "term_months": ({"term": lambda v, say: f"a {v}-month term", "of": lambda v, say: f"a term of {say.n(v)} months"},
                    {"years": _years}),
    "annual_value_usd": ({"year": _money("{m} a year"), "annual": _money("an annual value of {m}")},
                         {"annum": _money("{m} per annum")}),
    "occurrences_90d": ({"occurrences": _count("{n} occurrence in 90 days", "{n} occurrences in 90 days"),
                         "ninety": _count("{n} occurrence in the last ninety days", "{n} occurrences in the last ninety days")},
                        {"hits": _count("{n} hit over the past three months", "{n} hits over the past three months")}),
    "fix_status": ({"fix": _table({"open": "the fix still open", "deployed": "the fix deployed"}),
                    "yet": _table({"open": "a fix not yet deployed", "deployed": "a fix already deployed"})},
                   {"remedy": _table({"open": "no permanent remedy shipped", "deployed": "a permanent remedy shipped"})}),
    "severity": ({"sev": _fmt("{v}"), "severity": _table({"sev1": "severity 1", "sev2": "severity 2", "sev3": "severity 3"})},
                 {"rank": _table({"sev1": "the top severity", "sev2": "the middle severity", "sev3": "the lowest severity"})}),
}
