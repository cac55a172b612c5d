"""Group-relative advantages for GRPO: a baseline per group of samples of one prompt, optional scaling.

Notation: N samples with rewards r_i, each in a group g(i) (the samples of one prompt); group g has
n_g members. Groups may differ in size (dynamic sampling drops samples), and group ids need not be
contiguous or sorted.

Standard deviation. Every std here is the unbiased one (Bessel's correction, divisor n - 1), the
choice NeMo RL makes (training.md 2.2: "the std is computed ... with a Bessel correction"); it is
also what torch's `Tensor.std()` computes, which is TRL's batch std. A group of one sample has no
unbiased std; it is treated as 0. NeMo RL computes its std leave-one-out per sample (the std of
the other n - 1 rewards); here one std per group (or per batch) divides every member alike, so a
group is either scaled as a whole or not at all, and "a zero-variance group" means one thing.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

Baseline = Literal["mean", "leave_one_out"]
Scale = Literal["group", "batch", "none"]
BASELINES = ("mean", "leave_one_out")
SCALES = ("group", "batch", "none")


def _check(rewards: Tensor, group_ids: Tensor) -> tuple[Tensor, Tensor, int]:
    """Validated float64 rewards, the dense group index of every sample, the number of groups."""
    if not isinstance(rewards, Tensor) or not isinstance(group_ids, Tensor):
        raise ValueError("rewards and group_ids must be torch tensors")
    if rewards.dim() != 1 or group_ids.dim() != 1 or rewards.shape != group_ids.shape:
        raise ValueError(
            f"rewards and group_ids must be 1-D tensors of the same length, got {tuple(rewards.shape)} "
            f"and {tuple(group_ids.shape)}"
        )
    if group_ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise ValueError(f"group_ids must be an integer tensor (long), got {group_ids.dtype}")
    r = rewards.detach().to(torch.float64)
    if not torch.isfinite(r).all():
        bad = int((~torch.isfinite(r)).sum())
        raise ValueError(f"{bad} reward(s) are NaN or infinite; drop unscorable samples before computing advantages")
    _, index = torch.unique(group_ids, sorted=True, return_inverse=True)
    n_groups = int(index.max()) + 1 if index.numel() else 0
    return r, index, n_groups


def _group_stats(r: Tensor, index: Tensor, n_groups: int) -> tuple[Tensor, Tensor, Tensor]:
    """Per group: member count, sum of rewards, unbiased std (0 for a group of one)."""
    count = r.new_zeros(n_groups).index_add_(0, index, torch.ones_like(r))
    total = r.new_zeros(n_groups).index_add_(0, index, r)
    mean = total / count
    # Two-pass variance (deviations from the mean), not E[r^2] - E[r]^2, which cancels badly.
    sq_dev = r.new_zeros(n_groups).index_add_(0, index, (r - mean[index]) ** 2)
    var = torch.where(count > 1, sq_dev / (count - 1).clamp(min=1), torch.zeros_like(sq_dev))
    return count, total, var.sqrt()


def group_advantages(
    rewards: Tensor,
    group_ids: Tensor,
    *,
    baseline: Baseline = "leave_one_out",
    scale: Scale = "group",
    eps: float = 1e-6,
    clip: float | None = None,
) -> Tensor:
    """Advantage of every sample relative to the other samples of its prompt.

    Baseline b_i:
      "mean":           b_i = S_g / n_g, the group mean (TRL's GRPO);
      "leave_one_out":  b_i = (S_g - r_i) / (n_g - 1), the mean of the others (RLOO, NeMo RL's
                        default); a group of one has no others and gets b_i = r_i, advantage 0.
    with S_g the sum of the group's rewards. Then A_i = r_i - b_i.

    Scale (sigma is the unbiased std, see the module docstring):
      "group":  A_i / (sigma_g + eps) where sigma_g > eps, else A_i unchanged. A zero-variance
                group (all rewards equal within eps, or a single sample) is left unscaled: its
                advantages are 0 anyway under both baselines, and dividing by ~0 would only blow up
                rounding noise.
      "batch":  A_i / (sigma + eps) with sigma the std of all N rewards, where sigma > eps.
      "none":   A_i unchanged (Dr. GRPO).

    Clip: with `clip` = c > 0, A_i is clamped to [-c, c] last.

    Returns float32 advantages of shape [N] (computed in float64), detached from any graph.
    """
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    if clip is not None and not clip > 0:
        raise ValueError(f"clip must be > 0 (or None for no clipping), got {clip}")
    r, index, n_groups = _check(rewards, group_ids)
    if r.numel() == 0:
        return torch.zeros(0, dtype=torch.float32, device=rewards.device)
    count, total, std = _group_stats(r, index, n_groups)
    n, s = count[index], total[index]
    if baseline == "mean":
        adv = r - s / n
    else:
        # n == 1: the sample is its own baseline (advantage 0) rather than a division by zero.
        adv = torch.where(n > 1, r - (s - r) / (n - 1).clamp(min=1), torch.zeros_like(r))
    if scale == "group":
        sigma = std[index]
        adv = torch.where(sigma > eps, adv / (sigma + eps), adv)
    elif scale == "batch":
        sigma = r.std() if r.numel() > 1 else r.new_zeros(())
        if sigma > eps:
            adv = adv / (sigma + eps)
    if clip is not None:
        adv = adv.clamp(-clip, clip)
    return adv.to(torch.float32)


def zero_variance_groups(rewards: Tensor, group_ids: Tensor, *, eps: float = 1e-6) -> Tensor:
    """One bool per group, in ascending order of group id: True where the group's unbiased reward
    std is <= eps (all rewards equal, or a single sample). Such a group gives no learning signal;
    `zero_variance_groups(...).float().mean()` is the logged "share of zero-variance groups"
    (TRL's frac_reward_zero_std). The same rule decides which groups `group_advantages` leaves
    unscaled."""
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    r, index, n_groups = _check(rewards, group_ids)
    if n_groups == 0:
        return torch.zeros(0, dtype=torch.bool, device=rewards.device)
    _, _, std = _group_stats(r, index, n_groups)
    return std <= eps
