"""What both trainers share: the run folder, optimiser and schedule, graceful stop, checkpoint
save/restore, the per-episode token budget, and progress bars."""

from __future__ import annotations

import asyncio
import math
import signal
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from officegym.core.policy import Completion, PolicyRequest, SamplingParams
from officegym.train.checkpoint import CheckpointInfo, CheckpointManager
from officegym.train.config import OptimConfig, RunConfig, config_table, save_config


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


def prepare_run_dir(cfg: RunConfig, console: Any, kind: str) -> Path:
    """Create the run folder, print the resolved config and save it (config.yaml)."""
    run_dir = Path(cfg.out_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(cfg, run_dir / "config.yaml")
    if console is not None:
        console.print(config_table(cfg, title=f"officegym train {kind}: {run_dir}"))
    return run_dir


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


def save_checkpoint(manager: CheckpointManager, step: int, tm: Any, optimizer: Any, scheduler: Any,
                    state: dict[str, Any]) -> Path:
    import torch

    def write(tmp: Path) -> None:
        tm.save_trainable(tmp)
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optimizer.pt")

    return manager.save(step, write, state)


def restore_checkpoint(manager: CheckpointManager, tm: Any, optimizer: Any, scheduler: Any) -> CheckpointInfo | None:
    """Load the latest checkpoint into the model, optimiser, scheduler and RNGs; None when there is
    none."""
    import torch

    info = manager.latest()
    if info is None:
        return None
    tm.load_trainable(info.path)
    opt = torch.load(info.path / "optimizer.pt", map_location=tm.device, weights_only=False)
    optimizer.load_state_dict(opt["optimizer"])
    scheduler.load_state_dict(opt["scheduler"])
    manager.load_rng(info)
    return info


class EpisodeBudget:
    """A Policy wrapper that caps the tokens sampled per episode (on top of the per-turn cap in
    SamplingParams): each request may sample at most `budget` minus what its conversation sampled
    before. A conversation is followed through `PolicyRequest.previous`; an exhausted budget gives
    an empty completion with finish_reason "length", which ends the episode."""

    def __init__(self, inner: Any, budget: int | None, max_tracked: int = 65536):
        self.inner = inner
        self.budget = budget
        self.name = getattr(inner, "name", type(inner).__name__)
        self.max_tracked = max_tracked
        self._used: OrderedDict[int, tuple[Completion, int]] = OrderedDict()

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        used = []
        for r in requests:
            entry = self._used.pop(id(r.previous), None) if r.previous is not None else None
            used.append(entry[1] if entry is not None and entry[0] is r.previous else 0)
        caps = None if self.budget is None else [max(0, self.budget - u) for u in used]
        sync = getattr(self.inner, "complete_sync", None)
        if caps is not None and self.continuous:
            out = await self.inner.complete(requests, params, max_new_tokens=caps)
        elif caps is not None and sync is not None:
            out = await asyncio.to_thread(sync, requests, params, caps)
        else:
            out = await self.inner.complete(requests, params)
        for c, u in zip(out, used):
            self._used[id(c)] = (c, u + int(c.completion_tokens or 0))
        while len(self._used) > self.max_tracked:
            self._used.popitem(last=False)
        return out

    @property
    def continuous(self) -> bool:
        """Whether the wrapped backend takes conversations one by one (see agent.loop.run_rollouts)."""
        return bool(getattr(self.inner, "continuous", False))

    def reset(self) -> None:
        self._used.clear()


def progress_bar(console: Any) -> Any:
    """A bar on a terminal; in a log, one line per step (officegym.progress)."""
    from officegym.progress import progress

    return progress(console, every=0.0)
