"""The rollout phase on Ray (`rollout.backend: ray`): the trained policy served by engine actors,
the episodes played by rollout workers (agent/ray_rollouts.py).

`ray_generation(tm, cfg)` starts the fleet and returns a `RayGeneration`, which answers what the
trainer asks of its generation policy (name, template_name, pad_id, stats, set_threads,
sync_weights) and carries the `fleet` that `collect` (train/rollouts.py) sends episodes to. Each
engine builds the policy the trainer would build in-process (`modeling.generation_policy`) from the
model the run started from: backend vllm a vLLM engine, backend hf an HFPolicy over its own copy of
the model. Before a step's rollouts the trainer pushes its weights (`TrainModel.hf_weights`, LoRA
merged) to every engine through the object store, as it does to an in-process vLLM engine; the
token ledger (prompt ids, sampled ids, sampler log-probs) comes back inside each trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from officegym.agent.hf import HFPolicy
from officegym.agent.ray_rollouts import FleetSetupError, RayOptions, RayUnavailableError, RolloutFleet
from officegym.agent.ray_workers import EnvSpec
from officegym.core.environment import EnvironmentSetupError
from officegym.core.policy import Policy
from officegym.train.config import RunConfig
from officegym.train.data import DataError  # train.data registers the trainer's own environments (toy_pick)


class SyncedHFPolicy(HFPolicy):
    """An HFPolicy over its own copy of the model, whose weights a trainer elsewhere replaces."""

    takes_weights = True
    synced_version: Any = None

    def sync_weights(self, weights: list[tuple[str, Any]], version: Any = None) -> bool:
        import torch

        self.load()
        with torch.no_grad():  # copied into the loaded parameters: the kept prefixes see the change
            self.module.load_state_dict(dict(weights), strict=True)
        self.synced_version = version
        return True


@dataclass(frozen=True)
class TrainerEngine:
    """Builds, inside an engine actor, the trainer's generation policy for `backend`."""

    backend: str
    path: str
    name: str
    chat_template: str = "auto"
    batch_size: int = 16
    device: str = "auto"
    threads: int | None = None
    autocast_dtype: str | None = None
    vllm_options: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> Any:
        if self.backend == "vllm":
            from officegym.agent.vllm_backend import VLLMPolicy

            policy = VLLMPolicy(self.path, chat_template=self.chat_template, **self.vllm_options)
        else:  # float32 weights under the trainer's autocast, as the trainer's own module
            policy = SyncedHFPolicy(self.path, device=self.device, dtype="float32", threads=self.threads,
                                    batch_size=self.batch_size, chat_template=self.chat_template,
                                    autocast_dtype=self.autocast_dtype)
        policy.name = self.name
        return policy


class RayGeneration(Policy):
    """The trainer's generation policy when its rollouts run on Ray: engines hold the model, the
    `fleet`'s workers play the episodes in environments built from `env_spec`."""

    def __init__(self, fleet: RolloutFleet, env_spec: EnvSpec):
        info = fleet.engine_info or {}
        self.fleet = fleet
        self.env_spec = env_spec
        self.name = info.get("name", "ray")
        self.template_name = info.get("template_name")
        self.pad_id = info.get("pad_id")
        self.sampler_differs = bool(info.get("sampler_differs", False))
        self.synced_version: Any = None

    takes_weights = True

    @property
    def stats(self) -> dict[str, float]:  # type: ignore[override]
        """The engines' counters (calls, tokens, generation seconds, ledger checks), summed."""
        return self.fleet.engine_stats()

    def set_threads(self, n: int) -> None:
        """The engines keep the threads they started with (rollout.ray.engine_cpus): they do not
        share this process's cores."""

    def sync_weights(self, weights: Any, version: Any = None) -> bool:
        sent = self.fleet.sync_weights(weights, version)
        self.synced_version = version
        return sent

    def close(self) -> None:
        self.fleet.close()


def trainer_engine(tm: Any, cfg: RunConfig) -> TrainerEngine:
    """The engine factory for the model `tm` was loaded from, with the run's generation settings."""
    amp = None if tm.amp_dtype is None else str(tm.amp_dtype).removeprefix("torch.")
    name = f"vllm:{tm.path}" if cfg.backend == "vllm" else f"hf:{cfg.model.name}"
    vllm = {"gpu_memory_utilization": cfg.vllm.gpu_memory_utilization, "max_model_len": cfg.vllm.max_model_len,
            "enable_sleep_mode": cfg.vllm.enable_sleep_mode or None, **cfg.vllm.extra}
    # the model by its configured name, resolved on the engine's node (a path there, a hub id, smollm2-135m)
    return TrainerEngine(cfg.backend, cfg.model.name, name, cfg.model.chat_template, cfg.rollout.batch_size,
                         cfg.model.device, max(1, int(cfg.rollout.ray.engine_cpus)), amp, vllm)


def start_generation(cfg: RunConfig, engine: Any) -> RayGeneration:
    """Start the fleet of `cfg.rollout.ray` with `engine` (a picklable policy factory) in its
    engine actors. Raises FleetSetupError or RayUnavailableError saying what is wrong."""
    try:
        env_spec = EnvSpec(cfg.data.env, world=cfg.data.world, mode=cfg.data.verify_mode or None)
    except EnvironmentSetupError as exc:
        raise DataError(f"data.env {cfg.data.env}: {exc}") from None
    r = cfg.rollout.ray
    options = RayOptions(address=r.address, workers=r.workers, worker_cpus=r.worker_cpus, engines=r.engines,
                         engine_cpus=r.engine_cpus, engine_gpus=r.engine_gpus, concurrency=cfg.rollout.concurrency,
                         max_restarts=r.max_restarts, env_vars=dict(r.env_vars))
    return RayGeneration(RolloutFleet.start(engine, options), env_spec)


def ray_generation(tm: Any, cfg: RunConfig) -> RayGeneration:
    """The trained policy on Ray engines (see the module docstring); ModelSetupError when the fleet
    cannot start."""
    from officegym.train.modeling import ModelSetupError

    try:
        return start_generation(cfg, trainer_engine(tm, cfg))
    except (FleetSetupError, RayUnavailableError) as exc:
        raise ModelSetupError(f"rollout.backend ray: {exc}") from None
