"""One GRPO step: rollouts (with dynamic sampling), group-relative advantages, training rows from the
token ledger, the update (train/grpo_update.py), and the step's rollouts written out."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from officegym.core.environment import BaseEnvironment
from officegym.core.policy import Policy
from officegym.core.task import Task
from officegym.core.trajectory import TemplateMismatchError, Trajectory
from officegym.rewards.base import RewardFunction
from officegym.rewards.calls import invalid_calls
from officegym.train.config import GRPOConfig, GRPORunConfig
from officegym.train.curriculum import VarianceCurriculum
from officegym.train.data import TaskStream
from officegym.train.distributed import Dist
from officegym.train.grpo_update import update_policy
from officegym.train.modeling import TrainModel, push_weights
from officegym.train.rollouts import (
    RolloutBatch,
    RolloutWriter,
    collect,
    collect_with_validation,
    rollout_metrics,
)
from officegym.train.run_result import TrainingSetupError

if TYPE_CHECKING:  # torch is imported when a run starts, not with the module
    from torch import Tensor
    from torch.nn import Module, Parameter
    from torch.optim import Optimizer
    from torch.optim.lr_scheduler import LRScheduler

    from officegym.train.ledger import LedgerRow
    from officegym.train.sft_mix import SFTMix


@dataclass
class Group:
    task: Task
    group_id: str
    trajectories: list[Trajectory]


@dataclass
class StepContext:
    """What every GRPO step of a run works with, unchanged from step to step (the objects themselves
    change state: the weights, the optimiser, the schedule, the task stream's position)."""

    cfg: GRPORunConfig
    tm: TrainModel
    policy: Policy  # samples the rollouts: the trained module itself or an engine that gets its weights
    env: BaseEnvironment
    stream: TaskStream | VarianceCurriculum
    optimizer: Optimizer
    scheduler: LRScheduler
    params: Sequence[Parameter]
    reward_fn: RewardFunction | None  # None: the verifier's own score (rollouts.make_reward_fn)
    reference: Module | None  # the frozen copy a KL term compares with (None under LoRA or without KL)
    writer: RolloutWriter
    dist: Dist = field(default_factory=Dist)
    sft_mix: SFTMix | None = None


def grpo_step(ctx: StepContext, step: int, alongside: Sequence[Task] | None = None,
              on_validation: Callable[[RolloutBatch], None] | None = None) -> dict[str, Any]:
    """One GRPO step (see train/grpo.py's docstring); returns its metrics. Under torchrun (`ctx.dist`)
    every rank draws the same prompts and rolls out its share; metrics and rollouts cover all ranks.
    `alongside`: validation tasks played with the first batch of rollouts (the weights before this
    step's update; `collect_with_validation`), handed to `on_validation` before the update."""
    import torch

    from officegym.train.advantages import group_advantages, zero_variance_groups

    cfg, tm, policy, env, stream, dist = ctx.cfg, ctx.tm, ctx.policy, ctx.env, ctx.stream, ctx.dist
    g = cfg.grpo
    t_step = time.perf_counter()
    metrics: dict[str, Any] = {}
    t0 = time.perf_counter()
    synced = push_weights(policy, tm, step)  # vLLM only: an HF policy shares the trained module
    metrics["time/weight_sync_s"] = time.perf_counter() - t0 if synced else 0.0

    # 1. Rollouts, group by group (dynamic sampling may drop or refill groups).
    groups: list[Group] = []
    sampled: list[Group] = []
    trained_here: set[str] = set()  # the groups this rank rolled out and trains on (all of them alone)
    timing = {"generation": 0.0, "env": 0.0, "scoring": 0.0, "rollout_wall": 0.0}
    sampled_tokens = 0
    batches = 0
    max_batches = 1 + (g.max_refill_batches if g.dynamic_sampling == "refill" else 0)
    while len(groups) < g.num_prompts_per_step and batches < max_batches:
        tasks = stream.take(g.num_prompts_per_step - len(groups))
        batches += 1
        mine = dist.share(range(len(tasks)))  # every prompt under one process; a rank's share under torchrun
        jobs = [(tasks[i], k) for i in mine for k in range(g.num_generations_per_prompt)]
        if alongside is not None and batches == 1:
            batch, val_batch = collect_with_validation(env, jobs, alongside, policy, cfg, cfg.rollout.temperature,
                                                       ctx.reward_fn)
            if on_validation is not None:
                on_validation(val_batch)
        else:
            batch = collect(env, jobs, policy, cfg, cfg.rollout.temperature, ctx.reward_fn)
        timing["generation"] += dist.max(batch.generation_seconds)
        timing["env"] += dist.max(batch.env_seconds)
        timing["scoring"] += dist.max(batch.scoring_seconds)
        timing["rollout_wall"] += dist.max(batch.wall_seconds)
        sampled_tokens += int(dist.sum(batch.sampled_tokens))
        seen = {grp.group_id for grp in sampled}
        gids = []
        for task in tasks:
            gid = f"{task.id}@{step}"
            n = 1
            while gid in seen:
                n += 1
                gid = f"{task.id}@{step}#{n}"
            seen.add(gid)
            gids.append(gid)
        # a task's rollouts in a row: G of them, or G councils x the seats trained in each (self-play)
        per = len(batch.trajectories) // max(1, len(mine))
        local = {i: batch.trajectories[j * per : (j + 1) * per] for j, i in enumerate(mine)}
        for key, value in batch.metrics.items():
            metrics[key] = value
        # every rank sees every group's rollouts (metrics, the curriculum, rank 0's rollouts file)
        every = {i: trajs for part in dist.gather(local) for i, trajs in part.items()} if dist.active else local
        for i, task in enumerate(tasks):
            grp = Group(task, gids[i], every[i])
            sampled.append(grp)
            if isinstance(stream, VarianceCurriculum):
                stream.observe(task, [_reward(t) for t in grp.trajectories])
            if i in local:
                trained_here.add(gids[i])
            if g.dynamic_sampling == "off" or _varies(grp, g):
                groups.append(grp)
        if g.dynamic_sampling != "refill":
            break
    groups = groups[: g.num_prompts_per_step]
    all_trajs = [t for grp in sampled for t in grp.trajectories]
    if all_trajs and all(t.error for t in all_trajs):
        # Every rollout failed in the backend: nothing to learn from, and the next step would fail
        # the same way; stop with the backend's message instead of "training" on empty rollouts.
        raise TrainingSetupError(f"step {step}: all {len(all_trajs)} rollouts failed in the generation backend: "
                                 f"{all_trajs[0].error}")
    metrics.update(rollout_metrics(all_trajs, "train"))
    sampled_rewards = torch.tensor([_reward(t) for t in all_trajs], dtype=torch.float64)
    sampled_gids = torch.tensor([i for i, grp in enumerate(sampled) for _ in grp.trajectories], dtype=torch.long)
    metrics["train/zero_variance_groups"] = float(zero_variance_groups(sampled_rewards, sampled_gids).float().mean())
    metrics["train/groups_used"] = float(len(groups))
    metrics["train/dynamic_sampling_batches"] = float(batches)
    if isinstance(stream, VarianceCurriculum):
        metrics.update(stream.metrics())
    metrics["train/sampled_tokens"] = float(sampled_tokens)
    metrics["train/generation_tokens_per_s"] = sampled_tokens / timing["generation"] if timing["generation"] > 0 else 0.0

    # 2. Advantages.
    t0 = time.perf_counter()
    trajs = [t for grp in groups for t in grp.trajectories]
    advantages = torch.zeros(0)
    if trajs:
        rewards = torch.tensor([_reward(t) for t in trajs], dtype=torch.float64)
        gids = torch.tensor([i for i, grp in enumerate(groups) for _ in grp.trajectories], dtype=torch.long)
        advantages = group_advantages(rewards, gids, baseline=g.baseline, scale=g.scale, eps=g.advantage_eps,
                                      clip=g.advantage_clip)
        if g.invalid_call_advantage is not None:
            flagged = torch.tensor([invalid_calls(t) > 0 for t in trajs])
            advantages = torch.where(flagged, torch.full_like(advantages, g.invalid_call_advantage), advantages)
        if g.negative_weight != 1.0:
            advantages = torch.where(advantages < 0, advantages * g.negative_weight, advantages)
        metrics["train/advantage_mean"] = float(advantages.mean())
        metrics["train/advantage_abs_mean"] = float(advantages.abs().mean())
    timing["scoring"] += time.perf_counter() - t0

    # 3. Training rows from the token ledger (this rank's groups), and the update.
    here = [j for j, grp in enumerate(grp for grp in groups for _ in grp.trajectories) if grp.group_id in trained_here]
    rows, row_adv, broken = _rows([trajs[j] for j in here], advantages[here] if len(here) else torch.zeros(0), policy)
    metrics["train/broken_rollouts"] = dist.sum(broken)
    metrics["train/template_mismatches"] = float(policy.stats.get("ledger_template_mismatches", 0))
    t0 = time.perf_counter()
    sft_batches = ctx.sft_mix.batches(step, tm.device, dist) if ctx.sft_mix is not None else []
    update = update_policy(cfg, tm, rows, row_adv, ctx.optimizer, ctx.params, policy, ctx.reference, dist, sft_batches)
    with warnings.catch_warnings():  # the schedule counts steps, also those whose update was skipped
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step", category=UserWarning)
        ctx.scheduler.step()
    metrics.update(update)
    timing["training"] = time.perf_counter() - t0
    metrics["train/lr"] = float(ctx.optimizer.param_groups[0]["lr"])
    for k, v in timing.items():
        metrics[f"time/{k}_s"] = v
    metrics["time/step_s"] = time.perf_counter() - t_step

    # 4. The step's rollouts, in the eval row format, grouped.
    adv_of = {id(t): float(a) for t, a in zip(trajs, advantages.tolist())}
    ctx.writer.write(step, [(grp.task, t, grp.group_id, {"advantage": adv_of.get(id(t)), "used_for_update": id(t) in adv_of,
                                                           "invalid_calls": invalid_calls(t)})
                            for grp in sampled for t in grp.trajectories])
    return metrics


def _reward(traj: Trajectory) -> float:
    """The trained reward: the reward function (penalty included) set it on the trajectory."""
    return float(traj.reward) if traj.reward is not None else 0.0


def _varies(grp: Group, g: GRPOConfig) -> bool:
    rewards = [_reward(t) for t in grp.trajectories]
    return max(rewards) - min(rewards) > g.advantage_eps


def _rows(trajs: Sequence[Trajectory], advantages: Tensor, policy: Policy) -> tuple[list[LedgerRow], list[float], int]:
    """Ledger rows of the rollouts that can be trained on; the others are counted."""
    from officegym.train.ledger import ledger_row

    template = policy.template_name or None
    rows, adv, broken = [], [], 0
    for traj, a in zip(trajs, advantages.tolist()):
        try:
            row = ledger_row(traj, template=template)
        except (TemplateMismatchError, ValueError):
            broken += 1
            continue
        if row.sampled_tokens == 0:
            broken += 1
            continue
        rows.append(row)
        adv.append(a)
    return rows, adv, broken
