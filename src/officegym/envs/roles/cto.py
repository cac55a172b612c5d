"""CTO: pick one technology per component at the lowest 12-month cost that meets every requirement.

The requirements (a budget on 12-month TCO = 12 x monthly + one-time migration; compliance tags every
option must carry; a p95 latency SLO summed over the critical path; an availability SLO on the
product of availabilities; a minimum average skill fit) are stated in prose (cto_brief.py), over the
brief and documents read with `read_document`. The search is a tool: `find_architecture` takes the
constraints as arguments and returns the cheapest selection meeting them, so the agent's skill is to
read the requirements right. Every stated requirement binds (leaving it out changes the optimum and
breaks it). The verifier is exact: feasibility x (0.5 [optimal] + 0.5 optimum / TCO), and 0 when the
claimed TCO is wrong. In 7.5% of scenarios no selection meets every requirement: escalate.
"""

from __future__ import annotations

from collections.abc import Callable
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
    claim_matches,
    escalation_grade,
    optimality_reward,
    read_tool,
    tool,
)
from officegym.envs.roles.cto_brief import compose
from officegym.envs.roles.cto_model import (  # noqa: F401  (re-exported: baselines and tests use cto.*)
    AVAILABILITIES,
    COMPONENTS,
    FAMILIES,
    TAGS,
    VENDORS,
    _draw,
    binds,
    draw_option,
    estimate,
    evaluate,
    find,
    solve,
    solver_arguments,
    tco,
)
from officegym.envs.roles.prose import TRAINED
from officegym.envs.roles.scenario_utils import draw_scenario, money

ROLE = "cto"
SUBMIT = "submit_architecture"
ESTIMATE = "estimate_tco"  # the calculator of a selection's TCO
SOLVE = "find_architecture"  # the solver: constraints in, the cheapest selection meeting them out
READ = "read_document"
CALCULATE = "calculate"
SYSTEM = (
    "You are the CTO agent of an executive decision system. You choose one technology option for each "
    "component of a system so that every hard requirement holds and the 12-month total cost of ownership "
    "(TCO = 12 x monthly fee + one-time migration cost, summed over the chosen options) is as low as possible. "
    "The requirements are written in the brief and in the documents it names (read_document): use the figures "
    "that were decided, not superseded ones, rumours or figures that belong to no requirement. "
    "find_architecture(budget_usd, required_compliance, latency_slo_ms, availability_slo, min_avg_skill_fit) "
    "returns the cheapest selection meeting the constraints you pass; calculate does arithmetic. "
    "Finish with exactly one call: {submit}(selection, claimed_tco, rationale), where selection maps every "
    "component to an option id and claimed_tco is the selection's 12-month TCO in dollars (it is recomputed; "
    "a wrong figure scores 0). If no selection meets every requirement, call {escalate}(reason) instead. "
    "The first answer is final."
)


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int, subset: str = TRAINED) -> Scenario:
    """The scenario of (seed, difficulty); `subset` picks the brief's wording pool (trained or held
    out): the numbers, and so the answer, are the same for both."""
    drawn, rng = draw_scenario(ROLE, seed, difficulty, _draw)
    public = drawn["public"]
    kinds = ["budget", *drawn["families"]]
    rng.shuffle(kinds)
    brief, documents, features = compose(rng, public, kinds, difficulty, subset)
    public = {**public, "documents": documents}
    lookups = tuple(ToolCall(READ, {"doc_id": d}) for d in documents)
    solver_call = ToolCall(SOLVE, solver_arguments(public["requirements"]))
    result = find(public, solver_call.arguments)
    if drawn["infeasible"]:
        answer = ToolCall(ESCALATE, {"reason": result["result"]})
        note = ""
    else:
        # the claimed TCO is what the solver returned for its selection
        answer = ToolCall(SUBMIT, {"selection": result["selection"], "claimed_tco": result["tco_12m_usd"],
                                   "rationale": "cheapest selection that meets every requirement"})
        note = f"e.g. {drawn['selection']} with 12-month TCO {money(drawn['optimum'])}"
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=drawn["infeasible"], inline=not documents,
        public=public,
        private={"optimum": drawn["optimum"], "selection": drawn["selection"], "why_infeasible": drawn["why"],
                 "optimum_note": note},
        brief=brief, lookups=lookups, answer=answer,
        template=f"{ROLE}/{'inline' if not documents else 'documents'}" + ("/escalate" if drawn["infeasible"] else ""),
        checks=(solver_call,), subset=subset, wording=tuple(features),
    )


SELECTION = {"type": "object", "description": "component -> option id, one entry per component",
             "additionalProperties": {"type": "string"}}
SPECS = (
    tool("list_components", "The components to choose for, whether each is on the latency critical path, "
         "and their option ids."),
    tool("list_options", "The data sheets of every option for one component.",
         {"component": {"type": "string"}}, ["component"]),
    tool("get_option", "The data sheet of one option.", {"option_id": {"type": "string"}}, ["option_id"]),
    tool("check_compatibility", "Whether two options can be combined.",
         {"option_a": {"type": "string"}, "option_b": {"type": "string"}}, ["option_a", "option_b"]),
    tool(ESTIMATE, "Calculator: the 12-month TCO (12 x monthly + migration) of some options.",
         {"selection": SELECTION}, ["selection"]),
    tool(READ, "The text of a document (e-mail, meeting notes, ticket) by its id.",
         {"doc_id": {"type": "string"}}, ["doc_id"]),
    tool(SOLVE, "Solver: the cheapest selection (lowest 12-month TCO) meeting the constraints passed, with its "
         "figures, or why there is none. Pass every requirement the brief states; leave out what it does not.", {
             "budget_usd": {"type": "number", "minimum": 0, "description": "12-month TCO budget in dollars"},
             "required_compliance": {"type": "array", "items": {"type": "string", "enum": list(TAGS)},
                                     "description": "certifications every option must carry"},
             "latency_slo_ms": {"type": "number", "minimum": 0,
                                "description": "max sum of p95 latencies over the critical path, in ms"},
             "availability_slo": {"type": "number", "minimum": 0, "maximum": 100,
                                  "description": "min product of availabilities, e.g. 0.999 (or 99.9)"},
             "min_avg_skill_fit": {"type": "number", "minimum": 0, "maximum": 100,
                                   "description": "min average skill fit, e.g. 0.6 (or 60)"},
         }),
    tool(CALCULATE, "Arithmetic: + - * / ** and parentheses on numbers, e.g. 0.12 * 1000.",
         {"expression": {"type": "string", "maxLength": 500}}, ["expression"]),
    tool(SUBMIT, "Submit the final architecture. Ends the episode.", {
        "selection": SELECTION,
        "claimed_tco": {"type": "number", "description": "the selection's 12-month TCO in dollars"},
        "rationale": {"type": "string", "maxLength": 2000},
    }, ["selection", "claimed_tco"]),
    ESCALATE_SPEC,
)


def _option(scenario: Scenario, option_id: Any) -> dict[str, Any]:
    option = scenario.public["options"].get(option_id)
    if option is None:
        raise ToolRefusal(f"unknown option {option_id!r}")
    return option


def _list_components(s: Scenario, a: dict[str, Any]) -> Any:
    return s.public["components"]


def _list_options(s: Scenario, a: dict[str, Any]) -> Any:
    for c in s.public["components"]:
        if c["component"] == a["component"]:
            return [s.public["options"][o] for o in c["options"]]
    known = ", ".join(c["component"] for c in s.public["components"])
    raise ToolRefusal(f"unknown component {a['component']!r}; components: {known}")


def _check(s: Scenario, a: dict[str, Any]) -> Any:
    first, second = _option(s, a["option_a"]), _option(s, a["option_b"])
    return {"compatible": second["id"] not in first["incompatible_with"]}


def _estimate(s: Scenario, a: dict[str, Any]) -> Any:
    for o in a["selection"].values():
        _option(s, o)  # an unknown id is refused
    return estimate(s.public, a["selection"])


def _find(s: Scenario, a: dict[str, Any]) -> Any:
    if "availability_slo" in a and a["availability_slo"] <= 0:
        raise ToolRefusal("availability_slo must be above 0 (a fraction such as 0.999, or a percentage)")
    return find(s.public, a)


READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    "list_components": _list_components, "list_options": _list_options,
    "get_option": lambda s, a: _option(s, a["option_id"]), "check_compatibility": _check, ESTIMATE: _estimate,
    READ: read_tool, SOLVE: _find, CALCULATE: calculate_tool,
}


def grade(scenario: Scenario, answer: ToolCall) -> Grade:
    decided = escalation_grade(scenario, answer)
    if decided is not None:
        return decided
    public = scenario.public
    selection, claimed = answer.arguments["selection"], answer.arguments["claimed_tco"]
    comps = [c["component"] for c in public["components"]]
    problems = [f"no option chosen for {c}" for c in comps if c not in selection]
    problems += [f"{c!r} is not a component" for c in selection if c not in comps]
    for c, o in selection.items():
        if c in comps and (o not in public["options"] or public["options"][o]["component"] != c):
            problems.append(f"{o!r} is not a {c} option")
    if problems:
        return Grade(0.0, False, "invalid_answer", {"feasible": 0.0}, problems)
    figures = evaluate(public, selection)
    optimum = scenario.private["optimum"]
    feasible = not figures["violations"]
    claims_ok = claim_matches(claimed, figures["tco"])
    quality = optimum / figures["tco"] if figures["tco"] > 0 else 0.0
    optimal = feasible and figures["tco"] <= optimum * (1 + 1e-9)
    components = {"feasible": float(feasible), "optimal": float(optimal), "quality_ratio": quality if feasible else 0.0,
                  "claims_ok": float(claims_ok), "tco": float(figures["tco"]), "optimum_tco": float(optimum)}
    evidence = [text for _, text in figures["violations"]]
    evidence.append(f"TCO {money(figures['tco'])} vs optimum {money(optimum)} (ratio {quality:.4f})")
    if not claims_ok:
        evidence.append(f"claimed TCO {claimed} but the selection's TCO is {figures['tco']}")
        return Grade(0.0, False, "hallucinated_number", components, evidence)
    if not feasible:
        return Grade(0.0, False, "infeasible", components, evidence)
    reward = optimality_reward(feasible, quality, optimal)
    return Grade(reward, optimal, "correct" if optimal else "suboptimal", components, evidence)


class CTOEnvironment(RoleEnvironment):
    """Architecture selection under budget, compliance, latency, availability and skill requirements."""

    role = ROLE
    name = "roles/cto"
    answer_tools = (SUBMIT, ESCALATE)
    worded = True
    # 2: the requirements in prose over documents, the solver as a tool, every requirement binding
    generator_version = 2

    generator = staticmethod(generate)
    specs = tuple(SPECS)
    reader_table = READERS
    system_template = SYSTEM
    grader = staticmethod(grade)
