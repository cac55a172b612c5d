"""Which world (and so which environment) a reviewed rollout ran in, and building it again.

A world spec is a small JSON object stored with every item:
`{"path": "/data/world"}`, `{"generated": {"seed": 0, "size": "reference", ...}}` or both (a
generated world that was written to a folder: the folder is used when it is there, else the world
is generated again from its seed, which gives the same world byte for byte).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.registry import DEFAULT_ENVIRONMENT, canonical_name, environment_class, make, takes_world

# What `officegym eval` uses without --world: the generated world of seed 0, reference size.
DEFAULT_WORLD: dict[str, Any] = {"generated": {"seed": 0, "size": "reference"}}
_GENERATED_KEYS = ("seed", "size", "now", "company", "user")


class WorldSpecError(ValueError):
    """A world spec that names no usable world."""


def spec_for_path(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The spec of a world folder; a generated world also records how to generate it again."""
    root = Path(path).resolve()
    spec: dict[str, Any] = {"path": str(root)}
    for candidate in (root / "world.json", root / "csv_data" / "world.json"):
        if candidate.exists():
            try:
                meta = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                break
            if isinstance(meta, dict) and "seed" in meta and "size" in meta:
                spec["generated"] = {k: meta[k] for k in _GENERATED_KEYS if k in meta}
            break
    return spec


def spec_for_run(run_dir: Path, override: str | os.PathLike[str] | dict[str, Any] | None = None) -> dict[str, Any]:
    """The world of a run folder: `override` (a folder or a spec) if given, else `run.json`'s
    world, else eval's default."""
    if isinstance(override, dict):
        return dict(override)
    if override is not None:
        return spec_for_path(override)
    info = Path(run_dir) / "run.json"
    if info.exists():
        try:
            world = json.loads(info.read_text(encoding="utf-8")).get("world")
        except (OSError, ValueError, AttributeError):
            world = None
        if isinstance(world, str) and world not in ("", "None"):
            path = Path(world)
            if not path.is_absolute():
                # run.json keeps --world as typed: relative to where eval ran, which is unknown;
                # try here, then beside the run folder.
                tries = [Path.cwd() / path, Path(run_dir).resolve().parent / path, Path(run_dir).resolve() / path]
                path = next((p for p in tries if p.exists()), tries[0])
            return spec_for_path(path.resolve())
    return dict(DEFAULT_WORLD)


def spec_key(spec: dict[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True)


def load_spec(spec: dict[str, Any], env_name: str = DEFAULT_ENVIRONMENT):
    """The world of environment `env_name` a spec names (raises WorldSpecError with the reason)."""
    declared = environment_class(env_name)
    path = spec.get("path")
    generated = spec.get("generated")
    if path and Path(path).exists():
        try:
            return declared.load_world(path)
        except ValueError as exc:
            if not generated:
                raise WorldSpecError(str(exc)) from None
    if isinstance(generated, dict):
        try:
            return declared.generate_world(**{k: generated[k] for k in _GENERATED_KEYS if k in generated})
        except (TypeError, ValueError) as exc:
            raise WorldSpecError(f"cannot generate world {generated}: {exc}") from None
    raise WorldSpecError(f"world not found: {path!r}" if path else f"not a world spec: {spec!r}")


class Environments:
    """Environments by (environment name, world spec, verification mode), built once each.

    `override`, when given, is used for every item (the reviewer's --world).
    """

    def __init__(self, override: dict[str, Any] | None = None):
        self.override = override
        self._lock = threading.Lock()
        self._worlds: dict[tuple[str, str], Any] = {}  # (environment name, spec key) -> its world
        self._envs: dict[tuple[str, str, str | None], BaseEnvironment] = {}

    def get(self, env_name: str, spec: dict[str, Any] | None, mode: str | None = None) -> BaseEnvironment:
        spec = self.override or spec or DEFAULT_WORLD
        env_name = canonical_name(env_name)
        key = (env_name, spec_key(spec), mode)
        with self._lock:
            env = self._envs.get(key)
            if env is None:
                world = None
                if takes_world(env_name):
                    world = self._worlds.get(key[:2])
                    if world is None:
                        world = self._worlds[key[:2]] = load_spec(spec, env_name)
                env = self._envs[key] = make(env_name, world=world, mode=mode or None)
            return env

    def add_world(self, spec: dict[str, Any], world: Any, env_name: str = DEFAULT_ENVIRONMENT) -> None:
        """Use an already built world of `env_name` for `spec` (tests, and callers that hold the world)."""
        with self._lock:
            self._worlds[(canonical_name(env_name), spec_key(spec))] = world
