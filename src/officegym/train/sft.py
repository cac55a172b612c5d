"""Supervised fine-tuning on tool-calling conversations, loss on assistant tokens only.

Each optimiser step takes `batch_size` conversations (a resumable seeded stream over epochs), runs
them in micro-batches and normalises the summed token NLL by the number of assistant tokens of the
whole step, so gradient accumulation gives the same gradient as one big batch. Validation reports
the held-out loss and, optionally, task accuracy through the agent loop with the model being
trained (greedy). Checkpoints, resume, metrics and graceful stop work as in GRPO.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from officegym.machine import ThreadGovernor, thread_metrics
from officegym.train.checkpoint import CheckpointManager
from officegym.train.config import SFTRunConfig
from officegym.train.data import (
    GroupedStream,
    TaskStream,
    load_tasks,
    make_environment,
    prepare_tasks,
    split_tasks,
)
from officegym.train.distributed import Dist, run_ranks
from officegym.train.modeling import load_train_model, token_renderer
from officegym.train.rollouts import validate
from officegym.train.run_result import TrainingSetupError, TrainResult
from officegym.train.run_result import check_out_dir as _check_out_dir
from officegym.train.runtime import (
    GracefulStop,
    grad_norm_and_clip,
    make_optimizer,
    make_scheduler,
    progress_bar,
    resume_run,
    save_checkpoint,
)
from officegym.train.sft_data import (
    BuildReport,
    Example,
    council_conversations,
    encode_all,
    ground_truth_examples,
    rollout_conversations,
)
from officegym.train.tracking import METRICS, MetricsLogger, NullLogger, truncate_jsonl


def build_examples(cfg: SFTRunConfig, renderer: Any, env: Any, console: Any = None) -> tuple[list[Example], list[Example], list[Any], BuildReport]:
    """(train examples, validation examples, validation tasks for accuracy, what was dropped)."""
    s = cfg.sft
    report = BuildReport()
    val_tasks: list[Any] = []
    if s.source == "ground_truth":
        if not cfg.data.tasks:
            raise TrainingSetupError("sft.source=ground_truth needs data.tasks (task JSONL with ground_truth)")
        train_tasks, val_tasks = split_tasks(prepare_tasks(load_tasks(cfg.data.tasks), cfg.data), cfg.data, cfg.seed)
        train, val = (ground_truth_examples(renderer, env, tasks, s.calls_per_turn, s.final_answer,
                                            cfg.rollout.max_tool_output_chars, s.max_length, report, s.token_weights,
                                            s.detours if tasks is train_tasks else 0.0, cfg.seed)
                      for tasks in (train_tasks, val_tasks))
    elif s.source == "council":
        if not cfg.data.tasks or cfg.council is None:
            raise TrainingSetupError("sft.source=council needs data.tasks (roles/council tasks) and a council section "
                                     "(train_seats: the seats to learn)")
        train_tasks, val_tasks = split_tasks(load_tasks(cfg.data.tasks), cfg.data, cfg.seed)
        c = cfg.council
        try:
            train = encode_all(renderer, council_conversations(train_tasks, c.train_seats, c.seats, c.max_rounds,
                                                               s.min_reward, report, c.teachers), s.max_length, report)
            val = encode_all(renderer, council_conversations(val_tasks, c.train_seats, c.seats, c.max_rounds,
                                                             s.min_reward, report, c.teachers), s.max_length, report)
        except ValueError as exc:
            raise TrainingSetupError(str(exc)) from None
    else:
        if not s.rollouts:
            raise TrainingSetupError("sft.source=rollouts needs sft.rollouts=[path, ...] (eval rollouts.jsonl files)")
        try:
            convs = rollout_conversations(s.rollouts, s.min_reward, report, cfg.data.templates)
        except FileNotFoundError as exc:
            raise TrainingSetupError(str(exc)) from None
        examples = encode_all(renderer, convs, s.max_length, report)
        order = list(range(len(examples)))
        random.Random(f"sft-split:{cfg.seed}").shuffle(order)
        n_val = round(s.val_fraction_examples * len(examples)) if len(examples) > 1 else 0
        held = set(order[:n_val])
        val = [e for i, e in enumerate(examples) if i in held]
        train = [e for i, e in enumerate(examples) if i not in held]
        if cfg.data.tasks:
            val_tasks = split_tasks(prepare_tasks(load_tasks(cfg.data.tasks), cfg.data), cfg.data, cfg.seed)[1]
    if not train:
        raise TrainingSetupError(f"no SFT examples left to train on (dropped: {report.dropped or 'none'})")
    return train, val, val_tasks, report


def conversation_batches(examples: list[Example], micro: int, pad_id: int, device: Any, by_prefix: bool = False,
             max_tokens: int | None = None) -> list[dict[str, Any]]:
    """Right-padded micro-batches of at most `micro` conversations; `by_prefix`: conversations with
    a long common prefix (one tool set) together (train/forward.py `prefix_micro_batches`), else
    similar lengths together."""
    import torch

    from officegym.train.forward import prefix_micro_batches

    if by_prefix:
        chunks = prefix_micro_batches([e.input_ids for e in examples], micro, max_tokens)
    else:
        order = sorted(range(len(examples)), key=lambda i: len(examples[i]))
        chunks = [order[start : start + micro] for start in range(0, len(order), micro)]
    out = []
    for idx in chunks:
        chunk = [examples[i] for i in idx]
        width = max(len(e) for e in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        attn = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.float32)
        for b, e in enumerate(chunk):
            ids[b, : len(e)] = torch.tensor(e.input_ids)
            attn[b, : len(e)] = 1
            mask[b, : len(e)] = torch.tensor(e.loss_mask, dtype=torch.float32)
        out.append({"input_ids": ids.to(device), "attention_mask": attn.to(device), "loss_mask": mask.to(device)})
    return out


def nll_sum(tm: Any, batch: dict[str, Any], share: str = "off") -> tuple[Any, float]:
    """Summed negative log-likelihood of the masked tokens (each times its weight), and their summed
    weight (their number unweighted); logits are computed only from the first masked position on
    (`share`: see train/forward.py)."""
    from officegym.train.forward import forward_logprobs

    lp, _, offset = forward_logprobs(tm.model, tm, batch, 1.0, share=share)  # type: ignore[arg-type]
    mask = batch["loss_mask"][:, offset:]
    return -(lp * mask).sum(), float(mask.sum())  # weighted tokens (sft.token_weights), else their number


def sft_share(s: Any) -> str:
    """How a micro-batch's shared prefix runs (train/forward.py)."""
    if not s.prompt_grad:
        return "no_grad"
    return "exact" if s.share_prefix else "off"


def eval_loss(tm: Any, examples: list[Example], micro: int, pad_id: int) -> float:
    import torch

    if not examples:
        return float("nan")
    total, tokens = 0.0, 0.0
    was_training = tm.model.training
    tm.model.eval()
    with torch.no_grad():  # the shared-prompt forward is exact and, without gradient, simply cheaper
        for b in conversation_batches(examples, micro, pad_id, tm.device, by_prefix=True):
            nll, n = nll_sum(tm, b, share="no_grad")
            total += float(nll)
            tokens += n
    tm.model.train(was_training)
    return total / max(1.0, tokens)


def sft_stream(train: list[Example], cfg: SFTRunConfig) -> TaskStream:
    """The conversations in the order SFT draws them: each step's from one tool set with
    `sft.batch_by_prefix`, else shuffled."""
    if cfg.sft.batch_by_prefix:
        from officegym.train.forward import prefix_micro_batches

        groups = prefix_micro_batches([e.input_ids for e in train], len(train))
        return GroupedStream(train, groups, cfg.sft.batch_size, cfg.seed, cfg.data.shuffle)
    return TaskStream(train, cfg.seed, cfg.data.shuffle)


def train_sft(cfg: SFTRunConfig, console: Any = None, step_hook: Callable[[int, dict[str, Any]], None] | None = None) -> TrainResult:

    run_dir = Path(cfg.out_dir)
    _check_out_dir(run_dir, cfg.checkpoint.resume)
    return run_ranks(cfg, console, "sft", lambda con, dist: _train(cfg, con, step_hook, run_dir, dist))


def _train(cfg: SFTRunConfig, console: Any, step_hook: Any, run_dir: Path, dist: Dist) -> TrainResult:
    """The SFT loop; under torchrun each rank trains its share of every step's conversations, the
    token count and the gradients are summed over ranks, and rank 0 writes."""
    env = make_environment(cfg.data)
    tm = load_train_model(cfg.model, cfg.lora, cfg.seed)
    renderer = token_renderer(tm, cfg)
    train, val, val_tasks, report = build_examples(cfg, renderer, env, console)
    if console is not None:
        console.print(f"SFT: {len(train)} training and {len(val)} validation conversations"
                      + (f", {report.detours} of them with a detour" if report.detours else "")
                      + (f"; dropped {report.dropped}" if report.dropped else ""))
    s = cfg.sft
    steps_per_epoch = -(-len(train) // s.batch_size)
    total = s.max_steps or s.epochs * steps_per_epoch
    params = tm.trainable_parameters()
    optimizer = make_optimizer(params, cfg.optim)
    scheduler = make_scheduler(optimizer, cfg.optim, total)
    manager = CheckpointManager(run_dir, cfg.checkpoint.keep_top_k, cfg.checkpoint.higher_is_better)
    stream = sft_stream(train, cfg)
    start_step = resume_run(manager, tm, optimizer, scheduler, stream, cfg.checkpoint.resume, console)
    if dist.main:
        truncate_jsonl(run_dir / METRICS, lambda r: int(r.get("step", 0)) <= start_step)
    logger = (MetricsLogger(run_dir, tensorboard=cfg.logging.tensorboard, wandb=cfg.logging.wandb, trackio=cfg.logging.trackio,
                            project=cfg.logging.project, offline=cfg.logging.offline, config=cfg.model_dump(mode="json"))
              if dist.main else NullLogger())
    pad_id = int(renderer.pad_id)
    result = TrainResult(run_dir, start_step, start_step, False)
    governor = ThreadGovernor(cfg.model.threads)
    try:
        with GracefulStop(console) as stop, progress_bar(console) as bar:
            job = bar.add_task("sft", total=total, completed=start_step, info="")
            for step in range(start_step + 1, total + 1):
                threads, busy = governor.update()  # the cores others leave free now, for this step
                t0 = time.perf_counter()
                tm.model.train()
                share = sft_share(s)
                drawn = dist.share(stream.take(s.batch_size))  # every rank draws the same; trains its share
                batches = conversation_batches(drawn, s.micro_batch_size, pad_id, tm.device, share != "off", s.micro_batch_tokens)
                n_tokens = int(dist.sum(sum(int((b["loss_mask"] > 0).sum()) for b in batches)))
                weight = float(dist.sum(sum(float(b["loss_mask"].sum()) for b in batches)))  # = n_tokens unweighted
                seen = int(dist.sum(sum(int(b["attention_mask"].sum()) for b in batches)))
                optimizer.zero_grad(set_to_none=True)
                loss_total = 0.0
                for b in batches:
                    nll, _ = nll_sum(tm, b, share)
                    loss = nll / max(1.0, weight)
                    loss.backward()
                    loss_total += float(loss.detach())
                dist.sum_gradients(params)
                loss_total = dist.sum(loss_total)
                grad_norm = grad_norm_and_clip(params, cfg.optim.grad_clip)
                optimizer.step()
                scheduler.step()
                tm.model.eval()
                seconds = dist.max(time.perf_counter() - t0)
                metrics: dict[str, Any] = {"train/loss": loss_total, "train/grad_norm": grad_norm,
                                           "train/lr": float(optimizer.param_groups[0]["lr"]),
                                           "train/trained_tokens": float(n_tokens), "train/tokens_per_s": seen / seconds,
                                           "time/training_s": seconds, "train/epoch": float(stream.epoch),
                                           **thread_metrics(threads, busy)}
                due_val = cfg.validation.every and step % cfg.validation.every == 0
                if (due_val or step == total) and dist.main:
                    t1 = time.perf_counter()
                    metrics["val/loss"] = eval_loss(tm, val, s.micro_batch_size, pad_id)
                    metrics["time/val_loss_s"] = time.perf_counter() - t1
                    if cfg.validation.accuracy and val_tasks:
                        acc, _ = validate(env, val_tasks, renderer, cfg)
                        metrics.update(acc)
                logger.log(step, metrics)
                result.history.append({"step": step, **metrics})
                result.last_step = step
                if step_hook is not None:
                    step_hook(step, metrics)
                info_text = f"loss {loss_total:.3f}" + (f", val {metrics['val/loss']:.3f}" if "val/loss" in metrics else "")
                bar.update(job, completed=step, info=info_text)
                stopping = dist.any(stop.requested)  # a signal to any rank stops the job at this step
                if step % cfg.checkpoint.every == 0 or step == total or stopping:
                    if dist.main:
                        metric = metrics.get(cfg.checkpoint.metric)
                        save_checkpoint(manager, step, tm, optimizer, scheduler,
                                        {"data": stream.state_dict(), "metric": metric, "metric_name": cfg.checkpoint.metric})
                    dist.barrier()
                if stopping:
                    result.stopped = True
                    break
    finally:
        logger.close()
    if not result.stopped and result.last_step == total and dist.main:
        tm.export(run_dir / "model")
        if console is not None:
            console.print(f"done: model in {run_dir / 'model'}")
    return result
