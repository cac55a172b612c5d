"""Baseline policies for the role environments: a greedy heuristic and a random answer per role.

Both make the same lookups as the oracle in their first turn and then answer from the facts those
tools return (read here from the scenario the task names, which is what the tools serve), so they
differ from the oracle only in how they decide. Figures they claim are computed honestly, so their
rewards measure decisions, not arithmetic. `make_baseline_policy("greedy")` and
`make_baseline_policy("role-random:SEED")` build them for `officegym eval --policy ...`.

`rule` is the fixed rule of a role whose brief is prose (roles/cto): unlike greedy it reads only what
a model sees (the brief, the documents it names), parses them with the role's regexes written from
the training wordings (envs/roles/<role>_rule.py), calls the role's solver tool with what it parsed,
and answers from the solver's output.

Heuristics:
- cto: cheapest certified option per component, then single swaps that most reduce the broken
  latency, availability, skill and compatibility requirements at the least extra cost; escalates
  when its plan is over budget.
- coo: must-do projects first, then by gain per hour; each to the eligible person with the best gain
  who still fits every rule; escalates when a must-do project fits nobody.
- reconcile: the acceptable plan with the largest plain sum of utilities (ignoring the stated rule);
  conflicts from the favourite plans, no binding vetoes.
- risk: flags every row that looks risky on its surface (mitigations not checked), likelihood 2,
  impact 2, the first mitigation code of the type.
- cost: cheapest option meeting each workload's own floor and latency limit, then upgrades that fix
  the policy constraints at the least extra cost; provider terms are ignored when choosing.
- council: proposes plans in order of price from the Cost facts, skipping options named in
  objections, and commits the first plan every member accepts (or its last proposal when out of turns).
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
import random
from collections.abc import Callable
from typing import Any

from officegym.agent.loop import error_text
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.roles import coo, cost, council, cto, reconcile, risk
from officegym.envs.roles.base import ESCALATE, RoleEnvironment, Scenario, ScenarioError
from officegym.envs.roles.solvers import allocation_feasible

BASELINES = ("greedy", "role-random", "rule")
_ENVS: dict[str, RoleEnvironment] = {}


def _env(name: str) -> RoleEnvironment:
    if name not in _ENVS:
        from officegym.envs.roles import ENVIRONMENTS

        if name not in ENVIRONMENTS:
            raise ScenarioError(f"{name!r} is not a role environment")
        _ENVS[name] = ENVIRONMENTS[name]()
    return _ENVS[name]


def _escalate(reason: str) -> ToolCall:
    return ToolCall(ESCALATE, {"reason": reason})


# --- greedy answers


def _violation(figures: dict[str, Any], req: dict[str, Any], n: int) -> float:
    """How far a CTO selection is from meeting its coupled requirements (0 when it meets them)."""
    v = 0.0
    if "latency_slo_ms" in req:
        v += max(0.0, figures["latency"] - req["latency_slo_ms"]) / req["latency_slo_ms"]
    if "availability_slo" in req:
        v += max(0.0, math.log(req["availability_slo"]) - math.log(figures["availability"])) * 100
    if "min_avg_skill_fit" in req:
        v += max(0.0, req["min_avg_skill_fit"] - figures["skill"]) * n
    return v + sum(1 for family, _ in figures["violations"] if family == "compatibility")


def greedy_cto(s: Scenario) -> ToolCall:
    public, req = s.public, s.public["requirements"]
    tags = set(req.get("required_compliance", ()))
    allowed = {c["component"]: [o for o in c["options"] if tags <= set(public["options"][o]["compliance"])]
               for c in public["components"]}
    empty = [c for c, ids in allowed.items() if not ids]
    if empty:
        return _escalate(f"no certified option for {', '.join(empty)}")
    sel = {c: min(ids, key=lambda o: (cto.tco(public["options"][o]), o)) for c, ids in allowed.items()}
    n = len(sel)
    for _ in range(3 * n):
        figures = cto.evaluate(public, sel)
        now = _violation(figures, req, n)
        if now == 0:
            break
        best = None
        for c, ids in allowed.items():
            for o in ids:
                if o == sel[c]:
                    continue
                trial = {**sel, c: o}
                f = cto.evaluate(public, trial)
                key = (_violation(f, req, n), f["tco"])
                if key[0] < now and (best is None or key < best[0]):
                    best = (key, trial)
        if best is None:
            break
        sel = best[1]
    figures = cto.evaluate(public, sel)
    if figures["tco"] > req["budget_tco_usd"]:
        return _escalate(f"the plan found costs {figures['tco']}, over the budget")
    return ToolCall(cto.SUBMIT, {"selection": sel, "claimed_tco": figures["tco"], "rationale": "greedy"})


def greedy_coo(s: Scenario) -> ToolCall:
    public = s.public
    problem = coo.problem_of(public)
    n_staff = len(public["staff"])
    order = sorted(range(len(public["projects"])), key=lambda p: (
        not problem.must[p],
        -max((g for g in problem.gain[p] if g is not None), default=-math.inf) / problem.hours[p]))
    assign: list[int | None] = [None] * len(public["projects"])
    for p in order:
        choices = sorted((e for e in range(n_staff) if problem.gain[p][e] is not None),
                         key=lambda e, p=p: -problem.gain[p][e])  # type: ignore[operator]
        for e in choices:
            if problem.gain[p][e] < 0 and not problem.must[p]:  # type: ignore[operator]
                break
            trial = list(assign)
            trial[p] = e
            if _partial_ok(problem, trial):
                assign = trial
                break
        if assign[p] is None and problem.must[p]:
            return _escalate(f"must-do project {public['projects'][p]['id']} fits nobody")
    # drop projects whose prerequisite stayed unstaffed
    for p in range(len(assign)):
        req = problem.requires[p]
        if assign[p] is not None and req is not None and assign[req] is None and not problem.must[p]:
            assign[p] = None
    return _coo_answer(public, assign)


def _partial_ok(problem: Any, assign: list[int | None]) -> bool:
    """Every rule but must-do and prerequisites, on the projects placed so far."""
    relaxed = type(problem)(gain=problem.gain, hours=problem.hours, capacity=problem.capacity,
                            max_projects=problem.max_projects, must=[False] * len(assign),
                            exclusive=problem.exclusive, requires=[None] * len(assign), deadline=problem.deadline,
                            weekly_hours=problem.weekly_hours)
    return allocation_feasible(relaxed, tuple(assign))


def _coo_answer(public: dict[str, Any], assign: list[int | None]) -> ToolCall:
    mapping = {p["id"]: (None if e is None else public["staff"][e]["id"]) for p, e in zip(public["projects"], assign)}
    value = coo.check(public, mapping)["value"]
    return ToolCall(coo.SUBMIT, {
        "assignments": [{"project": p, "staff": sid} for p, sid in mapping.items() if sid is not None],
        "unstaffed": [p for p, sid in mapping.items() if sid is None], "claimed_value": value})


def _reconcile_answer(s: Scenario, table: reconcile.Table, i: int, conflicts: list[list[str]],
                      vetoes: list[str]) -> ToolCall:
    return ToolCall(reconcile.SUBMIT, {"plan_id": s.public["plans"][i]["id"], "claimed_score": table.score(i),
                                       "conflicts": conflicts, "binding_vetoes": vetoes, "tradeoff_note": "baseline"})


def greedy_reconcile(s: Scenario) -> ToolCall:
    table = reconcile.Table(s.public)
    pool = [i for i, ok in enumerate(table.acceptable) if ok]
    if not pool:
        return _escalate("no plan beats every status quo")
    i = max(pool, key=lambda j: (sum(table.u[j]), -j))
    found = reconcile.labels(s.public)
    return _reconcile_answer(s, table, i, [p.split("|") for p in found["conflicts"]], [])


def greedy_risk(s: Scenario) -> ToolCall:
    public = s.public
    if public["restricted"] is not None:
        return _escalate(f"{public['restricted']} cannot be read")
    entries = []
    for t in risk.TYPES:
        key = risk.ARTIFACTS[t.artifact][1]
        for row in public["artifacts"].get(t.artifact, ()):
            if t.looks_risky(row, public):
                entries.append({"risk_type": t.name, "artifact": t.artifact, "item": row[key], "likelihood": 2,
                                "impact": 2, "score": 4, "mitigation": t.acceptable[0]})
    return ToolCall(risk.SUBMIT, {"entries": entries, "overall_score": 4 if entries else 0})


def _cost_violation(public: dict[str, Any], plan: dict[str, str]) -> float:
    policy, bench = public["policy"], public["benchmarks"]
    v = 0.0
    if "min_mean_quality" in policy:
        mean = sum(bench[w][s]["quality"] for w, s in plan.items()) / len(plan)
        v += max(0.0, policy["min_mean_quality"] - mean)
    if "max_spot_workloads" in policy:
        v += max(0, sum(public["skus"][s].get("pricing") == "spot" for s in plan.values()) - policy["max_spot_workloads"])
    if "llm_pipeline_latency_ms" in policy:
        total = sum(bench[w["id"]][plan[w["id"]]]["latency_ms"] for w in public["workloads"] if w["kind"] == "llm")
        v += max(0.0, total - policy["llm_pipeline_latency_ms"]) / 100
    return v


def greedy_cost(s: Scenario) -> ToolCall:
    public = s.public
    bench, skus = public["benchmarks"], public["skus"]
    allowed = {}
    for w in public["workloads"]:
        ok = [o for o in w["options"] if bench[w["id"]][o]["quality"] >= w["quality_floor"]
              and (w["latency_limit_ms"] is None or bench[w["id"]][o]["latency_ms"] <= w["latency_limit_ms"])]
        if not ok:
            return _escalate(f"no option for {w['id']} meets its floor")
        allowed[w["id"]] = ok
    demand = {w["id"]: w["demand"] for w in public["workloads"]}

    def list_price(plan: dict[str, str]) -> float:
        return sum(demand[w] * skus[o]["unit_price_usd"] for w, o in plan.items())

    plan = {w: min(ids, key=lambda o, w=w: (demand[w] * skus[o]["unit_price_usd"], o)) for w, ids in allowed.items()}
    for _ in range(3 * len(plan)):
        now = _cost_violation(public, plan)
        if now == 0:
            break
        trials = [({**plan, w: o}) for w, ids in allowed.items() for o in ids if o != plan[w]]
        better = [(_cost_violation(public, t), list_price(t), sorted(t.items()), t) for t in trials]
        better = [b for b in better if b[0] < now]
        if not better:
            break
        plan = min(better)[3]
    return ToolCall(cost.SUBMIT, {"plan": plan, "claimed_monthly_cost": cost.bill(public, plan)["total_usd"]})


GREEDY: dict[str, Callable[[Scenario], ToolCall]] = {
    "cto": greedy_cto, "coo": greedy_coo, "reconcile": greedy_reconcile, "risk": greedy_risk, "cost": greedy_cost,
}


# --- random answers


def random_answer(s: Scenario, rng: random.Random) -> ToolCall:
    """A structurally valid answer drawn uniformly (figures claimed honestly); 1 in 10 escalates."""
    public = s.public
    if rng.random() < 0.1:
        return _escalate("random")
    if s.role == "cto":
        sel = {c["component"]: rng.choice(c["options"]) for c in public["components"]}
        return ToolCall(cto.SUBMIT, {"selection": sel, "claimed_tco": cto.evaluate(public, sel)["tco"]})
    if s.role == "coo":
        n_staff = len(public["staff"])
        return _coo_answer(public, [rng.choice([None, *range(n_staff)]) for _ in public["projects"]])
    if s.role == "reconcile":
        table = reconcile.Table(public)
        names = public["stakeholders"]
        pairs = [list(p) for p in itertools.combinations(names, 2) if rng.random() < 0.5]
        return _reconcile_answer(s, table, rng.randrange(len(public["plans"])), pairs, [])
    if s.role == "risk":
        entries = []
        for artifact, rows in public["artifacts"].items():
            types = [t for t in risk.TYPES if t.artifact == artifact]
            for row in rows:
                if rng.random() < 0.3:
                    t = rng.choice(types)
                    lik, imp = rng.randint(1, 4), rng.randint(1, 3)
                    entries.append({"risk_type": t.name, "artifact": artifact, "item": row[risk.ARTIFACTS[artifact][1]],
                                    "likelihood": lik, "impact": imp, "score": lik * imp,
                                    "mitigation": rng.choice(risk.MITIGATIONS)})
        return ToolCall(risk.SUBMIT, {"entries": entries, "overall_score": max((e["score"] for e in entries), default=0)})
    if s.role == "cost":
        plan = {w["id"]: rng.choice(w["options"]) for w in public["workloads"]}
        return ToolCall(cost.SUBMIT, {"plan": plan, "claimed_monthly_cost": cost.bill(public, plan)["total_usd"]})
    raise ValueError(f"no random answer for role {s.role!r}")


# --- the policies


def _outputs(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    """(tool name, arguments, decoded output) of every call the conversation shows, in order."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                try:
                    args = json.loads(c["function"]["arguments"])
                except (ValueError, TypeError, KeyError):
                    args = {}
                calls[c.get("id")] = (c["function"]["name"], args)
        elif m.get("role") == "tool" and m.get("tool_call_id") in calls:
            try:
                value = json.loads(m.get("content") or "")
            except ValueError:
                value = None
            name, args = calls[m["tool_call_id"]]
            out.append((name, args, value.get("output") if isinstance(value, dict) else None))
    return out


def _council_step(r: PolicyRequest, choose: Callable[[list[dict[str, Any]], list[tuple[dict[str, str], Any]],
                                                       list[dict[str, Any]]], ToolCall | None]) -> Completion:
    """Turn 0: request every member's facts; later turns: `choose(facts, proposals, components)`;
    once an answer (commit or escalation) went through, a closing message ends the episode."""
    if r.turn == 0:
        return Completion(tool_calls=[ToolCall("request_facts", {"seat": s}) for s in council.MEMBERS])
    assert r.task is not None
    components = _env(r.task.environment_name).scenario(r.task).public["components"]
    seen = _outputs(r.messages)
    if any(name in (council.COMMIT, ESCALATE) and out is not None for name, _, out in seen):
        return Completion(text="Done.")
    facts = [f for name, _, out in seen if name == "request_facts" and isinstance(out, dict) for f in out.get("facts", [])]
    proposals = [(args.get("selection"), out) for name, args, out in seen
                 if name == "propose_plan" and isinstance(out, dict) and "plan_id" in out]
    call = choose(facts, proposals, components)
    return Completion(tool_calls=[call]) if call is not None else Completion(text="Done.")


def _tco_from(facts: list[dict[str, Any]], selection: dict[str, str]) -> float:
    price = {f["id"]: f["value"] for f in facts if f["owner"] == "cost"}
    return sum(12 * price.get(f"cost/monthly/{o}", 0) + price.get(f"cost/migration/{o}", 0) for o in selection.values())


class GreedyPolicy(Policy):
    """The greedy heuristic of each role (module docstring); `max_turns` bounds the council's proposals."""

    name = "greedy"

    def __init__(self, max_turns: int = 6):
        self.max_turns = max_turns

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [_guarded(self._one, r) for r in requests]

    def _one(self, r: PolicyRequest) -> Completion:
        assert r.task is not None
        s = _env(r.task.environment_name).scenario(r.task)
        if s.role == "council":
            return _council_step(r, self._council)
        return _staged(r, s, lambda: GREEDY[s.role](s))

    def _council(self, facts: list[dict[str, Any]], proposals: list[tuple[dict[str, str], Any]],
                 components: list[dict[str, Any]]) -> ToolCall | None:
        if proposals:
            selection, out = proposals[-1]
            if all(x.get("act") == "accept" for x in out["responses"]) or len(proposals) + 2 >= self.max_turns:
                return ToolCall(council.COMMIT, {"plan_id": out["plan_id"], "claimed_tco": _tco_from(facts, selection)})
        banned = {(x.get("fact_id") or "").split("/")[-1] for _, out in proposals for x in out["responses"]}
        tried = [sel for sel, _ in proposals]
        names = [c["component"] for c in components]
        price = {o: _tco_from(facts, {"x": o}) for c in components for o in c["options"]}
        for combo in sorted(itertools.product(*(c["options"] for c in components)),
                            key=lambda combo: (sum(price[o] for o in combo), combo)):
            selection = dict(zip(names, combo))
            if selection not in tried and not banned & set(combo):
                return ToolCall("propose_plan", {"selection": selection})
        return None


class RoleRandomPolicy(Policy):
    """The oracle's lookups, then a uniformly random valid answer (seeded per task)."""

    name = "role-random"

    def __init__(self, seed: int = 0):
        self.seed = seed

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [_guarded(self._one, r) for r in requests]

    def _one(self, r: PolicyRequest) -> Completion:
        assert r.task is not None
        s = _env(r.task.environment_name).scenario(r.task)
        rng = random.Random(f"{self.seed}:{r.task.id}")
        if s.role == "council":
            return _council_step(r, lambda facts, proposals, comps: self._council(rng, facts, proposals, comps))
        return _staged(r, s, lambda: random_answer(s, rng))

    @staticmethod
    def _council(rng: random.Random, facts: list[dict[str, Any]], proposals: list[tuple[dict[str, str], Any]],
                 components: list[dict[str, Any]]) -> ToolCall | None:
        if proposals:
            selection, out = proposals[-1]
            return ToolCall(council.COMMIT, {"plan_id": out["plan_id"], "claimed_tco": _tco_from(facts, selection)})
        if rng.random() < 0.1:
            return _escalate("random")
        return ToolCall("propose_plan", {"selection": {c["component"]: rng.choice(c["options"]) for c in components}})


def rule_of(role: str) -> Any | None:
    """The fixed rule of a worded role: the module `officegym.envs.roles.<role>_rule` (READ, SOLVE,
    ANSWERS, documents_to_read, solver_arguments, answer), or None when the role has none."""
    if not role.isidentifier():
        return None
    try:
        return importlib.import_module(f"officegym.envs.roles.{role}_rule")
    except ModuleNotFoundError as exc:
        if exc.name != f"officegym.envs.roles.{role}_rule":
            raise
        return None


class RulePolicy(Policy):
    """The fixed rule of a worded role (module docstring): read the documents the brief names, parse
    brief and documents, call the solver with what was parsed (or escalate, where the rule module has
    `escalation(texts)` and it gives a reason), answer from its output."""

    name = "rule"

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [_guarded(self._one, r) for r in requests]

    @staticmethod
    def _one(r: PolicyRequest) -> Completion:
        assert r.task is not None
        role = r.task.metadata.get("role")
        rule = rule_of(role) if isinstance(role, str) else None
        if rule is None:
            return Completion(text=f"No fixed rule for role {role!r}.")
        brief = next((m.get("content") or "" for m in r.messages if m.get("role") == "user"), "")
        brief = brief if isinstance(brief, str) else ""
        seen = _outputs(r.messages)
        names = [name for name, _, _ in seen]
        if any(name in rule.ANSWERS for name in names):
            return Completion(text="Done.")
        solved = [out for name, _, out in seen if name == rule.SOLVE]
        if solved:
            tool, args = rule.answer(solved[-1])
            return Completion(tool_calls=[ToolCall(tool, args)])
        docs = rule.documents_to_read(brief)
        if docs and rule.READ not in names:
            return Completion(tool_calls=[ToolCall(rule.READ, {"doc_id": d}) for d in docs])
        texts = [brief] + [out for name, _, out in seen if name == rule.READ and isinstance(out, str)]
        # optional: a rule that sees why no answer can be given escalates instead (risk: an unreadable document)
        reason = rule.escalation(texts) if hasattr(rule, "escalation") else None
        if reason:
            return Completion(tool_calls=[ToolCall(ESCALATE, {"reason": reason})])
        return Completion(tool_calls=[ToolCall(rule.SOLVE, rule.solver_arguments(texts))])


def _staged(r: PolicyRequest, s: Scenario, answer: Callable[[], ToolCall]) -> Completion:
    """Lookups first (when the scenario has any), then the answer, then a closing message."""
    stage = r.turn if s.lookups else r.turn + 1
    if stage == 0:
        return Completion(tool_calls=list(s.lookups))
    if stage == 1:
        return Completion(tool_calls=[answer()])
    return Completion(text="Done.")


def _guarded(step: Callable[[PolicyRequest], Completion], r: PolicyRequest) -> Completion:
    """One request's turn. A bug met on one scenario (here or in the scoring code a baseline calls)
    fails that rollout alone, as the policy's error: deterministic, so a resumed eval keeps it."""
    if r.task is None:
        return Completion(text="No task.")
    try:
        return step(r)
    except ScenarioError as exc:
        return Completion(text=f"Cannot play this task: {exc}")
    except Exception as exc:
        return Completion(finish_reason="error", error=error_text(exc), error_source="policy")


def make_baseline_policy(spec: str) -> Policy:
    """`greedy`, `rule` or `role-random[:SEED]`."""
    from officegym.agent.policies import PolicySpec

    kind, arg = PolicySpec(spec).kind, PolicySpec(spec).arg
    if kind == "greedy" and not arg:
        return GreedyPolicy()
    if kind == "rule" and not arg:
        return RulePolicy()
    if kind == "role-random":
        try:
            return RoleRandomPolicy(int(arg) if arg else 0)
        except ValueError:
            raise ValueError(f"role-random:SEED needs an integer seed, got {arg!r}") from None
    raise ValueError(f"unknown baseline policy {spec!r}: use greedy, rule or role-random[:SEED]")


def scenario_of(task: Task) -> Scenario:
    """The scenario a role task names (for scripts and tests)."""
    return _env(task.environment_name).scenario(task)
