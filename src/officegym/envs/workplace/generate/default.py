"""Generated worlds kept in the officegym cache, one folder per seed and size ("seed7-reference", the
id task rows made in that world carry). The default world is seed 0 at reference size: every command
and trainer that is given no world uses that one folder."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from pathlib import Path

from officegym.core.cache import cache_root

# A world's id when it was generated with its seed's defaults: world_id_of reads it from world.json.
_GENERATED_ID = re.compile(r"seed(-?\d+)-([a-z]+)")


def world_id_of(path: str | Path) -> str:
    """The id task rows made in the world at `path` carry: "seed7-reference" for a generated world
    (from its world.json), else the folder's name."""
    meta = Path(path) / "world.json"
    if meta.is_file():
        try:
            info = json.loads(meta.read_text())
            if "seed" in info and "size" in info:
                return generated_world_id(info["seed"], info["size"])
        except (OSError, ValueError):
            pass
    return Path(path).resolve().name or "world"


def generated_world_id(seed: int, size: str) -> str:
    return f"seed{seed}-{size}"


def parse_generated_id(world_id: str) -> tuple[int, str] | None:
    """(seed, size) of an id such as "seed7-reference", or None for any other id."""
    from officegym.envs.workplace.generate.world import SIZES

    m = _GENERATED_ID.fullmatch(world_id)
    return (int(m.group(1)), m.group(2)) if m and m.group(2) in SIZES else None


def generated_world_path(seed: int, size: str) -> Path:
    return cache_root() / "worlds" / generated_world_id(seed, size)


def generated_world(seed: int, size: str, announce: Callable[[str], None] | None = None) -> Path:
    """The folder of the world of `seed` and `size`, generated into the cache on first use
    (`announce` is told before it is). The generator is deterministic: the same bytes every time."""
    from officegym.envs.workplace.generate.world import generate_world
    from officegym.envs.workplace.generate.writer import write_world

    path = generated_world_path(seed, size)
    if not (path / "world.json").exists():
        if announce is not None:
            announce(f"generating the world of seed {seed} ({size} size) into {path}")
        with contextlib.suppress(FileExistsError):  # another process wrote it first
            write_world(generate_world(seed, size), path, overwrite=True)
    return path


def default_world_path() -> Path:
    return generated_world_path(0, "reference")


def default_world(announce: Callable[[str], None] | None = None) -> Path:
    """The default world's folder, generated on first use (`announce` is told before it is)."""
    if announce is not None and not (default_world_path() / "world.json").exists():
        announce(f"no world given: generating the default world (seed 0) into {default_world_path()}")
    return generated_world(0, "reference")
