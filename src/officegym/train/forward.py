"""Training forward passes: the log-probs of a batch's ids, with the rows' shared prefix run once.

The rows of a GRPO group share their prompt (system prompt, tool list, user turn: ~1.1k tokens on
the workplace), often their first turn too, and SFT conversations of one tool set share the system
prompt and the tool list. A plain forward+backward pays for that prefix once per row.

`forward_logprobs(..., share="exact")` runs the longest prefix that every row of the batch has
(same ids, no padding) once, batch size 1, WITH gradient; its keys and values are expanded over
the rows (a view: the backward of expand sums the rows' gradients into the one prefix) and the rest
of every row attends to them. Log-probs of trained tokens inside the prefix are computed once and
expanded too. This is the same function of the weights as the unshared forward, so the loss and
its gradient are equal to float rounding (tests compare both, with LoRA, and with multi-turn rows
that diverge after a shared first turn). Cost: prefix once + each row's rest, instead of every
row in full.

`share="no_grad"` (SFT's `prompt_grad: false`) runs the prefix before the first trained token
without gradient: the loss is exact, the gradient is truncated (it no longer flows into how the
prefix's keys and values are computed), and a forward alone is cheaper than forward+backward.

Alignment (see losses.py): the returned log-probs [B, L - offset] are aligned with
ids[:, offset:]; column 0 has no prediction and is never in a loss mask.
"""

from __future__ import annotations

from typing import Any, Literal

Share = Literal["off", "exact", "no_grad"]
SHARES = ("off", "exact", "no_grad")
MIN_SHARED = 16  # below this the extra forward call costs more than it saves


SPLIT_LOSS = 128  # start a new micro-batch rather than shorten the shared prefix by more than this


def _lcp(a: Any, b: Any) -> int:
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def prefix_micro_batches(seqs: list[list[int]], max_rows: int, max_tokens: int | None = None) -> list[list[int]]:
    """Indexes of `seqs` in micro-batches for a shared-prefix forward: in token order (rows with a
    common prefix side by side), cut where adding a row would shorten the micro-batch's shared prefix
    by more than SPLIT_LOSS tokens (a pair belongs together when it shares at least half of the
    shorter row), at `max_rows` rows, and where the tokens run with gradient (the shared prefix once
    plus every row's rest) would exceed `max_tokens` (activation memory grows with them). Rows of one
    tool set, or of one GRPO group, thus run their long common prompt once."""
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    out: list[list[int]] = []
    shared = 0
    for i in order:
        chunk = out[-1] if out else None
        if chunk is not None and len(chunk) < max_rows:
            common = _lcp(seqs[chunk[0]], seqs[i])
            if len(chunk) == 1:
                fits = 2 * common >= min(len(seqs[chunk[0]]), len(seqs[i]))
                new_shared = common
            else:
                fits = shared - common <= SPLIT_LOSS
                new_shared = min(shared, common)
            new_cost = new_shared + sum(len(seqs[j]) - new_shared for j in chunk) + len(seqs[i]) - new_shared
            if fits and (max_tokens is None or new_cost <= max_tokens):
                shared = new_shared
                chunk.append(i)
                continue
        out.append([i])
        shared = len(seqs[i])
    return out


def _first_trained(loss_mask: Any) -> int | None:
    trained = loss_mask.bool().any(dim=0).nonzero()
    return int(trained[0]) if trained.numel() else None


def common_prefix_length(ids: Any, attention_mask: Any) -> int:
    """Tokens at the start that every row has (same ids, all real), keeping at least one token of
    each row outside it (the rest's forward must have an input)."""
    same = (ids == ids[:1]).all(dim=0) & attention_mask.bool().all(dim=0)
    differs = (~same).nonzero()
    common = int(differs[0]) if differs.numel() else ids.shape[1]
    shortest = int(attention_mask.sum(dim=1).min())
    return max(0, min(common, shortest - 1))


def shared_prefix_length(ids: Any, attention_mask: Any, loss_mask: Any, share: Share = "no_grad") -> int:
    """The prefix `forward_logprobs` runs once: the common prefix ("exact"), cut before the first
    trained token's predecessor ("no_grad": its logits must come from the part with gradient);
    0 when nothing is trained."""
    first = _first_trained(loss_mask)
    if first is None or share == "off":
        return 0
    common = common_prefix_length(ids, attention_mask)
    return common if share == "exact" else max(0, min(common, first - 1))


def forward_logprobs(model: Any, tm: Any, batch: dict[str, Any], temperature: float, *, share: Share = "off",
                     want_logits: bool = False) -> tuple[Any, Any, int]:
    """(log-probs [B, L - offset] aligned with ids[:, offset:], the logits they came from or None,
    offset). Logits are computed only from the first trained token's predecessor on, so a long
    prompt never materialises vocabulary-wide logits."""
    if share not in SHARES:
        raise ValueError(f"share must be one of {SHARES}, got {share!r}")
    ids, attn, mask = batch["input_ids"], batch["attention_mask"], batch["loss_mask"]
    # Gradient checkpointing recomputes layers without the cache the rest reads: plain path.
    checkpointing = getattr(getattr(tm, "base", None), "is_gradient_checkpointing", False)
    shared = 0 if checkpointing else shared_prefix_length(ids, attn, mask, share)
    if shared < MIN_SHARED:
        return _plain(model, tm, ids, attn, mask, temperature, want_logits)
    return _shared(model, tm, ids, attn, mask, temperature, shared, share == "exact", want_logits)


def _plain(model: Any, tm: Any, ids: Any, attn: Any, mask: Any, temperature: float, want_logits: bool) -> tuple[Any, Any, int]:
    from officegym.train.losses import token_logprobs

    length = ids.shape[1]
    first = _first_trained(mask)
    first = max(1, first if first is not None else length - 1)
    keep = length - first + 1
    with tm.autocast():
        out = model(input_ids=ids, attention_mask=attn, logits_to_keep=keep, use_cache=False)
    logits = out.logits[:, -keep:]
    lp = token_logprobs(logits, ids[:, length - keep :], temperature=temperature)
    return lp, (logits if want_logits else None), length - keep


def _shared(model: Any, tm: Any, ids: Any, attn: Any, mask: Any, temperature: float, shared: int,
            grad: bool, want_logits: bool) -> tuple[Any, Any, int]:
    import contextlib

    import torch
    from transformers import DynamicCache

    from officegym.train.losses import token_logprobs

    rows, length = ids.shape
    first = _first_trained(mask)
    offset = max(0, first - 1)  # the first position whose logits are needed (it predicts `first`)
    # The prefix's logits are needed from `offset` on, if that lies inside it.
    prefix_keep = shared - offset if offset < shared else 1
    cache = DynamicCache()
    with (contextlib.nullcontext() if grad else torch.no_grad()), tm.autocast():
        pre = model(input_ids=ids[:1, :shared], attention_mask=attn[:1, :shared], past_key_values=cache, use_cache=True,
                    logits_to_keep=prefix_keep)
    expanded = DynamicCache()
    for layer, entry in enumerate(cache.layers):
        expanded.update(entry.keys.expand(rows, -1, -1, -1), entry.values.expand(rows, -1, -1, -1), layer)
    positions = torch.arange(shared, length, device=ids.device)[None].expand(rows, -1)
    suffix_keep = length - max(shared, offset)
    with tm.autocast():
        out = model(input_ids=ids[:, shared:], attention_mask=attn, position_ids=positions, past_key_values=expanded,
                    use_cache=True, logits_to_keep=suffix_keep)
    logits = out.logits[:, -suffix_keep:]
    if offset < shared:
        # Trained tokens inside the prefix: the prefix's logits are the same for every row.
        logits = torch.cat([pre.logits[:, -prefix_keep:].expand(rows, -1, -1), logits], dim=1)
    lp = token_logprobs(logits, ids[:, offset:], temperature=temperature)
    return lp, (logits if want_logits else None), offset
