"""The GRPO run: setup (data, model, optimiser, resume), the step loop with validation (alone or riding
along with the next step's rollouts), logging, checkpoints, and the export at the end."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.core.task import Task
from officegym.machine import ThreadGovernor, thread_metrics
from officegym.train.checkpoint import CheckpointManager, rng_state
from officegym.train.config import GRPORunConfig
from officegym.train.curriculum import VarianceCurriculum
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
from officegym.train.grpo_step import StepContext, grpo_step
from officegym.train.memory import memory_metrics, release_free_memory
from officegym.train.modeling import (
    TrainModel,
    generation_policy,
    load_train_model,
    push_weights,
    release_generation,
)
from officegym.train.rollouts import (
    VAL_ROLLOUTS,
    RolloutWriter,
    can_overlap,
    make_reward_fn,
    validate,
    validation_metrics,
)
from officegym.train.run_result import TrainingSetupError, TrainResult, check_out_dir
from officegym.train.runtime import (
    GracefulStop,
    make_optimizer,
    make_scheduler,
    progress_bar,
    resume_run,
    save_checkpoint,
)
from officegym.train.tracking import METRICS, MetricsLogger, NullLogger, truncate_jsonl


def train_grpo(cfg: GRPORunConfig, console: Any = None, step_hook: Callable[[int, dict[str, Any]], None] | None = None) -> TrainResult:
    """Run GRPO as configured; resumes from the latest checkpoint in cfg.out_dir. `step_hook(step,
    metrics)` is called after each step (tests use it to interrupt a run)."""

    if not cfg.data.tasks:
        raise TrainingSetupError("data.tasks is required: a task JSONL with ground truth")
    run_dir = Path(cfg.out_dir)
    check_out_dir(run_dir, cfg.checkpoint.resume)

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


def _train(cfg: GRPORunConfig, console: Any, step_hook: Callable[[int, dict[str, Any]], None] | None, run_dir: Path,
           dist: Dist) -> TrainResult:
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
    stream: TaskStream | VarianceCurriculum
    if cfg.grpo.curriculum == "variance":
        stream = VarianceCurriculum(train_tasks, cfg.seed, floor=cfg.grpo.curriculum_floor, eps=cfg.grpo.advantage_eps)
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
    start_step = resume_run(manager, tm, optimizer, scheduler, stream, cfg.checkpoint.resume, console)
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
        ctx = StepContext(cfg, tm, policy, env, stream, optimizer, scheduler, params, reward_fn, reference, writer, dist,
                          sft_mix)
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
                metrics = grpo_step(ctx, step, alongside=val_tasks if deferred is not None else None, on_validation=flush)
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


def _save(manager: CheckpointManager, step: int, tm: TrainModel, optimizer: Any, scheduler: Any, data_state: Any,
          metrics: dict[str, Any], cfg: GRPORunConfig, rng: Any = None) -> None:
    metric = metrics.get(cfg.checkpoint.metric)
    save_checkpoint(manager, step, tm, optimizer, scheduler, {"data": data_state, "metric": metric,
                                                              "metric_name": cfg.checkpoint.metric}, rng)
