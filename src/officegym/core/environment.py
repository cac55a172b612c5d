"""What a caller may ask of an environment: the base class every environment derives from.

The protocol in core/protocols.py is the minimum (tools, session, verify); this class declares the
rest that the trainer, the evaluator, the server and the review queue use, with defaults, so no
caller probes attributes with `getattr` or compares environment names:

- `modes`: the verification modes, the first the default; `mode` the one this instance uses;
- `write_tools`: the tools that change state (None: not known);
- `takes_world`: built from a world (a folder, or one loaded by `load_world` or made by
  `generate_world`); `default_world()` is used without one; `world_path` and `world_id` name the
  one loaded, `world_named(id)` makes again the world task rows name;
- `reference_folders()`: where a published example set of its tasks may be (NeMo Gym's, for the
  workplace), which the pipeline evaluates as one more subset;
- `sdg_templates`: its tasks come from sdg's template library over its worlds (the workplace's);
  otherwise `generate_tasks(n, seed, ...)` is its own generator, when it has one;
- `session_from_row`: sessions are seeded from the task row (the roles), not from a world;
- `verifies_truth_only`: `verify` reads nothing of a task but its ground truth (the workplace's), so
  a rollout row carrying its truth is verified without building its whole task;
- `state_fingerprint(session)`: a strict description of the state a session holds (the review
  queue compares rewarded end states by it); None: the successful write calls say it all;
- `nemo_gym_server` and `cookie_name()`: NeMo Gym's resources-server class for it, if it has one,
  and the session cookie named after it;
- `seats` and `episode(task, max_rounds=)`: a multi-agent environment names its seats and builds
  the episode (core/episode.py) that the agent loop plays, every seat with its own policy;
- `baselines` and `baseline_turn(kind, request, seed)`: the scripted baselines (policy specs such as
  `greedy`) it plays, turn by turn; agent/baseline_policy.py is the policy that asks;
- `seat_baseline(seat, kind)` and `seat_turn(seat, kind, request, max_rounds)`: the scripted policies
  a multi-agent environment's seats may be given (agent/council_seats.py asks);
- `asession(task)` and `averify(task, calls, mode)`: what the agent loop awaits; in process the
  sync `session` and `verify`, over the network (server/client.py's RemoteEnvironment) the requests;
- for the review queue: `graded_answers` (the answer tools whose verdicts are graded),
  `review_findings(task, verdict, calls, bands)` (what a reviewer should look at in a graded
  verdict), `decision_key(calls)` (what rewarded rollouts are compared on), and for a multi-agent
  environment `replay_episode` (its logged acts, or a rollout's calls, made again: an
  `EpisodeReplay`), `act_call(act)` and `decision_plan(calls, proposals)` (a corrected decision as
  single-agent calls).

Build environments with `registry.make(name, world=..., mode=...)`, which turns every failure
(unknown name, a world the environment cannot load or does not take, an unknown mode) into one
`EnvironmentSetupError` with a message for the user. Wrap one with `EnvironmentWrapper`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from officegym.core.episode import Episode
from officegym.core.policy import Completion, PolicyRequest
from officegym.core.session import BaseSession
from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolSpec, Verdict

Announce = Callable[[str], None]


class EnvironmentSetupError(ValueError):
    """An environment that cannot be built as asked; the message says why."""


Finding = tuple[str, str]  # (reason code, detail) for the review queue


@dataclass
class EpisodeReplay:
    """What `replay_episode` gives: the replayed state as plain data the review page shows (the acts,
    rounds, proposals, ...: the environment's own keys), its grade (None for a rollout's calls), the
    acts the state refused, and the findings its seats' disagreements make."""

    state: dict[str, Any]
    grade: Verdict | None = None
    refused: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


class BaseEnvironment:
    name: ClassVar[str] = ""
    modes: ClassVar[tuple[str, ...]] = ("outcome",)
    takes_world: ClassVar[bool] = False
    sdg_templates: ClassVar[bool] = False
    session_from_row: ClassVar[bool] = False
    verifies_truth_only: ClassVar[bool] = False
    nemo_gym_server: ClassVar[str | None] = None  # NeMo Gym's resources-server class for it, if any
    seats: ClassVar[tuple[str, ...]] = ()  # a multi-agent environment's seats; () for a single agent
    baselines: ClassVar[tuple[str, ...]] = ()  # the scripted baselines baseline_turn plays
    graded_answers: ClassVar[frozenset[str]] = frozenset()  # answer tools whose verdicts are graded
    write_tools: frozenset[str] | None = None
    mode: str = "outcome"

    def tools(self, task: Task | None = None) -> list[ToolSpec]:
        raise NotImplementedError

    def session(self, task: Task | None = None) -> BaseSession:
        raise NotImplementedError

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        raise NotImplementedError

    async def asession(self, task: Task | None = None) -> BaseSession:
        """`session`, awaited by the agent loop (an environment over the network overrides it)."""
        return self.session(task)

    async def averify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        """`verify`, awaited by the agent loop (an environment over the network overrides it)."""
        return self.verify(task, calls, mode)

    # -- worlds
    @property
    def world_path(self) -> str | None:
        return None

    @property
    def world_id(self) -> str | None:
        """The `world_id` that task rows made in this environment's world carry (None: no world)."""
        return None

    @classmethod
    def default_world(cls, announce: Announce | None = None) -> Path | None:
        """The world used when none is given (environments that take one); `announce` is told
        before it is made."""
        return None

    @classmethod
    def world_named(cls, world_id: str, announce: Announce | None = None) -> Path | None:
        """The folder of the world task rows name by `world_id` when it can be made again (built
        into the cache on first use; `announce` is told before it is), else None."""
        return None

    @classmethod
    def reference_folders(cls) -> list[Path]:
        """Where a published example set of its tasks may sit, each folder with `example.jsonl` (or
        `data/example.jsonl`) and the `csv_data/` world they were written in: the pipeline evaluates
        on the first found as one more subset (eval.reference: auto). None by default."""
        return []

    @classmethod
    def load_world(cls, path: str | Path) -> Any:
        """The world at `path`, as the constructor's `world=` takes it; a ValueError says why not."""
        raise EnvironmentSetupError(f"{cls.name} takes no world")

    @classmethod
    def generate_world(cls, folder: Path | None = None, **options: Any) -> Any:
        """A world made by the environment's generator from `options` (its seed, size, ...): written
        into `folder` and that folder returned when one is given, else the world in memory."""
        raise EnvironmentSetupError(f"{cls.name} generates no world")

    # -- tasks and episodes
    def generate_tasks(self, n: int, seed: int, **options: Any) -> list[Task]:
        raise EnvironmentSetupError(f"{self.name} has no task generator of its own")

    @property
    def has_task_generator(self) -> bool:
        return type(self).generate_tasks is not BaseEnvironment.generate_tasks

    def episode(self, task: Task, *, max_rounds: int | None = None) -> Episode:
        """The multi-agent episode over `task` (environments with `seats`)."""
        raise EnvironmentSetupError(f"{self.name} is a single-agent environment: it has no seats to play")

    def baseline_turn(self, kind: str, request: PolicyRequest, seed: int = 0) -> Completion:
        """The next turn of the scripted baseline `kind` (one of `baselines`) in the conversation of
        `request`, which names its task; `seed` seeds a random one."""
        raise EnvironmentSetupError(f"{self.name} plays no scripted baseline {kind!r}")

    def seat_baseline(self, seat: str, kind: str) -> str | None:
        """How runs name the scripted policy `kind` at `seat` (one of `seats`), or None when no
        scripted `kind` sits there; a ValueError names a seat the environment does not have."""
        if seat not in self.seats:
            raise ValueError(f"unknown seat {seat!r}; the seats are {', '.join(self.seats) or 'none'}")
        return None

    def seat_turn(self, seat: str, kind: str, request: PolicyRequest, max_rounds: int | None = None) -> Completion:
        """The next turn of the scripted `kind` at `seat` (one `seat_baseline` names) in the
        conversation of `request`, in an episode of at most `max_rounds` rounds."""
        raise EnvironmentSetupError(f"{self.name} has no scripted {kind!r} seat at {seat!r}")

    # -- what the review queue asks
    def review_findings(self, task: Task, verdict: dict[str, Any], calls: Sequence[tuple[ToolCall, str | None]],
                        bands: Mapping[str, tuple[float, float]], acts: Sequence[Any] | None = None) -> list[Finding]:
        """What a reviewer should look at in a graded verdict of `task` (recorded as `verdict`):
        `calls` are the rollout's calls with their statuses (None: not recorded), or `acts` a
        multi-agent episode's logged acts; `bands` the flagger's (lo, hi) by margin name."""
        return []

    def decision_key(self, calls: Sequence[tuple[ToolCall, str | None]]) -> str | None:
        """What two rewarded rollouts are compared on when that is less than their end state (a
        graded answer's decision, free text left out); None: the end state."""
        return None

    def replay_episode(self, task: Task, *, calls: Sequence[ToolCall] | None = None, acts: Sequence[Any] | None = None,
                       rounds: Any = None) -> EpisodeReplay | None:
        """A multi-agent episode made again: its logged `acts` (in their `rounds`) in a fresh state,
        or a single-agent rollout's `calls`; None when there is no such state. A ValueError names a
        task the environment cannot rebuild."""
        return None

    def act_call(self, act: Mapping[str, Any]) -> ToolCall | None:
        """The tool call that makes a multi-agent episode's logged act again (None: not an act)."""
        return None

    def decision_plan(self, calls: Sequence[ToolCall], proposals: Mapping[str, Any]) -> tuple[list[ToolCall], list[int]]:
        """A corrected decision of a multi-agent episode (`calls`, over the plans it `proposals`) as
        the single-agent calls that make it, and how many go in each turn; a ValueError says why not."""
        raise ValueError(f"{self.name} has no multi-agent decision to correct")

    # -- what callers compare and serve
    def state_fingerprint(self, session: Any) -> str | None:
        """A strict fingerprint (JSON text) of the state `session` holds now; None when the state
        is no more than the successful write calls (the caller then compares those)."""
        return None

    def cookie_name(self) -> str:
        """The session cookie's name: NeMo Gym's "<resources-server class>___<name>" (an RFC 6265
        token), so it matches NeMo Gym's own server for an environment that NeMo Gym also serves."""
        server_class = self.nemo_gym_server or "OfficegymResourcesServer"
        return f"{server_class}___" + re.sub(r"[^A-Za-z0-9_.-]", "_", self.name)


class EnvironmentWrapper(BaseEnvironment):
    """An environment around another, as Gymnasium's Wrapper: a subclass overrides what it changes;
    every other member, declared here or the wrapped environment's own, is the wrapped one's."""

    def __init__(self, env: BaseEnvironment):
        self.env = env

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "env":  # not while unpickling, before `env` is set
            raise AttributeError(attr)
        return getattr(self.env, attr)

    @property
    def unwrapped(self) -> BaseEnvironment:
        """The innermost environment."""
        env = self.env
        return env.unwrapped if isinstance(env, EnvironmentWrapper) else env

    name = property(lambda self: self.env.name)  # type: ignore[assignment]
    modes = property(lambda self: self.env.modes)  # type: ignore[assignment]
    mode = property(lambda self: self.env.mode)  # type: ignore[assignment]
    takes_world = property(lambda self: self.env.takes_world)  # type: ignore[assignment]
    sdg_templates = property(lambda self: self.env.sdg_templates)  # type: ignore[assignment]
    session_from_row = property(lambda self: self.env.session_from_row)  # type: ignore[assignment]
    verifies_truth_only = property(lambda self: self.env.verifies_truth_only)  # type: ignore[assignment]
    nemo_gym_server = property(lambda self: self.env.nemo_gym_server)  # type: ignore[assignment]
    seats = property(lambda self: self.env.seats)  # type: ignore[assignment]
    baselines = property(lambda self: self.env.baselines)  # type: ignore[assignment]
    graded_answers = property(lambda self: self.env.graded_answers)  # type: ignore[assignment]
    write_tools = property(lambda self: self.env.write_tools)  # type: ignore[assignment]
    world_path = property(lambda self: self.env.world_path)  # type: ignore[assignment]
    world_id = property(lambda self: self.env.world_id)  # type: ignore[assignment]
    has_task_generator = property(lambda self: self.env.has_task_generator)  # type: ignore[assignment]

    def tools(self, task: Task | None = None) -> list[ToolSpec]:
        return self.env.tools(task)

    def session(self, task: Task | None = None) -> BaseSession:
        return self.env.session(task)

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        return self.env.verify(task, calls, mode)

    # A wrapper that changes `session` or `verify` has the awaited forms use its own; else they are
    # the wrapped environment's, so that a wrapped remote environment still answers over the network.
    async def asession(self, task: Task | None = None) -> BaseSession:
        if type(self).session is not EnvironmentWrapper.session:
            return self.session(task)
        return await self.env.asession(task)

    async def averify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        if type(self).verify is not EnvironmentWrapper.verify:
            return self.verify(task, calls, mode)
        return await self.env.averify(task, calls, mode)

    def default_world(self, announce: Announce | None = None) -> Path | None:  # type: ignore[override]
        return self.env.default_world(announce)

    def world_named(self, world_id: str, announce: Announce | None = None) -> Path | None:  # type: ignore[override]
        return self.env.world_named(world_id, announce)

    def reference_folders(self) -> list[Path]:  # type: ignore[override]
        return self.env.reference_folders()

    def load_world(self, path: str | Path) -> Any:  # type: ignore[override]
        return self.env.load_world(path)

    def generate_world(self, folder: Path | None = None, **options: Any) -> Any:  # type: ignore[override]
        return self.env.generate_world(folder, **options)

    def generate_tasks(self, n: int, seed: int, **options: Any) -> list[Task]:
        return self.env.generate_tasks(n, seed, **options)

    def episode(self, task: Task, *, max_rounds: int | None = None) -> Episode:
        return self.env.episode(task, max_rounds=max_rounds)

    def baseline_turn(self, kind: str, request: PolicyRequest, seed: int = 0) -> Completion:
        return self.env.baseline_turn(kind, request, seed)

    def seat_baseline(self, seat: str, kind: str) -> str | None:
        return self.env.seat_baseline(seat, kind)

    def seat_turn(self, seat: str, kind: str, request: PolicyRequest, max_rounds: int | None = None) -> Completion:
        return self.env.seat_turn(seat, kind, request, max_rounds)

    def review_findings(self, task: Task, verdict: dict[str, Any], calls: Sequence[tuple[ToolCall, str | None]],
                        bands: Mapping[str, tuple[float, float]], acts: Sequence[Any] | None = None) -> list[Finding]:
        return self.env.review_findings(task, verdict, calls, bands, acts)

    def decision_key(self, calls: Sequence[tuple[ToolCall, str | None]]) -> str | None:
        return self.env.decision_key(calls)

    def replay_episode(self, task: Task, *, calls: Sequence[ToolCall] | None = None, acts: Sequence[Any] | None = None,
                       rounds: Any = None) -> EpisodeReplay | None:
        return self.env.replay_episode(task, calls=calls, acts=acts, rounds=rounds)

    def act_call(self, act: Mapping[str, Any]) -> ToolCall | None:
        return self.env.act_call(act)

    def decision_plan(self, calls: Sequence[ToolCall], proposals: Mapping[str, Any]) -> tuple[list[ToolCall], list[int]]:
        return self.env.decision_plan(calls, proposals)

    def state_fingerprint(self, session: Any) -> str | None:
        return self.env.state_fingerprint(session)

    def cookie_name(self) -> str:
        return self.env.cookie_name()
