"""A council run: a policy for each seat, the councils of a task list run into a folder with their
summary (the folder's format, and the settings check that refuses resuming with others: council_file.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from officegym.agent.council import CouncilConfig, run_council_file
from officegym.agent.council_file import (
    COUNCILS,
    CouncilRunError,
    summarize_councils,
    task_key,
    write_summary,
)
from officegym.agent.council_seats import COUNCIL, scripted_seat
from officegym.agent.policies import PolicySpec
from officegym.core import registry
from officegym.core.policy import Policy
from officegym.core.task import Task


def seat_policies(specs: Mapping[str, str], max_rounds: int, make_model: Callable[[str, str], Policy],
                  seats: Sequence[str] | None = None) -> dict[str, Policy]:
    """A policy for each of `seats` (the council's by default) from {seat: spec} (seats left out are
    scripted): scripted ones built for their seat, model ones made by `make_model(seat, spec)` once
    per spec and shared by the seats naming it (so their requests are batched together). A spec
    that cannot sit at its seat raises CouncilRunError."""
    env = registry.make(COUNCIL)
    models: dict[str, Policy] = {}
    out: dict[str, Policy] = {}
    for seat in env.seats if seats is None else seats:
        spec = specs.get(seat, "scripted")
        made = scripted_seat(seat, spec, max_rounds, env)
        if made is None:
            if PolicySpec(spec).kind in ("role-random", "silent"):
                raise CouncilRunError(f"{spec!r} cannot sit at {seat}; use scripted, oracle, greedy, silent (members), "
                                 "random, noop or a model (openai:MODEL, hf:PATH, ...)")
            if spec not in models:
                models[spec] = make_model(seat, spec)
            made = models[spec]
        out[seat] = made
    return out


def run_council_folder(tasks: Sequence[Task], seats: Mapping[str, Policy], folder: Path, config: CouncilConfig,
                       concurrency: int = 8, specs: Mapping[str, str] | None = None,
                       progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run a council per task into folder/councils.jsonl (resumable: see `run_council_file`) and
    write folder/summary.json: the seats' policy names, `specs`, the round limit and the team
    figures of these tasks' councils (rows of other tasks in the file are left out). Returns the
    summary; ValueError when the file holds councils of other seats."""
    rows = run_council_file(tasks, seats, folder / COUNCILS, config, concurrency, progress=progress)
    wanted = {task_key(t.id) for t in tasks}
    rows = [r for r in rows if task_key(r.get("task_id")) in wanted]
    summary = {"seats": {s: p.name for s, p in seats.items()},
               "specs": dict(specs or {}), "max_rounds": config.max_rounds, **summarize_councils(rows)}
    write_summary(folder, summary)
    return summary
