"""The strongest fixed rule written from the ReconcileGPT brief's training wordings: keyword and regex
parsing of the brief and its documents, feeding the solver tool.

It reads only text a model would see (the brief with the council's names, and the documents' texts),
knows the trained forms' keywords, score names, units, update patterns and the markers of hearsay,
soft preferences and unrelated figures, and nothing of the held-out ones. Its score on held-out
wordings against its score on trained ones is what the role's language skill is measured by.
"""

from __future__ import annotations

import re
from typing import Any

from officegym.envs.roles.cto_rule import _WORDS, number_from_words

READ, SOLVE = "read_document", "find_agreement"
ANSWERS = ("submit_resolution", "escalate")
DOC_ID = re.compile(r"\b(?:MAIL|NOTES|PLAT|MEMO)-\d+\b")
COUNCIL = re.compile(r"^The (.+?) agents of ", re.M)
NAME = re.compile(r"\b(CTO|COO|Cost|Risk|Legal)\b")
# sentences that state no decided figure, by the markers the trained hearsay, soft-preference and
# noise forms use (and the brief's own framing)
SKIP = re.compile(
    r"overheard|claimed|rumou?r|\bignore\b|\bheard\b|unconfirmed|never approved|nothing official|not in any memo|"
    r"slide deck|superseded before|gossip|would prefer|not a veto|can live with|not a hard constraint|preference|"
    r"not keen|would rather|will not block|waived|grumbles|if needed|steering committee|contracts|weeks late|"
    r"sat on the council|action items|onboarding|in total|tickets|would be nice|nobody minds|not a rule|list_plans|"
    r"sets out|not stated|read_document|choose the acceptable", re.I)
RULES = (("nash", re.compile(r"nash|product of gains", re.I)),
         ("maxmin", re.compile(r"max-min|egalitarian|(?:smallest|minimum) normalised", re.I)),
         ("utilitarian", re.compile(r"utilitarian|sum of normalised|sum the normalised", re.I)))
BARGAINING = re.compile(r"bargain|exponent", re.I)
STATUS_QUO = re.compile(r"status quo|without an agreement|fallback|walks away|nothing is agreed", re.I)
VETO = re.compile(r"veto|reject|cannot accept|hard constraint|\bblock", re.I)
WEIGHT = re.compile(r"weight|weighs|counts", re.I)
SCORES = {
    "delivery_speed": r"delivery speed|speed of delivery|delivery_speed", "cost_savings": r"cost savings|savings|cost_savings",
    "risk_reduction": r"risk reduction|reducing risk|risk_reduction", "scope_coverage": r"scope coverage|\bscope\b|scope_coverage",
    "compliance": r"compliance",
}
SCORE = re.compile("|".join(f"(?P<{k}>{v})" for k, v in SCORES.items()), re.I)
VENDOR = re.compile(r"\b(vendor-[abc]|in-house)\b", re.I)
BELOW = re.compile(r"\b(?:below|under|less than|lower than|at least)\b", re.I)
ABOVE = re.compile(r"\b(?:above|over|more than|higher than|at most)\b", re.I)
MONEY = re.compile(r"\$([\d,]+)(k?)")
WEEKS = re.compile(rf"\b(\d+|{_WORDS})\s*weeks\b", re.I)
NUMBER = re.compile(rf"(?<![\w$,])(-?\d+(?:\.\d+)?)(?!\w|,\d)|\b({_WORDS})\b", re.I)


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|(?<=[.!?]\))\s+|\n+", text)
    return [p.removeprefix("- ").strip() for p in parts if p.strip()]


def documents_to_read(brief: str) -> list[str]:
    return list(dict.fromkeys(DOC_ID.findall(brief)))


def _numbers(sentence: str) -> list[float]:
    out: list[float] = []
    for digits, wordy in NUMBER.findall(sentence):
        if digits:
            out.append(float(digits))
        elif wordy.strip(" -"):
            out.append(float(number_from_words(wordy)))
    return out


def _decided(values: list[float], sentence: str) -> float:
    """The decided figure: the first of "X, not Y", else the last ("from X to Y", "said X; now Y")."""
    if len(values) > 1 and re.search(r",\s*not\b", sentence):
        return values[0]
    return values[-1]


def _whole(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _veto(sentence: str) -> dict[str, Any] | None:
    vendor = VENDOR.search(sentence)
    if vendor:
        return {"field": "vendor", "equals": vendor.group(1).lower()}
    side = "below" if BELOW.search(sentence) else "above" if ABOVE.search(sentence) else None
    if side is None:
        return None
    if "budget" in sentence.lower():
        money = MONEY.search(sentence)
        if not money:
            return None
        value = float(money.group(1).replace(",", ""))
        return {"field": "budget_k_usd", side: _whole(value if money.group(2) else value / 1000)}
    if "timeline" in sentence.lower():
        weeks = WEEKS.search(sentence)
        if not weeks:
            return None
        text = weeks.group(1)
        return {"field": "timeline_weeks", side: int(text) if text.isdigit() else number_from_words(text)}
    score, values = SCORE.search(sentence), _numbers(sentence)
    if not score or not values:
        return None
    return {"field": score.lastgroup, side: _whole(values[-1])}


def solver_arguments(texts: list[str]) -> dict[str, Any]:
    """find_agreement's arguments from the brief and documents' texts."""
    council = COUNCIL.search(texts[0]) if texts else None
    names = NAME.findall(council.group(1)) if council else []
    rule = "utilitarian"
    weights: dict[str, dict[str, int | float]] = {n: {} for n in names}
    status_quo: dict[str, int | float] = {}
    bargaining: dict[str, int] = {}
    vetoes: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for text in texts:
        for sentence in sentences(text):
            if SKIP.search(sentence):
                continue
            who = [n for n in NAME.findall(sentence) if n in weights]
            if not who:
                found = next((name for name, pattern in RULES if pattern.search(sentence)), None)
                rule = found or rule
                continue
            s = who[0]
            values = _numbers(sentence)
            if BARGAINING.search(sentence) and values:
                bargaining[s] = int(_decided(values, sentence))
            elif STATUS_QUO.search(sentence) and values:
                status_quo[s] = _whole(_decided(values, sentence))
            elif VETO.search(sentence):
                veto = _veto(sentence)
                if veto and veto not in vetoes[s]:
                    vetoes[s].append(veto)
            elif WEIGHT.search(sentence) and values:
                score = SCORE.search(sentence)
                if score:
                    weights[s][score.lastgroup] = _whole(_decided(values, sentence))  # type: ignore[assignment]
    stakeholders = []
    for n in names:
        item: dict[str, Any] = {"name": n, "weights": weights[n], "status_quo": status_quo.get(n, 0)}
        if n in bargaining and 1 <= bargaining[n] <= 5:
            item["bargaining_weight"] = bargaining[n]
        if vetoes[n]:
            item["vetoes"] = vetoes[n]
        stakeholders.append(item)
    return {"rule": rule, "stakeholders": stakeholders}


def answer(solver_output: Any) -> tuple[str, dict[str, Any]]:
    """(tool, arguments) of the answer to give from find_agreement's output."""
    if isinstance(solver_output, dict) and isinstance(solver_output.get("plan_id"), str):
        return "submit_resolution", {"plan_id": solver_output["plan_id"], "claimed_score": solver_output.get("score", 0),
                                     "conflicts": solver_output.get("conflicts", []),
                                     "binding_vetoes": solver_output.get("binding_vetoes", []),
                                     "tradeoff_note": "fixed rule"}
    reason = solver_output.get("result") if isinstance(solver_output, dict) else None
    return "escalate", {"reason": str(reason or "no plan is acceptable")}
