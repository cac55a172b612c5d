"""A council run: a policy for each seat, the settings a run folder was made with (resuming with
others is refused), and the councils of a task list run into the folder with their summary."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from officegym.agent.council import CouncilConfig, run_council_file, summarize_councils
from officegym.agent.council_seats import COUNCIL, scripted_seat
from officegym.agent.policies import PolicySpec
from officegym.core import registry
from officegym.core.files import atomic_write
from officegym.core.policy import Policy
from officegym.core.task import Task

COUNCILS = "councils.jsonl"
SUMMARY = "summary.json"
SETTINGS = "run.json"


class CouncilRunError(ValueError):
    """A council run that cannot start as asked (a policy that cannot sit at its seat, a folder of
    councils run with other settings); the message says which."""


def _write_json(path: Path, data: Any) -> None:
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def seat_policies(specs: Mapping[str, str], max_rounds: int, make_model: Callable[[str, str], Policy],
                  seats: Sequence[str] | None = None) -> dict[str, Policy]:
    """A policy for each of `seats` (the council's by default) from {seat: spec} (seats left out are
    scripted): scripted ones built for their seat, model ones made by `make_model(seat, spec)` once
    per spec and shared by the seats naming it (so their requests are batched together). A spec that cannot sit at its seat
    raises CouncilRunError."""
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


def record_settings(out: Path, settings: dict[str, Any]) -> None:
    """Record in out/run.json what a council folder is run with. A folder holding councils run with
    other settings raises CouncilRunError (their task ids would name other councils)."""
    path = out / SETTINGS
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        before = None
    if isinstance(before, dict) and (out / COUNCILS).exists():
        changed = [k for k, v in settings.items() if before.get(k) != v]
        if changed:
            raise CouncilRunError(f"{out} holds councils run with other {', '.join(changed)}: use another --out")
    out.mkdir(parents=True, exist_ok=True)
    _write_json(path, settings)


def run_council_folder(tasks: Sequence[Task], seats: Mapping[str, Policy], folder: Path, config: CouncilConfig,
                       concurrency: int = 8, specs: Mapping[str, str] | None = None,
                       progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run a council per task into folder/councils.jsonl (resumable: see `run_council_file`) and
    write folder/summary.json: the seats' policy names, `specs`, the round limit and the team
    figures of these tasks' councils (rows of other tasks in the file are left out). Returns the
    summary; ValueError when the file holds councils of other seats."""
    rows = run_council_file(tasks, seats, folder / COUNCILS, config, concurrency, progress=progress)
    wanted = {json.dumps(t.id, default=str) for t in tasks}
    rows = [r for r in rows if json.dumps(r.get("task_id"), default=str) in wanted]
    summary = {"seats": {s: p.name for s, p in seats.items()},
               "specs": dict(specs or {}), "max_rounds": config.max_rounds, **summarize_councils(rows)}
    _write_json(folder / SUMMARY, summary)
    return summary
