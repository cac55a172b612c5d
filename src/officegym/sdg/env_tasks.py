"""Task sets of environments that generate their own tasks (the role environments): the
environment's `generate_tasks`, split by task id, written as NeMo Gym JSONL per split with
generation.json beside them."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.files import atomic_write
from officegym.core.task import write_jsonl
from officegym.sdg.splits import SPLITS, SplitPlan


@dataclass
class EnvTaskSet:
    """An environment's generated tasks as rows per split, with what made them."""

    env: str
    seed: int
    difficulty: tuple[int, int] | None
    rows: dict[str, list[dict[str, Any]]]
    seconds: float
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.rows.values())


def generate_env_tasks(environment: BaseEnvironment, n: int, seed: int, difficulty: tuple[int, int] | None = None,
                       name: str | None = None, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> EnvTaskSet:
    """`n` tasks from `environment.generate_tasks(n, seed, difficulty=...)` (no difficulty passed when
    None: the environment's full range), each row put in the split its task id hashes to under the
    train/validation/test `fractions`. `name` (default: the environment's) is recorded as the set's
    environment. The generator's ValueError or TypeError (a bad option) propagates, and so does a
    ValueError for fractions that are negative or do not sum to 1."""
    if any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"split fractions must be >= 0 and sum to 1, got {tuple(fractions)}")
    start = time.perf_counter()
    tasks = environment.generate_tasks(n, seed, **({"difficulty": difficulty} if difficulty is not None else {}))
    seconds = time.perf_counter() - start
    plan = SplitPlan(tuple(fractions))
    rows: dict[str, list[dict[str, Any]]] = {k: [] for k in SPLITS}
    for t in tasks:
        split = plan.assign(str(t.id), "", "")
        row = t.to_row()
        row["split"] = split
        rows[split].append(row)
    return EnvTaskSet(name or environment.name, seed, difficulty, rows, seconds, tuple(fractions))


def write_env_tasks(task_set: EnvTaskSet, out: Path) -> Path:
    """Write `out`/{train,validation,test}.jsonl and generation.json (environment, count, seed,
    difficulty range, rows per split, seconds); returns `out`."""
    out.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        write_jsonl(out / f"{split}.jsonl", task_set.rows[split])
    record = {"env": task_set.env, "n": task_set.total, "seed": task_set.seed,
              "difficulty": list(task_set.difficulty) if task_set.difficulty is not None else [1, 10],
              "fractions": list(task_set.fractions), "splits": {k: len(v) for k, v in task_set.rows.items()},
              "seconds": round(task_set.seconds, 3)}
    atomic_write(out / "generation.json", json.dumps(record, indent=2, ensure_ascii=False, default=str) + "\n")
    return out
