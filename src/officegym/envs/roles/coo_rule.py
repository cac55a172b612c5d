"""The strongest fixed rule written from the COO brief's training wordings: keyword and regex parsing
of the brief and its documents, feeding the solver tool.

It reads only text a model would see (the brief with its list of projects and people, and the
documents' texts), knows the trained forms' keywords, units, update patterns and hearsay and noise
markers, and nothing of the held-out ones. Its score on held-out wordings against its score on
trained ones is what the role's language skill is measured by.
"""

from __future__ import annotations

import re
from typing import Any

from officegym.envs.roles.cto_rule import _WORDS, number_from_words

READ, SOLVE = "read_document", "find_staffing"
ANSWERS = ("submit_allocation", "escalate")
DOC_ID = re.compile(r"\b(?:MAIL|NOTES|PLAT|MEMO)-\d+\b")
ROSTER = re.compile(r"^(?:Projects, in list order|People):\s*(.*)$", re.M)
ENTRY = re.compile(r"\b([PS]\d+) ([^,.]+)")
# sentences that state no decided rule, by the markers the trained hearsay, noise and preference forms use
SKIP = re.compile(r"overheard|claimed|rumou?r|\bignore\b|\bheard\b|unconfirmed|never approved|nothing official|"
                  r"not our requirement|logged|overtime|last quarter|with the company|kickoff|first estimated|"
                  r"all-hands|contractor rate|working weeks|would rather|nice to have|not required|no difference|"
                  r"^(?:projects, in list order|people|skills, effort hours)\b", re.I)
HOURS = re.compile(rf"\b(\d+) ?(?:h|hours)\b|\b({_WORDS})hours\b", re.I)
COUNT = re.compile(r"\b(\d+|one|two|three|four|five|six) projects?\b", re.I)
WEEK = re.compile(r"\bweek (\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b", re.I)
EXCLUSIVE = re.compile(r"share staff|different people|\bboth\b|separate owners|same person|one person", re.I)
PREREQUISITE = re.compile(r"depends on|requires|\bunless\b|builds on|in place|prerequisite|has to be staffed for|"
                          r"no point in staffing", re.I)
PREREQUISITE_FIRST = re.compile(r"prerequisite for|has to be staffed for|^without\b", re.I)  # "{b} ... {a}"
MUST = re.compile(r"must-do|must be staffed|cannot skip|mandatory|has to be staffed|non-negotiable|must go ahead|"
                  r"cannot be left unstaffed", re.I)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else number_from_words(text)


def _decided(values: list[int], sentence: str) -> int:
    """The decided figure: the first of "X, not Y", else the last ("from X to Y", "said X; now Y")."""
    if len(values) > 1 and re.search(r",\s*not\b", sentence):
        return values[0]
    return values[-1]


def _refs(pattern: re.Pattern[str] | None, names: dict[str, str], sentence: str) -> list[str]:
    """The ids a sentence names, in order, once each ("Fraud model (P02)" is one reference)."""
    out: list[str] = []
    for m in pattern.finditer(sentence) if pattern else ():
        ref = names.get(m.group(0).lower(), m.group(0).upper())
        if ref not in out:
            out.append(ref)
    return out


def _pattern(names: dict[str, str], ids: str) -> re.Pattern[str]:
    alternatives = sorted(names, key=len, reverse=True)
    return re.compile(rf"\b(?:{ids}|" + "|".join(re.escape(n) for n in alternatives) + r")\b", re.I)


def sentences(text: str) -> list[str]:
    """Sentences and lines ("Ana (S2) has ..." stays whole: a bracket ends a sentence only after a stop)."""
    parts = re.split(r"(?<=[.!?])\s+|(?<=[.!?]\))\s+|\n+", text)
    return [p.removeprefix("- ").strip() for p in parts if p.strip()]


def documents_to_read(brief: str) -> list[str]:
    return list(dict.fromkeys(DOC_ID.findall(brief)))


def solver_arguments(texts: list[str]) -> dict[str, Any]:
    """find_staffing's arguments from the brief and documents' texts."""
    projects: dict[str, str] = {}
    people: dict[str, str] = {}
    for text in texts:
        for line in ROSTER.findall(text):
            for ident, name in ENTRY.findall(line):
                (projects if ident.startswith("P") else people)[name.strip().lower()] = ident
    project_re, person_re = _pattern(projects, r"P\d{2}"), _pattern(people, r"S\d+")
    must: list[str] = []
    pairs: list[list[str]] = []
    prerequisites: dict[str, str] = {}
    deadlines: dict[str, int] = {}
    capacity: dict[str, int] = {}
    most: dict[str, int] = {}
    for text in texts:
        for sentence in sentences(text):
            if SKIP.search(sentence):
                continue
            ps, who = _refs(project_re, projects, sentence), _refs(person_re, people, sentence)
            hours = [int(a) if a else number_from_words(b) for a, b in HOURS.findall(sentence)]
            counts = [_number(x.lower()) for x in COUNT.findall(sentence)]
            weeks = [_number(x.lower()) for x in WEEK.findall(sentence)]
            if who and hours:
                capacity[who[0]] = _decided(hours, sentence)
            elif who and counts:
                most[who[0]] = _decided(counts, sentence)
            elif ps and weeks:
                deadlines[ps[0]] = _decided(weeks, sentence)
            elif len(ps) >= 2 and EXCLUSIVE.search(sentence):
                pairs.append(ps[:2])
            elif len(ps) >= 2 and PREREQUISITE.search(sentence):
                first, second = ps[:2]
                dependant, needed = (second, first) if PREREQUISITE_FIRST.search(sentence) else (first, second)
                prerequisites[dependant] = needed
            elif ps and MUST.search(sentence):
                must.append(ps[0])
    out: dict[str, Any] = {}
    if must:
        out["must_do"] = sorted(set(must))
    if pairs:
        out["cannot_share"] = pairs
    if prerequisites:
        out["prerequisites"] = [{"project": p, "requires": q} for p, q in prerequisites.items()]
    for key, found in (("deadlines", deadlines), ("capacity_hours", capacity), ("max_projects", most)):
        if found:
            out[key] = found
    return out


def answer(solver_output: Any) -> tuple[str, dict[str, Any]]:
    """(tool, arguments) of the answer to give from find_staffing's output."""
    if isinstance(solver_output, dict) and isinstance(solver_output.get("assignments"), list):
        return "submit_allocation", {"assignments": solver_output["assignments"],
                                     "unstaffed": solver_output.get("unstaffed", []),
                                     "claimed_value": solver_output.get("net_value_usd", 0)}
    reason = solver_output.get("result") if isinstance(solver_output, dict) else None
    return "escalate", {"reason": str(reason or "no allocation keeps the rules")}
