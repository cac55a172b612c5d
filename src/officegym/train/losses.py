"""The GRPO policy loss and the per-token quantities it needs, as small pure functions.

Token alignment (used by every function here): tensors of shape [B, T] are aligned with the input
ids, the layout of the token ledger: position t holds something about token ids[:, t] (its loss
mask, the sampler's log-prob of it, ...). A causal LM's logits are shifted by one: logits[:, t]
predict ids[:, t + 1]. `token_logprobs` and `entropy_from_logits` undo that shift, so that their
position t is about the prediction of ids[:, t] (made from logits[:, t - 1]); position 0 has no
prediction and must never be in a loss mask.

All arithmetic is float32 whatever the input dtype: log-probs and ratios in bfloat16 are too coarse
for a PPO ratio (its unit in the last place at 1.0 is 0.008, the size of typical updates).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

Aggregation = Literal["token_mean", "seq_mean", "constant"]
AGGREGATIONS = ("token_mean", "seq_mean", "constant")


@dataclass
class LossOutput:
    """`loss`: the scalar to call backward() on. The rest are detached numbers over the masked tokens
    of this (micro-)batch: `clip_fraction` the share where a clip (PPO or dual) cut the gradient,
    `dual_clip_fraction` the share cut by the dual clip alone, `ratio_mean`/`ratio_max` of
    pi/pi_old, `kl` the mean k3 estimate (0 without reference log-probs), `is_weight_mean` the
    mean importance weight (1 without sampler log-probs), `tokens` the number of masked tokens.
    With no masked token, the ratio and weight stats read 1 and the others 0."""

    loss: Tensor
    clip_fraction: float
    ratio_mean: float
    ratio_max: float
    kl: float
    is_weight_mean: float
    tokens: int
    dual_clip_fraction: float = 0.0


def _as_mask(mask: Tensor, shape: torch.Size) -> Tensor:
    if not isinstance(mask, Tensor) or mask.shape != shape:
        got = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(f"mask must have the shape of logprobs {tuple(shape)}, got {got}")
    if mask.dtype != torch.bool:
        if not ((mask == 0) | (mask == 1)).all():
            raise ValueError("mask must hold only 0 and 1 (or be a bool tensor)")
        mask = mask != 0
    return mask


def _check_like(name: str, t: Tensor | None, shape: torch.Size) -> None:
    if t is not None and (not isinstance(t, Tensor) or t.shape != shape):
        got = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
        raise ValueError(f"{name} must have the shape of logprobs {tuple(shape)}, got {got}")


def _positive(name: str, value: float | Tensor | None) -> float | None:
    if value is None:
        return None
    v = float(value)
    if not (v > 0 and v < float("inf")):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return v


def aggregate(values: Tensor, mask: Tensor, aggregation: Aggregation = "token_mean", normaliser: float | None = None) -> Tensor:
    """Reduce per-token values [B, T] over the masked tokens (mask: bool [B, T]) to a scalar.

    "token_mean": sum_{b,t} m_bt x_bt / D,    D = normaliser, default sum m (at least 1);
    "seq_mean":   sum_b [ (sum_t m_bt x_bt) / n_b ] / D,  n_b = sum_t m_bt; rows with n_b = 0 add 0;
                  D = normaliser, default the number of rows with n_b > 0 (at least 1);
    "constant":   sum_{b,t} m_bt x_bt / D,    D = normaliser, required (Dr. GRPO: e.g. B x max length).

    Gradient accumulation: pass as D the count over the WHOLE accumulated batch
    (`global_normaliser`); the micro-batch losses then add up to exactly the full batch's loss.
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    d = _positive("normaliser", normaliser)
    x = torch.where(mask, values, torch.zeros_like(values))  # where, not *: masked NaN/inf stay out
    if aggregation == "seq_mean":
        n = mask.sum(dim=1)
        per_seq = x.sum(dim=1) / n.clamp(min=1).to(x.dtype)
        if d is None:
            d = max(int((n > 0).sum()), 1)
        return per_seq.sum() / d
    if aggregation == "constant" and d is None:
        raise ValueError("aggregation='constant' needs a normaliser (e.g. batch size x max completion length)")
    if d is None:
        d = max(int(mask.sum()), 1)
    return x.sum() / d


def normaliser_count(masks: Iterable[Tensor], aggregation: Aggregation = "token_mean") -> int:
    """What the normaliser counts in these loss masks: masked tokens ("token_mean") or sequences
    with at least one masked token ("seq_mean"); data-parallel ranks sum their counts."""
    if aggregation == "constant":
        raise ValueError("aggregation='constant' uses a fixed normaliser of your choice, not a count")
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    total = 0
    for m in masks:
        m = m != 0
        total += int(m.sum()) if aggregation == "token_mean" else int((m.sum(dim=-1) > 0).sum())
    return total


def global_normaliser(masks: Iterable[Tensor], aggregation: Aggregation = "token_mean") -> float:
    """The normaliser to pass to every micro-batch of one optimiser step, from all their loss masks:
    the total number of masked tokens ("token_mean") or of sequences with at least one masked token
    ("seq_mean"), at least 1. "constant" is chosen by the user, not counted."""
    return float(max(normaliser_count(masks, aggregation), 1))


def policy_loss(
    logprobs: Tensor,
    old_logprobs: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    dual_clip: float | None = None,
    aggregation: Aggregation = "token_mean",
    normaliser: float | None = None,
    ref_logprobs: Tensor | None = None,
    kl_beta: float = 0.0,
    sampler_logprobs: Tensor | None = None,
    is_cap: float | None = None,
) -> LossOutput:
    """Clipped-surrogate policy loss with optional dual clip, k3 KL penalty and IS correction.

    Shapes: logprobs (with grad), old_logprobs, mask, ref_logprobs, sampler_logprobs: [B, T];
    advantages: [B] (the same for every token of a sequence) or [B, T]. Per masked token:

      r      = exp(lp - lp_old)
      pg     = -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A)
      pg     = min(pg, c |A|)  where A < 0, with c = dual_clip > 1 (dual clip: the loss of a bad
                                sample is capped however large r grows)
      k3     = exp(lp_ref - lp) - (lp_ref - lp) - 1      (only with ref_logprobs)
      w      = min(exp(lp_old - lp_sampler), is_cap)    (only with sampler_logprobs; detached;
                                no cap when is_cap is None: plain IS, TIS when capped)
      l      = w (pg + kl_beta k3)

    and loss = aggregate(l, mask, aggregation, normaliser) (see `aggregate`). The IS weight
    multiplies the KL term too, because both are expectations over tokens that the sampler, not
    pi_old, drew (as in NeMo RL). old_logprobs, ref_logprobs, sampler_logprobs and advantages are
    treated as constants (detached). kl_beta > 0 needs ref_logprobs; with kl_beta == 0 they may be
    None (no reference model), and when given they only feed the `kl` statistic. is_cap without
    sampler_logprobs does nothing (the sampler is the trained model).
    """
    if not isinstance(logprobs, Tensor) or logprobs.dim() != 2:
        raise ValueError(f"logprobs must be a [B, T] tensor, got {getattr(logprobs, 'shape', type(logprobs).__name__)}")
    shape = logprobs.shape
    if old_logprobs is None:
        raise ValueError("old_logprobs is required (pass logprobs.detach() when training on-policy)")
    _check_like("old_logprobs", old_logprobs, shape)
    _check_like("ref_logprobs", ref_logprobs, shape)
    _check_like("sampler_logprobs", sampler_logprobs, shape)
    if not isinstance(advantages, Tensor) or advantages.shape not in (shape, shape[:1]):
        got = tuple(advantages.shape) if isinstance(advantages, Tensor) else type(advantages).__name__
        raise ValueError(f"advantages must have shape [B] = {tuple(shape[:1])} or [B, T] = {tuple(shape)}, got {got}")
    m = _as_mask(mask, shape)
    if not (eps_low >= 0 and eps_high >= 0):
        raise ValueError(f"eps_low and eps_high must be >= 0, got {eps_low} and {eps_high}")
    if eps_low > 1:
        raise ValueError(f"eps_low must be <= 1 (the ratio's lower clip bound 1 - eps_low is >= 0), got {eps_low}")
    if dual_clip is not None and not dual_clip > 1:
        raise ValueError(f"dual_clip must be > 1 (or None), got {dual_clip}")
    if not kl_beta >= 0:
        raise ValueError(f"kl_beta must be >= 0, got {kl_beta}")
    if kl_beta > 0 and ref_logprobs is None:
        raise ValueError("kl_beta > 0 needs ref_logprobs (the reference model's log-probs of the same tokens)")
    _positive("is_cap", is_cap)
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    _positive("normaliser", normaliser)
    if aggregation == "constant" and normaliser is None:
        raise ValueError("aggregation='constant' needs a normaliser (e.g. batch size x max completion length)")

    lp = logprobs.float()
    zero = torch.zeros_like(lp)
    adv = advantages.detach().float()
    if adv.dim() == 1:
        adv = adv[:, None].expand(shape)
    adv = torch.where(m, adv, zero)
    # Masked positions may hold padding garbage (-inf, NaN): keep it out of exp() and the gradient.
    log_ratio = torch.where(m, lp - old_logprobs.detach().float(), zero)
    ratio = torch.exp(log_ratio)
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - eps_low, 1.0 + eps_high) * adv
    pg = -torch.minimum(unclipped, clipped)
    clip_active = clipped < unclipped
    dual_active = torch.zeros_like(m)
    if dual_clip is not None:
        cap = -dual_clip * adv
        dual_active = (adv < 0) & (pg > cap)
        pg = torch.where(dual_active, cap, pg)
    per_token = pg
    k3 = None
    if ref_logprobs is not None:
        ref_diff = torch.where(m, ref_logprobs.detach().float() - lp, zero)
        k3 = torch.exp(ref_diff) - ref_diff - 1.0
        if kl_beta > 0:
            per_token = per_token + kl_beta * k3
    weight = None
    if sampler_logprobs is not None:
        weight = torch.exp(torch.where(m, old_logprobs.detach().float() - sampler_logprobs.detach().float(), zero))
        if is_cap is not None:
            weight = weight.clamp(max=is_cap)
        per_token = per_token * weight
    loss = aggregate(per_token, m, aggregation, normaliser)

    with torch.no_grad():
        tokens = int(m.sum())
        if tokens == 0:
            return LossOutput(
                loss=loss, clip_fraction=0.0, ratio_mean=1.0, ratio_max=1.0, kl=0.0, is_weight_mean=1.0, tokens=0
            )
        r = ratio[m]
        return LossOutput(
            loss=loss,
            clip_fraction=float((clip_active | dual_active)[m].float().mean()),
            ratio_mean=float(r.mean()),
            ratio_max=float(r.max()),
            kl=float(k3[m].mean()) if k3 is not None else 0.0,
            is_weight_mean=float(weight[m].mean()) if weight is not None else 1.0,
            tokens=tokens,
            dual_clip_fraction=float(dual_active[m].float().mean()),
        )


def _check_logits(logits: Tensor, other: Tensor, name: str, temperature: float) -> None:
    if not isinstance(logits, Tensor) or logits.dim() != 3:
        raise ValueError(f"logits must be a [B, L, V] tensor, got {getattr(logits, 'shape', type(logits).__name__)}")
    if not isinstance(other, Tensor) or other.shape != logits.shape[:2]:
        got = tuple(other.shape) if isinstance(other, Tensor) else type(other).__name__
        raise ValueError(f"{name} must have shape [B, L] = {tuple(logits.shape[:2])}, got {got}")
    _positive("temperature", temperature)


def token_logprobs(logits: Tensor, ids: Tensor, *, temperature: float = 1.0) -> Tensor:
    """Log-probability of every token of `ids` under the model, aligned with `ids`.

    logits: [B, L, V], the model's output for input ids [B, L] (logits[:, t] predict ids[:, t + 1]).
    Returns float32 [B, L] with

        out[:, 0] = 0,   out[:, t] = log softmax(logits[:, t - 1] / temperature)[ids[:, t]]  (t >= 1),

    i.e. the shift is done here, so `out` lines up with the ledger's loss mask and sampler log-probs
    (position 0 has no prediction). Computed as logit - logsumexp(logits) in float32, one row at a
    time so that only one row's float32 copy of the logits is alive outside autograd's saved
    tensors. Use the sampler's temperature so that ratios compare like with like.
    """
    _check_logits(logits, ids, "ids", temperature)
    if ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"ids must be an integer tensor, got {ids.dtype}")
    vocab = logits.shape[-1]
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise ValueError(f"ids must lie in [0, {vocab}) (the logits' vocabulary), got [{int(ids.min())}, {int(ids.max())}]")
    rows = []
    for b in range(logits.shape[0]):
        z = logits[b, :-1].float()
        if temperature != 1.0:
            z = z / temperature
        target = ids[b, 1:].long()[:, None]
        rows.append(z.gather(1, target)[:, 0] - torch.logsumexp(z, dim=-1))
    out = torch.stack(rows) if rows else logits.new_zeros((0, max(logits.shape[1] - 1, 0)), dtype=torch.float32)
    return torch.cat([out.new_zeros((logits.shape[0], 1)), out], dim=1) if logits.shape[1] else out


def entropy_from_logits(logits: Tensor, mask: Tensor, *, temperature: float = 1.0) -> Tensor:
    """Mean entropy of the model's next-token distributions over the masked positions.

    Aligned like `token_logprobs`: mask [B, L] marks tokens of the input ids, and position t uses
    the distribution that predicted ids[:, t], softmax(logits[:, t - 1] / temperature):

        H_t = -sum_v p_v log p_v,   result = sum_t m_t H_t / max(sum_t m_t, 1)   (a scalar, float32).

    Only masked positions are computed (the logits of a tool-heavy prompt are mostly unmasked).
    Position 0 has no prediction: a mask with position 0 set is an error.
    """
    _check_logits(logits, mask, "mask", temperature)
    m = _as_mask(mask, mask.shape)
    if m.shape[1] and bool(m[:, 0].any()):
        raise ValueError("mask[:, 0] is set, but the first token has no prediction (the mask is aligned with the ids)")
    picked = logits[:, :-1][m[:, 1:]]  # [K, V]: the distributions that produced the masked tokens
    if picked.shape[0] == 0:
        return logits.new_zeros((), dtype=torch.float32)
    total = logits.new_zeros((), dtype=torch.float32)
    for chunk in picked.split(1024):
        z = chunk.float()
        if temperature != 1.0:
            z = z / temperature
        # Clamped so that a -inf logit (a banned token) gives 0 * finite, not 0 * -inf = NaN.
        logp = torch.log_softmax(z, dim=-1).clamp(min=torch.finfo(torch.float32).min)
        total = total - (logp.exp() * logp).sum()
    return total / picked.shape[0]
