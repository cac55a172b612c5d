"""The world task rows are evaluated or verified in: the one they were made in.

Rows of officegym's generator name their world (`world_id`, "seed7-reference" for a generated one);
verified against another world, their ground truth names people and mails that are not there, and
every score is wrong without a word. Rows without a `world_id` (NeMo Gym's dataset) name none and
keep the given world, or the default one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from officegym.cli.common import default_world, fail, say
from officegym.core import registry
from officegym.core.environment import BaseEnvironment

MISMATCH_FLAG = "--allow-world-mismatch"
AllowMismatchOpt = Annotated[bool, typer.Option(
    MISMATCH_FLAG, help="Use --world even when the rows say they were made in another world.")]


def world_ids(rows: Iterable[Any]) -> list[str]:
    """The worlds that task rows (Tasks or JSON rows) say they were made in, sorted."""
    ids = set()
    for row in rows:
        meta = getattr(row, "metadata", row)
        value = meta.get("world_id") if isinstance(meta, dict) else None
        if isinstance(value, str) and value:
            ids.add(value)
    return sorted(ids)


def world_for(given: Path | None, ids: list[str], allow_mismatch: bool = False,
              env: str = registry.DEFAULT_ENVIRONMENT) -> Path:
    """The world folder of environment `env` to use: `given`; else the one the rows name, made again
    into the cache when the environment can (BaseEnvironment.world_named); else its default world.
    Rows naming a world that cannot be made end the command with the --world to pass."""
    if given is not None:
        return given
    if not ids:
        return default_world(env)
    if len(ids) > 1:
        fail(f"the tasks were made in {len(ids)} worlds ({', '.join(ids)}): evaluate each world's tasks with its "
             f"--world (or pass one --world and {MISMATCH_FLAG})")
    path = registry.world_named(env, ids[0], announce=say)
    if path is None:
        fail(f"the tasks were made in world {ids[0]!r}: pass that world's folder with --world")
    say(f"the tasks were made in world {ids[0]}: using that world, made again from its id; pass --world if it was "
        "generated with options its id does not name (--now, --company or --user)")
    return path


def refuse_other_world(path: Path, ids: list[str], have: str | None, allow_mismatch: bool = False) -> None:
    """End the command when the rows were made in another world than `have`, the id of the world at
    `path` (BaseEnvironment.world_id)."""
    if not ids or allow_mismatch or have is None:
        return
    others = [i for i in ids if i != have]
    if others:
        fail(f"the tasks were made in world {others[0]}, but the world at {path} is {have}: pass --world with the "
             f"world they were made in (or {MISMATCH_FLAG} to use this one anyway)")


def checked_rows(rows: Iterable[tuple[int, Any]], environment: BaseEnvironment,
                 allow_mismatch: bool = False) -> Iterator[tuple[int, Any]]:
    """(line, row) pairs as they stream by, ending the command at the first row made in another
    world than the environment's (rows naming no world pass)."""
    have = environment.world_id
    for lineno, row in rows:
        value = row.get("world_id") if isinstance(row, dict) and not allow_mismatch else None
        if isinstance(value, str) and value and have is not None and value != have:
            fail(f"line {lineno}: the rollout was made in world {value}, but the world at {environment.world_path} is "
                 f"{have}: pass --world with the world it was made in (or {MISMATCH_FLAG} to verify it here anyway)")
        yield lineno, row


def environment_for_tasks(env: str | None, world: Path | None, mode: str | None, tasks: list, allow_world_mismatch: bool):
    """The environment's name, the environment and its verification mode for `tasks`: in the world
    they were made in, for one that takes a world. A problem ends the command."""
    from officegym.core.environment import EnvironmentSetupError
    from officegym.eval.results import choose_environment, open_environment

    try:
        env_name = choose_environment(env, tasks)
        ids = world_ids(tasks) if registry.takes_world(env_name) else []
        if registry.takes_world(env_name):
            world = world_for(world, ids, allow_world_mismatch, env_name)
        environment, mode = open_environment(env_name, world, mode)
    except EnvironmentSetupError as exc:
        fail(str(exc))
    if ids and environment.world_path:
        refuse_other_world(Path(environment.world_path), ids, environment.world_id, allow_world_mismatch)
    return env_name, environment, mode
