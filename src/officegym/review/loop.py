"""One round of the active-learning loop, for the pipeline to call as an optional stage:
flag a run's rollouts, import the reviews made since, export the retraining data, and count how
many items need review. `write_summary` turns the rounds into a small JSON + Markdown report.

The "virtuous-cycle" figures per round: items needing review, the review rate per 1,000 rollouts,
and the verifier-error rate the random audit finds (audited items rejected as verifier too strict
or too lenient, over audited items reviewed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from officegym.review.cases import VERIFIER_REJECTIONS
from officegym.review.export import export_store
from officegym.review.flag import FlagConfig, flag_run
from officegym.review.imports import import_reviews
from officegym.review.store import Filters, Store
from officegym.review.worlds import Environments


@dataclass
class RoundSummary:
    round: int
    run_dir: str
    rollouts: int
    groups: int
    flagged: int  # items this run put in the queue (new and refreshed)
    new_items: int
    needing_review: int  # this round's items still pending after the imports
    pending_total: int  # pending items in the whole store
    review_rate_per_1k: float  # flagged items per 1,000 rollouts
    by_reason: dict[str, int] = field(default_factory=dict)
    decided: dict[str, int] = field(default_factory=dict)  # this round's items by status
    training_only: int = 0  # all-fail groups with a sound oracle: a training signal, not a human item
    imported: int = 0
    refused: list[str] = field(default_factory=list)
    audit_reviewed: int = 0
    audit_verifier_errors: int = 0
    audit_verifier_error_rate: float | None = None
    exported: dict[str, int] = field(default_factory=dict)
    out_dir: str | None = None
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def active_learning_round(
    run_dir: str | os.PathLike[str],
    store: Store | str | os.PathLike[str],
    out_dir: str | os.PathLike[str] | None = None,
    reviews: Sequence[str | os.PathLike[str]] = (),
    round: int | None = None,
    config: FlagConfig | None = None,
    world: str | os.PathLike[str] | None = None,
    envs: Environments | None = None,
    run: str | None = None,
) -> RoundSummary:
    """Flag `run_dir` into the store as round `round` (default: the next one), import the review
    files given (decisions.jsonl, Label Studio or Argilla exports), write the retraining data to
    `out_dir/round_NNN/` when out_dir is given, record the round in the store and return its
    summary. Re-running a round refreshes it: decisions are kept, imports are idempotent. `run`
    names the run in item keys (default: the folder's name), so two runs never share items."""
    own = not isinstance(store, Store)
    st = Store(store) if own else store
    try:
        envs = envs or Environments()
        n = round if round is not None else st.next_round()
        flagged = flag_run(Path(run_dir), st, config, world=world, envs=envs, run=run, round=n, actor="loop")
        imported, refused = 0, []
        for path in reviews:
            res = import_reviews(st, path, envs)
            imported += res.imported
            refused += res.refused
            refused += [f"{k}: no such item in the store" for k in res.unknown_items]
        counts = st.counts(Filters(round=n))
        audit = _audit(st, n)
        target = None
        exported: dict[str, int] = {}
        if out_dir is not None:
            target = Path(out_dir) / f"round_{n:03d}"
            exported = export_store(st, target, envs, actor="loop").counts
        report = flagged.report
        summary = RoundSummary(
            round=n, run_dir=str(run_dir), rollouts=report.rollouts, groups=report.groups, flagged=len(report.items),
            new_items=flagged.added, needing_review=counts["status"]["pending"],
            pending_total=st.count(Filters(status="pending")),
            review_rate_per_1k=1000.0 * len(report.items) / report.rollouts if report.rollouts else 0.0,
            by_reason=dict(sorted(report.by_reason.items())), decided={k: v for k, v in counts["status"].items() if v},
            training_only=report.training_only, imported=imported, refused=refused, exported=exported,
            out_dir=str(target) if target else None, problems=report.problems, **audit,
        )
        st.save_round(n, str(run_dir), summary.to_dict())
        return summary
    finally:
        if own:
            st.close()


def _audit(store: Store, round: int) -> dict[str, Any]:
    latest = store.latest_decisions()
    reviewed = errors = 0
    for it in store.list(Filters(round=round, reason="random_audit"), limit=1_000_000):
        d = latest.get(it["id"])
        if d is None or d["action"] == "skip":
            continue
        reviewed += 1
        errors += d["action"] == "reject" and d["reason"] in VERIFIER_REJECTIONS
    return {"audit_reviewed": reviewed, "audit_verifier_errors": errors,
            "audit_verifier_error_rate": errors / reviewed if reviewed else None}


def _as_dict(r: RoundSummary | dict[str, Any]) -> dict[str, Any]:
    return r.to_dict() if isinstance(r, RoundSummary) else dict(r)


def summary_markdown(rounds: Iterable[RoundSummary | dict[str, Any]]) -> str:
    rows = [_as_dict(r) for r in rounds]
    lines = [
        "# Human review per round", "",
        "| round | rollouts | flagged | new | needing review | review rate / 1k | accepted | rejected | corrected "
        "| audit verifier-error rate |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        rate = r.get("audit_verifier_error_rate")
        audit = "-" if rate is None else f"{100 * rate:.1f}% of {r.get('audit_reviewed', 0)}"
        decided = r.get("decided") or {}
        lines.append(
            f"| {r['round']} | {r['rollouts']} | {r['flagged']} | {r['new_items']} | {r['needing_review']} "
            f"| {r['review_rate_per_1k']:.1f} | {decided.get('accepted', 0)} | {decided.get('rejected', 0)} "
            f"| {decided.get('corrected', 0)} | {audit} |"
        )
    reasons = sorted({k for r in rows for k in (r.get("by_reason") or {})})
    if reasons:
        lines += ["", "## Flag reasons per round", "", "| round | " + " | ".join(reasons) + " |",
                  "|---:|" + "---:|" * len(reasons)]
        for r in rows:
            lines.append(f"| {r['round']} | " + " | ".join(str((r.get('by_reason') or {}).get(k, 0)) for k in reasons) + " |")
    return "\n".join(lines) + "\n"


def write_summary(rounds: Iterable[RoundSummary | dict[str, Any]], out_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write `active_learning.json` and `active_learning.md` (one row per round) into out_dir."""
    from officegym.review.export import ExportBundle, write_export

    rows = [_as_dict(r) for r in rounds]
    files = {
        "active_learning.json": (json.dumps({"rounds": rows}, indent=1, ensure_ascii=False, default=str) + "\n").encode(),
        "active_learning.md": summary_markdown(rows).encode(),
    }
    write_export(ExportBundle(files, {}), out_dir)
    return Path(out_dir) / "active_learning.json", Path(out_dir) / "active_learning.md"
