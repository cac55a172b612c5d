"""From worlds to a dataset folder: generate, split, write train/validation/test JSONL and the card."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write
from officegym.core.task import write_jsonl
from officegym.envs.workplace.tasks.surface import FEATURES
from officegym.sdg.card import dataset_card
from officegym.sdg.dedup import calls_key
from officegym.sdg.engine import Accepted, GenerationReport, generate
from officegym.sdg.splits import SPLITS, SplitPlan, make_plan
from officegym.sdg.workplace import TOOL_MODES, WorkplaceSource, task_row


@dataclass
class Dataset:
    rows: dict[str, list[dict[str, Any]]]
    report: GenerationReport
    plan: SplitPlan
    settings: dict[str, Any] = field(default_factory=dict)
    sources: list[WorkplaceSource] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.rows.values())


def build_dataset(worlds: Sequence[str | os.PathLike[str]] | Sequence[WorkplaceSource], n: int, seed: int = 0,
                  holdout_templates: int = 0, holdout_worlds: int = 0, tools: str = "all",
                  templates: Sequence[str] | None = None, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
                  on_accept: Callable[[Accepted], None] | None = None, wordings: str = "base",
                  holdout_wordings: int | Sequence[str] = 0, all_tools_share: float = 0.5,
                  do_nothing_weight: int = 4, do_nothing_max: float = 0.2,
                  per_template_max: int | None = None, do_nothing_per_template_max: int | None = None) -> Dataset:
    """Generate up to `n` validated tasks over the worlds and split them. `tools` "mixed" offers all
    27 tools to a share `all_tools_share` of the tasks (decided by a hash of the task) and the task's
    domains to the rest."""
    if n < 1:
        raise ValueError("n must be at least 1")
    if tools not in TOOL_MODES:
        raise ValueError(f"tools must be one of {', '.join(TOOL_MODES)}, got {tools!r}")
    if not 0.0 <= all_tools_share <= 1.0:
        raise ValueError(f"all_tools_share must be within [0, 1], got {all_tools_share}")
    if holdout_wordings and wordings != "composed":
        raise ValueError("held-out wordings need composed wordings (wordings='composed')")
    if templates and any(isinstance(w, WorkplaceSource) for w in worlds):
        # a ready-made source draws from its own templates: ignoring the argument would be silent
        raise ValueError("templates apply to world folders; give a WorkplaceSource its templates instead")
    sources = [w if isinstance(w, WorkplaceSource) else WorkplaceSource(
        w, templates=list(templates) if templates else None, wordings=wordings, do_nothing_weight=do_nothing_weight)
        for w in worlds]
    ids = [s.world_id for s in sources]
    if len(set(ids)) != len(ids):
        raise ValueError(f"two worlds share an id ({', '.join(ids)}); give worlds distinct folder names")
    plan = make_plan(sources[0].template_ids(), ids, seed, holdout_templates, holdout_worlds, fractions,
                     holdout_wordings, FEATURES)
    report = generate(sources, n, seed, on_accept=on_accept, do_nothing_max=do_nothing_max,
                      per_template_max=per_template_max, do_nothing_per_template_max=do_nothing_per_template_max)
    now = {s.world_id: s.world.now for s in sources}
    rows: dict[str, list[dict[str, Any]]] = {k: [] for k in SPLITS}
    for a in report.accepted:
        c = a.candidate
        wording = c.meta.get("wording")
        features = wording.features() if wording is not None else ()
        key = f"{c.world_id}\n{c.template}\n{calls_key(c.calls)}"
        split = plan.assign(key, c.template, c.world_id, features)
        rows[split].append(task_row(c, now=now[c.world_id], tools=_tools_for(key, tools, all_tools_share),
                                    difficulty=a.difficulty, reads=a.reads, writes=a.writes, split=split,
                                    subset=plan.subset(c.template, c.world_id, features)))
    settings = {"n": n, "seed": seed, "worlds": ids, "tools": tools, "holdout_templates": holdout_templates,
                "holdout_worlds": holdout_worlds, "fractions": list(fractions),
                "templates": len(sources[0].template_ids()), "wordings": wordings,
                "held_out_wordings": sorted(plan.held_wordings), "do_nothing_weight": do_nothing_weight,
                "do_nothing_max": do_nothing_max, "per_template_max": per_template_max,
                "do_nothing_per_template_max": do_nothing_per_template_max}
    if tools == "mixed":
        settings["all_tools_share"] = all_tools_share
    return Dataset(rows, report, plan, settings, sources)


def _tools_for(key: str, mode: str, all_share: float) -> str:
    """"all" or "domain" for one task; a mixed dataset decides by a hash of the task's key, so a
    task keeps its prompt however many tasks are generated."""
    if mode != "mixed":
        return mode
    u = int.from_bytes(hashlib.blake2b(f"tools\n{key}".encode(), digest_size=8).digest(), "big") / 2**64
    return "all" if u < all_share else "domain"


def write_dataset(ds: Dataset, out: str | os.PathLike[str]) -> dict[str, Path]:
    """train.jsonl, validation.jsonl, test.jsonl, README.md (the card) and generation.json (counts),
    each written atomically."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split in SPLITS:
        paths[split] = out / f"{split}.jsonl"
        write_jsonl(paths[split], ds.rows[split])
    card = dataset_card(ds.rows, ds.settings, dict(ds.report.rejected), sorted(ds.plan.held_templates), ds.report.seconds)
    paths["card"] = out / "README.md"
    atomic_write(paths["card"], card)
    summary = {
        "settings": ds.settings, "tasks": {k: len(v) for k, v in ds.rows.items()}, "attempts": ds.report.attempts,
        "rejected": dict(ds.report.rejected), "rejection_examples": ds.report.examples,
        "rejected_by_template": {f"{t}/{r}": n for (t, r), n in sorted(ds.report.rejected_by_template.items())},
        "empty_draws": dict(ds.report.empty_draws), "exhausted": ds.report.exhausted,
        "held_out_templates": sorted(ds.plan.held_templates), "held_out_worlds": sorted(ds.plan.held_worlds),
        "held_out_wordings": sorted(ds.plan.held_wordings),
        "seconds": round(ds.report.seconds, 3),
    }
    paths["summary"] = out / "generation.json"
    atomic_write(paths["summary"], json.dumps(summary, indent=2, sort_keys=True))
    return paths
