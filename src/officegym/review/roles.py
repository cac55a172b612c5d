"""Role rollouts in the review queue: what the flagger looks for in a graded verdict, and the
correction of a role's final answer.

The role verifiers (roles/cto, coo, cost, reconcile, risk, and the council's mediator) grade an
answer in [0, 1] from components the verdict records (`feasible`, `optimal`, `quality_ratio`,
`claims_ok`, `f1`, ...). A human is wanted where that grade may be wrong, not where it is low:

Low verifier margin (`low_margin`). A rollout sits near a decision boundary when one component is
within a small distance of the threshold that would change its label. The distances, each in the
component's own scale (0 is on the boundary):

    optimality   feasible and not optimal, quality ratio q = optimum / value with q in
                 `ratio_band`: 1 - q from "correct" (a near-tie decided by the generator's optimum)
    claim        the answer's claimed figure (claimed_tco, claimed_value, claimed_monthly_cost) against
                 the verifier's recomputed one: e = |claimed - actual| / tolerance, the tolerance
                 being the verifier's own (max(0.5, 0.5 % of the figure)); flagged when e is in
                 `claim_band` (e <= 1 passed, e > 1 scored 0 as a wrong figure): |e - 1|
    detection    an F1 component (risk `f1`, reconcile `conflict_f1`) in `detection_band`: a perfect
                 register or conflict list is an item or two away; 1 - F1
    feasibility  infeasible with `constraint_satisfaction` (COO) in `satisfaction_band`: one rule
                 short of a feasible plan; 1 - satisfaction
    partial      the verdict's reward in `partial_band`: partial credit, whose value depends on how
                 the components are weighed rather than on one check

Escalations. Escalating is right exactly when the scenario is infeasible (the generator marks it),
and EMADS-PR sends every escalation to a human, so each kind is queued with its own code:
`escalation_wrong` (escalated although the verifier knows a feasible answer), `escalation_missed`
(answered, or said nothing, on an infeasible scenario) and `escalated` (a correct escalation: the
verifier never reads the reason, the reviewer confirms it names the requirement that cannot be met).

An odd high reward: full credit for an answer given without one successful read where the
ground truth needs lookups (the facts came from nowhere).

Decisions, not texts: two rewarded samples differ only when their answers differ outside the free
text (rationale, reason, trade-off note) and the claimed figures (checked on their own).

A correction of a role rollout is its final answer (one call of the role's answer tool or
`escalate`); the rollout's successful reads are kept before it (or, when it read nothing, the
ground truth's lookups), the whole is replayed in the environment and verified, and the correction
is refused unless the verifier gives it full credit. A reviewer who believes the verifier wrong
rejects the item with `verifier_too_strict` instead: that becomes a verifier regression case.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from officegym.core.environment import BaseEnvironment
from officegym.core.rollout_row import RolloutRow
from officegym.core.task import Task
from officegym.core.types import ToolCall, Verdict
from officegym.envs.roles.base import CLAIM_ABSOLUTE, CLAIM_RELATIVE, ESCALATE, RoleEnvironment
from officegym.review.replay import CorrectionCheck, CorrectionError, replay_cleanly

if TYPE_CHECKING:
    from officegym.review.flag import FlagConfig

# Answer arguments the verifiers never read (free text), and claimed figures with the component
# that holds the verifier's recomputed value.
FREE_TEXT = frozenset({"rationale", "reason", "tradeoff_note", "note"})
CLAIMS = {"claimed_tco": "tco", "claimed_value": "value", "claimed_monthly_cost": "cost"}
DETECTION = ("f1", "conflict_f1")
ESCALATION_LABELS = ("correct_escalation", "wrong_escalation", "missed_escalation")

Found = list[tuple[str, str]]  # (reason code, detail)


def is_graded(verdict: Any) -> bool:
    """A verdict from a grading verifier (the role environments say so in their details)."""
    return isinstance(verdict, dict) and verdict.get("graded") is True


def is_role_env(env: Any) -> bool:
    return isinstance(env, RoleEnvironment)


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


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


def answer_index(row: dict[str, Any], answer_tools: frozenset[str] | Sequence[str]) -> int | None:
    """The index of the call the verifier judged: the first answer-tool call that ran ("ok"; with
    no statuses recorded, the first answer-tool call)."""
    for i, (call, status, _) in enumerate(executed_calls(row)):
        if call.name in answer_tools and status in (None, "ok"):
            return i
    return None


def decision(call: ToolCall) -> str:
    """What an answer decides: its tool and arguments without free text or claimed figures."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    kept = {k: v for k, v in args.items() if k not in FREE_TEXT and k not in CLAIMS and not k.startswith("claimed_")}
    return json.dumps([call.name, kept], sort_keys=True, default=str)


def claim_tolerance(actual: float) -> float:
    """The verifiers' tolerance on a claimed figure (envs/roles/base.py claim_matches)."""
    return max(CLAIM_ABSOLUTE, CLAIM_RELATIVE * abs(actual))


def margin_notes(verdict: dict[str, Any], claims: dict[str, Any], config: FlagConfig) -> list[str]:
    """Each decision boundary the graded verdict sits near (see the module docstring), as a sentence."""
    comps = verdict.get("components") if isinstance(verdict.get("components"), dict) else {}
    label = verdict.get("label") or "?"
    if label in ESCALATION_LABELS:  # decided by the escalation alone: no grade to be near
        return []
    out = []
    q, feasible, optimal = _number(comps.get("quality_ratio")), _number(comps.get("feasible")), _number(comps.get("optimal"))
    lo, hi = config.ratio_band
    if q is not None and feasible == 1.0 and optimal != 1.0 and lo <= q < hi:
        out.append(f"quality ratio {q:.4f}: {1 - q:.2%} from the optimum, so '{label}' rests on the optimum the "
                   "generator computed (a near-tie)")
    for key, comp in CLAIMS.items():
        claimed, actual = _number(claims.get(key)), _number(comps.get(comp))
        if claimed is None or actual is None:
            continue
        tol = claim_tolerance(actual)
        e = abs(claimed - actual) / tol
        clo, chi = config.claim_band
        if clo <= e <= chi:
            verdict_word = "within the tolerance" if e <= 1 else "scored 0 as a wrong figure"
            out.append(f"{key} {claimed:,.6g} against {actual:,.6g} recomputed: off by {abs(claimed - actual):,.4g}, "
                       f"{e:.2f}x the tolerance of {tol:,.4g} ({verdict_word})")
    dlo, dhi = config.detection_band
    for name in DETECTION:
        v = _number(comps.get(name))
        if v is not None and dlo <= v < dhi:
            out.append(f"{name} {v:.3f}: a perfect answer is an item or two away")
    slo, shi = config.satisfaction_band
    s = _number(comps.get("constraint_satisfaction"))
    if s is not None and feasible == 0.0 and slo <= s < shi:
        out.append(f"infeasible with {s:.0%} of the rules met: one rule short of a feasible plan")
    reward = _number(verdict.get("reward"))
    plo, phi = config.partial_band
    if reward is not None and 0.0 < reward < 1.0 and plo <= reward <= phi:
        out.append(f"reward {reward:.3g} is partial credit: its value depends on how the components are weighed")
    return out


def escalation_findings(verdict: dict[str, Any], infeasible: bool | None, answer: ToolCall | None) -> Found:
    """The escalation codes (see the module docstring) for a graded verdict."""
    label = verdict.get("label")
    evidence = "; ".join(str(e) for e in verdict.get("evidence") or []) or "no evidence recorded"
    escalated = label in ("correct_escalation", "wrong_escalation") or (answer is not None and answer.name == ESCALATE)
    if infeasible is None:
        infeasible = bool(verdict.get("infeasible_scenario"))
    reason = ""
    if answer is not None and answer.name == ESCALATE and isinstance(answer.arguments, dict):
        reason = f" (reason: {str(answer.arguments.get('reason', ''))[:300]!r})"
    if escalated and infeasible:
        return [("escalated", f"escalated{reason} on an infeasible scenario: {evidence}. The verifier does not read the "
                              "reason: confirm it names the requirement that cannot be met")]
    if escalated:
        return [("escalation_wrong", f"escalated{reason}, but the verifier knows a feasible answer: {evidence}")]
    if infeasible:
        what = "answered" if answer is not None else "gave no answer"
        return [("escalation_missed", f"{what} ({label}) on an infeasible scenario, where the right act is to escalate: "
                                      f"{evidence}")]
    return []


def role_findings(row: dict[str, Any], task: Task, answer_tools: frozenset[str], config: FlagConfig) -> Found:
    """Escalations, low margins and an answer without reads, for a role rollout row."""
    ref = RolloutRow(row)
    verdict = ref.verdict or {}
    executed = executed_calls(row)
    k = answer_index(row, answer_tools)
    answer = executed[k][0] if k is not None else None
    infeasible = task.metadata.get("infeasible")
    out = escalation_findings(verdict, infeasible if isinstance(infeasible, bool) else None, answer)
    claims = answer.arguments if answer is not None and isinstance(answer.arguments, dict) else {}
    near = margin_notes(verdict, claims, config)
    if near:
        out.append(("low_margin", "; ".join(near)))
    lookups = [c for c in task.ground_truth if c.name not in answer_tools]
    reads = [c for c, status, _ in executed[: k if k is not None else 0] if status in (None, "ok")]
    if verdict.get("matched") is True and lookups and answer is not None and not reads:
        out.append(("odd_high_reward", f"full credit for an answer given without a successful read; the ground truth "
                                       f"looks up {len(lookups)} time(s) first (where did the facts come from?)"))
    return out


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
    answer_tools = frozenset(env.write_tools or ())
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
