"""The --ray options of the commands whose episodes can run on a Ray cluster (eval, generate's teacher)."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

RayOpt = Annotated[bool, typer.Option(
    "--ray", help="Run the episodes on Ray actors: a local cluster on this machine, bound to 127.0.0.1 "
    "(see --ray-address to join one).")]
RayAddressOpt = Annotated[str | None, typer.Option(
    "--ray-address", help="Join this Ray cluster (implies --ray): auto (the one this machine belongs to), "
    "HOST:PORT, or ray://HOST:PORT.")]
RayWorkersOpt = Annotated[int, typer.Option("--ray-workers", min=1, help="Rollout worker actors (with --ray).")]
RayWorkerCpusOpt = Annotated[float, typer.Option("--ray-worker-cpus", min=0.01, help="CPUs each rollout worker reserves.")]
RayEnginesOpt = Annotated[int | None, typer.Option(
    "--ray-engines", min=0, help="Policy engine actors serving a model (hf:, vllm:, smollm2-135m); default 1 for a "
    "model, 0 otherwise: API clients and scripted policies are built in each worker.")]
RayEngineGpusOpt = Annotated[float | None, typer.Option(
    "--ray-engine-gpus", min=0, help="GPUs per engine (default: 1 when the cluster has GPUs, else 0).")]

# Variables a policy built on a worker reads: they are passed to the actors' runtime environment.
POLICY_ENV_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL")


def ray_options(ray: bool, address: str | None, workers: int, worker_cpus: float, engines: int | None,
                engine_gpus: float | None, policy: str, concurrency: int, env_vars: tuple[str, ...] = POLICY_ENV_VARS) -> Any:
    """The fleet's RayOptions, or None when the command runs in this process."""
    if not ray and address is None:
        return None
    from officegym.agent.ray_rollouts import RayOptions
    from officegym.agent.ray_workers import runs_a_model

    if engines is None:
        engines = 1 if runs_a_model(policy) else 0
    return RayOptions(address=address, workers=workers, worker_cpus=worker_cpus, engines=engines,
                      engine_gpus=engine_gpus, concurrency=concurrency,
                      env_vars={k: os.environ[k] for k in env_vars if os.environ.get(k)})
