"""The strongest fixed rule written from the Risk dossier's training wordings: regex parsing of the
brief and its documents, feeding the rule-book tool (assess_risks).

It reads only text a model would see (the brief and the documents' texts). It knows the trained
phrases of every fact (units, number words, money styles), the trained update and hearsay markers,
the restriction notices, the item names (the same in every wording) and the facts each area needs
(assess_risks' documented arguments), and nothing of the held-out forms. An item whose facts it cannot
all read is left out, as the tool refuses an item with a fact missing. Its score on held-out
wordings against its score on trained ones is what the role's language skill is measured by.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from officegym.envs.roles.cto_rule import number_from_words
from officegym.envs.roles.risk_model import FIELDS, NAMES

READ, SOLVE = "read_document", "assess_risks"
ANSWERS = ("submit_register", "escalate")
DOC_ID = re.compile(r"\b(?:MAIL|NOTES|PLAT|MEMO)-\d+\b")
RESTRICTED = re.compile(r"\brestricted\b", re.I)
# sentences that state no decided fact, by the markers of the trained hearsay forms
SKIP = re.compile(r"overheard|claimed|rumou?r|\bignore\b|\bheard\b|unconfirmed|never approved|nothing official", re.I)
# trained update forms: "changed from OLD to NEW" (the last value read is decided); "now has NEW (the
# earlier note said OLD)" and "NEW, not OLD" (the first)
LAST_DECIDES = re.compile(r"\bchanged from\b")
UPDATE = re.compile(r"^Update: |^Correction on |\bchanged from\b")
CVE = re.compile(r"\bCVE-\d{4}-\d+\b")

_WORD = (r"(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
         r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
         r"thousand|million)")
NUM = rf"(?:\d[\d,]*|(?<![\w-]){_WORD}(?:[\s-]+{_WORD})*)"
MONEY = rf"(?:\$[\d,]+k?|[\d,]+ dollars|{_WORD}(?:[\s-]+{_WORD})* dollars)"
REG = r"(?:eu-west|eu-central|us-east|us-west|ap-south)"
VER = r"(\d+(?:\.\d+)+)"
CODES = r"(AGPL-3\.0|LGPL-2\.1|GPL-3\.0|MIT|Apache-2\.0|BSD-3-Clause)"


def number(text: str) -> int:
    text = text.strip()
    return int(text.replace(",", "")) if text[:1].isdigit() else number_from_words(text)


def money(text: str) -> int:
    text = text.strip()
    if text.startswith("$"):
        k = text.endswith("k")
        return int(text[1:].rstrip("k").replace(",", "")) * (1000 if k else 1)
    return number(text.removesuffix(" dollars"))


def _group(m: re.Match[str]) -> str:
    return next(g for g in m.groups() if g is not None)


def _pattern(regex: str, convert: Callable[[str], Any]) -> Callable[[str], list[tuple[int, Any]]]:
    compiled = re.compile(regex)
    return lambda s: [(m.start(), convert(_group(m))) for m in compiled.finditer(s)]


def _choices(*pairs: tuple[str, Any]) -> Callable[[str], list[tuple[int, Any]]]:
    """Fixed phrases with their values (a phrase that contains another is listed first)."""
    compiled = re.compile("|".join(f"({p})" for p, _ in pairs))
    return lambda s: [(m.start(), pairs[m.lastindex - 1][1]) for m in compiled.finditer(s)]  # type: ignore[operator]


def _either(*parsers: Callable[[str], list[tuple[int, Any]]]) -> Callable[[str], list[tuple[int, Any]]]:
    return lambda s: sorted(x for p in parsers for x in p(s))


def _regions(text: str) -> list[str]:
    return re.findall(REG, text)


LEVEL = r"(low|medium|high)"
PARSERS: dict[str, Callable[[str], list[tuple[int, Any]]]] = {
    "replicas": _pattern(rf"({NUM}) replicas?\b", number),
    "failover": _choices(("failover configured", True), ("automatic failover", True), ("no failover", False),
                         ("failover disabled", False)),
    "tier": _pattern(r"\b(internal|customer|revenue)(?:-only|-facing|-critical)? tier\b", str),
    "incidents_90d": _either(_choices(("no incidents in the (?:last 90|past ninety) days", 0)),
                             _pattern(rf"({NUM}) incidents? in the (?:last 90|past ninety) days", number)),
    "days_to_expiry": _pattern(rf"expiry in ({NUM}) days?|({NUM}) days? to expiry", number),
    "auto_renew": _choices(("no auto-renewal", False), ("auto-renewal on", True), ("auto-renew enabled", True),
                           ("auto-renew disabled", False)),
    "version": _pattern(rf"\bversion {VER}|\bv{VER}", str),
    "license": _pattern(rf"\blicence {CODES}|\bthe {CODES} licence", str),
    "scope": _pattern(r"\bin (runtime|dev) scope|\ba (runtime|dev)(?:-only)? dependency", str),
    "internet_facing": _choices(("not internet-facing", False), ("internet-facing", True),
                                ("exposed to the internet", True), ("internal only", False)),
    "maintainers": _pattern(rf"({NUM}) maintainers?\b", number),
    "trained_backup": _choices(("no trained backup", False), ("a trained backup", True),
                               ("no backup maintainer trained", False), ("a backup maintainer trained", True)),
    "attrition_risk": _pattern(rf"\b{LEVEL} attrition risk|attrition risk rated {LEVEL}", str),
    "criticality": _pattern(rf"\b{LEVEL} criticality|criticality rated {LEVEL}", str),
    "backup_interval_hours": _either(_choices(("backups? every hour", 1)),
                                     _pattern(rf"backups? every ({NUM}) hours", number)),
    "rpo_hours": _pattern(rf"(?:RPO|recovery point objective) of ({NUM}) hours?", number),
    "continuous_replication": _choices(("no continuous replication", False), ("continuous replication", True),
                                       ("streaming replication on", True), ("streaming replication off", False)),
    "data_class": _pattern(r"\b(internal|confidential|regulated) data\b|data classed (internal|confidential|regulated)",
                           str),
    "contains_pii": _choices(("no personal data", False), ("personal data", True), ("no PII", False), ("PII", True)),
    "region": _pattern(rf"\bthe ({REG}) region|\bregion ({REG})", str),
    "allowed_regions": _pattern(rf"allowed regions ({REG}(?:(?:, | and ){REG})*)|allowing only ({REG}(?:(?:, | or ){REG})*)",
                                _regions),
    "records_millions": _pattern(r"(\d+(?:\.\d+)?)(?: million|M) records", float),
    "current_peak_rps": _pattern(rf"peak of ({NUM}) (?:rps|requests per second)", number),
    "monthly_growth_pct": _pattern(rf"(\d+)% monthly growth|growth of ({NUM}) percent a month", number),
    "horizon_months": _pattern(rf"(\d+)-month horizon|horizon of ({NUM}) months", number),
    "capacity_rps": _pattern(rf"capacity (?:of|for) ({NUM}) (?:rps|requests per second)", number),
    "autoscaling_max_rps": _either(_choices(("no autoscaling", 0), ("autoscaling off", 0)),
                                   _pattern(rf"autoscaling (?:up to|to a maximum of) ({NUM})", number)),
    "budget_cap_usd": _pattern(rf"cap of ({MONEY})", money),
    "spent_usd": _pattern(rf"({MONEY}) spent\b|spend to date of ({MONEY})", money),
    "monthly_burn_usd": _pattern(rf"burn of ({MONEY})", money),
    "months_remaining": _pattern(rf"({NUM}) months? (?:remaining|to go)", number),
    "approved_increase_usd": _either(_choices(("no approved increase", 0), ("no increase approved", 0)),
                                     _pattern(rf"approved increase of ({MONEY})|increase of ({MONEY}) approved", money)),
    "exit_clause": _choices(("no exit clause", False), ("an exit clause", True)),
    "term_months": _pattern(rf"(\d+)-month term|term of ({NUM}) months", number),
    "annual_value_usd": _pattern(rf"({MONEY}) a year|annual value of ({MONEY})", money),
    "occurrences_90d": _pattern(rf"({NUM}) occurrences? in (?:90 days|the last ninety days)", number),
    "fix_status": _choices(("fix still open", "open"), ("fix not yet deployed", "open"), ("the fix deployed", "deployed"),
                           ("fix already deployed", "deployed")),
    "severity": _pattern(r"\bsev([123])\b|\bseverity ([123])\b", lambda g: f"sev{g}"),
}
FIXED_IN = _pattern(rf"(?:versions before|releases below) {VER}", str)
CVSS = _pattern(r"CVSS(?: score of)? (\d+(?:\.\d+)?)", float)
_NAME = {area: [(n, re.compile(rf"(?<![\w.-]){re.escape(n)}(?![\w-]|\.\w)")) for n in names] for area, names in NAMES.items()}


def _names(area: str, sentence: str) -> list[str]:
    return [n for n, pattern in _NAME[area] if pattern.search(sentence)]


def _read(area: str, sentence: str, last: bool) -> dict[str, Any]:
    """The facts of `area` a sentence states (the first value of each, or the last)."""
    out = {}
    for field in FIELDS[area]:
        if field in PARSERS:
            found = PARSERS[field](sentence)
            if found:
                out[field] = (found[-1] if last else found[0])[1]
    return out


def sentences(text: str) -> list[str]:
    """Sentences and lines, list dashes dropped (a bracket does not end a sentence: "{item} (tier) has")."""
    return [s.strip().removeprefix("- ") for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def documents_to_read(brief: str) -> list[str]:
    return list(dict.fromkeys(DOC_ID.findall(brief)))


def escalation(texts: list[str]) -> str | None:
    """Why the dossier cannot be assessed (a document that answered with a restriction), or None."""
    for text in texts[1:]:
        if RESTRICTED.search(text):
            return "a document of the dossier is restricted, so the dossier cannot be fully assessed"
    return None


def solver_arguments(texts: list[str]) -> dict[str, Any]:
    """assess_risks' arguments from the brief and documents' texts: every item whose facts were all read."""
    facts: dict[tuple[str, str], dict[str, Any]] = {}
    updates: dict[tuple[str, str], dict[str, Any]] = {}
    advisories: dict[str, list[dict[str, Any]]] = {}
    for text in texts:
        for sentence in sentences(text):
            if SKIP.search(sentence):
                continue
            if CVE.search(sentence):
                fixed, cvss = FIXED_IN(sentence), CVSS(sentence)
                for name in _names("dependencies", sentence):
                    if fixed and cvss:
                        advisories.setdefault(name, []).append({"fixed_in": fixed[0][1], "cvss": cvss[0][1]})
                continue
            update, last = bool(UPDATE.search(sentence)), bool(LAST_DECIDES.search(sentence))
            for area in FIELDS:
                for name in _names(area, sentence):
                    read = _read(area, sentence, last)
                    if read:
                        (updates if update else facts).setdefault((area, name), {}).update(read)
    items = []
    for (area, name), found in facts.items():
        found = {**found, **updates.get((area, name), {})}
        if area == "dependencies":
            found["advisories"] = advisories.get(name, [])
        if all(f in found for f in FIELDS[area]):
            items.append({"area": area, "item": name, **{f: found[f] for f in FIELDS[area]}})
    return {"items": items}


def answer(solver_output: Any) -> tuple[str, dict[str, Any]]:
    """(tool, arguments) of the answer to give from assess_risks' output (an empty register when the
    tool refused)."""
    if isinstance(solver_output, dict) and isinstance(solver_output.get("entries"), list):
        return "submit_register", {"entries": solver_output["entries"],
                                   "overall_score": solver_output.get("overall_score", 0)}
    return "submit_register", {"entries": [], "overall_score": 0}
