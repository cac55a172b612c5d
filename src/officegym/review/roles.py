"""Role rollouts in the review queue: reading a graded rollout row, and the correction of a role's
final answer. What the flagger looks for in a graded verdict (low margins, escalations, an answer
without reads, what counts as an answer's decision) is the environment's: `review_findings` and
`decision_key` (the roles' rules are envs/roles/review_rules.py).

A correction of a role rollout is its final answer (one call of one of the environment's
`graded_answers`, the role's answer tool or `escalate`); the rollout's successful reads are kept
before it (or, when it read nothing, the ground truth's lookups), the whole is replayed in the
environment and verified, and the correction is refused unless the verifier gives it full credit. A
reviewer who believes the verifier wrong rejects the item with `verifier_too_strict` instead: that
becomes a verifier regression case.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from officegym.core.environment import BaseEnvironment, EnvironmentSetupError
from officegym.core.registry import environment_class, make
from officegym.core.rollout_row import RolloutRow
from officegym.core.task import Task
from officegym.core.types import ToolCall, Verdict
from officegym.review.replay import CorrectionCheck, CorrectionError, replay_cleanly


def is_graded(verdict: Any) -> bool:
    """A verdict from a grading verifier (the role environments say so in their details)."""
    return isinstance(verdict, dict) and verdict.get("graded") is True


def is_role_env(env: BaseEnvironment) -> bool:
    """An environment whose answers are graded (the role environments)."""
    return bool(env.graded_answers)


_RULES: dict[str, BaseEnvironment | None] = {}


def rules_env(name: str) -> BaseEnvironment | None:
    """The environment `name`, built without a world, whose review rules apply when there is no
    environment to replay in; None when it grades no answers (asked of its class: no world is
    loaded) or cannot be built so. Cached per name."""
    if name not in _RULES:
        try:
            _RULES[name] = make(name) if environment_class(name).graded_answers else None
        except (EnvironmentSetupError, KeyError, ValueError):
            _RULES[name] = None
    return _RULES[name]


def executed_calls(row: dict[str, Any]) -> list[tuple[ToolCall, str | None, str]]:
    """The rollout's calls with each one's status (None when the row does not record it) and output."""
    ref = RolloutRow(row)
    calls = ref.calls()
    statuses = ref.officegym.get("call_status")
    statuses = statuses if isinstance(statuses, list) and len(statuses) == len(calls) else [None] * len(calls)
    outputs: dict[str, str] = {}
    for item in ref.output:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            outputs.setdefault(str(item.get("call_id") or ""), item.get("output") if isinstance(item.get("output"), str)
                               else json.dumps(item.get("output")))
    return [(c, s if isinstance(s, str) else None, outputs.get(c.call_id or "", "")) for c, s in zip(calls, statuses)]


def call_statuses(row: dict[str, Any]) -> list[tuple[ToolCall, str | None]]:
    """The rollout's calls with their statuses: what the environment's review hooks read."""
    return [(c, s) for c, s, _ in executed_calls(row)]


def answer_index(row: dict[str, Any], answer_tools: Collection[str]) -> int | None:
    """The index of the call the verifier judged: the first answer-tool call that ran ("ok"; with
    no statuses recorded, the first answer-tool call)."""
    for i, (call, status, _) in enumerate(executed_calls(row)):
        if call.name in answer_tools and status in (None, "ok"):
            return i
    return None


def answer_text(row: dict[str, Any], task: Task, answer_tools: frozenset[str]) -> str:
    """What the correction form starts from: the rollout's answer, else the ground truth's."""
    k = answer_index(row, answer_tools)
    if k is not None:
        call = executed_calls(row)[k][0]
    else:
        answers = [c for c in task.ground_truth if c.name in answer_tools]
        if not answers:
            return "[]"
        call = answers[-1]
    args = call.arguments if call.parse_error is None else call.raw_arguments
    return json.dumps([{"name": call.name, "arguments": args}], indent=1, ensure_ascii=False)


def gold_reads(row: dict[str, Any], task: Task, answer_tools: frozenset[str]) -> tuple[list[ToolCall], list[str]]:
    """The reads a corrected trajectory keeps: the rollout's successful non-answer calls before its
    answer (all of them when it never answered); without any, the ground truth's lookups."""
    executed = executed_calls(row)
    k = answer_index(row, answer_tools)
    before = executed if k is None else executed[:k]
    reads = [ToolCall(c.name, c.arguments) for c, status, _ in before
             if c.name not in answer_tools and status in (None, "ok") and c.parse_error is None]
    if reads:
        return reads, []
    lookups = [ToolCall(c.name, c.arguments) for c in task.ground_truth if c.name not in answer_tools]
    return lookups, (["the rollout read nothing: the ground truth's lookups come before the answer"] if lookups else [])


def verdict_sentence(v: Verdict) -> str:
    label = v.details.get("label", "?")
    evidence = "; ".join(str(e) for e in v.details.get("evidence") or [])
    return f"{label}, reward {v.reward:.4g}" + (f": {evidence}" if evidence else "")


def check_role_correction(env: BaseEnvironment, task: Task, row: dict[str, Any], calls: list[ToolCall],
                          mode: str | None = None) -> CorrectionCheck:
    """Replay and verify a corrected final answer of a role rollout (see the module docstring).
    `calls` is the answer alone, or reads followed by one answer."""
    answer_tools = env.graded_answers
    tools = " or ".join(sorted(answer_tools))
    if not calls or calls[-1].name not in answer_tools or any(c.name in answer_tools for c in calls[:-1]):
        raise CorrectionError(f"a correction of a {task.environment_name} rollout is its final answer: one call of {tools} "
                              "(reads may come before it)")
    warnings: list[str] = []
    if len(calls) == 1:
        reads, warnings = gold_reads(row, task, answer_tools)
    else:
        reads = list(calls[:-1])
    plan = [*reads, calls[-1]]
    results = replay_cleanly(env, task, plan)
    verdict = env.verify(task, plan, mode)
    if not verdict.matched:
        raise CorrectionError(f"the verifier does not accept the corrected answer ({verdict_sentence(verdict)}); if you "
                              "believe the verifier is wrong, reject the item as 'verifier too strict' instead")
    rescored = env.verify(task, RolloutRow(row).calls(), mode)
    turns = [len(reads), 1] if reads else [1]
    return CorrectionCheck(plan, results, verdict, rescored, warnings, turns=turns)
