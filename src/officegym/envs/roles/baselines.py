"""The role environments' scripted baselines turn by turn: what `RoleEnvironment.baseline_turn`
answers for the policy specs `greedy`, `role-random[:SEED]` and `rule` (agent/baseline_policy.py is
the policy that asks).

`greedy` and `role-random` make the same lookups as the oracle in their first turn and then answer
from the facts those tools return (read here from the scenario the task names, which is what the
tools serve), so they differ from the oracle only in how they decide (baseline_answers.py). On the
council, greedy proposes plans in order of price from the Cost facts, skipping options named in
objections, and commits the first plan every member accepts (or its last proposal when out of turns).

`rule` is the fixed rule of a role whose brief is prose (roles/cto): unlike greedy it reads only what
a model sees (the brief, the documents it names), parses them with the role's regexes written from
the training wordings (envs/roles/<role>_rule.py), calls the role's solver tool with what it parsed,
and answers from the solver's output.
"""

from __future__ import annotations

import importlib
import itertools
import json
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from officegym.core.policy import Completion, PolicyRequest
from officegym.core.types import ToolCall
from officegym.envs.roles import baseline_answers
from officegym.envs.roles.base import BASELINES, ESCALATE, Scenario, ScenarioError
from officegym.envs.roles.council_model import COMMIT, MEMBERS

if TYPE_CHECKING:
    from officegym.envs.roles.base import RoleEnvironment

GREEDY_COUNCIL_TURNS = 6  # bounds the greedy mediator's proposals


def baseline_turn(env: RoleEnvironment, kind: str, r: PolicyRequest, seed: int = 0) -> Completion:
    """The next turn of baseline `kind` (one of BASELINES) in the conversation of `r` (which names its
    task); a task that names no scenario of `env` gets a message instead of a call."""
    assert r.task is not None
    try:
        if kind == "rule":
            return rule_turn(r)
        s = env.scenario(r.task)
        if kind == "greedy":
            if s.role == "council":
                return council_turn(r, s, greedy_council)
            return staged(r, s, lambda: baseline_answers.GREEDY[s.role](s))
        if kind == "role-random":
            rng = random.Random(f"{seed}:{r.task.id}")
            if s.role == "council":
                return council_turn(r, s, lambda facts, proposals, comps: random_council(rng, facts, proposals, comps))
            # looked up when called, so a test can replace random_answer
            return staged(r, s, lambda: baseline_answers.random_answer(s, rng))
    except ScenarioError as exc:
        return Completion(text=f"Cannot play this task: {exc}")
    raise ValueError(f"unknown baseline {kind!r}: use {', '.join(BASELINES)}")


def staged(r: PolicyRequest, s: Scenario, answer: Callable[[], ToolCall]) -> Completion:
    """Lookups first (when the scenario has any), then the answer, then a closing message."""
    stage = r.turn if s.lookups else r.turn + 1
    if stage == 0:
        return Completion(tool_calls=list(s.lookups))
    if stage == 1:
        return Completion(tool_calls=[answer()])
    return Completion(text="Done.")


def call_outputs(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
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


# --- the council: the mediator's seat


Choose = Callable[[list[dict[str, Any]], list[tuple[dict[str, str], Any]], list[dict[str, Any]]], ToolCall | None]


def council_turn(r: PolicyRequest, s: Scenario, choose: Choose) -> Completion:
    """Turn 0: request every member's facts; later turns: `choose(facts, proposals, components)`;
    once an answer (commit or escalation) went through, a closing message ends the episode."""
    if r.turn == 0:
        return Completion(tool_calls=[ToolCall("request_facts", {"seat": m}) for m in MEMBERS])
    components = s.public["components"]
    seen = call_outputs(r.messages)
    if any(name in (COMMIT, ESCALATE) and out is not None for name, _, out in seen):
        return Completion(text="Done.")
    facts = [f for name, _, out in seen if name == "request_facts" and isinstance(out, dict) for f in out.get("facts", [])]
    proposals = [(args.get("selection"), out) for name, args, out in seen
                 if name == "propose_plan" and isinstance(out, dict) and "plan_id" in out]
    call = choose(facts, proposals, components)
    return Completion(tool_calls=[call]) if call is not None else Completion(text="Done.")


def _tco_from(facts: list[dict[str, Any]], selection: dict[str, str]) -> float:
    price = {f["id"]: f["value"] for f in facts if f["owner"] == "cost"}
    return sum(12 * price.get(f"cost/monthly/{o}", 0) + price.get(f"cost/migration/{o}", 0) for o in selection.values())


def greedy_council(facts: list[dict[str, Any]], proposals: list[tuple[dict[str, str], Any]],
                   components: list[dict[str, Any]]) -> ToolCall | None:
    if proposals:
        selection, out = proposals[-1]
        if all(x.get("act") == "accept" for x in out["responses"]) or len(proposals) + 2 >= GREEDY_COUNCIL_TURNS:
            return ToolCall(COMMIT, {"plan_id": out["plan_id"], "claimed_tco": _tco_from(facts, selection)})
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


def random_council(rng: random.Random, facts: list[dict[str, Any]], proposals: list[tuple[dict[str, str], Any]],
                   components: list[dict[str, Any]]) -> ToolCall | None:
    if proposals:
        selection, out = proposals[-1]
        return ToolCall(COMMIT, {"plan_id": out["plan_id"], "claimed_tco": _tco_from(facts, selection)})
    if rng.random() < 0.1:
        return baseline_answers.escalate("random")
    return ToolCall("propose_plan", {"selection": {c["component"]: rng.choice(c["options"]) for c in components}})


# --- the fixed rule of a worded role


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


def rule_turn(r: PolicyRequest) -> Completion:
    """Read the documents the brief names, parse brief and documents, call the solver with what was
    parsed (or escalate, where the rule module has `escalation(texts)` and it gives a reason), answer
    from its output."""
    assert r.task is not None
    role = r.task.metadata.get("role")
    rule = rule_of(role) if isinstance(role, str) else None
    if rule is None:
        return Completion(text=f"No fixed rule for role {role!r}.")
    brief = next((m.get("content") or "" for m in r.messages if m.get("role") == "user"), "")
    brief = brief if isinstance(brief, str) else ""
    seen = call_outputs(r.messages)
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
