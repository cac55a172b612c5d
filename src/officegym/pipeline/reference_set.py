"""A published example set (NeMo Gym's, for the workplace) as one more evaluation subset: tasks
written by other people, in their own world. Found where the user points (`eval.reference`: a
folder holding `example.jsonl` or `data/example.jsonl`, and `csv_data/`), else, with `auto`, in the
environment's `reference_folders()` (the workplace's: OFFICEGYM_REFERENCE, the reference cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from officegym.core import registry

EXAMPLES = ("example.jsonl", "data/example.jsonl")


def _layout(root: Path) -> tuple[Path, Path] | None:
    examples = next((root / name for name in EXAMPLES if (root / name).is_file()), None)
    world = root / "csv_data"
    return (examples, world) if examples is not None and (world / "processed").is_dir() else None


def find_reference(setting: str | None, env_name: str) -> tuple[Path, Path] | None:
    """(examples JSONL, csv_data folder), or None when `setting` is None or `auto` finds nothing in
    the environment's reference folders; a folder named outright that lacks them is an error
    (ValueError)."""
    if setting is None:
        return None
    if setting != "auto":
        found = _layout(Path(setting).expanduser())
        if found is None:
            raise ValueError(f"eval.reference: {setting} holds no example.jsonl (or data/example.jsonl) with csv_data/")
        return found
    candidates = registry.environment_class(env_name).reference_folders()
    return next((found for c in candidates if (found := _layout(c)) is not None), None)


def evaluate_reference(env_name: str, found: tuple[Path, Path], policy: Any, config: Any, out: Path) -> dict[str, Any]:
    """The policy on the example tasks in their own world, into `out` (resumable, as any eval);
    the metrics of eval/metrics.py."""
    from officegym.core.task import read_tasks
    from officegym.eval.metrics import compute_metrics
    from officegym.eval.run import run_eval

    examples, world = found
    tasks = read_tasks(examples)
    env = registry.make(env_name, world=world)
    result = run_eval(env, tasks, policy, out, config=config)
    return compute_metrics(result.rows, tasks, env.write_tools)
