"""What a test split measures, apart: new fills of trained templates, held-out templates, held-out
wordings, and tasks whose right answer changes nothing. Each subset gets the full metrics (Wilson
intervals, >= 1-write accuracy, side effects, invalid calls), so they can stand side by side."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from officegym.core.rollout_row import RolloutRow
from officegym.core.task import Task

SUBSETS = ("trained", "heldout_template", "heldout_wording")
LABELS = {
    "trained": "new fills of trained templates",
    "heldout_template": "held-out templates",
    "heldout_wording": "held-out wordings",
    "heldout": "held-out templates + wordings",
    "do_nothing": '"change nothing" tasks',
    "reference": "NeMo Gym's example tasks (their world)",
}


def subset_of(task: Task) -> str | None:
    value = task.metadata.get("subset")
    return value if value in SUBSETS else None


def changes_nothing(task: Task, write_tools: frozenset[str] | None) -> bool:
    """Its ground truth writes nothing: the generator's own `do_nothing` flag where the row has one,
    else no call of `write_tools` (None: every call writes)."""
    if isinstance(task.metadata.get("do_nothing"), bool):
        return task.metadata["do_nothing"]
    return not any(write_tools is None or c.name in write_tools for c in task.ground_truth)


def subsets_of(task: Task, write_tools: frozenset[str] | None) -> set[str]:
    """The LABELS a task counts in: its subset, "heldout" for either held-out one, "do_nothing"."""
    subset = subset_of(task)
    names = {subset} if subset is not None else set()
    if subset in ("heldout_template", "heldout_wording"):
        names.add("heldout")
    if changes_nothing(task, write_tools):
        names.add("do_nothing")
    return names


def select_per_subset(tasks: list[Task], per_subset: int) -> list[Task]:
    """The first `per_subset` tasks of each subset, in file order (a task keeps its place however
    many are generated); tasks without a subset (rows from elsewhere) are one group of their own."""
    taken: dict[str | None, int] = defaultdict(int)
    out = []
    for t in tasks:
        key = subset_of(t)
        if taken[key] < per_subset:
            taken[key] += 1
            out.append(t)
    return out


def subset_metrics(rows: list[dict[str, Any]], tasks: Iterable[Task],
                   write_tools: frozenset[str] | None) -> dict[str, dict[str, Any]]:
    """compute_metrics of each subset present, of held-out templates and wordings together, and of
    the "change nothing" tasks; {} when the tasks carry no subsets."""
    from officegym.eval.metrics import compute_metrics

    by_id = {str(t.id): t for t in tasks}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        task = by_id.get(RolloutRow(row).task_id)
        for name in subsets_of(task, write_tools) if task is not None else ():
            groups[name].append(row)
    if not any(k in groups for k in SUBSETS):
        return {}
    return {name: compute_metrics(groups[name], list(by_id.values()), write_tools)
            for name in LABELS if groups.get(name)}
