"""The reward interface: a reward maps (task, trajectory, verdict) to a total and its components.

Every reward reports its components separately (the trainer logs each one) and states the largest
total it can give (`max_total`), so that totals can be rescaled for reporting and checked in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import Verdict

# Which tools change state: a set of tool names, a predicate on a tool name, or None (not known).
WriteTools = Collection[str] | Callable[[str], bool] | None


@dataclass(frozen=True, slots=True)
class RewardResult:
    """A scalar reward and the named components it was built from (or that explain it)."""

    total: float
    components: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class RewardFunction(Protocol):
    """`reward(task, trajectory, verdict) -> RewardResult`, with a name and an upper bound."""

    name: str
    max_total: float

    def __call__(self, task: Task, trajectory: Trajectory, verdict: Verdict) -> RewardResult: ...


def write_predicate(writes: WriteTools) -> Callable[[str], bool] | None:
    """Normalise "which tools write" to a predicate on a tool name (None stays None).

    Rewards are environment-agnostic: the caller says which tools write, e.g.
    `officegym.envs.workplace.tools.WRITE_TOOLS` for the workplace environment.
    """
    if writes is None:
        return None
    if callable(writes):
        return writes
    if isinstance(writes, str):
        raise TypeError("writes must be a collection of tool names or a predicate, not a single string")
    names = frozenset(writes)
    return names.__contains__
