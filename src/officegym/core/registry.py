"""Registry of environments by name, resolved lazily so that `core` imports none of them."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from officegym.core.environment import BaseEnvironment, EnvironmentSetupError

# name -> "module:attribute" of a factory; resolved on first use.
_BUILTIN: dict[str, str] = {
    "workplace_assistant": "officegym.envs.workplace.env:WorkplaceEnvironment",
    "roles/cto": "officegym.envs.roles.cto:CTOEnvironment",
    "roles/coo": "officegym.envs.roles.coo:COOEnvironment",
    "roles/reconcile": "officegym.envs.roles.reconcile:ReconcileEnvironment",
    "roles/risk": "officegym.envs.roles.risk:RiskEnvironment",
    "roles/cost": "officegym.envs.roles.cost:CostEnvironment",
    "roles/council": "officegym.envs.roles.council:CouncilEnvironment",
}
_ALIASES: dict[str, str] = {"workplace": "workplace_assistant"}
# The environment of a task row that names none (NeMo Gym's rows are the workplace's).
DEFAULT_ENVIRONMENT = "workplace_assistant"
_FACTORIES: dict[str, Callable[..., BaseEnvironment]] = {}


class UnknownEnvironmentError(EnvironmentSetupError, KeyError):
    def __str__(self) -> str:
        return f"unknown environment {self.args[0]!r}; known: {', '.join(names())}"


def register(name: str, factory: Callable[..., BaseEnvironment] | str) -> None:
    """Register a factory (or a "module:attr" path) under `name`."""
    if isinstance(factory, str):
        _BUILTIN[name] = factory
        _FACTORIES.pop(name, None)
    else:
        _FACTORIES[name] = factory


def names() -> list[str]:
    return sorted(set(_BUILTIN) | set(_FACTORIES))


def canonical_name(name: str) -> str:
    return _ALIASES.get(name, name)


def aliases(name: str) -> list[str]:
    """The other names an environment answers to (workplace_assistant: workplace)."""
    canonical = canonical_name(name)
    return sorted(alias for alias, target in _ALIASES.items() if target == canonical)


def factory(name: str) -> Callable[..., BaseEnvironment]:
    name = canonical_name(name)
    if name in _FACTORIES:
        return _FACTORIES[name]
    if name not in _BUILTIN:
        raise UnknownEnvironmentError(name)
    module, _, attr = _BUILTIN[name].partition(":")
    made = getattr(importlib.import_module(module), attr)
    _FACTORIES[name] = made
    return made


def environment_class(name: str) -> type[BaseEnvironment]:
    """The class of the environment registered as `name`: its class-level declarations (takes_world,
    modes, seats, write_tools, sdg_templates) and world hooks answer without building it. A factory
    that is no class declares nothing: BaseEnvironment's defaults."""
    made = factory(name)
    return made if isinstance(made, type) and issubclass(made, BaseEnvironment) else BaseEnvironment


def make(name: str, *, world: Any = None, mode: str | None = None) -> BaseEnvironment:
    """Build the environment registered as `name` (aliases such as "workplace" accepted): the one
    way to build one. `world` (a folder or a loaded world) is for environments that take one; they
    get their default world without it. Every failure is an EnvironmentSetupError that says why."""
    canonical = canonical_name(name)
    made = factory(canonical)
    declared = environment_class(canonical)
    kwargs: dict[str, Any] = {}
    if declared.takes_world:
        if world is None:
            world = declared.default_world()
        kwargs["world"] = world
    elif world is not None:
        raise EnvironmentSetupError(f"{canonical} takes no world: its episodes come from the task rows")
    if mode is not None:
        if declared is made and mode not in declared.modes:  # a plain factory names no modes
            raise EnvironmentSetupError(f"unknown verification mode {mode!r} for {canonical}; choose from {', '.join(declared.modes)}")
        kwargs["mode"] = mode
    try:
        env = made(**kwargs)
    except EnvironmentSetupError:
        raise
    except (OSError, ValueError, TypeError) as exc:
        where = f" from {world}" if isinstance(world, str | os.PathLike) else ""
        raise EnvironmentSetupError(f"could not build {canonical}{where}: {exc}") from None
    if not isinstance(env, BaseEnvironment):
        raise EnvironmentSetupError(f"{canonical}: {type(env).__name__} must derive officegym.core.environment.BaseEnvironment")
    return env


def world_named(name: str, world_id: str, announce: Callable[[str], None] | None = None) -> Path | None:
    """The folder of the world `world_id` of the environment registered as `name`, when that
    environment can make it again (BaseEnvironment.world_named), else None."""
    return environment_class(canonical_name(name)).world_named(world_id, announce)


def takes_world(name: str) -> bool:
    """Whether the environment registered as `name` is built from a world (without building it)."""
    return environment_class(name).takes_world


def has_task_generator(name: str) -> bool:
    """Whether the environment registered as `name` generates its own tasks."""
    return environment_class(name).generate_tasks is not BaseEnvironment.generate_tasks


def write_tools(name: str) -> frozenset[str] | None:
    """The tools that change state in environment `name`, from its class (without building it)."""
    tools = environment_class(name).write_tools
    return frozenset(tools) if isinstance(tools, frozenset | set | tuple | list) else None
