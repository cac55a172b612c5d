"""An environment and a reward function whose time is counted apart from the episode's own (the
trainers and the Ray workers report scoring time separately)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from officegym.core.environment import BaseEnvironment, EnvironmentWrapper
from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import ToolCall, Verdict

Count = Callable[[float], None]


class TimedEnvironment(EnvironmentWrapper):
    """`env` whose verify calls are timed: their seconds add up in `verify_seconds` and go to
    `on_verify` when given; everything else is `env`'s (EnvironmentWrapper)."""

    def __init__(self, env: BaseEnvironment, on_verify: Count | None = None):
        super().__init__(env)
        self.verify_seconds = 0.0
        self.on_verify = on_verify

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        t0 = time.perf_counter()
        try:
            return self.env.verify(task, calls, mode)
        finally:
            spent = time.perf_counter() - t0
            self.verify_seconds += spent
            if self.on_verify is not None:
                self.on_verify(spent)


class TimedReward:
    """A reward function whose calls are timed the same way (`seconds`, `on_call`)."""

    def __init__(self, fn: Any, on_call: Count | None = None):
        self.fn = fn
        self.seconds = 0.0
        self.on_call = on_call

    def __call__(self, task: Task, traj: Trajectory, verdict: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.fn(task, traj, verdict)
        finally:
            spent = time.perf_counter() - t0
            self.seconds += spent
            if self.on_call is not None:
                self.on_call(spent)
