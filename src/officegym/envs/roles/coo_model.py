"""COO scenarios as numbers: the portfolio (projects, people, skills, rates), the rules that bind and
the exact solver under any rules. The prose layer (coo_brief.py) states the rules; coo.py offers the
tools (find_staffing parses its arguments into rules) and grades.

A rule is an instance of one kind: ("capacity", person, hours), ("max_projects", person, n),
("must_do", project), ("exclusive", project, project), ("prerequisite", project, its prerequisite),
("deadline", project, week). Unstated, a person's hours and number of projects are unlimited.
"""

from __future__ import annotations

import math
import random
from typing import Any

from officegym.envs.roles.base import ToolRefusal
from officegym.envs.roles.solvers import AllocationProblem, best_allocation, one_to_one_allocation

SKILLS = ("backend", "frontend", "data", "ml", "devops", "security", "design", "qa")
PEOPLE = ("Ana", "Bo", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena", "Mo", "Noor")
PROJECTS = (
    "Checkout revamp", "Fraud model", "Data warehouse", "Mobile onboarding", "SSO rollout", "Search relevance",
    "Cost dashboard", "Design system", "Test automation", "Incident tooling", "Pricing engine", "Churn model",
    "API gateway", "Accessibility audit", "Log pipeline", "Partner portal",
)
KINDS = ("capacity", "max_projects", "must_do", "exclusive", "prerequisite", "deadline")
KIND_FROM = {"capacity": 1, "max_projects": 1, "must_do": 1, "exclusive": 4, "prerequisite": 8, "deadline": 8}
# Per level 1..10: projects, people, rules drawn (each binding when drawn), rules left at least
N_PROJECTS = (3, 4, 5, 5, 6, 7, 8, 8, 9, 10)
N_STAFF = (2, 3, 3, 3, 4, 4, 5, 5, 6, 6)
N_RULES = (2, 2, 3, 3, 4, 4, 5, 5, 6, 6)
MIN_RULES = (2, 2, 2, 2, 3, 3, 3, 3, 4, 4)
MAX_WEEK = 12
DAY_HOURS = 8  # capacities are whole eight-hour days, so they read as days too


def empty() -> dict[str, Any]:
    return {"capacity": {}, "max_projects": {}, "must_do": set(), "exclusive": set(), "prerequisite": {},
            "deadline": {}}


def copy_rules(req: dict[str, Any]) -> dict[str, Any]:
    return {k: (set(v) if isinstance(v, set) else dict(v)) for k, v in req.items()}


def instances(req: dict[str, Any]) -> list[tuple]:
    """The rules as instances, in a fixed order."""
    out: list[tuple] = [("capacity", s, h) for s, h in sorted(req["capacity"].items())]
    out += [("max_projects", s, n) for s, n in sorted(req["max_projects"].items())]
    out += [("must_do", p) for p in sorted(req["must_do"])]
    out += [("exclusive", a, b) for a, b in sorted(req["exclusive"])]
    out += [("prerequisite", p, q) for p, q in sorted(req["prerequisite"].items())]
    out += [("deadline", p, w) for p, w in sorted(req["deadline"].items())]
    return out


def without(req: dict[str, Any], rule: tuple) -> dict[str, Any]:
    out = copy_rules(req)
    kind = rule[0]
    if kind in ("must_do", "exclusive"):
        out[kind].discard(rule[1] if kind == "must_do" else (rule[1], rule[2]))
    else:
        del out[kind][rule[1]]
    return out


def with_rule(req: dict[str, Any], rule: tuple) -> dict[str, Any]:
    out = copy_rules(req)
    kind = rule[0]
    if kind == "must_do":
        out[kind].add(rule[1])
    elif kind == "exclusive":
        out[kind].add(tuple(sorted(rule[1:])))
    else:
        out[kind][rule[1]] = rule[2]
    return out


def gain(project: dict[str, Any], person: dict[str, Any]) -> int | None:
    if project["skill"] not in person["skills"]:
        return None
    return project["value_usd"] - person["hourly_cost_usd"] * project["effort_hours"]


def _order(world: dict[str, Any], req: dict[str, Any]) -> list[int]:
    """Project indices with every prerequisite before its dependant (the branch and bound needs it),
    must-do projects that few people can do first (they fail first); a cycle raises ToolRefusal."""
    projects = world["projects"]
    index = {p["id"]: i for i, p in enumerate(projects)}
    pre = {index[p]: index[q] for p, q in req["prerequisite"].items()}
    must = {index[p] for p in req["must_do"]}
    able = [sum(p["skill"] in s["skills"] for s in world["staff"]) for p in projects]
    done: list[int] = []
    state: dict[int, int] = {}
    for start in sorted(range(len(projects)), key=lambda i: (i not in must, able[i], i)):
        chain = []
        i: int | None = start
        while i is not None and state.get(i) != 2:
            if state.get(i) == 1:
                raise ToolRefusal("the prerequisites form a cycle: " + " -> ".join(projects[j]["id"] for j in chain))
            state[i] = 1
            chain.append(i)
            i = pre.get(i)
        for j in reversed(chain):
            state[j] = 2
            done.append(j)
    return done


def optimise(world: dict[str, Any], req: dict[str, Any]) -> tuple[float, dict[str, str | None] | None]:
    """The exact best allocation (project id -> staff id or None) under the rules `req`, and its
    value minus labour cost; (-inf, None) when no allocation keeps every rule."""
    projects, staff = world["projects"], world["staff"]
    order = _order(world, req)
    pos = {projects[i]["id"]: k for k, i in enumerate(order)}
    ordered = [projects[i] for i in order]
    cap = [req["capacity"].get(s["id"], math.inf) for s in staff]
    most = [req["max_projects"].get(s["id"], len(projects)) for s in staff]
    weekly = [s["weekly_hours"] for s in staff]
    deadline = [req["deadline"].get(p["id"]) for p in ordered]
    gains: list[list[float | None]] = []
    for p, due in zip(ordered, deadline):
        row: list[float | None] = []
        for e, s in enumerate(staff):
            g = gain(p, s)
            # a person who cannot do the project on its own never does it: exact, and it prunes early
            alone = p["effort_hours"] <= cap[e] and most[e] >= 1 and (due is None or p["effort_hours"] <= weekly[e] * due)
            row.append(g if alone else None)
        gains.append(row)
    problem = AllocationProblem(
        gain=gains, hours=[p["effort_hours"] for p in ordered], capacity=cap, max_projects=most,
        must=[p["id"] in req["must_do"] for p in ordered],
        exclusive={tuple(sorted((pos[a], pos[b]))) for a, b in req["exclusive"]},  # type: ignore[misc]
        requires=[pos[req["prerequisite"][p["id"]]] if p["id"] in req["prerequisite"] else None for p in ordered],
        deadline=deadline, weekly_hours=weekly,
    )
    simple = all(m <= 1 for m in most) and not req["prerequisite"] and not req["deadline"]
    value, assign = one_to_one_allocation(problem) if simple else best_allocation(problem)
    if assign is None:
        return -math.inf, None
    return value, {p["id"]: (None if e is None else staff[e]["id"]) for p, e in zip(ordered, assign)}


# -- the public facts: the portfolio with the rules written onto projects and people (the verifier's
# view; the tools show the data fields only)


def publish(world: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    shares: dict[str, list[str]] = {p["id"]: [] for p in world["projects"]}
    for a, b in req["exclusive"]:
        shares[a].append(b)
        shares[b].append(a)
    projects = [{**p, "must_do": p["id"] in req["must_do"], "cannot_share_staff_with": sorted(shares[p["id"]]),
                 "requires": req["prerequisite"].get(p["id"]), "deadline_week": req["deadline"].get(p["id"])}
                for p in world["projects"]]
    staff = [{**s, "capacity_hours": req["capacity"].get(s["id"]), "max_projects": req["max_projects"].get(s["id"])}
             for s in world["staff"]]
    return {"projects": projects, "staff": staff}


def rules_of(public: dict[str, Any]) -> dict[str, Any]:
    req = empty()
    for p in public["projects"]:
        if p["must_do"]:
            req["must_do"].add(p["id"])
        req["exclusive"] |= {tuple(sorted((p["id"], q))) for q in p["cannot_share_staff_with"]}
        if p.get("requires"):
            req["prerequisite"][p["id"]] = p["requires"]
        if p.get("deadline_week") is not None:
            req["deadline"][p["id"]] = p["deadline_week"]
    for s in public["staff"]:
        if s.get("capacity_hours") is not None:
            req["capacity"][s["id"]] = s["capacity_hours"]
        if s.get("max_projects") is not None:
            req["max_projects"][s["id"]] = s["max_projects"]
    return req


def problem_of(public: dict[str, Any]) -> AllocationProblem:
    """The allocation problem in the projects' own order (prerequisites come first there)."""
    projects, staff = public["projects"], public["staff"]
    pindex = {p["id"]: i for i, p in enumerate(projects)}
    return AllocationProblem(
        gain=[[gain(p, s) for s in staff] for p in projects], hours=[p["effort_hours"] for p in projects],
        capacity=[math.inf if s.get("capacity_hours") is None else s["capacity_hours"] for s in staff],
        max_projects=[len(projects) if s.get("max_projects") is None else s["max_projects"] for s in staff],
        must=[p["must_do"] for p in projects],
        exclusive={tuple(sorted((pindex[p["id"]], pindex[q]))) for p in projects for q in p["cannot_share_staff_with"]},  # type: ignore[misc]
        requires=[pindex[p["requires"]] if p.get("requires") else None for p in projects],
        deadline=[p.get("deadline_week") for p in projects], weekly_hours=[s["weekly_hours"] for s in staff],
    )


# -- drawing a scenario: the portfolio, then rules that each break the best allocation so far


def _world(rng: random.Random, difficulty: int) -> dict[str, Any]:
    i = difficulty - 1
    r = rng.random
    skills = rng.sample(SKILLS, min(len(SKILLS), 2 + difficulty // 2))
    staff = []
    for k, name in enumerate(rng.sample(PEOPLE, N_STAFF[i])):
        own = sorted(rng.sample(skills, 1 + int(r() * min(3, len(skills)))))
        staff.append({"id": f"S{k + 1}", "name": name, "skills": own, "hourly_cost_usd": 40 + 5 * int(r() * 23),
                      "weekly_hours": 20 + 5 * int(r() * 5)})
    held = sorted({sk for s in staff for sk in s["skills"]})
    projects = []
    for k, name in enumerate(rng.sample(PROJECTS, N_PROJECTS[i])):
        hours = 20 + 10 * int(r() * 15)
        projects.append({"id": f"P{k + 1:02d}", "name": name, "skill": rng.choice(held), "effort_hours": hours,
                         "value_usd": int(hours * (60 + 190 * r()) / 500) * 500 + 500})
    return {"projects": projects, "staff": staff}


def _on_time(jobs: list[tuple[int | None, int]], weekly: int) -> bool:
    """Earliest deadline first, as the solver schedules one person's projects."""
    done = 0
    for due, hours in sorted((d, h) for d, h in jobs if d is not None):
        done += hours
        if done > weekly * due:
            return False
    return True


def _candidate(rng: random.Random, world: dict[str, Any], req: dict[str, Any], best: dict[str, str | None],
               kind: str, fresh: bool = True) -> tuple | None:
    """A rule of `kind` that the allocation `best` breaks (so that it binds when added), or None.
    `fresh`: only on people and projects that have no rule of that kind yet."""
    projects = {p["id"]: p for p in world["projects"]}
    ids = [p["id"] for p in world["projects"]]
    members = {s["id"]: [p for p in ids if best[p] == s["id"]] for s in world["staff"]}
    person = {s["id"]: s for s in world["staff"]}
    if kind in ("capacity", "max_projects"):
        loaded = [s for s, ps in members.items() if len(ps) >= (1 if kind == "capacity" else 2)
                  and not (fresh and s in req[kind])]
        if not loaded:
            return None
        sid = rng.choice(loaded)
        if kind == "max_projects":
            c = len(members[sid])
            return ("max_projects", sid, rng.randint(max(1, min(3, c - 2)), min(3, c - 1)))
        load = sum(projects[p]["effort_hours"] for p in members[sid])
        cap = DAY_HOURS * math.floor(rng.uniform(0.45, 0.95) * load / DAY_HOURS)
        return ("capacity", sid, cap) if DAY_HOURS <= cap < load else None
    able = {p: [s for s in world["staff"] if gain(projects[p], s) is not None] for p in ids}
    if kind == "must_do":
        idle = [p for p in ids if best[p] is None and able[p] and p not in req["must_do"]]
        return ("must_do", rng.choice(idle)) if idle else None
    if kind == "exclusive":
        pairs = [(a, b) for ps in members.values() for j, b in enumerate(ps) for a in ps[:j]
                 if (a, b) not in req["exclusive"]]
        return ("exclusive", *rng.choice(pairs)) if pairs else None
    if kind == "prerequisite":
        pairs = [(p, q) for j, p in enumerate(ids) if best[p] is not None and p not in req["prerequisite"]
                 for q in ids[:j] if best[q] is None and able[q]]
        return ("prerequisite", *rng.choice(pairs)) if pairs else None
    # deadline: the latest week that the person now doing the project would miss
    dated = [p for p in ids if best[p] is not None and not (fresh and p in req["deadline"])]
    if not dated:
        return None
    p = rng.choice(dated)
    s = person[best[p]]  # type: ignore[index]
    others = [(req["deadline"].get(q), projects[q]["effort_hours"]) for q in members[s["id"]] if q != p]
    fastest = max(x["weekly_hours"] for x in able[p])
    missed = [w for w in range(1, MAX_WEEK + 1) if projects[p]["effort_hours"] <= fastest * w
              and not _on_time([*others, (w, projects[p]["effort_hours"])], s["weekly_hours"])]
    return ("deadline", p, max(missed) - rng.choice((0, 0, 1)) if len(missed) > 1 else missed[0]) if missed else None


def binding(world: dict[str, Any], req: dict[str, Any], value: float) -> list[bool]:
    """Per rule of `req` (instances order): whether leaving it out gives a better allocation, which
    then breaks it. Every stated rule binds, so a brief misread on any one gives a wrong answer."""
    return [optimise(world, without(req, rule))[0] > value + 0.5 for rule in instances(req)]


def _kill(rng: random.Random, world: dict[str, Any], req: dict[str, Any], difficulty: int) -> tuple[dict[str, Any], str] | None:
    """Rules with no allocation: a must-do project nobody can do (a skill nobody has, hours above the
    stated capacity of everyone with the skill, or a deadline too early for them). Without its
    must-do the rules are feasible again."""
    victim = rng.choice(world["projects"])
    new = with_rule(req, ("must_do", victim["id"]))
    staff = world["staff"]
    how = rng.choice(("skill", "capacity", "deadline") if difficulty >= KIND_FROM["deadline"] else ("skill", "capacity"))
    hours = victim["effort_hours"]
    if how == "skill":
        missing = [sk for sk in SKILLS if not any(sk in s["skills"] for s in staff)]
        if not missing:
            return None
        victim["skill"] = rng.choice(missing)
        why = f"must-do project {victim['id']} needs the {victim['skill']} skill, which nobody has"
    else:
        able = [s for s in staff if victim["skill"] in s["skills"]]
        if not able or len(able) > 2:
            return None
        if how == "capacity":
            cap = DAY_HOURS * ((hours - 1) // DAY_HOURS)
            if cap < DAY_HOURS:
                return None
            for s in able:
                new["capacity"][s["id"]] = min(new["capacity"].get(s["id"], cap), cap)
            why = (f"must-do project {victim['id']} needs {hours} h of {victim['skill']}, more than the stated "
                   f"capacity of anyone with that skill")
        else:
            week = math.ceil(hours / max(s["weekly_hours"] for s in able)) - 1
            if week < 1:
                return None
            new["deadline"][victim["id"]] = min(new["deadline"].get(victim["id"], week), week)
            why = f"must-do project {victim['id']} ({hours} h of {victim['skill']}) cannot be done by week {week}"
    if optimise(world, new)[1] is not None or optimise(world, without(new, ("must_do", victim["id"])))[1] is None:
        return None
    return new, why


def draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    """One scenario (None: draw again): the public facts, the rules as instances, decoys (rules the
    optimum breaks that nobody decided: hearsay), and the optimum or why there is none."""
    i = difficulty - 1
    world = _world(rng, difficulty)
    req = empty()
    value, best = optimise(world, req)
    if best is None or value <= 0:
        return None
    kinds = [k for k in KINDS if difficulty >= KIND_FROM[k]]
    for _ in range(N_RULES[i]):
        for _attempt in range(8):
            rule = _candidate(rng, world, req, best, rng.choice(kinds))
            if rule is None:
                continue
            trial = with_rule(req, rule)
            v, b = optimise(world, trial)
            if b is not None and v > 0:
                req, value, best = trial, v, b
                break
    while True:  # a rule that does not bind is dropped from the brief (it would be free to misread)
        loose = [r for r, binds in zip(instances(req), binding(world, req, value)) if not binds]
        if not loose:
            break
        req = without(req, loose[0])
        value, best = optimise(world, req)
    rules = instances(req)
    if len(rules) < MIN_RULES[i] or len({r[0] for r in rules}) < 2 or best is None:
        return None
    decoys = [d for d in (_candidate(rng, world, req, best, k, fresh=False) for k in kinds) if d is not None]
    # hearsay only about rules that would change the answer if believed
    decoys = [d for d in decoys if (d[0] != "prerequisite" or d[1] not in req["prerequisite"])
              and optimise(world, with_rule(req, d))[0] < value - 0.5]
    why = ""
    if infeasible:
        killed = _kill(rng, world, req, difficulty)
        if killed is None:
            return None
        req, why = killed
        value, best = -math.inf, None
        stated = set(instances(req))
        decoys = [d for d in decoys if d not in stated and not (d[0] == "must_do" and d[1] in req["must_do"])]
    return {"public": publish(world, req), "rules": instances(req), "decoys": decoys, "infeasible": infeasible,
            "why": why, "optimum": None if infeasible else value, "assign": best}


# -- the solver tool


def solver_arguments(public: dict[str, Any]) -> dict[str, Any]:
    """The find_staffing arguments that state the rules exactly (what the oracle passes)."""
    return arguments_of(rules_of(public))


def arguments_of(req: dict[str, Any]) -> dict[str, Any]:
    """Rules as find_staffing arguments."""
    out: dict[str, Any] = {}
    if req["must_do"]:
        out["must_do"] = sorted(req["must_do"])
    if req["exclusive"]:
        out["cannot_share"] = [list(pair) for pair in sorted(req["exclusive"])]
    if req["prerequisite"]:
        out["prerequisites"] = [{"project": p, "requires": q} for p, q in sorted(req["prerequisite"].items())]
    for key, kind in (("deadlines", "deadline"), ("capacity_hours", "capacity"), ("max_projects", "max_projects")):
        if req[kind]:
            out[key] = dict(sorted(req[kind].items()))
    return out
