"""Tasks for training: loading, the held-out split, the environment, and a resumable task stream."""

from __future__ import annotations

import dataclasses
import os
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from officegym.core import registry
from officegym.core.environment import EnvironmentSetupError
from officegym.core.task import Task, TaskFormatError, read_tasks
from officegym.train.config import DataConfig

registry.register("toy_pick", "officegym.train.toy:PickEnvironment")


class DataError(ValueError):
    """Task data that cannot be used for training; the message says which file and why."""


def load_tasks(path: str | os.PathLike[str]) -> list[Task]:
    try:
        tasks = read_tasks(path)
    except FileNotFoundError:
        raise DataError(f"no such task file: {path}") from None
    except TaskFormatError as exc:
        raise DataError(str(exc)) from None
    if not tasks:
        raise DataError(f"{path} holds no tasks")
    return tasks


def split_tasks(tasks: list[Task], cfg: DataConfig, seed: int) -> tuple[list[Task], list[Task]]:
    """(train, validation): the val_tasks file when given (prepared as the training tasks are, see
    prepare_tasks), else a seeded val_fraction of `tasks` (at least one task held out when the
    fraction is above 0 and there are two tasks or more)."""
    if cfg.val_tasks:
        # prepared before the cap below: 12 validation tasks of the templates trained on, not the
        # few of them among 12 drawn from every template
        val = prepare_tasks(load_tasks(cfg.val_tasks), cfg, strict=False)
        train = tasks
    elif cfg.val_fraction > 0 and len(tasks) > 1:
        order = list(range(len(tasks)))
        random.Random(f"split:{seed}").shuffle(order)
        n_val = min(len(tasks) - 1, max(1, round(cfg.val_fraction * len(tasks))))
        held = set(order[:n_val])
        val = [t for i, t in enumerate(tasks) if i in held]
        train = [t for i, t in enumerate(tasks) if i not in held]
    else:
        train, val = tasks, []
    if cfg.max_val_tasks is not None:
        val = val[: cfg.max_val_tasks] if cfg.val_sample == "first" else per_template(val, cfg.max_val_tasks)
    return train, val


def template_of(task: Any) -> str:
    meta = getattr(task, "metadata", None) or {}
    return str(meta.get("template") or getattr(task, "category", None) or "-")


def per_template(tasks: list[Task], n: int) -> list[Task]:
    """`n` tasks taken in turn from each template (templates by name, tasks in file order): a small
    validation set then holds every template about equally, not just those early in the file."""
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        groups.setdefault(template_of(task), []).append(task)
    queues = [groups[k] for k in sorted(groups)]
    picked: list[Task] = []
    depth = 0
    while len(picked) < min(n, len(tasks)):
        picked += [q[depth] for q in queues if depth < len(q)][: n - len(picked)]
        depth += 1
    return picked


def make_environment(cfg: DataConfig) -> Any:
    """The environment named by `cfg.env`; the workplace one gets its world (default: seed 0)."""
    try:
        return registry.make(cfg.env, world=Path(cfg.world) if cfg.world else None, mode=cfg.verify_mode or None)
    except EnvironmentSetupError as exc:
        raise DataError(f"data.env {cfg.env}: {exc}") from None


# Tool-name prefixes of the workplace domains, and the words task categories use for them.
_DOMAIN_PREFIXES = {
    "email": ("email_",),
    "calendar": ("calendar_",),
    "analytics": ("analytics_",),
    "project_management": ("project_management_",),
    "customer_relationship_manager": ("customer_relationship_manager_",),
    "crm": ("customer_relationship_manager_",),
}
_ALWAYS = ("company_directory_",)


def task_domains(task: Task) -> list[str]:
    """The domains a task is about: metadata `domains` when present, else its category's suffix."""
    domains = task.metadata.get("domains")
    if isinstance(domains, list) and domains:
        return [str(d) for d in domains]
    category = task.category or ""
    found = [d for d in _DOMAIN_PREFIXES if category.endswith(d) or f"_{d}_" in f"_{category}_"]
    return found


def restrict_tools(task: Task) -> Task:
    """A copy of `task` that offers only its domain tools (plus the directory and every tool its
    ground truth uses): much shorter prompts. Unknown domains keep every tool."""
    domains = task_domains(task)
    prefixes = tuple(p for d in domains for p in _DOMAIN_PREFIXES.get(d, ()))
    if not prefixes or not task.tools:
        return task
    needed = {c.name for c in task.ground_truth}
    kept = [t for t in task.tools
            if (name := t.get("name") or t.get("function", {}).get("name", "")).startswith(prefixes + _ALWAYS) or name in needed]
    if not kept:
        return task
    return dataclasses.replace(task, tools=kept)


def of_templates(tasks: list[Task], templates: Sequence[str] | None, what: str, strict: bool = True) -> list[Task]:
    """The tasks of these templates (None: all); `strict`: a template none of them has is an error
    (a misspelt name would otherwise train on nothing of it, silently)."""
    if templates is None:
        return tasks
    wanted = set(templates)
    if strict:
        present = {template_of(t) for t in tasks}
        missing = sorted(wanted - present)
        if missing:
            raise DataError(f"{what}: no task of {', '.join(missing)}; the tasks' templates are {', '.join(sorted(present))}")
    return [t for t in tasks if template_of(t) in wanted]


def prepare_tasks(tasks: list[Task], cfg: DataConfig, strict: bool = True) -> list[Task]:
    """Check that the tasks belong to `cfg.env` (a task of another environment would only ever get
    the verifier's "bad task" verdict, reward 0), keep those of `cfg.templates`, then restrict tools
    when asked. `strict` (the training file): every template asked for must be there."""
    env = registry.canonical_name(cfg.env)
    foreign = Counter(registry.canonical_name(t.environment_name) for t in tasks if t.environment_name
                      and registry.canonical_name(t.environment_name) != env)
    if foreign:
        names = ", ".join(f"{n} ({k})" for n, k in foreign.most_common())
        raise DataError(f"data.env is {cfg.env!r} but {sum(foreign.values())} of {len(tasks)} tasks belong to another "
                        f"environment: {names}; set data.env to match the tasks")
    tasks = of_templates(tasks, cfg.templates, "data.templates", strict)
    return [restrict_tools(t) for t in tasks] if cfg.tools == "domain" else tasks


class TaskStream:
    """Items (tasks, SFT examples) in a seeded order, epoch after epoch, with a position that
    checkpoints save: a resumed run draws exactly what the uninterrupted run would have drawn."""

    def __init__(self, tasks: list[Any], seed: int, shuffle: bool = True):
        if not tasks:
            raise DataError("nothing to train on (no tasks or examples)")
        self.tasks = tasks
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.index = 0
        self._order = self._make_order(0)

    def _make_order(self, epoch: int) -> list[int]:
        order = list(range(len(self.tasks)))
        if self.shuffle:
            random.Random(f"tasks:{self.seed}:{epoch}").shuffle(order)
        return order

    def take(self, n: int) -> list[Any]:
        out = []
        for _ in range(n):
            if self.index >= len(self._order):
                self.epoch += 1
                self.index = 0
                self._order = self._make_order(self.epoch)
            out.append(self.tasks[self._order[self.index]])
            self.index += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index, "n_tasks": len(self.tasks)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        if int(state.get("n_tasks", len(self.tasks))) != len(self.tasks):
            raise DataError(f"the checkpoint was made with {state.get('n_tasks')} training items, this run has {len(self.tasks)}")
        self.epoch = int(state["epoch"])
        self.index = int(state["index"])
        self._order = self._make_order(self.epoch)


class GroupedStream(TaskStream):
    """A TaskStream whose order puts items of one group side by side in runs of `run` items (each
    group shuffled, cut into runs, the runs shuffled), so that a batch of `run` consecutive items
    comes from one group. A group's last run is filled up with other members of the group (a few
    items are seen twice in an epoch); groups smaller than a run share mixed runs. SFT uses it with the groups of conversations sharing a tool set: a step's
    micro-batch then runs that long prompt once (train/forward.py)."""

    def __init__(self, tasks: list[Any], groups: list[list[int]], run: int, seed: int, shuffle: bool = True):
        if sorted(i for g in groups for i in g) != list(range(len(tasks))):
            raise DataError("groups must cover every item exactly once")
        self.groups = groups
        self.run = max(1, run)
        super().__init__(tasks, seed, shuffle)

    def _make_order(self, epoch: int) -> list[int]:
        rng = random.Random(f"grouped:{self.seed}:{epoch}")
        runs, pool = [], []
        for group in self.groups:
            members = list(group)
            if self.shuffle:
                rng.shuffle(members)
            if len(members) < self.run:
                pool.extend(members)
                continue
            runs.extend(_runs(members, self.run))
        if pool:
            runs.extend(_runs(pool, self.run))
        if self.shuffle:
            rng.shuffle(runs)
        return [i for r in runs for i in r]


def _runs(members: list[int], run: int) -> list[list[int]]:
    """`members` cut into runs of exactly `run`, the last filled up with the first members (so every
    run, and every epoch, is a whole number of batches)."""
    members = members + (members * run)[: -len(members) % run]
    return [members[i : i + run] for i in range(0, len(members), run)]
