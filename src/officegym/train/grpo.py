"""GRPO on an environment with verifiable rewards, readable top to bottom.

One step:
  1. sample `num_prompts_per_step` tasks (a resumable seeded stream) and roll each out
     `num_generations_per_prompt` times through the agent loop with the policy being trained;
     with dynamic sampling, groups whose rewards do not vary are dropped ("skip") or replaced by
     groups of further tasks ("refill", up to `max_refill_batches` extra batches);
  2. rewards come from the environment's verifier (its own score, or any officegym reward), minus
     `invalid_call_penalty` for rollouts with an invalid call (rewards/calls.py), computed once by
     the reward function and logged as trained; advantages are group-relative
     (leave-one-out or mean baseline, group/batch/no std scaling, optional clip), and
     `invalid_call_advantage` overrides the advantage of such rollouts;
  3. each rollout becomes one training row from its token ledger (the exact sampled ids; only they
     carry loss mask 1); mu inner epochs each take one optimiser step over all rows, in
     micro-batches whose losses are normalised by the token (or sequence) count of the whole batch
     so that they add up to the full batch's loss. With mu = 1 the old log-probs are the current
     ones, detached (ratio 1, no extra forward); with mu > 1 they are computed once before the first
     update. A KL penalty (beta > 0) uses the adapter-disabled model (LoRA) or a frozen copy as the
     reference; the importance weight against the sampler's log-probs is applied when a separate
     engine (vLLM) sampled or `loss.is_cap` is set;
  4. log metrics, write the step's rollouts, validate every N steps, checkpoint every M steps.

A rollout that breaks (template mismatch, backend error, nothing sampled) is counted and left out of
the update; its reward still counts for its group's baseline.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.core.task import Task
from officegym.core.trajectory import TemplateMismatchError, Trajectory
from officegym.machine import ThreadGovernor, thread_metrics
from officegym.rewards.calls import invalid_calls
from officegym.train.checkpoint import CheckpointManager, rng_state
from officegym.train.config import GRPORunConfig
from officegym.train.data import (
    TaskStream,
    load_tasks,
    make_environment,
    of_templates,
    prepare_tasks,
    split_tasks,
    template_of,
)
from officegym.train.distributed import Dist, run_ranks
from officegym.train.memory import memory_metrics, release_free_memory
from officegym.train.modeling import generation_policy, load_train_model, push_weights, release_generation
from officegym.train.rollouts import (
    VAL_ROLLOUTS,
    RolloutWriter,
    can_overlap,
    collect,
    collect_with_validation,
    make_reward_fn,
    rollout_metrics,
    validate,
    validation_metrics,
)
from officegym.train.runtime import (
    GracefulStop,
    grad_norm_and_clip,
    make_optimizer,
    make_scheduler,
    progress_bar,
    restore_checkpoint,
    save_checkpoint,
)
from officegym.train.tracking import METRICS, MetricsLogger, NullLogger, truncate_jsonl


class TrainingSetupError(RuntimeError):
    """The run cannot start (bad data, an out_dir that holds another run, ...)."""


@dataclass
class TrainResult:
    run_dir: Path
    start_step: int
    last_step: int
    stopped: bool
    history: list[dict[str, Any]] = field(default_factory=list)
    exported_step: int | None = None  # whose weights out_dir/model holds (checkpoint.export)


@dataclass
class Group:
    task: Task
    group_id: str
    trajectories: list[Trajectory]


def _check_out_dir(run_dir: Path, resume: bool) -> None:
    has_state = (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").glob("step_*"))
    if has_state and not resume:
        raise TrainingSetupError(f"{run_dir} already holds a run's checkpoints; use checkpoint.resume=true to continue it "
                                 "or choose another out_dir")


def train_grpo(cfg: GRPORunConfig, console: Any = None, step_hook: Callable[[int, dict[str, Any]], None] | None = None) -> TrainResult:
    """Run GRPO as configured; resumes from the latest checkpoint in cfg.out_dir. `step_hook(step,
    metrics)` is called after each step (tests use it to interrupt a run)."""

    if not cfg.data.tasks:
        raise TrainingSetupError("data.tasks is required: a task JSONL with ground truth")
    run_dir = Path(cfg.out_dir)
    _check_out_dir(run_dir, cfg.checkpoint.resume)

    def check(dist: Dist) -> None:
        if dist.active and cfg.grpo.dynamic_sampling != "off":
            raise TrainingSetupError("grpo.dynamic_sampling must be 'off' under torchrun (ranks would refill differently)")
        if dist.active and cfg.rollout.backend == "ray":
            raise TrainingSetupError("rollout.backend must be 'local' under torchrun: every rank rolls out its own "
                                     "share; rollout.backend ray spreads one process's rollouts over Ray actors")

    return run_ranks(cfg, console, "grpo", lambda con, dist: _train(cfg, con, step_hook, run_dir, dist), check)


def sft_mix_tasks(train_tasks: list[Task], cfg: GRPORunConfig) -> list[Task]:
    """The tasks whose ground truth the SFT term imitates: those of grpo.sft_mix.templates among the
    training tasks. A template outside data.templates (one the policy gradient never samples) comes
    from the whole training file: the term's data need not be the RL prompts (PPO-ptx), and GRPO
    never validates on that template."""
    m = cfg.grpo.sft_mix
    pool = list(train_tasks)
    if m.templates is not None and cfg.data.templates is not None and set(m.templates) - set(cfg.data.templates):
        sampled = set(cfg.data.templates)
        every = prepare_tasks(load_tasks(cfg.data.tasks), cfg.data.model_copy(update={"templates": None}))
        pool += [t for t in every if template_of(t) not in sampled]
    return of_templates(pool, m.templates, "grpo.sft_mix.templates")


def _train(cfg: GRPORunConfig, console: Any, step_hook: Any, run_dir: Path, dist: Dist) -> TrainResult:
    env = make_environment(cfg.data)
    if cfg.council is not None and not env.seats:
        raise TrainingSetupError(f"council training needs a multi-agent environment (roles/council); {env.name} "
                                 "has no seats: remove the council section or set data.env")
    train_tasks, val_tasks = split_tasks(prepare_tasks(load_tasks(cfg.data.tasks), cfg.data), cfg.data, cfg.seed)
    tm = load_train_model(cfg.model, cfg.lora, cfg.seed)
    tm.model.eval()  # no dropout: the sampler and the learner must be the same function
    trunk = tm.keep_trunk(cfg.grpo.trunk_cache_mb)
    if trunk is not None and console is not None and dist.main:
        console.print(f"frozen trunk: layers 0-{trunk.n - 1} of {trunk.n_layers} kept across steps "
                      f"(up to {cfg.grpo.trunk_cache_mb:g} MB)")
    reward_fn = make_reward_fn(cfg.grpo.reward, env, cfg.grpo.invalid_call_penalty)
    params = tm.trainable_parameters()
    optimizer = make_optimizer(params, cfg.optim)
    scheduler = make_scheduler(optimizer, cfg.optim, cfg.grpo.max_steps)
    manager = CheckpointManager(run_dir, cfg.checkpoint.keep_top_k, cfg.checkpoint.higher_is_better)
    if cfg.grpo.curriculum == "variance":
        from officegym.train.curriculum import VarianceCurriculum

        stream: Any = VarianceCurriculum(train_tasks, cfg.seed, floor=cfg.grpo.curriculum_floor, eps=cfg.grpo.advantage_eps)
    else:
        stream = TaskStream(train_tasks, cfg.seed, cfg.data.shuffle)
    sft_mix = None
    if cfg.grpo.sft_mix.coef > 0:
        from officegym.train.sft_mix import SFTMix

        sft_mix = SFTMix.build(tm, cfg, env, sft_mix_tasks(train_tasks, cfg))
        if console is not None and dist.main:
            console.print(f"SFT mix: {len(sft_mix.examples)} ground-truth conversations, "
                          f"{cfg.grpo.sft_mix.examples} a step, coef {cfg.grpo.sft_mix.coef}"
                          + (f" (dropped: {sft_mix.report.dropped})" if sft_mix.report.dropped else ""))
    writer = RolloutWriter(run_dir, cfg.logging.write_rollouts and dist.main)
    val_writer = RolloutWriter(run_dir, cfg.logging.write_rollouts and dist.main, name=VAL_ROLLOUTS)
    start_step = 0
    info = restore_checkpoint(manager, tm, optimizer, scheduler) if cfg.checkpoint.resume else None
    if info is not None:
        start_step = info.step
        stream.load_state_dict(info.state["data"])
        if console is not None:
            console.print(f"resuming from {info.path} (step {start_step})")
    if dist.main:
        writer.drop_after(start_step)
        val_writer.drop_after(start_step)
        truncate_jsonl(run_dir / METRICS, lambda r: int(r.get("step", 0)) <= start_step)
    reference = tm.reference_copy() if cfg.grpo.loss.kl_beta > 0 and not tm.lora else None
    logger = (MetricsLogger(run_dir, tensorboard=cfg.logging.tensorboard, wandb=cfg.logging.wandb, trackio=cfg.logging.trackio,
                            project=cfg.logging.project, offline=cfg.logging.offline, config=cfg.model_dump(mode="json"))
              if dist.main else NullLogger())
    for note in logger.notes:
        if console is not None:
            console.print(f"[yellow]{note}[/]")
    result = TrainResult(run_dir, start_step, start_step, False)
    governor = ThreadGovernor(cfg.model.threads)
    last_val: dict[str, float] = {}
    policy = None
    validating = bool(val_tasks) and cfg.validation.accuracy and dist.main
    # A step whose validation rides along with the next step's rollouts (same weights, one engine
    # batch): its metrics are logged and its checkpoint written once that validation is back.
    deferred: _Deferred | None = None

    def end_step(step: int, metrics: dict[str, Any], checkpoint: bool, data_state: Any = None, rng: Any = None) -> None:
        logger.log(step, metrics)
        result.history.append({"step": step, **metrics})
        if step_hook is not None and step > 0:
            step_hook(step, metrics)
        if checkpoint:
            if dist.main:
                _save(manager, step, tm, optimizer, scheduler, data_state if data_state is not None else stream.state_dict(),
                      metrics, cfg, rng)
            dist.barrier()

    def validate_alone(step: int, version: int) -> dict[str, float]:
        """Validate the trainer's weights on their own; an engine holding its own weights gets them
        first (as `version`)."""
        push_weights(policy, tm, version)
        val, val_trajs = validate(env, val_tasks, policy, cfg, reward_fn)
        val_writer.validation(step, val_tasks, val_trajs)
        return val

    def flush(batch: Any) -> None:
        """The deferred step's validation is back (`batch`; None when the next step failed first):
        log the step and write its checkpoint (the weights have not moved since it ended)."""
        nonlocal deferred, last_val
        d, deferred = deferred, None
        if d is None or (batch is None and d.step == 0):
            return
        if batch is not None:
            val = validation_metrics(batch, overlapped=True)
            val_writer.validation(d.step, val_tasks, batch.trajectories)
            d.metrics.update(val)
            last_val = val
            if d.step == 0 and console is not None and "val/accuracy" in val:
                console.print(f"step 0 (start): validation accuracy {val['val/accuracy']:.3f}")
        end_step(d.step, d.metrics, d.checkpoint, d.data_state, d.rng)

    try:
        policy = generation_policy(tm, cfg)
        overlap = validating and cfg.validation.overlap and not dist.active and can_overlap(policy, cfg)
        if start_step == 0 and cfg.validation.at_start and validating and start_step < cfg.grpo.max_steps:
            if overlap:  # step 0 of the curve rides along with step 1's rollouts
                deferred = _Deferred(0, {}, False)
            else:
                # Step 0 of the validation curve: the model GRPO starts from.
                last_val = validate_alone(0, 0)
                end_step(0, dict(last_val), False)
                if console is not None and "val/accuracy" in last_val:
                    console.print(f"step 0 (start): validation accuracy {last_val['val/accuracy']:.3f}")
        with GracefulStop(console) as stop, progress_bar(console) as bar:
            job = bar.add_task("grpo", total=cfg.grpo.max_steps, completed=start_step, info="")
            for step in range(start_step + 1, cfg.grpo.max_steps + 1):
                threads, busy = governor.update()  # the cores others leave free now, for this step
                policy.set_threads(threads)
                metrics = grpo_step(cfg, step, tm, policy, env, stream, optimizer, scheduler, params, reward_fn,
                                    reference, writer, dist, sft_mix,
                                    alongside=val_tasks if deferred is not None else None, on_validation=flush)
                metrics.update(thread_metrics(threads, busy))
                stopping = dist.any(stop.requested)  # a signal to any rank stops the job at this step
                due_val = (cfg.validation.every and step % cfg.validation.every == 0) or step == cfg.grpo.max_steps
                checkpoint = step % cfg.checkpoint.every == 0 or step == cfg.grpo.max_steps or stopping
                result.last_step = step
                if due_val and validating and overlap and step < cfg.grpo.max_steps and not stopping:
                    metrics.update(memory_metrics())
                    metrics.update(release_free_memory())
                    deferred = _Deferred(step, metrics, checkpoint, copy.deepcopy(stream.state_dict()), rng_state())
                    bar.update(job, completed=step, info=_bar_info(metrics, last_val))
                    continue
                if due_val and validating:
                    # the pushed version is the next step's, whose own push then has nothing to send
                    last_val = validate_alone(step, step + 1)
                    metrics.update(last_val)
                metrics.update(memory_metrics())  # before the trim: the step's own high-water mark
                metrics.update(release_free_memory())
                end_step(step, metrics, checkpoint)
                bar.update(job, completed=step, info=_bar_info(metrics, last_val))
                if stopping:
                    result.stopped = True
                    break
    finally:
        try:
            flush(None)  # a step failed before the deferred validation came back: log and keep what ended
        finally:
            logger.close()
            release_generation(policy)
    if not result.stopped and result.last_step == cfg.grpo.max_steps and dist.main:
        best = manager.best()
        stop_early = cfg.checkpoint.export == "best" and best is not None and best.step != result.last_step
        if stop_early:
            tm.load_trainable(best.path)  # early stopping: the validated weights, not the last ones
        tm.export(run_dir / "model")
        result.exported_step = best.step if stop_early else result.last_step
        if console is not None:
            which = f"step {best.step}, best by {cfg.checkpoint.metric}" if stop_early else "the last step"
            console.print(f"done: model in {run_dir / 'model'} ({which})"
                          + (f"; best checkpoint {best.path} ({cfg.checkpoint.metric} = {best.metric:.3f})" if best else ""))
    return result


@dataclass
class _Deferred:
    """A step whose validation runs with the next step's rollouts: its metrics, whether it is due a
    checkpoint, and the data position and random state that checkpoint must hold (taken when the
    step ended; the weights, optimiser and schedule do not move before the next update)."""

    step: int
    metrics: dict[str, Any]
    checkpoint: bool
    data_state: Any = None
    rng: Any = None


def _bar_info(metrics: dict[str, Any], last_val: dict[str, float]) -> str:
    parts = [f"reward {metrics.get('train/reward_mean', 0.0):.3f}"]
    if "val/accuracy" in last_val:
        parts.append(f"val acc {last_val['val/accuracy']:.3f}")
    if "mem/rss_gb" in metrics:
        parts.append(f"rss {metrics['mem/rss_gb']:.1f} GB")
    return ", ".join(parts)


def _save(manager: CheckpointManager, step: int, tm: Any, optimizer: Any, scheduler: Any, data_state: Any,
          metrics: dict[str, Any], cfg: Any, rng: Any = None) -> None:
    metric = metrics.get(cfg.checkpoint.metric)
    save_checkpoint(manager, step, tm, optimizer, scheduler, {"data": data_state, "metric": metric,
                                                              "metric_name": cfg.checkpoint.metric}, rng)


def grpo_step(cfg: GRPORunConfig, step: int, tm: Any, policy: Any, env: Any, stream: Any, optimizer: Any,
              scheduler: Any, params: Sequence[Any], reward_fn: Any, reference: Any, writer: RolloutWriter,
              dist: Dist | None = None, sft_mix: Any = None, alongside: Sequence[Task] | None = None,
              on_validation: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """One GRPO step (see the module docstring); returns its metrics. Under torchrun (`dist`) every
    rank draws the same prompts and rolls out its share; metrics and rollouts cover all ranks.
    `alongside`: validation tasks played with the first batch of rollouts (the weights before this
    step's update; `collect_with_validation`), handed to `on_validation` before the update."""
    import torch

    from officegym.train.advantages import group_advantages, zero_variance_groups

    dist = dist or Dist()
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
                                                       reward_fn)
            if on_validation is not None:
                on_validation(val_batch)
        else:
            batch = collect(env, jobs, policy, cfg, cfg.rollout.temperature, reward_fn)
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
            observe = getattr(stream, "observe", None)
            if observe is not None:
                observe(task, [_reward(t) for t in grp.trajectories])
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
    if hasattr(stream, "metrics"):
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
    sft_batches = sft_mix.batches(step, tm.device, dist) if sft_mix is not None else []
    update = _update(cfg, tm, rows, row_adv, optimizer, params, policy, reference, dist, sft_batches)
    with warnings.catch_warnings():  # the schedule counts steps, also those whose update was skipped
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step", category=UserWarning)
        scheduler.step()
    metrics.update(update)
    timing["training"] = time.perf_counter() - t0
    metrics["train/lr"] = float(optimizer.param_groups[0]["lr"])
    for k, v in timing.items():
        metrics[f"time/{k}_s"] = v
    metrics["time/step_s"] = time.perf_counter() - t_step

    # 4. The step's rollouts, in the eval row format, grouped.
    adv_of = {id(t): float(a) for t, a in zip(trajs, advantages.tolist())}
    writer.write(step, [(grp.task, t, grp.group_id, {"advantage": adv_of.get(id(t)), "used_for_update": id(t) in adv_of,
                                                       "invalid_calls": invalid_calls(t)})
                        for grp in sampled for t in grp.trajectories])
    return metrics


def _reward(traj: Trajectory) -> float:
    """The trained reward: the reward function (penalty included) set it on the trajectory."""
    return float(traj.reward) if traj.reward is not None else 0.0


def _varies(grp: Group, g: Any) -> bool:
    rewards = [_reward(t) for t in grp.trajectories]
    return max(rewards) - min(rewards) > g.advantage_eps


def _rows(trajs: Sequence[Trajectory], advantages: Any, policy: Any) -> tuple[list[Any], list[float], int]:
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


def merge_duplicate_rows(rows: Sequence[Any], keep: list[int], advantages: list[float]) -> tuple[list[int], list[float]]:
    """Rollouts of a group that sampled exactly the same tokens (the same ids, mask and sampler
    log-probs; a small model at a low temperature does this often) have the same reward, the same
    advantage and the same per-token loss. With no KL term the loss is linear in the advantage
    (every clip bound scales with it), so k copies are one row with k times the advantage: the same
    gradient for one forward instead of k. Returns the kept indexes and the advantages to use."""
    import torch

    merged = list(advantages)
    first_of: dict[tuple[Any, ...], int] = {}
    out = []
    for i in keep:
        row = rows[i]
        key = (tuple(row.input_ids.tolist()), tuple(row.loss_mask.tolist()), float(advantages[i]))
        j = first_of.get(key)
        if j is not None and torch.equal(rows[j].sampler_logprobs, row.sampler_logprobs):
            merged[j] += advantages[i]
            merged[i] = 0.0
            continue
        first_of.setdefault(key, i)
        out.append(i)
    return out, merged


def _update(cfg: GRPORunConfig, tm: Any, rows: list[Any], advantages: list[float], optimizer: Any, params: Sequence[Any],
            policy: Any, reference: Any, dist: Dist | None = None, sft_batches: Sequence[dict[str, Any]] = ()) -> dict[str, float]:
    """One optimiser step (mu of them) over this rank's rows; under torchrun the normaliser and the
    gradients are summed over ranks, so every rank takes the single-process step of all rows.
    `sft_batches` (train/sft_mix.py) add grpo.sft_mix.coef x their mean per-token NLL to the loss."""
    import torch

    from officegym.train.forward import forward_logprobs, prefix_micro_batches, shared_prefix_length
    from officegym.train.ledger import collate
    from officegym.train.losses import normaliser_count, policy_loss
    from officegym.train.runtime import gradient_snapshot, gradient_split
    from officegym.train.sft import nll_sum

    dist = dist or Dist()

    g, loss_cfg = cfg.grpo, cfg.grpo.loss
    out = {"train/loss": 0.0, "train/clip_fraction": 0.0, "train/ratio_mean": 1.0, "train/ratio_max": 1.0, "train/kl": 0.0,
           "train/entropy": 0.0, "train/grad_norm": 0.0, "train/trained_tokens": 0.0, "train/train_tokens_per_s": 0.0,
           "train/sampler_logprob_abs_diff": 0.0, "train/is_weight_mean": 1.0, "train/skipped_zero_advantage": 0.0,
           "train/skipped_update": 0.0}
    if not rows and not sft_batches and not dist.active:  # under torchrun every rank joins the collectives
        return out
    temperature = cfg.rollout.temperature if cfg.rollout.temperature > 0 else 1.0
    # `policy` None: the caller's rows carry no ledger of a generation policy (a distributed test)
    pad_id = int((policy.pad_id if policy is not None else None) or tm.tokenizer.pad_token_id or 0)
    share = ("exact" if g.prompt_grad else "no_grad") if g.share_prefix else "off"
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))

    def micro_batches(index: list[int]) -> list[dict[str, Any]]:
        if g.share_prefix:  # a group's rollouts (and groups of one tool set) share a prefix: together
            chunks = [[index[j] for j in c] for c in prefix_micro_batches([rows[i].input_ids.tolist() for i in index],
                                                                          g.micro_batch_size, g.micro_batch_tokens)]
        else:  # similar lengths together: less padding
            chunks = [index[start : start + g.micro_batch_size] for start in range(0, len(index), g.micro_batch_size)]
        out = []
        for idx in chunks:
            b = {k: v.to(tm.device) for k, v in collate([rows[i] for i in idx], pad_id).items()}
            b["advantages"] = torch.tensor([advantages[i] for i in idx], dtype=torch.float32, device=tm.device)
            out.append(b)
        return out

    batches = micro_batches(order)
    aggregation = loss_cfg.aggregation
    if aggregation == "constant":
        longest = dist.max(max((int(b["loss_mask"].sum(1).max()) for b in batches), default=0))
        normaliser = loss_cfg.constant_normaliser or max(1.0, dist.sum(len(rows)) * longest)
    else:
        normaliser = max(1.0, dist.sum(normaliser_count([b["loss_mask"] for b in batches], aggregation)))
    use_sampler = (policy is not None and policy.sampler_differs) or loss_cfg.is_cap is not None
    if g.skip_zero_advantage and loss_cfg.kl_beta == 0:
        # A zero advantage makes every term of the clipped loss 0 (and the IS weight only scales it),
        # so these rows add nothing to the gradient; the normaliser above already counted them.
        keep = [i for i in order if advantages[i] != 0.0]
        out["train/skipped_zero_advantage"] = float(len(rows) - len(keep))
        if g.merge_duplicates:
            before = len(keep)
            keep, advantages = merge_duplicate_rows(rows, keep, advantages)
            out["train/merged_duplicates"] = float(before - len(keep))
        if len(keep) < len(order):
            batches = micro_batches(keep)
    tokens_total = sum(int(b["attention_mask"].sum()) for b in batches)
    shared = [shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"], share) for b in batches]
    out["train/update_rows"] = float(sum(b["input_ids"].shape[0] for b in batches))
    out["train/update_micro_batches"] = float(len(batches))
    # What the forward passes run: each micro-batch's shared prefix once, then every row's rest.
    out["train/update_tokens"] = float(sum(s + int(b["attention_mask"][:, s:].sum()) for s, b in zip(shared, batches)))
    out["train/update_shared_tokens"] = float(sum(shared))
    # Old log-probs (mu > 1) and reference log-probs (KL), computed once before any update.
    with torch.no_grad():
        for b in batches:
            if g.mu > 1:
                b["old"], _, b["offset"] = forward_logprobs(tm.model, tm, b, temperature, share=share)
            if loss_cfg.kl_beta > 0:
                if tm.lora:
                    with tm.reference():
                        b["ref"], _, _ = forward_logprobs(tm.model, tm, b, temperature, share=share)
                else:
                    b["ref"], _, _ = forward_logprobs(reference, tm, b, temperature, share=share)
    sft_coef = g.sft_mix.coef
    sft_share = share if g.sft_mix.prompt_grad else "no_grad"
    sft_tokens = dist.sum(float(sum(int(b["loss_mask"].sum()) for b in sft_batches))) if sft_coef > 0 else 0.0
    t0 = time.perf_counter()
    sums = {"loss": 0.0, "clip": 0.0, "ratio": 0.0, "kl": 0.0, "ent": 0.0, "diff": 0.0, "isw": 0.0, "tok": 0, "sft": 0.0}
    ratio_max = 1.0
    grad_norm = 0.0
    for epoch in range(g.mu):
        optimizer.zero_grad(set_to_none=True)
        last = epoch == g.mu - 1
        for b in batches:
            lp, entropy, offset = forward_logprobs(tm.model, tm, b, temperature, share=share,
                                                   want_entropy=last and loss_cfg.entropy)
            mask = b["loss_mask"][:, offset:]
            old = b["old"][:, -lp.shape[1]:] if "old" in b else lp.detach()
            ref = b["ref"][:, -lp.shape[1]:] if "ref" in b else None
            sampler = b["sampler_logprobs"][:, offset:] if use_sampler else None
            res = policy_loss(lp, old, b["advantages"], mask, eps_low=loss_cfg.eps_low, eps_high=loss_cfg.eps_high,
                              dual_clip=loss_cfg.dual_clip, aggregation=aggregation, normaliser=normaliser,
                              ref_logprobs=ref, kl_beta=loss_cfg.kl_beta, sampler_logprobs=sampler, is_cap=loss_cfg.is_cap)
            res.loss.backward()
            if last:
                n = res.tokens
                sums["loss"] += float(res.loss.detach())
                sums["clip"] += res.clip_fraction * n
                sums["ratio"] += res.ratio_mean * n
                sums["kl"] += res.kl * n
                sums["isw"] += res.is_weight_mean * n
                sums["tok"] += n
                ratio_max = max(ratio_max, res.ratio_max)
                with torch.no_grad():
                    m = mask.bool()
                    sampler_lp = b["sampler_logprobs"][:, offset:]
                    sums["diff"] += float((lp.detach() - sampler_lp).abs()[m].sum())
                    if entropy is not None:
                        sums["ent"] += float(entropy) * n
        if sft_tokens > 0:
            pg_grads = gradient_snapshot(params) if last else None
            for b in sft_batches:
                nll, _ = nll_sum(tm, b, sft_share)
                (sft_coef * nll / sft_tokens).backward()
                if last:
                    sums["sft"] += float(nll.detach())
            if pg_grads is not None:  # which term drives the update: the policy gradient's share and the SFT term's
                out.update(gradient_split(params, pg_grads))
        has_signal = dist.any(any(a != 0.0 for a in advantages)) or sft_tokens > 0
        if not has_signal and not g.step_without_signal and loss_cfg.kl_beta == 0:
            # No rollout carries signal: AdamW would still move the weights (momentum and decay
            # replay the last updates, about 3.5x the last step in all over ten empty steps), which
            # collapsed the quickstart's policy (validation 42% -> 0%) without a single new sample.
            out["train/skipped_update"] = 1.0
            optimizer.zero_grad(set_to_none=True)
            break
        if not batches and not sft_batches:  # every row skipped: the zero gradient an unskipped pass gives
            for p in params:
                p.grad = torch.zeros_like(p)
        dist.sum_gradients(params)
        grad_norm = grad_norm_and_clip(params, cfg.optim.grad_clip)
        optimizer.step()
    train_seconds = dist.max(time.perf_counter() - t0)
    if dist.active:  # the step's figures over all ranks
        sums = {k: dist.sum(v) for k, v in sums.items()}
        ratio_max = dist.max(ratio_max)
        tokens_total = int(dist.sum(tokens_total))
        for key in ("train/update_rows", "train/update_micro_batches", "train/update_tokens", "train/update_shared_tokens",
                    "train/skipped_zero_advantage", "train/merged_duplicates"):
            if key in out:
                out[key] = dist.sum(out[key])
    n = max(1, sums["tok"])
    out.update({
        "train/loss": sums["loss"], "train/clip_fraction": sums["clip"] / n, "train/ratio_mean": sums["ratio"] / n,
        "train/ratio_max": ratio_max, "train/kl": sums["kl"] / n, "train/entropy": sums["ent"] / n,
        "train/grad_norm": grad_norm, "train/trained_tokens": float(sums["tok"]),
        "train/train_tokens_per_s": tokens_total * g.mu / train_seconds if train_seconds > 0 else 0.0,
        "train/sampler_logprob_abs_diff": sums["diff"] / n, "train/is_weight_mean": sums["isw"] / n,
    })
    if sft_tokens > 0:  # the mixed-in SFT loss: mean NLL per target token, and how many
        out["train/sft_loss"] = dist.sum(sums["sft"]) / sft_tokens
        out["train/sft_tokens"] = sft_tokens
    if getattr(tm, "trunk_cache", None) is not None:  # prompt tokens whose first layers were reused or run
        out.update(tm.trunk_cache.take_counts())
    return out
