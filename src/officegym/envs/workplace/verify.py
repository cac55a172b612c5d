"""The verifier: replay predicted and ground-truth calls on fresh sessions and compare states.

`verify_calls(world, predicted, ground_truth, mode)` decides in both modes at once (the other
mode's reward is evidence), builds the per-table diff a human reads, and flags side effects (the
prediction changed state and is wrong) and invalid calls.
"""

from __future__ import annotations

from collections.abc import Sequence

from officegym.core.types import InvalidCall, TableDiff, ToolCall, Verdict
from officegym.envs.workplace.compat import DEFAULT_REFERENCE_COMPAT
from officegym.envs.workplace.session import WorkplaceSession
from officegym.envs.workplace.state import nemo_tables_equal, outcome_diff, untouched
from officegym.envs.workplace.world import COMPARED_TABLES, World

MODES = ("outcome", "nemo_gym")
DEFAULT_MODE = "outcome"


def _has_null_argument(calls: Sequence[ToolCall]) -> bool:
    return any(isinstance(c.arguments, dict) and None in c.arguments.values() for c in calls)


def _replay(world: World, calls: Sequence[ToolCall], drop_nulls: bool, compat: str = DEFAULT_REFERENCE_COMPAT):
    session = WorkplaceSession(world, compat)
    return session, session.replay(calls, drop_nulls=drop_nulls)


def nemo_equal(a: WorkplaceSession, b: WorkplaceSession) -> bool:
    return all(nemo_tables_equal(t, a.table(t), b.table(t)) for t in COMPARED_TABLES)


def outcome_diffs(expected: WorkplaceSession, got: WorkplaceSession) -> dict[str, TableDiff]:
    diffs = {}
    for t in COMPARED_TABLES:
        missing, extra, changed = outcome_diff(t, expected.table(t), got.table(t))
        diffs[t] = TableDiff(missing, extra, changed)
    return diffs


def verify_calls(
    world: World,
    predicted: Sequence[ToolCall],
    ground_truth: Sequence[ToolCall],
    mode: str = DEFAULT_MODE,
    reference_compat: str = DEFAULT_REFERENCE_COMPAT,
) -> Verdict:
    """Reward 1.0 when the predicted calls leave the five compared tables as the ground truth does.
    Both are replayed as the reference on `reference_compat`'s pandas runs them (compat.py)."""
    if mode not in MODES:
        raise ValueError(f"unknown verification mode {mode!r}; choose from {', '.join(MODES)}")
    # The live route drops JSON nulls (outcome replays that way); the reference's verify keeps them.
    compat = reference_compat
    pred_o, results_o = _replay(world, predicted, True, compat)
    gt_o, _ = _replay(world, ground_truth, True, compat)
    if _has_null_argument(predicted) or _has_null_argument(ground_truth):
        pred_n, results_n = _replay(world, predicted, False, compat)
        gt_n, _ = _replay(world, ground_truth, False, compat)
    else:
        pred_n, results_n, gt_n = pred_o, results_o, gt_o

    diffs = outcome_diffs(gt_o, pred_o)
    outcome_ok = not any(diffs.values())
    nemo_ok = nemo_equal(pred_n, gt_n)
    if not nemo_ok and outcome_ok:
        for t in COMPARED_TABLES:
            if not nemo_tables_equal(t, pred_n.table(t), gt_n.table(t)):
                diffs[t].note = (
                    "same content, but the reference (nemo_gym mode) sees a difference: row labels from "
                    "insert/delete order, a typed or null value, or letter case in status/list_name/board"
                )

    matched = outcome_ok if mode == "outcome" else nemo_ok
    pred, results = (pred_o, results_o) if mode == "outcome" else (pred_n, results_n)
    if matched or untouched(pred):
        side_effects = False
    else:
        pristine = WorkplaceSession(world, compat)
        if mode == "outcome":
            side_effects = any(any(outcome_diff(t, pristine.table(t), pred.table(t))) for t in COMPARED_TABLES)
        else:
            side_effects = not nemo_equal(pred, pristine)
    invalid = [
        InvalidCall(i, c.name, r.value if isinstance(r.value, str) else str(r.value))
        for i, (c, r) in enumerate(zip(predicted, results))
        if not r.ok
    ]
    other = "nemo_gym" if mode == "outcome" else "outcome"
    return Verdict(
        reward=1.0 if matched else 0.0,
        matched=matched,
        mode=mode,
        tables={t: d for t, d in diffs.items() if d},
        side_effects=side_effects,
        invalid_calls=invalid,
        other_mode=other,
        other_mode_reward=1.0 if (nemo_ok if other == "nemo_gym" else outcome_ok) else 0.0,
    )
