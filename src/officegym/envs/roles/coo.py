"""COO: staff a project portfolio to maximise value minus labour cost under the staffing rules.

Each project is done by one person who has its skill, or left unstaffed. The rules (hour capacities
and project limits of people, must-do projects, pairs that cannot share a person, prerequisites and
deadlines) are stated in prose (coo_brief.py), over the brief and documents read with
`read_document`; the portfolio's data (skills, effort hours, values, rates, weekly hours) is served
by list_projects and list_staff. The search is a tool: `find_staffing` takes the rules as arguments
and returns the best allocation keeping them, so the agent's skill is to read the rules right. Every
stated rule binds (leaving it out gives a better allocation that breaks it). The verifier is exact:
feasibility x (0.5 [optimal] + 0.5 value / optimum); at levels 1-3 an answer that breaks rules still
earns 0.25 x (share of rule instances kept) x value ratio, as a curriculum crutch; 0 when the claimed
value is more than 0.5% off. In 7.5% of scenarios no allocation keeps every rule: escalate.
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
from officegym.envs.roles.coo_brief import compose
from officegym.envs.roles.coo_model import (  # noqa: F401  (re-exported: baselines and tests use coo.*)
    KINDS,
    PEOPLE,
    PROJECTS,
    SKILLS,
    binding,
    draw,
    empty,
    optimise,
    problem_of,
    rules_of,
    solver_arguments,
)
from officegym.envs.roles.prose import TRAINED
from officegym.envs.roles.scenario_utils import draw_scenario, money
from officegym.envs.roles.solvers import meets_deadlines

ROLE = "coo"
SUBMIT = "submit_allocation"
ESTIMATE = "estimate_value"  # the calculator of any allocation's value
SOLVE = "find_staffing"  # the solver: rules in, the best allocation keeping them out
READ = "read_document"
CALCULATE = "calculate"
CRUTCH_UNTIL = 3  # levels where an allocation that breaks rules still earns a little

SYSTEM = (
    "You are the COO agent of an executive decision system. You staff a portfolio of projects: each project is "
    "done entirely by one person who has the project's skill, or it is left unstaffed. Maximise the total value "
    "of the staffed projects minus their labour cost (the person's hourly cost x the project's effort hours) "
    "while keeping every staffing rule: people's hour capacities and project limits, must-do projects, projects "
    "that cannot share a person, prerequisites (a project staffed only if another is) and deadlines. The rules "
    "are written in the brief and in the documents it names (read_document): use the rules that were decided, "
    "not superseded figures, rumours or figures that belong to no rule. A deadline of week w means done by the "
    "end of week w (day 7w); a person works their projects one after another, earliest deadline first, at their "
    "weekly hours. find_staffing(must_do, cannot_share, prerequisites, deadlines, capacity_hours, max_projects) "
    "returns the best allocation that keeps the rules you pass; estimate_value and calculate do arithmetic. "
    "Finish with exactly one call: {submit}(assignments, unstaffed, claimed_value), listing every project once, "
    "either in assignments (project and staff ids) or in unstaffed; claimed_value is the allocation's value minus "
    "labour cost in dollars (it is recomputed; a wrong figure scores 0). If no allocation can keep every rule, "
    "call {escalate}(reason) instead. The first answer is final."
)


# -- the verifier's figures


def estimate(public: dict[str, Any], assign: dict[str, str | None]) -> dict[str, int]:
    """What the estimate_value calculator returns for project -> staff id (None: unstaffed) over
    known ids: the staffed projects' value, their labour cost (hourly cost x effort hours), and value
    minus labour cost, the figure an answer claims and the verifier recomputes."""
    projects = {p["id"]: p for p in public["projects"]}
    staff = {s["id"]: s for s in public["staff"]}
    value = labour = 0
    for pid, sid in assign.items():
        if sid is not None:
            value += projects[pid]["value_usd"]
            labour += staff[sid]["hourly_cost_usd"] * projects[pid]["effort_hours"]
    return {"net_value_usd": value - labour, "value_usd": value, "labour_cost_usd": labour}


def check(public: dict[str, Any], assign: dict[str, str | None]) -> dict[str, Any]:
    """Value, labour cost and every rule instance (kept or broken) of a complete allocation."""
    projects = {p["id"]: p for p in public["projects"]}
    staff = {s["id"]: s for s in public["staff"]}
    problem = problem_of(public)
    sindex = {s["id"]: i for i, s in enumerate(public["staff"])}
    pindex = {p["id"]: i for i, p in enumerate(public["projects"])}
    kept, broken = 0, []
    members: dict[str, list[str]] = {s: [] for s in staff}
    for pid, sid in assign.items():
        p = projects[pid]
        if sid is None:
            continue
        members[sid].append(pid)
        if p["skill"] in staff[sid]["skills"]:
            kept += 1
        else:
            broken.append(f"{sid} lacks the {p['skill']} skill for {pid}")
        if p.get("requires"):
            if assign.get(p["requires"]) is not None:
                kept += 1
            else:
                broken.append(f"{pid} requires {p['requires']}, which is unstaffed")
    for p in public["projects"]:
        if p["must_do"]:
            if assign.get(p["id"]) is not None:
                kept += 1
            else:
                broken.append(f"must-do project {p['id']} is unstaffed")
        for q in p["cannot_share_staff_with"]:
            if p["id"] < q:
                if assign.get(p["id"]) is not None and assign.get(p["id"]) == assign.get(q):
                    broken.append(f"{p['id']} and {q} cannot share {assign[q]}")
                else:
                    kept += 1
    for sid, pids in members.items():
        s = staff[sid]
        hours = sum(projects[p]["effort_hours"] for p in pids)
        if s.get("capacity_hours") is not None:
            if hours <= s["capacity_hours"]:
                kept += 1
            else:
                broken.append(f"{sid} is booked {hours} h, over the {s['capacity_hours']} h capacity")
        if s.get("max_projects") is not None:
            if len(pids) <= s["max_projects"]:
                kept += 1
            else:
                broken.append(f"{sid} has {len(pids)} projects, over the maximum of {s['max_projects']}")
        if any(projects[p].get("deadline_week") is not None for p in pids):
            if meets_deadlines(problem, sindex[sid], [pindex[p] for p in pids]):
                kept += 1
            else:
                broken.append(f"{sid} cannot finish {', '.join(sorted(pids))} by their deadlines")
    total = kept + len(broken)
    value = estimate(public, assign)["net_value_usd"]
    return {"value": value, "violations": broken, "satisfied_share": kept / total if total else 1.0}


# -- the solver tool


def _resolver(rows: list[dict[str, Any]], what: str):
    """Ids or names (case and spaces forgiven) to ids; ToolRefusal naming the known ones."""
    known = {}
    for row in rows:
        known[row["id"].lower()] = row["id"]
        known[" ".join(row["name"].lower().split())] = row["id"]

    def resolve(ref: Any) -> str:
        key = " ".join(ref.lower().split()) if isinstance(ref, str) else None
        if key not in known:
            listing = ", ".join(f"{r['id']} {r['name']}" for r in rows)
            raise ToolRefusal(f"unknown {what} {str(ref)[:60]!r}; {what}s: {listing}")
        return known[key]

    return resolve


def rules_from_arguments(public: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """find_staffing's arguments (schema-checked) as rules; ToolRefusal for unknown names, a rule
    given twice with different figures, a pair of one project, two prerequisites of one project."""
    project = _resolver(public["projects"], "project")
    person = _resolver(public["staff"], "person")
    req = empty()
    req["must_do"] = {project(p) for p in args.get("must_do", ())}
    for pair in args.get("cannot_share", ()):
        a, b = project(pair[0]), project(pair[1])
        if a == b:
            raise ToolRefusal(f"cannot_share pairs two different projects; got {a} twice")
        req["exclusive"].add(tuple(sorted((a, b))))
    for item in args.get("prerequisites", ()):
        p, q = project(item["project"]), project(item["requires"])
        if p == q:
            raise ToolRefusal(f"{p} cannot be its own prerequisite")
        if req["prerequisite"].get(p, q) != q:
            raise ToolRefusal(f"one prerequisite per project: {p} is given {req['prerequisite'][p]} and {q}")
        req["prerequisite"][p] = q
    for key, kind, resolve in (("deadlines", "deadline", project), ("capacity_hours", "capacity", person),
                               ("max_projects", "max_projects", person)):
        for ref, figure in args.get(key, {}).items():
            target = resolve(ref)
            figure = int(figure) if kind != "capacity" else figure
            if req[kind].get(target, figure) != figure:
                raise ToolRefusal(f"{key} gives {target} two different figures")
            req[kind][target] = figure
    return req


def find(public: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    """What find_staffing answers: the best allocation under the rules given (skills always hold),
    with its figures, or that there is none."""
    _value, best = optimise(public, rules_from_arguments(public, args))
    if best is None:
        return {"assignments": None, "result": "no allocation keeps every rule passed"}
    ids = [p["id"] for p in public["projects"]]
    out = {"assignments": [{"project": p, "staff": best[p]} for p in ids if best[p] is not None],
           "unstaffed": [p for p in ids if best[p] is None]}
    return {**out, **estimate(public, best)}


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int, subset: str = TRAINED) -> Scenario:
    """The scenario of (seed, difficulty); `subset` picks the brief's wording pool (trained or held
    out): the numbers, and so the answer, are the same for both."""
    drawn, rng = draw_scenario(ROLE, seed, difficulty, draw)
    brief, documents, features = compose(rng, drawn["public"], drawn["rules"], drawn["decoys"], difficulty, subset)
    public = {**drawn["public"], "documents": documents}
    lookups = tuple(ToolCall(READ, {"doc_id": d}) for d in documents)
    solver_call = ToolCall(SOLVE, solver_arguments(public))
    result = find(public, solver_call.arguments)
    if drawn["infeasible"]:
        answer = ToolCall(ESCALATE, {"reason": result["result"]})
        note = ""
    else:
        # the claimed value is what the solver returned for its allocation
        answer = ToolCall(SUBMIT, {"assignments": result["assignments"], "unstaffed": result["unstaffed"],
                                   "claimed_value": result["net_value_usd"]})
        note = f"the best allocation is worth {money(drawn['optimum'])}"
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=drawn["infeasible"], inline=not documents,
        public=public,
        private={"optimum": drawn["optimum"], "why_infeasible": drawn["why"], "optimum_note": note,
                 "rules": drawn["rules"], "decoys": drawn["decoys"]},
        brief=brief, lookups=lookups, answer=answer,
        template=f"{ROLE}/{'inline' if not documents else 'documents'}" + ("/escalate" if drawn["infeasible"] else ""),
        checks=(solver_call,), subset=subset, wording=tuple(features),
    )


REF = {"type": "string", "maxLength": 100}
ASSIGNMENTS = {"type": "array", "items": {
    "type": "object", "properties": {"project": {"type": "string"}, "staff": {"type": "string"}},
    "required": ["project", "staff"], "additionalProperties": False}}
SPECS = (
    tool("list_projects", "Every project: id, name, skill, effort hours and value."),
    tool("list_staff", "Every person: id, name, skills, hourly cost and weekly hours."),
    tool("get_skill_matrix", "The skills of every person."),
    tool(ESTIMATE, "Calculator: the value, the labour cost (hourly cost x effort hours) and the value minus labour "
         "cost of some assignments (projects left out are unstaffed).", {"assignments": ASSIGNMENTS}, ["assignments"]),
    tool(READ, "The text of a document (e-mail, meeting notes, ticket) by its id.",
         {"doc_id": {"type": "string"}}, ["doc_id"]),
    tool(SOLVE, "Solver: the allocation with the highest value minus labour cost that keeps the rules passed (and "
         "the skills), with its figures, or that there is none. Projects and people by id or name. Pass every rule "
         "the brief states; leave out what it does not.", {
             "must_do": {"type": "array", "items": REF, "maxItems": 50, "description": "projects that must be staffed"},
             "cannot_share": {"type": "array", "maxItems": 50, "description": "pairs of projects that need two people",
                              "items": {"type": "array", "items": REF, "minItems": 2, "maxItems": 2}},
             "prerequisites": {"type": "array", "maxItems": 50,
                               "description": "project may be staffed only if `requires` is staffed",
                               "items": {"type": "object", "properties": {"project": REF, "requires": REF},
                                         "required": ["project", "requires"], "additionalProperties": False}},
             "deadlines": {"type": "object", "description": "project -> the week by whose end it must be done",
                           "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 52}},
             "capacity_hours": {"type": "object", "description": "person -> most hours of project work",
                                "additionalProperties": {"type": "number", "minimum": 0, "maximum": 10000}},
             "max_projects": {"type": "object", "description": "person -> most projects",
                              "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 100}},
         }),
    tool(CALCULATE, "Arithmetic: + - * / ** and parentheses on numbers, e.g. 15 * 8.",
         {"expression": {"type": "string", "maxLength": 500}}, ["expression"]),
    tool(SUBMIT, "Submit the final allocation. Ends the episode.", {
        "assignments": ASSIGNMENTS,
        "unstaffed": {"type": "array", "items": {"type": "string"}},
        "claimed_value": {"type": "number", "description": "total value minus labour cost of the staffed projects"},
    }, ["assignments", "unstaffed", "claimed_value"]),
    ESCALATE_SPEC,
)


def _estimate(s: Scenario, a: dict[str, Any]) -> Any:
    projects = {p["id"] for p in s.public["projects"]}
    staff = {p["id"] for p in s.public["staff"]}
    assign: dict[str, str | None] = {}
    for item in a["assignments"]:
        if item["project"] not in projects:
            raise ToolRefusal(f"unknown project {item['project']!r}")
        if item["staff"] not in staff:
            raise ToolRefusal(f"unknown staff id {item['staff']!r}")
        if item["project"] in assign:
            raise ToolRefusal(f"project {item['project']} is listed more than once")
        assign[item["project"]] = item["staff"]
    return estimate(s.public, assign)


PROJECT_FIELDS = ("id", "name", "skill", "effort_hours", "value_usd")
STAFF_FIELDS = ("id", "name", "skills", "hourly_cost_usd", "weekly_hours")
READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    ESTIMATE: _estimate, READ: read_tool, SOLVE: lambda s, a: find(s.public, a), CALCULATE: calculate_tool,
    "list_projects": lambda s, a: [{k: p[k] for k in PROJECT_FIELDS} for p in s.public["projects"]],
    "list_staff": lambda s, a: [{k: p[k] for k in STAFF_FIELDS} for p in s.public["staff"]],
    "get_skill_matrix": lambda s, a: {p["id"]: p["skills"] for p in s.public["staff"]},
}


def parse_allocation(public: dict[str, Any], args: dict[str, Any]) -> tuple[dict[str, str | None], list[str]]:
    """The answer as project -> staff id (None: unstaffed), and what makes it malformed."""
    projects = {p["id"] for p in public["projects"]}
    staff = {s["id"] for s in public["staff"]}
    assign: dict[str, str | None] = {}
    problems = []
    for item in args["assignments"]:
        pid, sid = item["project"], item["staff"]
        if pid not in projects:
            problems.append(f"unknown project {pid!r}")
        elif sid not in staff:
            problems.append(f"unknown staff id {sid!r}")
        elif pid in assign:
            problems.append(f"project {pid} is listed more than once")
        else:
            assign[pid] = sid
    for pid in args["unstaffed"]:
        if pid not in projects:
            problems.append(f"unknown project {pid!r}")
        elif pid in assign:
            problems.append(f"project {pid} is listed more than once")
        else:
            assign[pid] = None
    problems += [f"project {p} is neither assigned nor listed as unstaffed" for p in sorted(projects - set(assign))]
    return assign, problems


def grade(scenario: Scenario, answer: ToolCall) -> Grade:
    decided = escalation_grade(scenario, answer)
    if decided is not None:
        return decided
    assign, problems = parse_allocation(scenario.public, answer.arguments)
    if problems:
        return Grade(0.0, False, "invalid_answer", {"feasible": 0.0}, problems)
    figures = check(scenario.public, assign)
    optimum = scenario.private["optimum"]
    feasible = not figures["violations"]
    claimed = answer.arguments["claimed_value"]
    claims_ok = claim_matches(claimed, figures["value"])
    quality = max(0.0, min(1.0, figures["value"] / optimum))
    optimal = feasible and figures["value"] >= optimum - 1e-9
    components = {"feasible": float(feasible), "optimal": float(optimal), "quality_ratio": quality if feasible else 0.0,
                  "constraint_satisfaction": figures["satisfied_share"], "claims_ok": float(claims_ok),
                  "value": float(figures["value"]), "optimum_value": float(optimum)}
    evidence = list(figures["violations"])
    evidence.append(f"value {money(figures['value'])} vs optimum {money(optimum)} (ratio {quality:.4f})")
    if not claims_ok:
        evidence.append(f"claimed value {claimed} but the allocation is worth {figures['value']}")
        return Grade(0.0, False, "hallucinated_number", components, evidence)
    if not feasible:
        crutch = 0.25 * figures["satisfied_share"] * quality if scenario.difficulty <= CRUTCH_UNTIL else 0.0
        return Grade(crutch, False, "infeasible", components, evidence)
    reward = optimality_reward(True, quality, optimal)
    return Grade(reward, optimal, "correct" if optimal else "suboptimal", components, evidence)


class COOEnvironment(RoleEnvironment):
    """Resource allocation: projects to staff under capacity, skill, sharing, must-do, prerequisite and deadline rules."""

    role = ROLE
    name = "roles/coo"
    answer_tools = (SUBMIT, ESCALATE)
    worded = True
    # 2: the rules in prose over documents, the solver as a tool, every rule binding
    generator_version = 2

    generator = staticmethod(generate)
    specs = tuple(SPECS)
    reader_table = READERS
    system_template = SYSTEM
    grader = staticmethod(grade)
