"""The default world: seed 0 at reference size, written once into the officegym cache. Every
command and trainer that is given no world uses this one folder."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from officegym.core.cache import cache_root


def default_world_path() -> Path:
    return cache_root() / "worlds" / "seed0-reference"


def default_world(announce: Callable[[str], None] | None = None) -> Path:
    """The default world's folder, generated on first use (`announce` is told before it is)."""
    from officegym.envs.workplace.generate.world import generate_world
    from officegym.envs.workplace.generate.writer import write_world

    path = default_world_path()
    if not (path / "world.json").exists():
        if announce is not None:
            announce(f"no world given: generating the default world (seed 0) into {path}")
        with contextlib.suppress(FileExistsError):  # another process wrote it first
            write_world(generate_world(0, "reference"), path, overwrite=True)
    return path
