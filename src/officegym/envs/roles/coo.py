"""COO: staff a project portfolio to maximise value minus labour cost under the rules.

Each project is done by one person who has its skill, or left unstaffed. Levels 1-3 are one project
per person (an assignment problem, solved with the Hungarian algorithm); levels 4-7 add hour
capacities, project counts, pairs that cannot share a person and must-do projects (generalised
assignment, branch and bound); levels 8-10 add prerequisites and deadlines. The reward is
feasibility x (0.5 [optimal] + 0.5 value / optimum); at levels 1-3 an answer that breaks rules still
earns 0.25 x (share of rule instances kept) x value ratio, as a curriculum crutch. The claimed
value is recomputed (0 when more than 0.5% off); the estimate_value calculator gives it for any
assignments, and the oracle reads its claim off it, called on its allocation.
"""

from __future__ import annotations

import random
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
    claim_matches,
    draw_scenario,
    escalation_grade,
    infeasible_seed,
    money,
    optimality_reward,
    tool,
)
from officegym.envs.roles.names import company_and_product
from officegym.envs.roles.solvers import (
    AllocationProblem,
    best_allocation,
    meets_deadlines,
    one_to_one_allocation,
)

ROLE = "coo"
SUBMIT = "submit_allocation"
ESTIMATE = "estimate_value"  # the calculator whose figure the answer claims
SKILLS = ("backend", "frontend", "data", "ml", "devops", "security", "design", "qa")
PEOPLE = ("Ana", "Bo", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena", "Mo", "Noor")
PROJECTS = (
    "Checkout revamp", "Fraud model", "Data warehouse", "Mobile onboarding", "SSO rollout", "Search relevance",
    "Cost dashboard", "Design system", "Test automation", "Incident tooling", "Pricing engine", "Churn model",
    "API gateway", "Accessibility audit", "Log pipeline", "Partner portal",
)
N_PROJECTS = (3, 4, 5, 5, 6, 7, 8, 8, 9, 10)
N_STAFF = (2, 3, 3, 3, 4, 4, 5, 5, 6, 6)
ONE_TO_ONE_UNTIL = 3
DATED_FROM = 8
TOOLS_FROM_LEVEL = 4

SYSTEM = (
    "You are the COO agent of an executive decision system. You staff a portfolio of projects: each project is "
    "done entirely by one person who has the project's skill, or it is left unstaffed. Respect every rule in the "
    "brief, and maximise the total value of the staffed projects minus their labour cost (the person's hourly "
    "cost x the project's effort hours). Finish with exactly one call: {submit}(assignments, unstaffed, "
    "claimed_value), listing every project once, either in assignments (project and staff ids) or in unstaffed; "
    "claimed_value is the allocation's value minus labour cost in dollars (it is recomputed; a wrong figure "
    "scores 0). If no allocation can satisfy the rules, call {escalate}(reason) instead. The first answer is final."
)


def problem_of(public: dict[str, Any]) -> AllocationProblem:
    projects, staff = public["projects"], public["staff"]
    pindex = {p["id"]: i for i, p in enumerate(projects)}
    gain = [[p["value_usd"] - s["hourly_cost_usd"] * p["effort_hours"] if p["skill"] in s["skills"] else None
             for s in staff] for p in projects]
    exclusive = {tuple(sorted((pindex[p["id"]], pindex[q]))) for p in projects for q in p["cannot_share_staff_with"]}
    return AllocationProblem(
        gain=gain, hours=[p["effort_hours"] for p in projects], capacity=[s["capacity_hours"] for s in staff],
        max_projects=[s["max_projects"] for s in staff], must=[p["must_do"] for p in projects],
        exclusive=exclusive,  # type: ignore[arg-type]
        requires=[pindex[p["requires"]] if p.get("requires") else None for p in projects],
        deadline=[p.get("deadline_week") for p in projects], weekly_hours=[s["weekly_hours"] for s in staff],
    )


def solve(public: dict[str, Any], one_to_one: bool) -> tuple[float, tuple[int | None, ...] | None]:
    problem = problem_of(public)
    return one_to_one_allocation(problem) if one_to_one else best_allocation(problem)


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
    value = estimate(public, assign)["net_value_usd"]
    for pid, sid in assign.items():
        p = projects[pid]
        if sid is None:
            continue
        members[sid].append(pid)
        if p["skill"] in staff[sid]["skills"]:
            kept += 1
        else:
            broken.append(f"{staff[sid]['id']} lacks the {p['skill']} skill for {pid}")
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
        if hours <= s["capacity_hours"]:
            kept += 1
        else:
            broken.append(f"{sid} is booked {hours} h, over the {s['capacity_hours']} h capacity")
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
    return {"value": value, "violations": broken, "satisfied_share": kept / total if total else 1.0}


def _draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    i = difficulty - 1
    n_proj, n_staff = N_PROJECTS[i], N_STAFF[i]
    one_to_one = difficulty <= ONE_TO_ONE_UNTIL
    dated = difficulty >= DATED_FROM
    r = rng.random
    skills = rng.sample(SKILLS, min(len(SKILLS), 2 + difficulty // 2))
    staff = []
    for k, name in enumerate(rng.sample(PEOPLE, n_staff)):
        own = sorted(rng.sample(skills, 1 + int(r() * min(3, len(skills)))))
        staff.append({
            "id": f"S{k + 1}", "name": name, "skills": own, "hourly_cost_usd": 40 + 5 * int(r() * 23),
            "capacity_hours": 200 if one_to_one else 80 + 10 * int(r() * 17),
            "max_projects": 1 if one_to_one else 1 + int(r() * 3),
            "weekly_hours": 20 + 5 * int(r() * 5),
        })
    held = sorted({sk for s in staff for sk in s["skills"]})
    projects = []
    for k, name in enumerate(rng.sample(PROJECTS, n_proj)):
        hours = 20 + 10 * int(r() * 15)
        projects.append({
            "id": f"P{k + 1:02d}", "name": name, "skill": rng.choice(held), "effort_hours": hours,
            "value_usd": int(hours * (60 + 190 * r()) / 500) * 500 + 500,
            "must_do": difficulty >= 2 and r() < 0.2, "cannot_share_staff_with": [],
        })
    if not one_to_one:
        for _ in range(n_proj // 3):
            a, b = rng.sample(projects, 2)
            if b["id"] not in a["cannot_share_staff_with"]:
                a["cannot_share_staff_with"].append(b["id"])
                b["cannot_share_staff_with"].append(a["id"])
        for p in projects:
            p["cannot_share_staff_with"].sort()
    if dated:
        for k, p in enumerate(projects):
            p["deadline_week"] = 1 + int(r() * 8) if r() < 0.5 else None
            p["requires"] = projects[int(r() * k)]["id"] if k and r() < 0.25 else None
    public = {"projects": projects, "staff": staff, "rules": {"one_project_per_person": one_to_one}}
    why = ""
    if infeasible:
        victim = rng.choice(projects)
        victim["must_do"] = True
        if victim.get("requires"):
            victim["requires"] = None
        missing = [sk for sk in SKILLS if sk not in held]
        rare = min(held, key=lambda sk: (sum(sk in s["skills"] for s in staff), sk))
        able = sum(rare in s["skills"] for s in staff)
        if (r() < 0.5 or one_to_one) and missing:
            victim["skill"] = rng.choice(missing)
            why = f"must-do project {victim['id']} needs the {victim['skill']} skill, which nobody has"
        elif one_to_one:
            if able >= n_proj:
                return None
            crowd = rng.sample(projects, able + 1)
            for p in crowd:
                p.update(skill=rare, must_do=True)
            why = (f"{able + 1} must-do projects ({', '.join(sorted(p['id'] for p in crowd))}) need {rare}, "
                   f"but only {able} person(s) have it and each takes one project")
        else:
            able = [s for s in staff if victim["skill"] in s["skills"]]
            victim["effort_hours"] = max(s["capacity_hours"] for s in able) + 10 * (1 + int(r() * 5))
            victim["value_usd"] = max(victim["value_usd"], victim["effort_hours"] * 100)
            why = (f"must-do project {victim['id']} needs {victim['effort_hours']} h of {victim['skill']}, more than "
                   f"anyone with that skill can give")
    value, assign = solve(public, one_to_one)
    if infeasible:
        return None if assign is not None else {"public": public, "why": why, "optimum": None, "assign": None}
    if assign is None or value <= 0:
        return None
    return {"public": public, "why": "", "optimum": value, "assign": assign}


def _rules_text(public: dict[str, Any], difficulty: int) -> list[str]:
    lines = ["Rules:", "- Each project is done entirely by one person who has its skill, or left unstaffed."]
    if public["rules"]["one_project_per_person"]:
        lines.append("- Each person takes at most one project (everyone has the hours for any single project).")
    else:
        lines.append("- A person's projects must fit their capacity hours, and they take at most their maximum "
                     "number of projects.")
        lines.append("- Projects marked as unable to share staff must go to different people.")
    if any(p["must_do"] for p in public["projects"]):
        lines.append("- Must-do projects must be staffed.")
    if difficulty >= DATED_FROM:
        lines.append("- A project that requires another may be staffed only if that one is staffed too.")
        lines.append("- Deadlines: a person works on their projects one after another in deadline order (undated "
                     "last) at their weekly hours; each dated project must be done by the end of its deadline week.")
    return lines


def _inline_data(public: dict[str, Any], difficulty: int) -> list[str]:
    lines = ["Projects:"]
    for p in public["projects"]:
        extra = []
        if p["must_do"]:
            extra.append("must-do")
        if p["cannot_share_staff_with"]:
            extra.append("cannot share staff with " + ", ".join(p["cannot_share_staff_with"]))
        lines.append(f"- {p['id']} {p['name']}: {p['skill']}, {p['effort_hours']} h, value {money(p['value_usd'])}"
                     + (", " + ", ".join(extra) if extra else ""))
    lines.append("Staff:")
    for s in public["staff"]:
        lines.append(f"- {s['id']} {s['name']}: {'/'.join(s['skills'])}, {money(s['hourly_cost_usd'])}/h"
                     + ("" if public["rules"]["one_project_per_person"]
                        else f", capacity {s['capacity_hours']} h, at most {s['max_projects']} project(s)"))
    return lines


def _brief(rng: random.Random, public: dict[str, Any], difficulty: int) -> str:
    company, _ = company_and_product(rng)
    lines = [f"{company} must staff its next-quarter portfolio of {len(public['projects'])} projects with "
             f"{len(public['staff'])} people. Maximise the total value of the staffed projects minus their labour "
             "cost (hourly cost x effort hours).", *_rules_text(public, difficulty)]
    if difficulty < TOOLS_FROM_LEVEL:
        lines += _inline_data(public, difficulty)
    else:
        lines.append("Projects, staff, skills and availability are available through the tools.")
    return "\n".join(lines)


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int) -> Scenario:
    infeasible = infeasible_seed(seed)
    drawn, rng = draw_scenario(ROLE, seed, difficulty, _draw)
    public = drawn["public"]
    inline = difficulty < TOOLS_FROM_LEVEL
    lookups = () if inline else (
        ToolCall("list_projects", {}), ToolCall("list_staff", {}), ToolCall("get_skill_matrix", {}),
        *(ToolCall("get_availability", {"staff_id": s["id"]}) for s in public["staff"]),
    )
    checks: tuple[ToolCall, ...] = ()
    if infeasible:
        answer = ToolCall(ESCALATE, {"reason": drawn["why"]})
        note = ""
    else:
        assignments, unstaffed = [], []
        for p, e in zip(public["projects"], drawn["assign"]):
            if e is None:
                unstaffed.append(p["id"])
            else:
                assignments.append({"project": p["id"], "staff": public["staff"][e]["id"]})
        # the claimed value is what the calculator returns for the chosen assignments
        checks = (ToolCall(ESTIMATE, {"assignments": assignments}),)
        claimed = estimate(public, {a["project"]: a["staff"] for a in assignments})["net_value_usd"]
        answer = ToolCall(SUBMIT, {"assignments": assignments, "unstaffed": unstaffed, "claimed_value": claimed})
        note = f"the best allocation is worth {money(drawn['optimum'])}"
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=infeasible, inline=inline, public=public,
        private={"optimum": drawn["optimum"], "why_infeasible": drawn["why"], "optimum_note": note},
        brief=_brief(rng, public, difficulty), lookups=lookups, answer=answer,
        template=f"{ROLE}/{'inline' if inline else 'tools'}" + ("/escalate" if infeasible else ""),
        checks=checks,
    )


ASSIGNMENTS = {"type": "array", "items": {
    "type": "object", "properties": {"project": {"type": "string"}, "staff": {"type": "string"}},
    "required": ["project", "staff"], "additionalProperties": False}}
SPECS = (
    tool("list_projects", "Every project: skill, effort hours, value, must-do flag, staffing restrictions, "
         "prerequisite and deadline week where they apply."),
    tool("list_staff", "Every person: id, name and hourly cost."),
    tool("get_skill_matrix", "The skills of every person."),
    tool("get_availability", "One person's capacity hours, maximum number of projects and weekly hours.",
         {"staff_id": {"type": "string"}}, ["staff_id"]),
    tool(ESTIMATE, "Calculator: the value, the labour cost (hourly cost x effort hours) and the value minus labour "
         "cost of some assignments (projects left out are unstaffed).", {"assignments": ASSIGNMENTS}, ["assignments"]),
    tool(SUBMIT, "Submit the final allocation. Ends the episode.", {
        "assignments": ASSIGNMENTS,
        "unstaffed": {"type": "array", "items": {"type": "string"}},
        "claimed_value": {"type": "number", "description": "total value minus labour cost of the staffed projects"},
    }, ["assignments", "unstaffed", "claimed_value"]),
    ESCALATE_SPEC,
)

PROJECT_FIELDS = ("id", "name", "skill", "effort_hours", "value_usd", "must_do", "cannot_share_staff_with",
                  "requires", "deadline_week")


def _availability(s: Scenario, a: dict[str, Any]) -> Any:
    for person in s.public["staff"]:
        if person["id"] == a["staff_id"]:
            return {k: person[k] for k in ("id", "capacity_hours", "max_projects", "weekly_hours")}
    raise ToolRefusal(f"unknown staff id {a['staff_id']!r}")


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


READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    ESTIMATE: _estimate,
    "list_projects": lambda s, a: [{k: p[k] for k in PROJECT_FIELDS if k in p} for p in s.public["projects"]],
    "list_staff": lambda s, a: [{k: p[k] for k in ("id", "name", "hourly_cost_usd")} for p in s.public["staff"]],
    "get_skill_matrix": lambda s, a: {p["id"]: p["skills"] for p in s.public["staff"]},
    "get_availability": _availability,
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
        crutch = 0.25 * figures["satisfied_share"] * quality if scenario.difficulty <= ONE_TO_ONE_UNTIL else 0.0
        return Grade(crutch, False, "infeasible", components, evidence)
    reward = optimality_reward(True, quality, optimal)
    return Grade(reward, optimal, "correct" if optimal else "suboptimal", components, evidence)


class COOEnvironment(RoleEnvironment):
    """Resource allocation: projects to staff under capacity, skill, sharing, must-do, prerequisite and deadline rules."""

    role = ROLE
    name = "roles/coo"
    answer_tools = (SUBMIT, ESCALATE)

    generator = staticmethod(generate)
    specs = tuple(SPECS)
    reader_table = READERS
    system_template = SYSTEM
    grader = staticmethod(grade)
