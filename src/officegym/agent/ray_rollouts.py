"""Episodes on a Ray cluster: a fleet of rollout workers (and policy engines) driven from here.

    fleet = RolloutFleet.start(PolicySpec("openai:gpt-4.1-mini", {...}), RayOptions(workers=8))
    trajectories = fleet.run(jobs, RunSetup(EnvSpec("workplace"), LoopConfig()), on_done=write_row)
    fleet.close()

`run` is `agent.loop.run_rollouts` spread over actors: each (task, sample index) job is one call
to a worker actor, at most `concurrency` of them in flight, refilled with `ray.wait` as they finish
(Ray places the actors, restarts a worker that dies and retries its episodes, which are idempotent:
each starts from a fresh session). `on_done(task, trajectory)` runs here as each episode comes back,
so callers stream rows into the same files as a single-process run; the list returned is in job
order. An episode plays exactly the code of the single-process loop, so a deterministic policy gives
the same trajectories and rewards (tests/dist).

Policies: with `engines: 0` every worker builds its own from the factory (API clients, scripted
policies: cheap, and an endpoint's server does the batching); with `engines: N` the factory is
built in N `PolicyEngine` actors (a model: `hf:`, `vllm:`, or a trainer's policy whose weights are
pushed with `sync_weights`) and worker i sends its turns to engine i mod N.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from officegym.agent.policies import PolicySpec
from officegym.agent.ray_cluster import Cluster, RayUnavailableError, connect, require_ray
from officegym.agent.ray_workers import EnvSpec, PolicyEngine, RolloutWorker, RunPack, RunSetup
from officegym.core.task import Task
from officegym.core.trajectory import Trajectory


class FleetSetupError(RuntimeError):
    """The fleet cannot run: too few resources, or a policy that cannot start (the message says)."""


@dataclass
class RayOptions:
    """Where episodes run and how wide. `address`: None or "local" starts a local cluster on this
    machine bound to 127.0.0.1 (`num_cpus` CPUs, default all); "auto" joins the cluster this machine
    belongs to; HOST:PORT (or ray://HOST:PORT) joins that one. `concurrency`: episodes in flight over
    all workers. `env_vars`: variables the actors need (an API key named by a policy), set in their
    runtime environment."""

    address: str | None = None
    workers: int = 2
    worker_cpus: float = 1.0
    engines: int = 0
    engine_cpus: float = 1.0
    engine_gpus: float | None = None  # None: 1 per engine when the cluster has GPUs, else 0
    concurrency: int = 64
    max_restarts: int = 2
    num_cpus: int | None = None
    object_store_memory: int | None = None
    env_vars: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("a Ray fleet needs at least one rollout worker")
        if self.engines < 0 or self.concurrency < 1 or self.worker_cpus <= 0 or self.engine_cpus < 0 or (self.engine_gpus or 0) < 0:
            raise ValueError("engines, engine_cpus and engine_gpus must be >= 0; concurrency and worker_cpus > 0")

    @property
    def cpus_needed(self) -> float:
        return self.workers * self.worker_cpus + self.engines * self.engine_cpus


class RolloutFleet:
    """Rollout workers (and engines) on a Ray cluster; see the module docstring."""

    def __init__(self, cluster: Cluster, workers: list[Any], engines: list[Any], engine_info: dict[str, Any] | None,
                 options: RayOptions):
        self.cluster = cluster
        self.workers = workers
        self.engines = engines
        self.engine_info = engine_info
        self.options = options
        self.slots = max(1, math.ceil(options.concurrency / len(workers)))

    @classmethod
    def start(cls, policy: Callable[[], Any], options: RayOptions) -> RolloutFleet:
        """Connect (or start a local cluster), start the engines and workers and check that the
        policy runs where it will run. FleetSetupError / RayUnavailableError say what is wrong."""
        ray = require_ray()
        cluster = connect(options.address, options.num_cpus, options.object_store_memory)
        engines: list[Any] = []
        workers: list[Any] = []
        try:
            if options.engine_gpus is None:
                options = replace(options, engine_gpus=1.0 if cluster.resources.get("GPU", 0.0) >= 1 else 0.0)
            cls._check_resources(cluster, options)
            runtime_env = {"env_vars": dict(options.env_vars)} if options.env_vars else None
            info = None
            if options.engines:
                # An engine holds pushed weights: one that died would come back with the starting
                # model and sample from the wrong policy, so it is never restarted.
                engine_class = ray.remote(PolicyEngine)
                engine_options = {"num_cpus": options.engine_cpus, "num_gpus": options.engine_gpus, "max_restarts": 0,
                                  "runtime_env": runtime_env}
                # Named, so that a worker finds its engine by name: a handle given to a worker's
                # constructor would be an object-store argument, which Ray cannot hand to a worker
                # it restarts (ray-project/ray#53727).
                fleet_id = uuid.uuid4().hex[:12]
                names = [f"officegym-engine-{fleet_id}-{i}" for i in range(options.engines)]
                engines = [engine_class.options(name=name, **engine_options).remote(policy) for name in names]
                started = _get(ray, [e.start.remote() for e in engines], "start the policy engines")
                problem = next((p for p, _ in started if p), None)
                if problem:
                    raise FleetSetupError(f"the policy engine cannot run: {problem}")
                info = started[0][1]
            worker_class = ray.remote(RolloutWorker).options(
                num_cpus=options.worker_cpus, max_restarts=options.max_restarts, max_task_retries=options.max_restarts,
                scheduling_strategy="SPREAD", runtime_env=runtime_env)
            for i in range(options.workers):
                if engines:
                    workers.append(worker_class.remote(engine=names[i % len(engines)], engine_info=info))
                else:
                    workers.append(worker_class.remote(policy=policy))
            problems = _get(ray, [w.preflight.remote() for w in workers], "start the rollout workers")
            problem = next((p for p in problems if p), None)
            if problem:
                raise FleetSetupError(f"the policy cannot run on a rollout worker: {problem}")
        except BaseException:
            for actor in workers + engines:
                ray.kill(actor)
            cluster.close()
            raise
        return cls(cluster, workers, engines, info, options)

    @staticmethod
    def _check_resources(cluster: Cluster, options: RayOptions) -> None:
        """A local cluster cannot grow: refuse a fleet its free resources cannot place instead of
        waiting for them forever."""
        if cluster.address is not None:
            return  # a cluster may autoscale; actors wait for nodes
        free = cluster.free_resources
        # actors stopped a moment ago give their CPUs back asynchronously: wait for what could come back
        deadline = time.monotonic() + (10 if cluster.resources.get("CPU", 0.0) + 1e-9 >= options.cpus_needed else 0)
        while free.get("CPU", 0.0) + 1e-9 < options.cpus_needed and time.monotonic() < deadline:
            time.sleep(0.2)
            free = cluster.free_resources
        if free.get("CPU", 0.0) + 1e-9 < options.cpus_needed:
            raise FleetSetupError(
                f"the fleet needs {options.cpus_needed:g} CPUs ({options.workers} workers x {options.worker_cpus:g}"
                f" + {options.engines} engines x {options.engine_cpus:g}) and the local Ray cluster has "
                f"{free.get('CPU', 0.0):g} free: use fewer workers, or fractional worker/engine CPUs")
        gpus = options.engines * (options.engine_gpus or 0.0)
        if gpus and free.get("GPU", 0.0) + 1e-9 < gpus:
            raise FleetSetupError(f"the engines need {gpus:g} GPUs and the local Ray cluster has {free.get('GPU', 0.0):g} free")

    # -- running episodes --------------------------------------------------------------------------

    def run(self, jobs: Iterable[tuple[Task, int]], setup: RunSetup,
            on_done: Callable[[Task, Trajectory], None] | None = None) -> list[Trajectory]:
        """Play every (task, sample index) job on the workers; results in job order. `on_done` is
        called here as each comes back. An exception (from an episode or from `on_done`) cancels
        the episodes still running and propagates."""
        ray = require_ray()
        job_list: Sequence[tuple[Task, int]] = list(jobs)
        results: list[Trajectory | None] = [None] * len(job_list)
        run_id = uuid.uuid4().hex
        position: dict[int, int] = {}  # id(task) -> its place in the run's task list
        tasks: list[Task] = []
        for task, _ in job_list:
            if position.setdefault(id(task), len(tasks)) == len(tasks):
                tasks.append(task)
        pack = ray.put(RunPack(setup, tasks))
        waiting = deque(enumerate(job_list))
        in_flight: dict[Any, int] = {}  # ObjectRef -> the worker playing it

        def give(w: int) -> None:
            index, (task, k) = waiting.popleft()
            in_flight[self.workers[w].rollout.remote(run_id, [pack], index, position[id(task)], k)] = w

        try:
            for _ in range(self.slots):
                for w in range(len(self.workers)):
                    if waiting:
                        give(w)
            while in_flight:
                done, pending = ray.wait(list(in_flight), num_returns=1)
                if pending:  # take every episode that has finished meanwhile, not one per wait
                    done += ray.wait(pending, num_returns=len(pending), timeout=0)[0]
                for ref in done:
                    w = in_flight.pop(ref)
                    index, traj = ray.get(ref)
                    results[index] = traj
                    if waiting:
                        give(w)
                    if on_done is not None:
                        on_done(job_list[index][0], traj)
        finally:
            for ref in in_flight:
                ray.cancel(ref)
            ended = [worker.end_run.remote(run_id) for worker in self.workers]
            ray.wait(ended, num_returns=len(ended), timeout=30)
        return [t for t in results if t is not None]

    # -- engines -----------------------------------------------------------------------------------

    def sync_weights(self, weights: Iterable[tuple[str, Any]], version: Any = None) -> bool:
        """Push (name, tensor) pairs to every engine (one copy in the object store); True when sent."""
        if not self.engines:
            return False
        ray = require_ray()
        ref = ray.put(list(weights))
        return all(_get(ray, [e.sync_weights.remote(ref, version) for e in self.engines], "push weights to the engines"))

    def engine_stats(self) -> dict[str, float]:
        """The engines' policy counters (calls, tokens, seconds, ...), summed."""
        return _summed(require_ray().get([e.stats.remote() for e in self.engines])) if self.engines else {}

    def worker_stats(self) -> dict[str, float]:
        """The workers' counters (episodes, env_seconds, verify_seconds, reward_seconds), summed."""
        return _summed(require_ray().get([w.stats.remote() for w in self.workers]))

    def close(self) -> None:
        """Stop the actors (their policies closed first) and leave the cluster if this fleet joined it."""
        ray = require_ray()
        actors = self.workers + self.engines
        if ray.is_initialized() and actors:
            # an actor already gone or stuck: killing it below is all that is left
            with contextlib.suppress(Exception):
                ray.get([a.close.remote() for a in actors], timeout=30)
            for actor in actors:
                ray.kill(actor)
        self.workers, self.engines = [], []
        self.cluster.close()

    def __enter__(self) -> RolloutFleet:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _get(ray: Any, refs: list[Any], what: str) -> list[Any]:
    try:
        return ray.get(refs)
    except ray.exceptions.RayActorError as exc:
        raise FleetSetupError(f"could not {what}: an actor died ({exc})") from None


def _summed(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0.0) + float(v)
    return out


__all__ = ["EnvSpec", "FleetSetupError", "PolicySpec", "RayOptions", "RayUnavailableError", "RolloutFleet", "RunSetup"]
