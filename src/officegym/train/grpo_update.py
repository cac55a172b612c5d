"""The GRPO update: mu optimiser steps over a step's training rows, in micro-batches whose losses are
normalised by the whole batch's token (or sequence) count, so that they add up to its loss."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from officegym.core.policy import Policy
from officegym.train.config import GRPORunConfig
from officegym.train.distributed import Dist
from officegym.train.modeling import TrainModel
from officegym.train.runtime import grad_norm_and_clip

if TYPE_CHECKING:  # torch is imported when a run starts, not with the module
    from torch import Tensor
    from torch.nn import Module, Parameter
    from torch.optim import Optimizer

    from officegym.train.ledger import LedgerRow


@dataclass
class MicroBatch:
    """Rows collated for one forward pass (`tensors`, what `forward_logprobs` reads), their advantages,
    and the log-probs computed once before the first update: the old policy's (mu > 1) and the
    reference's (KL)."""

    tensors: dict[str, Tensor]
    advantages: Tensor
    old: Tensor | None = None
    ref: Tensor | None = None

    @property
    def input_ids(self) -> Tensor:
        return self.tensors["input_ids"]

    @property
    def attention_mask(self) -> Tensor:
        return self.tensors["attention_mask"]

    @property
    def loss_mask(self) -> Tensor:
        return self.tensors["loss_mask"]

    @property
    def sampler_logprobs(self) -> Tensor:
        return self.tensors["sampler_logprobs"]


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


def micro_batches(cfg: GRPORunConfig, tm: TrainModel, rows: Sequence[LedgerRow], advantages: Sequence[float],
                  index: list[int], pad_id: int) -> list[MicroBatch]:
    """The rows `index` names, cut into micro-batches and moved to the model's device."""
    import torch

    from officegym.train.forward import prefix_micro_batches
    from officegym.train.ledger import collate

    g = cfg.grpo
    if g.share_prefix:  # a group's rollouts (and groups of one tool set) share a prefix: together
        chunks = [[index[j] for j in c] for c in prefix_micro_batches([rows[i].input_ids.tolist() for i in index],
                                                                      g.micro_batch_size, g.micro_batch_tokens)]
    else:  # similar lengths together: less padding
        chunks = [index[start : start + g.micro_batch_size] for start in range(0, len(index), g.micro_batch_size)]
    return [MicroBatch({k: v.to(tm.device) for k, v in collate([rows[i] for i in idx], pad_id).items()},
                       torch.tensor([advantages[i] for i in idx], dtype=torch.float32, device=tm.device))
            for idx in chunks]


def update_policy(cfg: GRPORunConfig, tm: TrainModel, rows: list[LedgerRow], advantages: list[float], optimizer: Optimizer,
                  params: Sequence[Parameter], policy: Policy | None, reference: Module | None, dist: Dist | None = None,
                  sft_batches: Sequence[dict[str, Any]] = ()) -> dict[str, float]:
    """One optimiser step (mu of them) over this rank's rows; under torchrun the normaliser and the
    gradients are summed over ranks, so every rank takes the single-process step of all rows.
    `sft_batches` (train/sft_mix.py) add grpo.sft_mix.coef x their mean per-token NLL to the loss."""
    import torch

    from officegym.train.forward import forward_logprobs, shared_prefix_length
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

    batches = micro_batches(cfg, tm, rows, advantages, order, pad_id)
    aggregation = loss_cfg.aggregation
    if aggregation == "constant":
        longest = dist.max(max((int(b.loss_mask.sum(1).max()) for b in batches), default=0))
        normaliser = loss_cfg.constant_normaliser or max(1.0, dist.sum(len(rows)) * longest)
    else:
        normaliser = max(1.0, dist.sum(normaliser_count([b.loss_mask for b in batches], aggregation)))
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
            batches = micro_batches(cfg, tm, rows, advantages, keep, pad_id)
    tokens_total = sum(int(b.attention_mask.sum()) for b in batches)
    shared = [shared_prefix_length(b.input_ids, b.attention_mask, b.loss_mask, share) for b in batches]
    out["train/update_rows"] = float(sum(b.input_ids.shape[0] for b in batches))
    out["train/update_micro_batches"] = float(len(batches))
    # What the forward passes run: each micro-batch's shared prefix once, then every row's rest.
    out["train/update_tokens"] = float(sum(s + int(b.attention_mask[:, s:].sum()) for s, b in zip(shared, batches)))
    out["train/update_shared_tokens"] = float(sum(shared))
    # Old log-probs (mu > 1) and reference log-probs (KL), computed once before any update.
    with torch.no_grad():
        for b in batches:
            if g.mu > 1:
                b.old, _, _ = forward_logprobs(tm.model, tm, b.tensors, temperature, share=share)
            if loss_cfg.kl_beta > 0:
                if tm.lora:
                    with tm.reference():
                        b.ref, _, _ = forward_logprobs(tm.model, tm, b.tensors, temperature, share=share)
                else:
                    b.ref, _, _ = forward_logprobs(reference, tm, b.tensors, temperature, share=share)
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
            lp, entropy, offset = forward_logprobs(tm.model, tm, b.tensors, temperature, share=share,
                                                   want_entropy=last and loss_cfg.entropy)
            mask = b.loss_mask[:, offset:]
            old = b.old[:, -lp.shape[1]:] if b.old is not None else lp.detach()
            ref = b.ref[:, -lp.shape[1]:] if b.ref is not None else None
            sampler = b.sampler_logprobs[:, offset:] if use_sampler else None
            res = policy_loss(lp, old, b.advantages, mask, eps_low=loss_cfg.eps_low, eps_high=loss_cfg.eps_high,
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
                    sampler_lp = b.sampler_logprobs[:, offset:]
                    sums["diff"] += float((lp.detach() - sampler_lp).abs()[m].sum())
                    if entropy is not None:
                        sums["ent"] += float(entropy) * n
        if sft_tokens > 0:
            pg_grads = gradient_snapshot(params) if last else None
            for sb in sft_batches:
                nll, _ = nll_sum(tm, sb, sft_share)
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
