"""The strongest fixed rule written from the CTO brief's training wordings: keyword and regex parsing
of the brief and its documents, feeding the solver tool.

It reads only text a model would see (the brief and the documents' texts), knows the trained forms'
keywords, units, update patterns and hearsay markers, and nothing of the held-out ones. Its score on
held-out wordings against its score on trained ones is what the role's language skill is measured by.
"""

from __future__ import annotations

import re
from typing import Any

READ, SOLVE = "read_document", "find_architecture"
ANSWERS = ("submit_architecture", "escalate")
DOC_ID = re.compile(r"\b(?:MAIL|NOTES|PLAT|MEMO)-\d+\b")
# sentences that state no decided figure, by the markers the trained hearsay and noise forms use
SKIP = re.compile(r"overheard|claimed|rumou?r|\bignore\b|\bheard\b|unconfirmed|never approved|nothing official|"
                  r"not our requirement|median|for reference|\bbill\b|set up in|on call|quotes are valid|incident|"
                  r"requests per second|migration window", re.I)
KEYWORDS = {
    "budget": re.compile(r"budget|spend|total cost of ownership|\btco\b|fit in|signed off|finance", re.I),
    "latency": re.compile(r"latency|p95|responses within", re.I),
    "availability": re.compile(r"availabilit|uptime", re.I),
    "skill": re.compile(r"skill", re.I),
}
TAGS = {"eu_residency": re.compile(r"eu data residency|eu_residency|data residency in the eu", re.I),
        "hipaa": re.compile(r"hipaa", re.I), "soc2": re.compile(r"soc ?2", re.I)}
_NUMBER_WORDS = {w: i for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"])}
_NUMBER_WORDS.update({w: 10 * (i + 2) for i, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"])})
_WORDS = r"(?:(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|" \
         r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|" \
         r"thousand|million)[\s-]*)+"
MONEY = re.compile(rf"\$([\d,]+)(k?)|([\d,]+) dollars|({_WORDS})dollars", re.I)
MILLIS = re.compile(rf"(\d+) ?(?:ms|milliseconds)\b|({_WORDS})milliseconds", re.I)
PERCENT = re.compile(r"(\d+(?:\.\d+)?) ?(?:%|percent|out of 100)|\b(0\.\d+)", re.I)


def number_from_words(text: str) -> int:
    total, current = 0, 0
    for w in re.split(r"[\s-]+", text.strip().lower()):
        if w in _NUMBER_WORDS:
            current += _NUMBER_WORDS[w]
        elif w == "hundred":
            current *= 100
        elif w in ("thousand", "million"):
            total += current * (1000 if w == "thousand" else 10**6)
            current = 0
    return total + current


def _values(kind: str, sentence: str) -> list[float]:
    out: list[float] = []
    if kind == "budget":
        for m in MONEY.finditer(sentence):
            if m.group(1):
                out.append(float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1))
            elif m.group(3):
                out.append(float(m.group(3).replace(",", "")))
            else:
                out.append(float(number_from_words(m.group(4))))
    elif kind == "latency":
        for m in MILLIS.finditer(sentence):
            out.append(float(m.group(1)) if m.group(1) else float(number_from_words(m.group(2))))
    else:
        for m in PERCENT.finditer(sentence):
            out.append(float(m.group(1)) / 100 if m.group(1) else float(m.group(2)))
    return out


def _decided(values: list[float], sentence: str) -> float:
    """The decided figure of a sentence: the first of "X, not Y", else the last ("from X to Y",
    "earlier X; now Y")."""
    if len(values) > 1 and re.search(r",\s*not\b", sentence):
        return values[0]
    return values[-1]


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?)])\s+|\n+|^- ", text) if s.strip()]


def documents_to_read(brief: str) -> list[str]:
    return list(dict.fromkeys(DOC_ID.findall(brief)))


def solver_arguments(texts: list[str]) -> dict[str, Any]:
    """find_architecture's arguments from the brief and documents' texts."""
    args: dict[str, Any] = {}
    tags: set[str] = set()
    for text in texts:
        for sentence in sentences(text):
            if SKIP.search(sentence):
                continue
            tags.update(t for t, pattern in TAGS.items() if pattern.search(sentence))
            for kind, pattern in KEYWORDS.items():
                if pattern.search(sentence):
                    values = _values(kind, sentence)
                    if values:
                        args[kind] = _decided(values, sentence)
    out: dict[str, Any] = {}
    if "budget" in args:
        out["budget_usd"] = args["budget"]
    if tags:
        out["required_compliance"] = sorted(tags)
    for kind, key in (("latency", "latency_slo_ms"), ("availability", "availability_slo"), ("skill", "min_avg_skill_fit")):
        if kind in args:
            out[key] = args[kind]
    return out


def answer(solver_output: Any) -> tuple[str, dict[str, Any]]:
    """(tool, arguments) of the answer to give from find_architecture's output."""
    if isinstance(solver_output, dict) and isinstance(solver_output.get("selection"), dict):
        return "submit_architecture", {"selection": solver_output["selection"],
                                       "claimed_tco": solver_output.get("tco_12m_usd", 0), "rationale": "rule"}
    reason = solver_output.get("result") if isinstance(solver_output, dict) else None
    return "escalate", {"reason": str(reason or "no selection meets the requirements")}
