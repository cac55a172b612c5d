"""What a caller may ask of an environment: the base class every environment derives from.

The protocol in core/protocols.py is the minimum (tools, session, verify); this class declares the
rest that the trainer, the evaluator, the server and the review queue use, with defaults, so no
caller probes attributes with `getattr` or compares environment names:

- `modes`: the verification modes, the first the default; `mode` the one this instance uses;
- `write_tools`: the tools that change state (None: not known);
- `takes_world`: built from a world folder (the workplace); `default_world()` is used without one;
- `session_from_row`: sessions are seeded from the task row (the roles), not from a world;
- `world_path`: the folder the world was loaded from, if any (the server reports it);
- `nemo_gym_server`: the class of NeMo Gym's own resources server for it, if it has one (the
  session cookie is named after it);
- `generate_tasks(n, seed, ...)`: the environment's own task generator, when it has one;
- `seats` and `episode(task, max_rounds=)`: a multi-agent environment names its seats and builds
  the episode (core/episode.py) that the agent loop plays, every seat with its own policy.

Build environments with `registry.make(name, world=..., mode=...)`, which turns every failure
(unknown name, a world the environment cannot load or does not take, an unknown mode) into one
`EnvironmentSetupError` with a message for the user.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from officegym.core.episode import Episode
from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolSpec, Verdict


class EnvironmentSetupError(ValueError):
    """An environment that cannot be built as asked; the message says why."""


class BaseEnvironment:
    name: ClassVar[str] = ""
    modes: ClassVar[tuple[str, ...]] = ("outcome",)
    takes_world: ClassVar[bool] = False
    session_from_row: ClassVar[bool] = False
    nemo_gym_server: ClassVar[str | None] = None  # NeMo Gym's resources-server class for it, if any
    seats: ClassVar[tuple[str, ...]] = ()  # a multi-agent environment's seats; () for a single agent
    write_tools: frozenset[str] | None = None
    mode: str = "outcome"

    def tools(self, task: Task | None = None) -> list[ToolSpec]:
        raise NotImplementedError

    def session(self, task: Task | None = None) -> Any:
        raise NotImplementedError

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        raise NotImplementedError

    @property
    def world_path(self) -> str | None:
        return None

    @classmethod
    def default_world(cls) -> Path | None:
        """The world used when none is given (environments that take one)."""
        return None

    @property
    def world_id(self) -> str | None:
        """The `world_id` that task rows made in this environment's world carry (None: no world)."""
        return None

    @classmethod
    def world_named(cls, world_id: str) -> Path | None:
        """The folder of the world task rows name by `world_id` when it can be made again (built
        into the cache on first use), else None."""
        return None

    def generate_tasks(self, n: int, seed: int, **options: Any) -> list[Task]:
        raise EnvironmentSetupError(f"{self.name} has no task generator of its own")

    def episode(self, task: Task, *, max_rounds: int | None = None) -> Episode:
        """The multi-agent episode over `task` (environments with `seats`)."""
        raise EnvironmentSetupError(f"{self.name} is a single-agent environment: it has no seats to play")

    @property
    def has_task_generator(self) -> bool:
        return type(self).generate_tasks is not BaseEnvironment.generate_tasks
