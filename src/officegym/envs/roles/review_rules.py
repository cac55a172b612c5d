"""What the review queue looks for in a role's graded verdict (RoleEnvironment.review_findings,
decision_key; the flagger is review/flag.py).

The role verifiers (roles/cto, coo, cost, reconcile, risk, and the council's mediator) grade an
answer in [0, 1] from components the verdict records (`feasible`, `optimal`, `quality_ratio`,
`claims_ok`, `f1`, ...). A human is wanted where that grade may be wrong, not where it is low:

Low verifier margin (`low_margin`). A rollout sits near a decision boundary when one component is
within a small distance of the threshold that would change its label. The distances, each in the
component's own scale (0 is on the boundary), and the band of each (the flagger's settings):

    optimality   feasible and not optimal, quality ratio q = optimum / value with q in
                 `ratio`: 1 - q from "correct" (a near-tie decided by the generator's optimum)
    claim        the answer's claimed figure (claimed_tco, claimed_value, claimed_monthly_cost) against
                 the verifier's recomputed one: e = |claimed - actual| / tolerance, the tolerance
                 being the verifier's own (max(0.5, 0.5 % of the figure)); flagged when e is in
                 `claim` (e <= 1 passed, e > 1 scored 0 as a wrong figure): |e - 1|
    detection    an F1 component (risk `f1`, reconcile `conflict_f1`) in `detection`: a perfect
                 register or conflict list is an item or two away; 1 - F1
    feasibility  infeasible with `constraint_satisfaction` (COO) in `satisfaction`: one rule
                 short of a feasible plan; 1 - satisfaction
    partial      the verdict's reward in `partial`: partial credit, whose value depends on how
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
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.roles.base import CLAIM_ABSOLUTE, CLAIM_RELATIVE, ESCALATE

# Answer arguments the verifiers never read (free text), and claimed figures with the component
# that holds the verifier's recomputed value.
FREE_TEXT = frozenset({"rationale", "reason", "tradeoff_note", "note"})
CLAIMS = {"claimed_tco": "tco", "claimed_value": "value", "claimed_monthly_cost": "cost"}
DETECTION = ("f1", "conflict_f1")
ESCALATION_LABELS = ("correct_escalation", "wrong_escalation", "missed_escalation")

Found = list[tuple[str, str]]  # (reason code, detail)
Executed = Sequence[tuple[ToolCall, str | None]]  # a rollout's calls with their statuses


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def answer_index(calls: Executed, answer_tools: Collection[str]) -> int | None:
    """The index of the call the verifier judged: the first answer-tool call that ran ("ok"; with
    no statuses recorded, the first answer-tool call)."""
    for i, (call, status) in enumerate(calls):
        if call.name in answer_tools and status in (None, "ok"):
            return i
    return None


def decision(call: ToolCall) -> str:
    """What an answer decides: its tool and arguments without free text or claimed figures."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    kept = {k: v for k, v in args.items() if k not in FREE_TEXT and k not in CLAIMS and not k.startswith("claimed_")}
    return json.dumps([call.name, kept], sort_keys=True, default=str)


def decision_key(calls: Executed, answer_tools: Collection[str]) -> str:
    """The decision of the judged answer ("null" without one), in the shape of state_fingerprint's answer."""
    k = answer_index(calls, answer_tools)
    return json.dumps([decision(calls[k][0]) if k is not None else "null"])


def claim_tolerance(actual: float) -> float:
    """The verifiers' tolerance on a claimed figure (base.py claim_matches)."""
    return max(CLAIM_ABSOLUTE, CLAIM_RELATIVE * abs(actual))


def margin_notes(verdict: Mapping[str, Any], claims: Mapping[str, Any], bands: Mapping[str, tuple[float, float]]) -> list[str]:
    """Each decision boundary the graded verdict sits near (see the module docstring), as a sentence."""
    comps = verdict.get("components") if isinstance(verdict.get("components"), dict) else {}
    label = verdict.get("label") or "?"
    if label in ESCALATION_LABELS:  # decided by the escalation alone: no grade to be near
        return []
    out = []
    q, feasible, optimal = _number(comps.get("quality_ratio")), _number(comps.get("feasible")), _number(comps.get("optimal"))
    lo, hi = bands["ratio"]
    if q is not None and feasible == 1.0 and optimal != 1.0 and lo <= q < hi:
        out.append(f"quality ratio {q:.4f}: {1 - q:.2%} from the optimum, so '{label}' rests on the optimum the "
                   "generator computed (a near-tie)")
    for key, comp in CLAIMS.items():
        claimed, actual = _number(claims.get(key)), _number(comps.get(comp))
        if claimed is None or actual is None:
            continue
        tol = claim_tolerance(actual)
        e = abs(claimed - actual) / tol
        clo, chi = bands["claim"]
        if clo <= e <= chi:
            verdict_word = "within the tolerance" if e <= 1 else "scored 0 as a wrong figure"
            out.append(f"{key} {claimed:,.6g} against {actual:,.6g} recomputed: off by {abs(claimed - actual):,.4g}, "
                       f"{e:.2f}x the tolerance of {tol:,.4g} ({verdict_word})")
    dlo, dhi = bands["detection"]
    for name in DETECTION:
        v = _number(comps.get(name))
        if v is not None and dlo <= v < dhi:
            out.append(f"{name} {v:.3f}: a perfect answer is an item or two away")
    slo, shi = bands["satisfaction"]
    s = _number(comps.get("constraint_satisfaction"))
    if s is not None and feasible == 0.0 and slo <= s < shi:
        out.append(f"infeasible with {s:.0%} of the rules met: one rule short of a feasible plan")
    reward = _number(verdict.get("reward"))
    plo, phi = bands["partial"]
    if reward is not None and 0.0 < reward < 1.0 and plo <= reward <= phi:
        out.append(f"reward {reward:.3g} is partial credit: its value depends on how the components are weighed")
    return out


def escalation_findings(verdict: Mapping[str, Any], infeasible: bool | None, answer: ToolCall | None) -> Found:
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


def answer_findings(task: Task, verdict: Mapping[str, Any], answer: ToolCall | None, claims: Mapping[str, Any],
                    bands: Mapping[str, tuple[float, float]]) -> Found:
    """Escalations and low margins of a graded verdict on `answer` (None: no answer was given)."""
    infeasible = task.metadata.get("infeasible")
    out = escalation_findings(verdict, infeasible if isinstance(infeasible, bool) else None, answer)
    near = margin_notes(verdict, claims, bands)
    if near:
        out.append(("low_margin", "; ".join(near)))
    return out


def rollout_findings(task: Task, verdict: Mapping[str, Any], calls: Executed, answer_tools: Collection[str],
                     bands: Mapping[str, tuple[float, float]]) -> Found:
    """Escalations, low margins and an answer without reads, for a role rollout."""
    k = answer_index(calls, answer_tools)
    answer = calls[k][0] if k is not None else None
    claims = answer.arguments if answer is not None and isinstance(answer.arguments, dict) else {}
    out = answer_findings(task, verdict, answer, claims, bands)
    lookups = [c for c in task.ground_truth if c.name not in answer_tools]
    reads = [c for c, status in calls[: k if k is not None else 0] if status in (None, "ok")]
    if verdict.get("matched") is True and lookups and answer is not None and not reads:
        out.append(("odd_high_reward", f"full credit for an answer given without a successful read; the ground truth "
                                       f"looks up {len(lookups)} time(s) first (where did the facts come from?)"))
    return out
