"""The pipeline's optional active-learning stage: `review.rounds` rounds after GRPO, each of which

1. flags the latest training run's rollouts into the review store (`officegym review serve` shows
   the queue), imports the review files named in `review.reviews`, and exports what was decided;
2. rebuilds the training pool: the train split without the tasks reviewers removed, with
   corrected tasks in place of their originals and accepted flagged tasks kept (tasks of the
   validation and test splits are never added, so evaluation stays held out);
3. retrains with GRPO from the latest model on that pool and evaluates it like the other stages.

A round is done when `review/round_NNN/summary.json` exists; rerunning the pipeline with a larger
`review.rounds` (after reviewing in the web UI) runs the next rounds. The per-round counts (items
flagged, needing review, decided) go to `review/active_learning.md` and into the pipeline report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from officegym.core.files import atomic_write, load_appendable_jsonl
from officegym.pipeline.config import PipelineConfig, PipelineError
from officegym.train.config_files import merge_sections


class ReviewHost(Protocol):
    """What the review rounds use of the pipeline that runs them (`pipeline.run.Pipeline`)."""

    cfg: PipelineConfig
    out: Path

    @property
    def tasks_dir(self) -> Path: ...

    @property
    def world_dir(self) -> Path: ...

    @property
    def takes_world(self) -> bool: ...

    def say(self, text: str) -> None: ...

    def train_grpo(self, start: str, out_dir: Path, sections: dict[str, Any], tasks: Path | None = None) -> None: ...

    def evaluate(self, name: str, model: str, out: Path | None = None) -> dict[str, Any]: ...


def build_pool(train: Path, export_dir: Path | None, held_out: set[str], out: Path) -> dict[str, int]:
    """Write the reviewed training pool to `out` and return its counts."""
    rows = load_appendable_jsonl(train)
    base = len(rows)
    removed_ids: set[str] = set()
    fixed: dict[str, dict[str, Any]] = {}
    if export_dir is not None:
        removed_ids = {str(r["id"]) for r in load_appendable_jsonl(export_dir / "rl_removed.jsonl")}
        fixed = {str(r["id"]): r for r in load_appendable_jsonl(export_dir / "rl_tasks.jsonl")}
    kept = [r for r in rows if str(r["id"]) not in removed_ids]
    index = {str(r["id"]): i for i, r in enumerate(kept)}
    replaced = added = skipped_held_out = 0
    for task_id, row in fixed.items():
        if task_id in held_out:
            skipped_held_out += 1  # a reviewed validation/test task must not leak into training
        elif task_id in index:
            kept[index[task_id]] = row
            replaced += 1
        else:
            kept.append(row)
            added += 1
    atomic_write(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept))
    return {"train": base, "removed": base - (len(kept) - added), "replaced": replaced, "added": added,
            "held_out_skipped": skipped_held_out, "pool": len(kept)}


def _source(p: ReviewHost, n: int) -> Path:
    """The rollouts round n flags: the previous round's GRPO run, else the pipeline's, else its
    latest evaluation."""
    root = p.out / "review"
    candidates = [root / f"round_{n - 1:03d}" / "grpo", root / f"round_{n - 1:03d}" / "eval"] if n > 1 else []
    candidates += [p.out / "grpo", p.out / "eval_grpo", p.out / "eval_sft", p.out / "eval_base"]
    for c in candidates:
        rollouts = c / "rollouts.jsonl"
        if rollouts.exists() and rollouts.stat().st_size > 0:
            return c
    raise PipelineError("review: no rollouts to flag; run the grpo or an eval stage first")


def _start_model(p: ReviewHost, n: int) -> str:
    root = p.out / "review"
    for c in ([root / f"round_{n - 1:03d}" / "grpo" / "model"] if n > 1 else []) + [p.out / "grpo" / "model",
                                                                                    p.out / "sft" / "model"]:
        if c.exists():
            return str(c)
    return p.cfg.model


def _held_out(p: ReviewHost) -> set[str]:
    return {str(r["id"]) for split in ("validation", "test") for r in load_appendable_jsonl(p.tasks_dir / f"{split}.jsonl")}


def run_review_rounds(p: ReviewHost) -> list[dict[str, Any]]:
    """The config's review rounds not yet done (see the module's docstring); returns every round's
    summary, those done before included, and writes review/active_learning.md."""
    from officegym.review.flag import FlagConfig
    from officegym.review.loop import active_learning_round, write_summary

    rc = p.cfg.review
    root = p.out / "review"
    root.mkdir(parents=True, exist_ok=True)
    store = Path(rc.store) if rc.store else root / "review.sqlite"
    done: list[dict[str, Any]] = []
    for n in range(1, rc.rounds + 1):
        rdir = root / f"round_{n:03d}"
        summary_path = rdir / "summary.json"
        if summary_path.exists():
            done.append(json.loads(summary_path.read_text()))
            continue
        rdir.mkdir(parents=True, exist_ok=True)
        source = _source(p, n)
        p.say(f"review round {n}: flagging {source}")
        summary = active_learning_round(source, store, out_dir=root / "exports", reviews=rc.reviews, round=n,
                                        config=FlagConfig(audit_share=rc.audit_share),
                                        world=str(p.world_dir) if p.takes_world else None,
                                        run=source.relative_to(p.out).as_posix() if source.is_relative_to(p.out) else None)
        record = summary.to_dict()
        p.say(f"review round {n}: {summary.flagged} flagged ({summary.new_items} new), "
              f"{summary.needing_review} need review, {summary.imported} decisions imported")
        pool = rdir / "tasks.jsonl"
        record["pool"] = build_pool(p.tasks_dir / "train.jsonl", Path(summary.out_dir) if summary.out_dir else None,
                                    _held_out(p), pool)
        if rc.retrain == "grpo":
            start = _start_model(p, n)
            record["start_model"] = start
            p.train_grpo(start, rdir / "grpo", merge_sections(p.cfg.grpo, rc.grpo), tasks=pool)
            metrics = p.evaluate(f"review round {n}", str(rdir / "grpo" / "model"), out=rdir / "eval")
            record["eval"] = {"accuracy": metrics["accuracy"], "tasks": metrics["tasks"],
                              ">= 1 write": metrics["buckets"].get(">= 1 write", {}).get("accuracy")}
        atomic_write(summary_path, json.dumps(record, indent=1, default=str) + "\n")
        done.append(record)
    write_summary(done, root)
    return done
