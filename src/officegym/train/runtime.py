"""What both trainers' loops share: optimiser and schedule, gradient norms, graceful stop, checkpoint
save/restore, the per-episode token budget, and progress bars (the run folder: run_folder.py)."""

from __future__ import annotations

import math
import pickle
import signal
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.train.checkpoint import CheckpointInfo, CheckpointManager
from officegym.train.config import OptimConfig


class GracefulStop:
    """SIGINT / SIGTERM handling for a training loop: the first signal asks the loop to finish the
    current step, save and exit (`requested` becomes True); a second one raises KeyboardInterrupt,
    abandoning the step (the last checkpoint is where the next run continues). Handlers are only
    installed in the main thread and restored on exit."""

    def __init__(self, console: Any = None):
        self.requested = False
        self.console = console
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        if self.console is not None:
            name = signal.Signals(signum).name
            self.console.print(f"[yellow]{name}: finishing this step, then saving and stopping "
                               "(send it again to abandon the step)[/]")

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)
        self._old.clear()


def make_optimizer(params: Sequence[Any], cfg: OptimConfig) -> Any:
    import torch

    if not params:
        raise ValueError("the model has no trainable parameters")
    return torch.optim.AdamW(list(params), lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps, weight_decay=cfg.weight_decay)


def lr_factor(step: int, total: int, cfg: OptimConfig) -> float:
    """The learning-rate multiplier after `step` optimiser steps: linear warm-up, then constant or a
    cosine / linear decay from lr to min_lr at `total` steps."""
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant" or total <= cfg.warmup_steps:
        return 1.0
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps))
    floor = cfg.min_lr / cfg.lr
    if cfg.schedule == "linear":
        return 1.0 - (1.0 - floor) * progress
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def make_scheduler(optimizer: Any, cfg: OptimConfig, total_steps: int) -> Any:
    import torch

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, total_steps, cfg))


def grad_norm_and_clip(params: Sequence[Any], max_norm: float | None) -> float:
    import torch

    grads = [p for p in params if p.grad is not None]
    if not grads:
        return 0.0
    norm = torch.nn.utils.clip_grad_norm_(grads, max_norm if max_norm is not None else float("inf"))
    return float(norm)


# Above this many trainable weights a copy of their gradients costs more memory than the figure is worth.
SNAPSHOT_MAX_NUMEL = 50_000_000


def gradient_snapshot(params: Sequence[Any]) -> list[Any] | None:
    """A copy of the gradients accumulated so far (None where a weight has none), or None when the
    trainable weights are too many to copy (full fine-tuning of a large model)."""
    if sum(p.numel() for p in params) > SNAPSHOT_MAX_NUMEL:
        return None
    return [None if p.grad is None else p.grad.detach().clone() for p in params]


def gradient_split(params: Sequence[Any], before: Sequence[Any]) -> dict[str, float]:
    """The norms of the gradient accumulated before the snapshot (the policy gradient), of what
    came after it (the SFT term) and their cosine, on this process's gradients (before any
    all-reduce): a policy gradient 10x smaller than the SFT term's moves the weights little."""
    import torch

    first = second = dot = 0.0
    for p, a in zip(params, before):
        g = p.grad
        if g is None:
            continue
        a = torch.zeros_like(g) if a is None else a
        b = g.detach() - a
        first += float(a.double().pow(2).sum())
        second += float(b.double().pow(2).sum())
        dot += float((a.double() * b.double()).sum())
    denom = (first * second) ** 0.5
    return {"train/pg_grad_norm": first ** 0.5, "train/sft_grad_norm": second ** 0.5,
            "train/pg_sft_grad_cos": dot / denom if denom > 0 else 0.0}


def save_checkpoint(manager: CheckpointManager, step: int, tm: Any, optimizer: Any, scheduler: Any,
                    state: dict[str, Any], rng: dict[str, Any] | None = None) -> Path:
    import torch

    def write(tmp: Path) -> None:
        tm.save_trainable(tmp)
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optimizer.pt")

    return manager.save(step, write, state, rng)


def restore_checkpoint(manager: CheckpointManager, tm: Any, optimizer: Any, scheduler: Any) -> CheckpointInfo | None:
    """Load the latest checkpoint into the model, optimiser, scheduler and RNGs; None when there is
    none."""
    import torch

    info = manager.latest()
    if info is None:
        return None
    tm.load_trainable(info.path)
    path = info.path / "optimizer.pt"
    try:
        opt = torch.load(path, map_location=tm.device, weights_only=True)
        optimizer.load_state_dict(opt["optimizer"])
        scheduler.load_state_dict(opt["scheduler"])
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, KeyError, TypeError, ValueError) as exc:
        # a foreign or damaged file (a safe load refuses what is not tensors and plain values): one line, no traceback
        from officegym.train.modeling import ModelSetupError

        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelSetupError(f"cannot resume from {info.path}: {path.name} is not an optimizer state this run "
                              f"wrote ({type(exc).__name__}: {why}); delete that checkpoint folder, or start "
                              "the run in a new out_dir") from None
    manager.load_rng(info)
    return info


def resume_run(manager: CheckpointManager, tm: Any, optimizer: Any, scheduler: Any, stream: Any, resume: bool,
               console: Any = None) -> int:
    """The step a run goes on from: the latest checkpoint's, with the model, optimiser, scheduler,
    RNGs and the data stream's position restored (`checkpoint.resume`), else 0."""
    info = restore_checkpoint(manager, tm, optimizer, scheduler) if resume else None
    if info is None:
        return 0
    stream.load_state_dict(info.state["data"])
    if console is not None:
        console.print(f"resuming from {info.path} (step {info.step})")
    return info.step


class EpisodeBudget(Policy):
    """A Policy wrapper that caps the tokens sampled per episode (on top of the per-turn cap in
    SamplingParams): each request may sample at most `budget` minus what its conversation sampled
    before. A conversation is followed through `PolicyRequest.previous`; an exhausted budget gives
    an empty completion with finish_reason "length", which ends the episode."""

    def __init__(self, inner: Any, budget: int | None, max_tracked: int = 65536):
        self.inner = inner
        self.budget = budget
        self.name = inner.name
        self.max_tracked = max_tracked
        self._used: OrderedDict[int, tuple[Completion, int]] = OrderedDict()

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        used = []
        for r in requests:
            entry = self._used.pop(id(r.previous), None) if r.previous is not None else None
            used.append(entry[1] if entry is not None and entry[0] is r.previous else 0)
        if self.budget is not None:  # the cap travels in the request; backends without token control ignore it
            requests = [replace(r, max_new_tokens=max(0, self.budget - u)) for r, u in zip(requests, used)]
        out = await self.inner.complete(requests, params)
        for c, u in zip(out, used):
            self._used[id(c)] = (c, u + int(c.completion_tokens or 0))
        while len(self._used) > self.max_tracked:
            self._used.popitem(last=False)
        return out

    @property
    def continuous(self) -> bool:  # type: ignore[override]
        """Whether the wrapped backend takes conversations one by one (see agent.loop.run_rollouts)."""
        return self.inner.continuous

    def reset(self) -> None:
        self._used.clear()


def progress_bar(console: Any) -> Any:
    """A bar on a terminal; in a log, one line per step (officegym.progress)."""
    from officegym.progress import progress

    return progress(console, every=0.0)
