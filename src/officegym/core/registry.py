"""Registry of environments by name, resolved lazily so that `core` imports none of them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from officegym.core.protocols import Environment

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
_FACTORIES: dict[str, Callable[..., Environment]] = {}


class UnknownEnvironmentError(KeyError):
    def __str__(self) -> str:
        return f"unknown environment {self.args[0]!r}; known: {', '.join(names())}"


def register(name: str, factory: Callable[..., Environment] | str) -> None:
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


def factory(name: str) -> Callable[..., Environment]:
    name = canonical_name(name)
    if name in _FACTORIES:
        return _FACTORIES[name]
    if name not in _BUILTIN:
        raise UnknownEnvironmentError(name)
    module, _, attr = _BUILTIN[name].partition(":")
    made = getattr(importlib.import_module(module), attr)
    _FACTORIES[name] = made
    return made


def make(name: str, **kwargs: Any) -> Environment:
    """Build the environment registered as `name` (aliases such as "workplace" accepted)."""
    return factory(name)(**kwargs)
