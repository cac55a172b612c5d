"""Risk: build a risk register from a project dossier with planted risks and decoys.

The generator plants risks by setting facts that trigger the rule book, and decoys that look risky
but are mitigated (a single replica with failover, an advisory fixed in the pinned version, ...);
every label follows from the facts by rule (risk_model.py). The dossier is prose (risk_brief.py):
each item's facts in one sentence of many forms, advisories, updates that supersede a fact, hearsay
and unrelated figures, over the brief and documents read with `read_document`. The rule book is a
tool: `assess_risks` takes the items' facts and returns the register they give, so the agent's skill
is to read the facts right; `score_register` scores a register drafted by hand. The verifier is
exact: entries are matched on (type, artifact, item); reward = 0.5 identification F1 + 0.25 scoring
accuracy (1 - |score error| / 12) + 0.25 mitigation quality (acceptable +1, forbidden -1), and 0 when
a claimed score is not likelihood x impact. A dossier with a document that cannot be read cannot be
assessed: the right answer is to escalate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from officegym.core.types import ToolCall
from officegym.envs.roles.base import (
    ESCALATE,
    ESCALATE_SPEC,
    Grade,
    RoleEnvironment,
    Scenario,
    ToolRefusal,
    calculate_tool,
    escalation_grade,
    read_tool,
    tool,
)
from officegym.envs.roles.prose import TRAINED
from officegym.envs.roles.risk_brief import compose
from officegym.envs.roles.risk_model import (  # noqa: F401  (re-exported: baselines and tests use risk.*)
    ARTIFACTS,
    DATA_CLASSES,
    FIELDS,
    LEVELS3,
    MITIGATIONS,
    NAMES,
    REGIONS,
    SEVERITY,
    TIERS,
    TYPE_BY_NAME,
    TYPES,
    RiskType,
    affecting,
    draw,
    findings,
    projected_peak,
    projected_spend,
    rulebook,
    solver_arguments,
    truth_of,
    version_tuple,
)
from officegym.envs.roles.scenario_utils import draw_scenario
from officegym.envs.roles.schema import schema_error

ROLE = "risk"
SUBMIT = "submit_register"
SCORE = "score_register"  # the calculator of a register drafted by hand
SOLVE = "assess_risks"  # the rule book: the items' facts in, the register they give out
READ = "read_document"
CALCULATE = "calculate"
SYSTEM = (
    "You are the Risk agent of an executive decision system. Build the risk register of a project from its "
    "dossier: the brief and the documents it names (read them with {read}). Register every risk the rule book "
    "below defines and nothing else: facts that look risky but are mitigated are not risks. Each item of the "
    "dossier (a component, domain, package, system, store, service, workstream, vendor or incident) has the "
    "facts its area's rule names; use the facts as last decided (an update replaces an earlier value; rumours, "
    "unconfirmed remarks and figures that belong to no fact do not count) in the units the rule book uses. "
    "{solve}(items) applies the rule book to the facts you pass, one object per item with its area, its name "
    "and its facts, and returns the register they give; {score}(entries) scores a register you draft "
    "yourself; {calculate} does arithmetic. Each entry gives risk_type, artifact (the area), item, likelihood "
    "L (1-4), impact I (1-3), score = L x I and one mitigation code; overall_score is the highest entry score "
    "(0 for an empty register). Scores are recomputed: a score that is not L x I, or an overall score that is "
    "not the highest, scores 0. If a document of the dossier cannot be read, call {escalate}(reason) instead. "
    "Finish with exactly one call: {submit}(entries, overall_score) or {escalate}(reason). The first answer "
    "is final.\nRule book:\n{rules}"
)


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int, subset: str = TRAINED) -> Scenario:
    """The scenario of (seed, difficulty); `subset` picks the dossier's wording pool (trained or held
    out): the facts, and so the answer, are the same for both."""
    drawn, rng = draw_scenario(ROLE, seed, difficulty, draw)
    infeasible, truth = drawn["infeasible"], drawn["truth"]
    brief, documents, features, locked = compose(rng, drawn["public"], drawn["kinds"], difficulty, subset, infeasible)
    public = {**drawn["public"], "restricted": locked, "documents": documents}
    lookups = tuple(ToolCall(READ, {"doc_id": d}) for d in documents)
    checks: tuple[ToolCall, ...] = ()
    why = ""
    if infeasible:
        why = f"{locked} cannot be read (restricted), so the dossier cannot be fully assessed"
        answer = ToolCall(ESCALATE, {"reason": why})
    else:
        # the register claimed is what the rule-book tool returned for the dossier's facts
        solver_call = ToolCall(SOLVE, solver_arguments(public))
        out = assess(solver_call.arguments["items"])
        checks = (solver_call,)
        answer = ToolCall(SUBMIT, {"entries": out["entries"], "overall_score": out["overall_score"]})
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=infeasible, inline=not documents, public=public,
        private={"truth": truth, "why_infeasible": why,
                 "optimum_note": f"the dossier holds {len(truth)} risk(s) and every document is readable"},
        brief=brief, lookups=lookups, answer=answer,
        template=f"{ROLE}/{'inline' if not documents else 'documents'}" + ("/escalate" if infeasible else ""),
        checks=checks, subset=subset, wording=tuple(features),
    )


# The items assess_risks takes: each checked against its area's facts
ITEM_SCHEMA = {area: {"type": "object", "required": ["area", "item", *fields],
                      "properties": {"area": {"type": "string"}, "item": {"type": "string", "maxLength": 100},
                                     **fields},
                      "additionalProperties": False} for area, fields in FIELDS.items()}
MAX_ITEMS = 200


def item_error(item: Any, i: int) -> str | None:
    """Why an item of assess_risks cannot be assessed (None when it can)."""
    path = f"items[{i}]"
    if not isinstance(item, dict) or item.get("area") not in FIELDS:
        return f"{path} needs an area, one of {', '.join(FIELDS)}, and the area's facts"
    error = schema_error(item, ITEM_SCHEMA[item["area"]], path)
    if error:
        return f"{error} ({item['area']} facts: {', '.join(FIELDS[item['area']])})"
    versions = [item["version"], *(a["fixed_in"] for a in item["advisories"])] if item["area"] == "dependencies" else []
    for v in versions:
        parts = v.split(".")
        if not 1 <= len(parts) <= 4 or not all(p.isdigit() and len(p) <= 6 for p in parts):
            return f"{path}: {v!r} is not a version such as 2.4.1"
    return None


def assess(items: list[Any]) -> dict[str, Any]:
    """What assess_risks answers: the register the rule book gives for the items' facts (each risk with
    likelihood, impact, score = L x I and an acceptable mitigation), the overall score, and one finding
    per item. ValueError names the first item that cannot be assessed."""
    if len(items) > MAX_ITEMS:
        raise ValueError(f"at most {MAX_ITEMS} items per call")
    seen: set[tuple[str, str]] = set()
    entries, notes = [], []
    for i, item in enumerate(items):
        error = item_error(item, i)
        if error:
            raise ValueError(error)
        area, name = item["area"], item["item"]
        if (area, name) in seen:
            raise ValueError(f"items[{i}]: {name!r} is listed twice under {area}; give each item once, as last decided")
        seen.add((area, name))
        row = {ARTIFACTS[area][1]: name, **{k: item[k] for k in FIELDS[area]}}
        found = findings(area, row)
        for f in found:
            entries.append({"risk_type": f["risk_type"], "artifact": area, "item": name, "likelihood": f["likelihood"],
                            "impact": f["impact"], "score": f["likelihood"] * f["impact"], "mitigation": f["acceptable"][0]})
        looks = [t.name for t in TYPES if t.artifact == area and t.looks_risky(row, None)]
        if found:
            text = "; ".join(f"{f['risk_type']} (L{f['likelihood']} x I{f['impact']})" for f in found)
        elif looks:
            text = f"no risk: looks like {', '.join(looks)} but the rule's condition is not met (mitigated)"
        else:
            text = "no risk"
        notes.append({"area": area, "item": name, "finding": text})
    return {"entries": entries, "overall_score": max((e["score"] for e in entries), default=0), "findings": notes}


def scored(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the score_register calculator returns: the entries with score = likelihood x impact after
    their impact, and the overall score (the highest; 0 for none), in the shape submit_register takes."""
    out = []
    for e in entries:
        row = {}
        for k, v in e.items():
            if k == "score":
                continue
            row[k] = v
            if k == "impact":
                row["score"] = e["likelihood"] * e["impact"]
        out.append(row)
    return {"entries": out, "overall_score": max((r["score"] for r in out), default=0)}


ENTRY = {
    "type": "object",
    "properties": {
        "risk_type": {"type": "string", "enum": [t.name for t in TYPES]},
        "artifact": {"type": "string", "enum": list(ARTIFACTS)},
        "item": {"type": "string"},
        "likelihood": {"type": "integer", "minimum": 1, "maximum": 4},
        "impact": {"type": "integer", "minimum": 1, "maximum": 3},
        "score": {"type": "integer", "minimum": 1, "maximum": 12},
        "mitigation": {"type": "string", "enum": list(MITIGATIONS)},
    },
    "required": ["risk_type", "artifact", "item", "likelihood", "impact", "score", "mitigation"],
    "additionalProperties": False,
}
# a draft entry: an entry of submit_register without its score, which the calculator adds. Only the
# factors are spelled out: repeating the entry's enums would add ~350 prompt tokens to every scenario
DRAFT = {"type": "object", "description": "an entry of " + SUBMIT + " without its score",
         "properties": {k: ENTRY["properties"][k] for k in ("likelihood", "impact")},
         "required": ["likelihood", "impact"]}
# what the calculator checks a draft entry against: submit_register's entry, its score optional
DRAFT_CHECK = {**ENTRY, "required": [k for k in ENTRY["required"] if k != "score"]}
# an item of assess_risks: its area and name here; its facts are checked per area by the tool
ITEM = {"type": "object", "description": "one item: area, item (its name) and the area's facts as the rule book "
        "names them (booleans true/false, numbers in the rule's units, advisories as [{cve, fixed_in, cvss}])",
        "properties": {"area": {"type": "string", "enum": list(ARTIFACTS)}, "item": {"type": "string", "maxLength": 100}},
        "required": ["area", "item"]}
SPECS = (
    tool(READ, "The text of a document (e-mail, meeting notes, ticket) by its id.",
         {"doc_id": {"type": "string"}}, ["doc_id"]),
    tool(SOLVE, "The rule book as a tool: the register the items' facts give (each risk with likelihood, impact, "
         "score and a mitigation, the overall score) and a finding per item. Pass every item of the dossier once, "
         "with its facts as last decided.", {"items": {"type": "array", "maxItems": MAX_ITEMS, "items": ITEM}},
         ["items"]),
    tool(SCORE, "Calculator: the register with each entry's score (likelihood x impact) and the overall score, "
         "ready to submit.", {"entries": {"type": "array", "items": DRAFT}}, ["entries"]),
    tool(CALCULATE, "Arithmetic: + - * / ** and parentheses on numbers, e.g. 4320 / 60.",
         {"expression": {"type": "string", "maxLength": 500}}, ["expression"]),
    tool(SUBMIT, "Submit the risk register. Ends the episode.", {
        "entries": {"type": "array", "items": ENTRY},
        "overall_score": {"type": "integer", "minimum": 0, "maximum": 12},
    }, ["entries", "overall_score"]),
    ESCALATE_SPEC,
)


def _score(s: Scenario, a: dict[str, Any]) -> Any:
    """The calculator: refuses an entry that submit_register would refuse (its spec checks only the
    factors, to keep the prompt short), so the mistake shows before the answer, then scores."""
    for i, e in enumerate(a["entries"]):
        error = schema_error(e, DRAFT_CHECK, f"entries[{i}]")
        if error:
            raise ToolRefusal(f"{error}; fix it before submitting")
    return scored(a["entries"])


def _assess(s: Scenario, a: dict[str, Any]) -> Any:
    try:
        return assess(a["items"])
    except ValueError as exc:
        raise ToolRefusal(str(exc)) from None


READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    READ: lambda s, a: read_tool(s, a, "dossier"), SOLVE: _assess, SCORE: _score, CALCULATE: calculate_tool,
}


def grade(scenario: Scenario, answer: ToolCall) -> Grade:
    decided = escalation_grade(scenario, answer)
    if decided is not None:
        return decided
    entries = answer.arguments["entries"]
    truth = {(t["risk_type"], t["artifact"], t["item"]): t for t in scenario.private["truth"]}
    wrong_claims = [f"{e['item']}: score {e['score']} is not {e['likelihood']} x {e['impact']}"
                    for e in entries if e["score"] != e["likelihood"] * e["impact"]]
    top = max((e["likelihood"] * e["impact"] for e in entries), default=0)
    if answer.arguments["overall_score"] != top:
        wrong_claims.append(f"overall score {answer.arguments['overall_score']} is not the highest entry score {top}")
    matched: dict[tuple[str, str, str], dict[str, Any]] = {}
    false_alarms = []
    for e in entries:
        key = (e["risk_type"], e["artifact"], e["item"])
        if key in truth and key not in matched:
            matched[key] = e
        else:
            false_alarms.append(f"{e['risk_type']} on {e['artifact']}/{e['item']}")
    precision = len(matched) / len(entries) if entries else (1.0 if not truth else 0.0)
    recall = len(matched) / len(truth) if truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    errors = [abs(e["likelihood"] * e["impact"] - truth[k]["likelihood"] * truth[k]["impact"]) for k, e in matched.items()]
    scoring = sum(1 - err / 12 for err in errors) / len(errors) if errors else 0.0
    exact = sum(e["likelihood"] == truth[k]["likelihood"] and e["impact"] == truth[k]["impact"]
                for k, e in matched.items())
    marks = [1 if e["mitigation"] in truth[k]["acceptable"] else (-1 if e["mitigation"] in truth[k]["forbidden"] else 0)
             for k, e in matched.items()]
    mitigation = max(0.0, sum(marks) / len(marks)) if marks else 0.0
    components = {"f1": f1, "precision": precision, "recall": recall, "scoring_accuracy": scoring,
                  "severity_exact": exact / len(matched) if matched else 0.0, "mitigation_quality": mitigation,
                  "claims_ok": float(not wrong_claims)}
    missed = [f"{k[0]} on {k[1]}/{k[2]}" for k in truth if k not in matched]
    evidence = [f"F1 {f1:.3f} (precision {precision:.3f}, recall {recall:.3f}), scoring {scoring:.3f}, "
                f"mitigation {mitigation:.3f}"]
    if missed:
        evidence.append("missed: " + "; ".join(missed))
    if false_alarms:
        evidence.append("false alarms or duplicates: " + "; ".join(false_alarms))
    for k, e in matched.items():
        t = truth[k]
        if (e["likelihood"], e["impact"]) != (t["likelihood"], t["impact"]):
            evidence.append(f"{k[2]}: L{e['likelihood']} x I{e['impact']}, rule gives L{t['likelihood']} x I{t['impact']}")
        if e["mitigation"] in t["forbidden"]:
            evidence.append(f"{k[2]}: {e['mitigation']} is forbidden for {k[0]}")
    if wrong_claims:
        evidence += wrong_claims
        return Grade(0.0, False, "hallucinated_number", components, evidence)
    reward = 0.5 * f1 + 0.25 * scoring + 0.25 * mitigation
    perfect = f1 == 1.0 and exact == len(truth) and all(m == 1 for m in marks)
    return Grade(reward, perfect, "correct" if perfect else "partial", components, evidence)


class RiskEnvironment(RoleEnvironment):
    """Risk register from a dossier in prose, with planted risks and decoys."""

    role = ROLE
    name = "roles/risk"
    answer_tools = (SUBMIT, ESCALATE)
    worded = True
    # 3: the dossier in prose over documents, the rule book as the assess_risks tool
    generator_version = 3

    generator = staticmethod(generate)
    specs = tuple(SPECS)
    reader_table = READERS
    grader = staticmethod(grade)

    def system_prompt(self, scenario: Scenario) -> str:
        return SYSTEM.format(read=READ, solve=SOLVE, score=SCORE, calculate=CALCULATE, submit=SUBMIT,
                             escalate=ESCALATE, rules=rulebook(list(scenario.public["artifacts"])))
