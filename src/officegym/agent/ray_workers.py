"""What runs inside Ray actors: rollout workers and policy engines, as plain classes.

`ray_rollouts.RolloutFleet` turns them into actors (`ray.remote(RolloutWorker)`), so this module
imports nothing of Ray at import time and the classes can be tested without it.

- `RolloutWorker` holds environments (built where it runs with `registry.make`, sessions
  in-process) and a policy: one built from a factory in the worker (an OpenAI-compatible client, a
  scripted policy) or an `EnginePolicy` that forwards turns to an engine actor. It plays one
  episode per call with the agent loop (`agent.loop.rollout`), so Ray spreads episodes over the
  workers and a worker runs many at once on its event loop; the turns of its concurrent episodes
  meet in one Batcher, as in `run_rollouts`.
- `PolicyEngine` holds one policy that needs a model (an `hf:` model, a vLLM engine) and serves
  the turns of every worker assigned to it; weights pushed to it replace the model's in place.

An episode call carries only the positions of its task and its result. What a run shares (the
environment spec, loop settings, reward function and policy wrapper of its `RunSetup`, and its
tasks) travels once as a `RunPack` in Ray's object store; a worker fetches it on the run's first
episode and keeps it until the run ends.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from officegym.agent.batching import Batcher
from officegym.agent.loop import LoopConfig, rollout, submitter
from officegym.agent.policies import PolicySpec  # the picklable factory a fleet builds its policies from
from officegym.agent.timed import TimedEnvironment, TimedReward
from officegym.core import registry
from officegym.core.environment import BaseEnvironment
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.task import Task
from officegym.core.trajectory import Trajectory


@dataclass(frozen=True)
class EnvSpec:
    """How a worker builds its environment: `registry.make(name, world=world, mode=mode)`. `world`
    is a folder (every node must see it at that path), a loaded world (shipped with the run: the
    workplace's World pickles as its base rows) or None (the environment's default world, made on
    each node from its seed). `factory` is the environment's registered factory, taken here: an
    environment registered at run time (the trainer's toy_pick) is unknown to a fresh worker until
    the spec registers it there."""

    name: str
    world: Any = None
    mode: str | None = None
    token: str = field(default_factory=lambda: uuid.uuid4().hex, compare=False)
    factory: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.factory is None:  # an unknown name fails here, not on every worker
            object.__setattr__(self, "factory", registry.factory(self.name))

    @property
    def key(self) -> tuple[str, str, str | None]:
        """Equal for specs that build the same environment (a loaded world: the same spec object)."""
        where = self.world if self.world is None or isinstance(self.world, str | os.PathLike) else self.token
        return self.name, str(where), self.mode

    def build(self) -> Any:
        if self.factory is not None and registry.canonical_name(self.name) not in registry.names():
            registry.register(registry.canonical_name(self.name), self.factory)
        world = Path(self.world) if isinstance(self.world, str) else self.world
        return registry.make(self.name, world=world, mode=self.mode)


def runs_a_model(spec: str) -> bool:
    """Whether the policy spec loads a model here (hf:, vllm:, smollm2-135m) rather than calling an
    endpoint or following a script: such a policy belongs in an engine actor, not in every worker."""
    return PolicySpec(spec).loads_model


@dataclass
class RunSetup:
    """What every episode of a run shares. `wrap(policy)` gives the policy the episodes use (the
    trainer's per-episode token budget); `max_batch` bounds the turns sent to the policy at once."""

    env: EnvSpec
    config: LoopConfig
    reward_fn: Any = None
    wrap: Callable[[Any], Any] | None = None
    max_batch: int = 32


@dataclass
class RunPack:
    """What a worker fetches once per run: the setup and the run's distinct tasks (episodes name
    them by position). Pickled together, the tasks of one file share their tool schemas, so a
    task costs the object store a fraction of what it costs sent with every episode."""

    setup: RunSetup
    tasks: list[Task]


def policy_info(policy: Policy) -> dict[str, Any]:
    """What a caller elsewhere needs to know about a policy it does not hold."""
    pad = policy.pad_id
    return {
        "name": policy.name,
        "continuous": bool(policy.continuous),
        "template_name": policy.template_name,
        "pad_id": pad if isinstance(pad, int) else None,
        "sampler_differs": bool(policy.sampler_differs),
    }


class PolicyEngine:
    """One model-backed policy serving the turns of the workers assigned to it."""

    def __init__(self, factory: Callable[[], Policy]):
        self.policy = factory()

    async def start(self) -> tuple[str | None, dict[str, Any]]:
        """Load the model now: (what keeps it from running or None, `policy_info`)."""
        return await self.policy.preflight(), policy_info(self.policy)

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        """The policy's completions (each request's `max_new_tokens` caps it below params')."""
        return await self.policy.complete(requests, params)

    def sync_weights(self, weights: list[tuple[str, Any]], version: Any = None) -> bool:
        return bool(self.policy.sync_weights(weights, version=version))

    def stats(self) -> dict[str, float]:
        return {k: float(v) for k, v in (self.policy.stats or {}).items() if isinstance(v, int | float)}

    async def close(self) -> None:
        await self.policy.aclose()


class EnginePolicy(Policy):
    """A worker's client of a `PolicyEngine` actor, with the engine's name and batching style: a
    continuous engine gets each turn as it comes, another the batches of the worker's Batcher."""

    def __init__(self, engine: Any, info: dict[str, Any]):
        self.engine = engine
        self.name = info["name"]
        self.continuous = info["continuous"]

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return await self.engine.complete.remote(requests, params)


@dataclass
class _Run:
    setup: RunSetup
    tasks: list[Task]
    env: TimedEnvironment
    reward_fn: Any
    submit: Callable[[PolicyRequest], Any]
    name: str
    batcher: Batcher | None


class RolloutWorker:
    """Episodes in sessions of environments held here, with this worker's policy. `policy` is a
    factory called here, or `engine` (+ its `info`) the name of an engine actor to forward turns to."""

    MAX_ENVIRONMENTS = 4

    def __init__(self, policy: Callable[[], Any] | None = None, engine: Any = None,
                 engine_info: dict[str, Any] | None = None):
        if (policy is None) == (engine is None):
            raise ValueError("a rollout worker needs either a policy factory or an engine")
        if engine is not None:
            import ray

            self.policy: Any = EnginePolicy(ray.get_actor(engine) if isinstance(engine, str) else engine, engine_info or {})
        else:
            self.policy = policy()
        self.envs: OrderedDict[tuple[str, str, str | None], Any] = OrderedDict()
        self.runs: dict[str, asyncio.Future[_Run]] = {}
        self.counters = {"episodes": 0.0, "verify_seconds": 0.0, "reward_seconds": 0.0, "env_seconds": 0.0}

    async def preflight(self) -> str | None:
        """What keeps this worker's policy from running (its endpoint unreachable, ...), or None."""
        return await self.policy.preflight()

    def environment(self, spec: EnvSpec) -> BaseEnvironment:
        env = self.envs.pop(spec.key, None)
        if env is None:
            env = spec.build()
            while len(self.envs) >= self.MAX_ENVIRONMENTS:
                self.envs.popitem(last=False)
        self.envs[spec.key] = env
        return env

    async def rollout(self, run_id: str, pack: list[Any], index: int, task_index: int, sample_index: int) -> tuple[int, Trajectory]:
        """Episode `sample_index` of the run's task `task_index`; `pack` is [the run's RunPack or its
        ObjectRef] (in a list, so that Ray hands over the reference and the worker fetches it once).
        Returns (`index`, the trajectory)."""
        run = await self._run(run_id, pack[0])
        task = run.tasks[task_index]
        traj = await rollout(run.env, task, run.submit, run.setup.config, run.reward_fn, sample_index, run.name)
        self.counters["episodes"] += 1
        self.counters["env_seconds"] += traj.env_seconds
        return index, traj

    async def _run(self, run_id: str, setup: Any) -> _Run:
        pending = self.runs.get(run_id)
        if pending is None:  # the first episode of the run here: later ones wait for the same start
            pending = self.runs[run_id] = asyncio.ensure_future(self._start_run(setup))
        return await pending

    async def _start_run(self, pack: Any) -> _Run:
        if not isinstance(pack, RunPack):
            pack = await pack  # the ObjectRef
        setup = pack.setup
        env = TimedEnvironment(self.environment(setup.env), partial(self._count, "verify_seconds"))
        reward_fn = (TimedReward(setup.reward_fn, partial(self._count, "reward_seconds"))
                     if setup.reward_fn is not None else None)
        policy = setup.wrap(self.policy) if setup.wrap is not None else self.policy
        name = policy.name
        submit, batcher = submitter(policy, setup.config.params, setup.max_batch)  # as run_rollouts does
        return _Run(setup, pack.tasks, env, reward_fn, submit, name, batcher)

    def _count(self, key: str, seconds: float) -> None:
        self.counters[key] += seconds

    async def end_run(self, run_id: str) -> None:
        pending = self.runs.pop(run_id, None)
        if pending is None:
            return
        if not pending.done():
            pending.cancel()
        elif not pending.cancelled() and pending.exception() is None and pending.result().batcher is not None:
            await pending.result().batcher.close()

    def stats(self) -> dict[str, float]:
        return dict(self.counters)

    async def close(self) -> None:
        for run_id in list(self.runs):
            await self.end_run(run_id)
        if not isinstance(self.policy, EnginePolicy):
            await self.policy.aclose()
