"""The strongest fixed rule written from the Cost brief's training wordings: keyword and regex parsing
of the brief and its documents, feeding the find_plan solver.

It reads only text a model would see (the brief and the documents' texts), knows the trained forms'
keywords, units (money a month or an hour, prices per million or thousand tokens, per vCPU-hour or
vCPU-month), update patterns, hearsay and noise markers, and nothing of the held-out ones. Its score
on held-out wordings against its score on trained ones is what the role's language skill is measured by.
"""

from __future__ import annotations

import re
from typing import Any

from officegym.envs.roles.cost_model import COMPUTE_JOBS, HOURS_PER_MONTH, LLM_STEPS

READ, SOLVE = "read_document", "find_plan"
ANSWERS = ("submit_plan", "escalate")
DOC_ID = re.compile(r"\b(?:MAIL|NOTES|PLAT|MEMO)-\d+\b")
WORKLOAD = re.compile(r"(?<![\w-])(" + "|".join(COMPUTE_JOBS + LLM_STEPS) + r")(?![\w-])")
SKU = re.compile(r"\b(?:nimbus|stratus|cirrus|self-hosted)(?:\.[a-z0-9_-]+)+", re.I)
PROVIDER = re.compile(r"\b(nimbus|stratus|cirrus)\b(?!\.\w)", re.I)
# sentences that state no decided figure, by the markers the trained hearsay, noise and preferences use
SKIP = re.compile(r"overheard|claimed|rumou?r|\bignore\b|\bheard\b|unconfirmed|never approved|nothing official|"
                  r"not our requirement|bill came to|requests a day|requests per second|finops team has|"
                  r"raised its list prices|expired in|booked for|kubernetes clusters|nice to have|would rather|"
                  r"prefers", re.I)
RATE_WORDS = re.compile(r"negotiated|contract|billed to us|secured|list price|agreed", re.I)
DISCOUNT_WORDS = re.compile(r"discount", re.I)
COMMIT_WORDS = re.compile(r"reserved|commit|savings plan", re.I)
LATENCY_WORDS = re.compile(r"latency|answer within|longer than|slower than", re.I)
QUALITY_WORDS = re.compile(r"quality|score", re.I)
PIPELINE_WORDS = re.compile(r"\bllm\b", re.I)
MEAN_WORDS = re.compile(r"\bmean\b|averag", re.I)
SPOT_WORDS = re.compile(r"\bspot\b", re.I)

_NUMBER_WORDS = {w: i for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
     "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"])}
_NUMBER_WORDS.update({w: 10 * (i + 2) for i, w in enumerate(
    ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"])})
_WORDS = (r"(?:\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
          r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
          r"thousand|million)\b[\s-]*)+")
_NUM = r"(\d[\d,]*(?:\.\d+)?)"
QUALITY = re.compile(rf"{_NUM}(?:/100)?|({_WORDS})", re.I)
MILLIS = re.compile(rf"{_NUM} ?(?:ms|milliseconds)\b|({_WORDS})milliseconds", re.I)
COUNT = re.compile(rf"{_NUM} workloads?|({_WORDS})workloads?", re.I)
PERCENT = re.compile(rf"{_NUM} ?(?:%|percent)|({_WORDS})percent", re.I)
MONEY = re.compile(rf"(?:\${_NUM}(k?)|{_NUM} dollars|({_WORDS})dollars) (a month|per month|an hour|per hour)", re.I)
PRICE = re.compile(rf"\${_NUM} per (million tokens|1M tokens|thousand tokens|vCPU-hour|vCPU-month)", re.I)
PRICE_SCALE = {"million tokens": 1.0, "1m tokens": 1.0, "thousand tokens": 1000.0, "vcpu-hour": 1.0,
               "vcpu-month": 1 / HOURS_PER_MONTH}


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


def _number(digits: str | None, spelled: str | None) -> float:
    return float(digits.replace(",", "")) if digits else float(number_from_words(spelled or ""))


def _plain(pattern: re.Pattern[str], sentence: str) -> list[float]:
    return [_number(m.group(1), m.group(2)) for m in pattern.finditer(sentence)]


def _money(sentence: str) -> list[float]:
    """Monthly dollars: an hourly figure counts 730 hours."""
    out = []
    for m in MONEY.finditer(sentence):
        if m.group(1):
            value = float(m.group(1).replace(",", "")) * (1000 if m.group(2) else 1)
        else:
            value = _number(m.group(3), m.group(4))
        out.append(value * (HOURS_PER_MONTH if "hour" in m.group(5).lower() else 1))
    return out


def _decided(values: list[float], sentence: str) -> float:
    """The decided figure of a sentence: the first of "X, not Y", else the last ("from X to Y",
    "earlier X; now Y")."""
    if len(values) > 1 and re.search(r",\s*not\b", sentence):
        return values[0]
    return values[-1]


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?)])\s+|\n+|^- ", text) if s and s.strip()]


def documents_to_read(brief: str) -> list[str]:
    return list(dict.fromkeys(DOC_ID.findall(brief)))


def _read_sentence(sentence: str, out: dict[str, Any]) -> None:
    """Record what one sentence states into `out` (later statements overwrite earlier ones)."""
    sku, provider, workload = SKU.search(sentence), PROVIDER.search(sentence), WORKLOAD.search(sentence)
    if sku and RATE_WORDS.search(sentence):
        prices = [float(m.group(1).replace(",", "")) * PRICE_SCALE[m.group(2).lower()] for m in PRICE.finditer(sentence)]
        if prices:
            out["negotiated_prices"][sku.group(0).lower()] = prices[0]
        return
    if provider and DISCOUNT_WORDS.search(sentence):
        threshold, rate = _money(sentence), _plain(PERCENT, sentence)
        if threshold and rate:
            out["volume_discounts"][provider.group(1).lower()] = {"threshold_usd": threshold[0], "rate": rate[0] / 100}
        return
    if provider and COMMIT_WORDS.search(sentence):
        values = _money(sentence)
        if values:
            out["reserved_minimums_usd"][provider.group(1).lower()] = _decided(values, sentence)
        return
    if workload:
        if LATENCY_WORDS.search(sentence):
            values = _plain(MILLIS, sentence)
            if values:
                out["latency_limits_ms"][workload.group(1)] = _decided(values, sentence)
        elif QUALITY_WORDS.search(sentence):
            values = _plain(QUALITY, sentence)
            if values:
                out["quality_floors"][workload.group(1)] = _decided(values, sentence)
        return
    for key, words, pattern in (("llm_pipeline_latency_ms", PIPELINE_WORDS, MILLIS),
                                ("min_mean_quality", MEAN_WORDS, QUALITY), ("max_spot_workloads", SPOT_WORDS, COUNT)):
        if words.search(sentence):
            values = _plain(pattern, sentence)
            if values:
                out[key] = _decided(values, sentence)
            return


def solver_arguments(texts: list[str]) -> dict[str, Any]:
    """find_plan's arguments from the brief and documents' texts."""
    out: dict[str, Any] = {k: {} for k in ("quality_floors", "latency_limits_ms", "volume_discounts",
                                           "reserved_minimums_usd", "negotiated_prices")}
    for text in texts:
        for sentence in sentences(text):
            if not SKIP.search(sentence):
                _read_sentence(sentence, out)
    if "max_spot_workloads" in out:
        out["max_spot_workloads"] = int(out["max_spot_workloads"])
    # values the schema refuses (a misread figure) are left out rather than sent
    floors = out["quality_floors"]
    out["quality_floors"] = {w: v for w, v in floors.items() if 0 <= v <= 100}
    if not 0 <= out.get("min_mean_quality", 0) <= 100:
        del out["min_mean_quality"]
    return {k: v for k, v in out.items() if v != {}}


def answer(solver_output: Any) -> tuple[str, dict[str, Any]]:
    """(tool, arguments) of the answer to give from find_plan's output."""
    if isinstance(solver_output, dict) and isinstance(solver_output.get("plan"), dict):
        return "submit_plan", {"plan": solver_output["plan"], "claimed_monthly_cost": solver_output.get("total_usd", 0)}
    reason = solver_output.get("result") if isinstance(solver_output, dict) else None
    return "escalate", {"reason": str(reason or "no plan meets the requirements")}
