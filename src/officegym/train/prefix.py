"""Training forward with the prompt run once and without gradient (`sft.prompt_grad: false`).

In SFT the loss covers only assistant tokens, yet a plain forward+backward pays for the whole
conversation, and a tool-laden prompt is most of it. Here the tokens before the first trained
position that every row of the micro-batch shares (the system prompt, the tool list, often the
user turn) go through the model once, batch size 1, under `no_grad`; their keys and values are
expanded over the batch and the rest of every row runs with gradient on top of them.

The forward pass is exact: the same weights, positions and attention as the full pass, so logits
and the loss are unchanged (to float rounding). The gradient is truncated: it no longer flows into
how the shared prompt's keys and values are computed, only into how the rest of the sequence reads
them. That is a bias of the update, not of the objective, and it costs ~3x less per shared token
(a forward alone instead of forward+backward, once per micro-batch instead of once per row). It is
an option for CPU budgets, off by default; GRPO never uses it.
"""

from __future__ import annotations

from typing import Any

MIN_SHARED = 16  # below this the extra forward call costs more than it saves


def shared_prefix_length(ids: Any, attention_mask: Any, loss_mask: Any) -> int:
    """Tokens at the start that every row has (real tokens, same ids) before any trained token,
    keeping at least one untrained token in the rest (its logits predict the first trained one)."""
    trained = loss_mask.bool().any(dim=0).nonzero()
    if not trained.numel():
        return 0
    first = int(trained[0])
    same = (ids == ids[:1]).all(dim=0) & attention_mask.bool().all(dim=0)
    differs = (~same).nonzero()
    common = int(differs[0]) if differs.numel() else ids.shape[1]
    return max(0, min(common, first - 1))


def forward_logprobs_shared_prefix(model: Any, tm: Any, batch: dict[str, Any], temperature: float) -> tuple[Any, None, int]:
    """Like `grpo._forward_logprobs` (log-probs aligned with the ids from `offset` on), with the
    shared prefix run without gradient; falls back to the plain forward when little is shared."""
    import torch
    from transformers import DynamicCache

    from officegym.train.grpo import _forward_logprobs
    from officegym.train.losses import token_logprobs

    ids, attn, mask = batch["input_ids"], batch["attention_mask"], batch["loss_mask"]
    shared = shared_prefix_length(ids, attn, mask)
    if shared < MIN_SHARED:
        return _forward_logprobs(model, tm, batch, temperature)
    rows, length = ids.shape
    first = int(mask.bool().any(dim=0).nonzero()[0])
    keep = length - first + 1
    cache = DynamicCache()
    with torch.no_grad(), tm.autocast():
        model(input_ids=ids[:1, :shared], attention_mask=attn[:1, :shared], past_key_values=cache, use_cache=True,
              logits_to_keep=1)
    expanded = DynamicCache()
    for layer, entry in enumerate(cache.layers):
        expanded.update(entry.keys.expand(rows, -1, -1, -1).contiguous(),
                        entry.values.expand(rows, -1, -1, -1).contiguous(), layer)
    positions = torch.arange(shared, length, device=ids.device)[None].expand(rows, -1)
    with tm.autocast():
        out = model(input_ids=ids[:, shared:], attention_mask=attn, position_ids=positions, past_key_values=expanded,
                    use_cache=True, logits_to_keep=keep)
    logits = out.logits[:, -keep:]
    lp = token_logprobs(logits, ids[:, length - keep :], temperature=temperature)
    return lp, None, length - keep
