"""Rollouts for training and validation: the agent loop with the trained policy, timed by phase,
scored by the environment, and written out in the eval row format."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.timed import TimedEnvironment, TimedReward
from officegym.core.environment import BaseEnvironment
from officegym.core.policy import SamplingParams
from officegym.core.rollout_row import officegym_of, rollout_row
from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.rewards.calls import invalid_calls, trajectory_calls
from officegym.train.config import RunConfig
from officegym.train.runtime import EpisodeBudget
from officegym.train.tracking import truncate_jsonl

ROLLOUTS = "rollouts.jsonl"
VAL_ROLLOUTS = "val_rollouts.jsonl"  # validation rollouts, officegym.step = the step validated


def make_reward_fn(spec: Any, env: BaseEnvironment, invalid_call_penalty: float = 0.0) -> Any:
    """The reward the run trains on, logs and writes out (rewards.training_reward): None for the
    verifier's own score without a penalty (the loop reads it from the verdict)."""
    from officegym.rewards import training_reward

    return training_reward(spec, writes=env.write_tools, invalid_call_penalty=invalid_call_penalty)


def loop_config(cfg: RunConfig, temperature: float, seed: int | None = None, validation: bool = False) -> LoopConfig:
    r, v = cfg.rollout, cfg.validation
    max_steps = (v.max_steps if validation and v.max_steps else None) or r.max_steps
    max_new = (v.max_new_tokens_per_turn if validation and v.max_new_tokens_per_turn else None) or r.max_new_tokens_per_turn
    params = SamplingParams(temperature=temperature, top_p=r.top_p, max_new_tokens=max_new, seed=seed)
    return LoopConfig(max_steps=max_steps, max_tool_output_chars=r.max_tool_output_chars, mode=cfg.data.verify_mode,
                      params=params)


@dataclass
class RolloutBatch:
    trajectories: list[Trajectory]
    wall_seconds: float
    generation_seconds: float
    env_seconds: float
    scoring_seconds: float
    sampled_tokens: int
    metrics: dict[str, float] = field(default_factory=dict)  # the environment's own figures (councils)


def collect(env: BaseEnvironment, jobs: Sequence[tuple[Task, int]], policy: Any, cfg: RunConfig, temperature: float,
            reward_fn: Any = None, on_done: Any = None, validation: bool = False) -> RolloutBatch:
    """Run the jobs through the agent loop (one policy call per turn for all of them) and time it;
    `validation` episodes take the validation section's limits where it sets them."""
    cap = _episode_cap(cfg, validation)
    if policy.fleet is not None:
        return _collect_on_ray(policy, jobs, cfg, temperature, reward_fn, on_done, validation, cap)
    council = getattr(cfg, "council", None)
    if council is not None:
        return _collect_councils(env, jobs, policy, cfg, temperature, reward_fn, validation, cap)
    stats = policy.stats
    gen_before = float(stats.get("seconds", 0.0))
    batch = asyncio.run(_play(env, jobs, policy, cfg, temperature, reward_fn, on_done, validation))
    if stats:
        batch.generation_seconds = float(stats.get("seconds", 0.0)) - gen_before
    return batch


def _episode_cap(cfg: RunConfig, validation: bool) -> int | None:
    # a validation episode with its own turn limit is not cut by the training episode's token cap
    return None if validation and cfg.validation.max_steps else cfg.rollout.max_new_tokens_per_episode


async def _play(env: BaseEnvironment, jobs: Sequence[tuple[Task, int]], policy: Any, cfg: RunConfig, temperature: float,
                reward_fn: Any, on_done: Any, validation: bool) -> RolloutBatch:
    """The jobs through the agent loop in this process, timed; generation is what the environment
    did not take (the caller puts the engine's own figure in where the policy keeps one)."""
    timed_env = TimedEnvironment(env)
    timed_reward = TimedReward(reward_fn) if reward_fn is not None else None
    budget = EpisodeBudget(policy, _episode_cap(cfg, validation))
    t0 = time.perf_counter()
    trajs = await run_rollouts(timed_env, list(jobs), budget, loop_config(cfg, temperature, validation=validation), timed_reward,
                               concurrency=cfg.rollout.concurrency, max_batch=max(1, len(jobs)), on_done=on_done)
    wall = time.perf_counter() - t0
    scoring = timed_env.verify_seconds + (timed_reward.seconds if timed_reward is not None else 0.0)
    env_seconds = max(0.0, sum(t.env_seconds for t in trajs) - timed_env.verify_seconds)
    sampled = sum(t.completion_tokens for tr in trajs for t in tr.turns)
    return RolloutBatch(trajs, wall, max(0.0, wall - env_seconds - scoring), env_seconds, scoring, sampled)


def can_overlap(policy: Any, cfg: RunConfig) -> bool:
    """Whether validation can run in the same engine as the next step's rollouts (`collect_with_validation`):
    an in-process engine that batches conversations as they come (vLLM), no councils, no Ray fleet."""
    return (bool(policy.continuous) and policy.fleet is None
            and getattr(cfg, "council", None) is None)


def collect_with_validation(env: BaseEnvironment, jobs: Sequence[tuple[Task, int]], val_tasks: Sequence[Task], policy: Any,
                            cfg: RunConfig, temperature: float, reward_fn: Any = None) -> tuple[RolloutBatch, RolloutBatch]:
    """`collect(jobs)` and `validate(val_tasks)` in one event loop, so both sets of conversations
    share the engine's batch. Decoding a small model on a CPU is bound by reading the weights, not by
    the batch (42 ms a step at batch 1, 52 ms at batch 8 on the 2-core box), so validation rides
    along for about half its cost alone (a step ~12 s longer, against 14-29 s for 12 tasks alone on
    the quickstart). Both run on the policy's current weights: the caller
    validates the previous step's weights with the rollouts of the next step, which use them too.
    The engine's busy time counts as the training batch's generation."""
    if not can_overlap(policy, cfg):
        raise ValueError("collect_with_validation needs an in-process continuous-batching policy (vLLM), without "
                         "councils or a Ray fleet")
    val_jobs = validation_jobs(val_tasks, cfg)

    async def both() -> tuple[RolloutBatch, RolloutBatch]:
        train = _play(env, jobs, policy, cfg, temperature, reward_fn, None, False)
        val = _play(env, val_jobs, policy, cfg, cfg.validation.temperature, reward_fn, None, True)
        return tuple(await asyncio.gather(train, val))  # type: ignore[return-value]

    stats = policy.stats
    gen_before = float(stats.get("seconds", 0.0))
    batch, val_batch = asyncio.run(both())
    if stats:
        batch.generation_seconds = float(stats.get("seconds", 0.0)) - gen_before
    return batch, val_batch


def validation_jobs(tasks: Sequence[Task], cfg: RunConfig) -> list[tuple[Task, int]]:
    """(task, sample index) for each validation task, `validation.samples` times."""
    return [(t, s) for t in tasks for s in range(cfg.validation.samples)]


def validation_metrics(batch: RolloutBatch, overlapped: bool = False) -> dict[str, float]:
    """`validate`'s figures from its rollouts; an overlapped validation's wall time is logged apart
    (it ran inside the next step's rollouts, whose time includes it)."""
    metrics = {**rollout_metrics(batch.trajectories, "val"), **batch.metrics}
    metrics["time/validation_overlapped_s" if overlapped else "time/validation_s"] = batch.wall_seconds
    metrics["val/rollouts"] = float(len(batch.trajectories))  # the n of val/accuracy's interval
    return metrics


def _collect_councils(env: BaseEnvironment, jobs: Sequence[tuple[Task, int]], policy: Any, cfg: Any, temperature: float,
                      reward_fn: Any, validation: bool, cap: int | None) -> RolloutBatch:
    """`collect` for multi-agent training (cfg.council): one council per job, the trained seats'
    trajectories in job order (train/council_rollouts.py), the councils' figures as metrics."""
    from officegym.agent.policies import make_policy
    from officegym.train.council_rollouts import council_metrics, fixed_seats, play_councils

    c = cfg.council
    fixed = fixed_seats(c.train_seats, c.seats, c.max_rounds, make_model=make_policy)
    params = loop_config(cfg, temperature, validation=validation).params
    stats = policy.stats
    gen_before = float(stats.get("seconds", 0.0))
    t0 = time.perf_counter()
    trajs, outcomes = play_councils(env, jobs, EpisodeBudget(policy, cap), c.train_seats, fixed, params, c.max_rounds,
                                    reward_fn)
    wall = time.perf_counter() - t0
    generation = float(stats.get("seconds", 0.0)) - gen_before if stats else wall
    sampled = sum(t.completion_tokens for tr in trajs for t in tr.turns)
    env_seconds = max(0.0, wall - generation)
    return RolloutBatch(trajs, wall, generation, env_seconds, 0.0, sampled,
                        council_metrics(outcomes, c.train_seats, "val" if validation else "train"))


def _collect_on_ray(policy: Any, jobs: Sequence[tuple[Task, int]], cfg: RunConfig, temperature: float, reward_fn: Any,
                    on_done: Any, validation: bool, cap: int | None) -> RolloutBatch:
    """`collect` on the Ray actors of a RayGeneration policy (train/ray_generation.py): the same
    loop settings, reward and per-episode token budget, applied on the workers. Generation time is
    the engines' (summed over engines), environment and scoring time the workers' (summed, as the
    in-process figures sum concurrent episodes)."""
    from functools import partial

    from officegym.agent.ray_workers import RunSetup

    fleet = policy.fleet
    setup = RunSetup(policy.env_spec, loop_config(cfg, temperature, validation=validation), reward_fn,
                     wrap=partial(EpisodeBudget, budget=cap), max_batch=max(1, len(jobs)))
    engines_before, workers_before = fleet.engine_stats(), fleet.worker_stats()
    t0 = time.perf_counter()
    trajs = fleet.run(jobs, setup, on_done)
    wall = time.perf_counter() - t0
    engines, workers = fleet.engine_stats(), fleet.worker_stats()

    def spent(now: dict[str, float], before: dict[str, float], key: str) -> float:
        return max(0.0, now.get(key, 0.0) - before.get(key, 0.0))

    verify = spent(workers, workers_before, "verify_seconds")
    scoring = verify + spent(workers, workers_before, "reward_seconds")
    env_seconds = max(0.0, spent(workers, workers_before, "env_seconds") - verify)
    generation = spent(engines, engines_before, "seconds") if "seconds" in engines else max(0.0, wall - env_seconds - scoring)
    sampled = sum(t.completion_tokens for tr in trajs for t in tr.turns)
    return RolloutBatch(trajs, wall, generation, env_seconds, scoring, sampled)


def rollout_metrics(trajs: Sequence[Trajectory], prefix: str) -> dict[str, float]:
    """Reward (the trained one), accuracy, invalid calls (rewards/calls.py: the share of calls and the
    share of rollouts with one), turns and stop reasons of a set of rollouts."""
    import statistics

    if not trajs:
        return {}
    rewards = [float(t.reward or 0.0) for t in trajs]
    counts = [trajectory_calls(t) for t in trajs]
    invalid, attempted = sum(c[0] for c in counts), sum(c[1] for c in counts)
    matched = [1.0 if (t.verdict or {}).get("matched") else 0.0 for t in trajs]
    out = {
        f"{prefix}/reward_mean": statistics.fmean(rewards),
        f"{prefix}/reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
        f"{prefix}/accuracy": statistics.fmean(matched),
        f"{prefix}/invalid_call_rate": invalid / attempted if attempted else 0.0,
        f"{prefix}/rollouts_with_invalid_call": statistics.fmean(1.0 if invalid_calls(t) else 0.0 for t in trajs),
        f"{prefix}/turns_per_rollout": statistics.fmean(len(t.turns) for t in trajs),
        f"{prefix}/sampled_tokens_per_rollout": statistics.fmean(sum(x.completion_tokens for x in t.turns) for t in trajs),
        f"{prefix}/backend_errors": float(sum(1 for t in trajs if t.error)),
    }
    for reason in ("answered", "max_steps", "length", "error"):
        out[f"{prefix}/stop_{reason}"] = statistics.fmean(1.0 if t.stop_reason == reason else 0.0 for t in trajs)
    components: dict[str, list[float]] = {}
    for t in trajs:
        for k, v in (t.reward_components or {}).items():
            components.setdefault(k, []).append(float(v))
    for k, vs in components.items():
        out[f"{prefix}/reward_{k}"] = statistics.fmean(vs)
    return out


def validate(env: BaseEnvironment, tasks: Sequence[Task], policy: Any, cfg: RunConfig, reward_fn: Any = None) -> tuple[dict[str, float], list[Trajectory]]:
    """Task accuracy of the current policy on the held-out tasks, through the agent loop."""
    if not tasks:
        return {}, []
    batch = collect(env, validation_jobs(tasks, cfg), policy, cfg, cfg.validation.temperature, reward_fn, validation=True)
    return validation_metrics(batch), batch.trajectories


class RolloutWriter:
    """Appends every training rollout to run_dir/rollouts.jsonl in `officegym eval`'s row format,
    with `officegym.step`, `officegym.group_id` (task id @ step) and the advantage it got; with
    name=VAL_ROLLOUTS, the validation rollouts (`validation` writes them)."""

    def __init__(self, run_dir: Path, enabled: bool = True, name: str = ROLLOUTS):
        self.path = Path(run_dir) / name
        self.enabled = enabled

    def drop_after(self, step: int) -> int:
        """On resume: forget rollouts of steps after the checkpoint (they will be redone)."""
        return truncate_jsonl(self.path, lambda row: int(officegym_of(row).get("step", 0)) <= step)

    def write(self, step: int, items: Sequence[tuple[Task, Trajectory, str, dict[str, Any]]]) -> None:
        if not self.enabled or not items:
            return
        lines = []
        for task, traj, group_id, extra in items:
            row = rollout_row(task, traj)
            row["officegym"].update(step=step, group_id=group_id, **extra)
            lines.append(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write("".join(lines))
            fh.flush()

    def validation(self, step: int, tasks: Sequence[Task], trajectories: Sequence[Trajectory]) -> None:
        """The rollouts `validate` returned, as rows of `step` (the task found by the rollout's id)."""
        by_id = {str(t.id): t for t in tasks}
        self.write(step, [(by_id[str(traj.task_id)], traj, f"{traj.task_id}@val{step}", {})
                          for traj in trajectories if str(traj.task_id) in by_id])
