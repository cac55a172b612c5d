"""Rewards by name, and `make_reward` to build one from a config string or mapping."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from officegym.rewards.base import RewardFunction, WriteTools
from officegym.rewards.call_match import CallMatch
from officegym.rewards.combine import WeightedSum
from officegym.rewards.outcome import BinaryOutcome, VerifierScore
from officegym.rewards.penalty import InvalidCallPenalty
from officegym.rewards.shaped import ShapedConfig, ShapedReward


class UnknownRewardError(KeyError):
    def __str__(self) -> str:
        return f"unknown reward {self.args[0]!r}; known: {', '.join(reward_names())}"


def _binary(writes: WriteTools = None, **options: Any) -> RewardFunction:
    if options:
        raise ValueError(f"reward 'binary' takes no options, got {', '.join(sorted(options))}")
    return BinaryOutcome()


def _outcome(writes: WriteTools = None, **options: Any) -> RewardFunction:
    if options:
        raise ValueError(f"reward 'outcome' takes no options, got {', '.join(sorted(options))}")
    return VerifierScore()


def _shaped(writes: WriteTools = None, **options: Any) -> RewardFunction:
    known = {f.name for f in dataclasses.fields(ShapedConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for reward 'shaped'; known: {', '.join(sorted(known))}")
    return ShapedReward(ShapedConfig(**options), writes=writes)


def _call_match(writes: WriteTools = None, **options: Any) -> RewardFunction:
    unknown = sorted(set(options) - {"surplus_penalty"})
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for reward 'call_match'; known: surplus_penalty")
    return CallMatch(writes=writes, **options)


# name -> factory(writes=..., **options)
_FACTORIES: dict[str, Callable[..., RewardFunction]] = {"binary": _binary, "outcome": _outcome, "shaped": _shaped,
                                                         "call_match": _call_match}


def register_reward(name: str, factory: Callable[..., RewardFunction]) -> None:
    """Register `factory(writes=None, **options) -> reward` under `name`."""
    _FACTORIES[name] = factory


def reward_names() -> list[str]:
    return sorted(_FACTORIES)


def make_reward(spec: Any, *, writes: WriteTools = None, **options: Any) -> RewardFunction:
    """Build a reward from a config value.

    - `"binary"`, `"shaped"` (or any registered name), with `**options` for that reward:
      `make_reward("shaped", writes=WRITE_TOOLS, quality_weight=0.05)`;
    - a mapping of name -> weight, or name -> {"weight": w, **options}, gives a WeightedSum:
      `make_reward({"shaped": 0.5, "binary": 0.5})`;
    - the same as a string, for the command line: `"shaped:0.5,binary:0.5"`;
    - a reward object is returned as it is.
    `writes` (tool names or a predicate) is passed to every reward built.
    """
    if isinstance(spec, str) and (":" in spec or "," in spec):
        spec = _parse_weights(spec)
    if isinstance(spec, str):
        name = spec.strip()
        if name not in _FACTORIES:
            raise UnknownRewardError(spec)
        return _FACTORIES[name](writes=writes, **options)
    if isinstance(spec, Mapping):
        if options:
            raise ValueError("options go inside the mapping: {name: {'weight': w, option: value}}")
        parts = []
        for name, entry in spec.items():
            if entry is None:
                weight, entry_options = 1.0, {}
            elif isinstance(entry, Mapping):
                entry_options = dict(entry)
                weight = entry_options.pop("weight", 1.0)
            else:
                weight, entry_options = entry, {}
            parts.append((weight, make_reward(name, writes=writes, **entry_options)))
        return WeightedSum(parts)
    if callable(spec) and not isinstance(spec, type) and not options:
        return spec
    raise TypeError(f"a reward spec is a name, a mapping of names to weights, or a reward; got {spec!r}")


def _parse_weights(text: str) -> dict[str, float]:
    weights: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, weight = item.partition(":")
        try:
            weights[name.strip()] = float(weight) if weight.strip() else 1.0
        except ValueError:
            raise ValueError(f"bad reward weight in {item!r}: expected name:number") from None
    if not weights:
        raise ValueError(f"empty reward spec {text!r}")
    return weights


def training_reward(spec: Any, *, writes: WriteTools = None, invalid_call_penalty: float = 0.0) -> RewardFunction | None:
    """The reward a run trains on, logs and writes out. None stands for "outcome" without a
    penalty: the agent loop then takes the verifier's score from the verdict itself (the same
    value, without a call per rollout)."""
    if isinstance(spec, str) and spec.strip() == "outcome" and not invalid_call_penalty:
        return None
    reward = make_reward(spec, writes=writes)
    return InvalidCallPenalty(reward, invalid_call_penalty) if invalid_call_penalty else reward
