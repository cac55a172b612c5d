"""Data-parallel training under torchrun, on PyTorch's own collectives (gloo on CPU, NCCL on GPU).

    torchrun --nproc_per_node 2 -m officegym.train grpo --config configs/quickstart_grpo.yaml

Every rank holds the whole model and the same seeded data stream. A GRPO step draws the same
prompts everywhere and each rank rolls out its share (prompts rank, rank + N, ...), so every group
is whole on one rank and its advantages are the single-process ones. The loss normaliser (tokens or
sequences of the whole step) is summed over ranks before any backward, and the gradients are summed
after, so the update is the single-process update of the same rollouts, exactly (up to the order of
float additions). Rank 0 alone writes: checkpoints, metrics, rollouts, validation; the others wait
at a barrier. Without torchrun (`WORLD_SIZE` unset or 1) every call here is a no-op.

No DistributedDataParallel wrapper: the trainer's forward reaches into the model (shared-prefix
runs, logits only where the loss is), and one all-reduce of the trainable gradients after the
micro-batches is all DDP would add for a step taken once per batch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Dist:
    """This process's place in the job (rank 0 of 1 without torchrun) and the collectives."""

    rank: int = 0
    world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world > 1

    def share(self, items: Sequence[Any]) -> list[Any]:
        """This rank's items: rank, rank + world, ..."""
        return list(items[self.rank :: self.world])

    def sum(self, value: float) -> float:
        if not self.active:
            return value
        import torch
        import torch.distributed as dist

        t = torch.tensor([float(value)], dtype=torch.float64)
        dist.all_reduce(t)
        return float(t.item())

    def max(self, value: float) -> float:
        if not self.active:
            return value
        import torch
        import torch.distributed as dist

        t = torch.tensor([float(value)], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def any(self, flag: bool) -> bool:
        return self.max(1.0 if flag else 0.0) > 0

    def gather(self, obj: Any) -> list[Any]:
        """Every rank's `obj`, in rank order, on every rank."""
        if not self.active:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def sum_gradients(self, params: Sequence[Any]) -> None:
        """Sum the trainable gradients over ranks (a parameter without a gradient counts as 0), in
        one flat buffer per dtype and device."""
        if not self.active:
            return
        import torch
        import torch.distributed as dist

        for p in params:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        groups: dict[tuple[Any, Any], list[Any]] = {}
        for p in params:
            groups.setdefault((p.grad.dtype, p.grad.device), []).append(p)
        for ps in groups.values():
            flat = torch.cat([p.grad.reshape(-1) for p in ps])
            dist.all_reduce(flat)
            offset = 0
            for p in ps:
                n = p.grad.numel()
                p.grad.copy_(flat[offset : offset + n].view_as(p.grad))
                offset += n

    def barrier(self) -> None:
        if self.active:
            import torch.distributed as dist

            dist.barrier()


def setup(device: str = "cpu") -> Dist:
    """Join the torchrun job this process belongs to (gloo on CPU, NCCL on CUDA); Dist(0, 1) alone."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world <= 1:
        return Dist()
    import torch
    import torch.distributed as dist

    rank = int(os.environ.get("RANK", "0"))
    if not dist.is_initialized():
        cuda = str(device).startswith("cuda") and torch.cuda.is_available()
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    return Dist(rank=rank, world=world)


def teardown(d: Dist) -> None:
    if d.active:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()


def run_ranks(cfg: Any, console: Any, kind: str, body: Any, check: Any = None) -> Any:
    """Start a training run on this rank: join the job, seed every rank alike (the same adapter
    everywhere), let rank 0 prepare the run folder and speak, then `body(console, dist)`; the job
    is left on the way out. `check(dist)` refuses settings the job cannot honour before anything is
    written."""
    import random

    import torch

    from officegym.train.run_folder import prepare_run_dir

    dist = setup(cfg.model.device)  # under torchrun: this rank's place; alone: rank 0 of 1
    try:
        if check is not None:
            check(dist)
        if not dist.main:
            console = None  # rank 0 speaks and writes for the job
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        if dist.main:
            prepare_run_dir(cfg, console, kind)
        dist.barrier()
        return body(console, dist)
    finally:
        teardown(dist)
