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


def lcp(a: Any, b: Any) -> int:
    """The length of the longest common prefix of two token sequences (lists or 1-D tensors)."""
    n = min(len(a), len(b))
    if hasattr(a, "ne") and hasattr(b, "ne"):  # tensors: one comparison, not n
        differs = a[:n].ne(b[:n]).nonzero()
        return int(differs[0]) if differs.numel() else n
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
    tool set, or of one GRPO group, thus run their long common prompt once. The prefix counts also
    when it runs without gradient: leaving it out made micro-batches of SFT conversations larger
    and fewer, for no faster step and 1.7 GB more memory (docs/DESIGN-NOTES.md)."""
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    out: list[list[int]] = []
    shared = 0
    for i in order:
        chunk = out[-1] if out else None
        if chunk is not None and len(chunk) < max_rows:
            common = lcp(seqs[chunk[0]], seqs[i])
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
                     want_entropy: bool = False) -> tuple[Any, Any, int]:
    """(log-probs [B, L - offset] aligned with ids[:, offset:], zero where the loss mask is 0; the
    mean entropy of the masked tokens' distributions (a detached scalar) or None; offset).

    Vocabulary-wide logits are computed only for the masked tokens: the backbone's last hidden
    states at their predecessors go through the output layer as one [K, V] matrix (K trained
    tokens), so tool outputs and prompts never pay for the 49k-wide head, and the log-softmax runs
    fused (cross-entropy). Models whose head is not a plain linear map of the last hidden state
    (logit soft-capping or scaling) get their logits from their own forward instead."""
    if share not in SHARES:
        raise ValueError(f"share must be one of {SHARES}, got {share!r}")
    ids, attn, mask = batch["input_ids"], batch["attention_mask"], batch["loss_mask"]
    # Gradient checkpointing recomputes layers without the cache the rest reads: plain path.
    checkpointing = getattr(getattr(tm, "base", None), "is_gradient_checkpointing", False)
    shared = 0 if checkpointing else shared_prefix_length(ids, attn, mask, share)
    if shared < MIN_SHARED:
        shared = 0
    rows, length = ids.shape
    first = _first_trained(mask)
    offset = max(0, (first if first is not None else length - 1) - 1)  # predicts the first trained token
    if bool(mask[:, 0].bool().any()):
        raise ValueError("loss_mask[:, 0] is set, but the first token has no prediction")
    b_idx, t_idx = mask.bool().nonzero(as_tuple=True)
    source = t_idx - 1  # the position whose output predicts token t
    split = head_split(model)
    if shared:
        states, index = _run_shared(model, tm, split, ids, attn, shared, offset, source, b_idx, share == "exact")
    else:
        states, index = _run_plain(model, tm, split, ids, attn, offset, source, b_idx)
    picked = states[index]
    if split is not None:
        with tm.autocast():
            picked = split[1](picked)
    import torch
    import torch.nn.functional as F

    logits = picked.float()
    if temperature != 1.0:
        logits = logits / temperature
    lp_k = -F.cross_entropy(logits, ids[b_idx, t_idx], reduction="none")  # K = 0 gives [] (with a graph)
    lp = torch.zeros((rows, length - offset), dtype=torch.float32, device=ids.device)
    lp = lp.index_put((b_idx, t_idx - offset), lp_k)
    entropy = None
    if want_entropy:
        with torch.no_grad():
            if len(t_idx):
                logp = torch.log_softmax(logits.detach(), dim=-1).clamp(min=torch.finfo(torch.float32).min)
                entropy = -(logp.exp() * logp).sum(-1).mean()
            else:
                entropy = torch.zeros(())
    return lp, entropy, offset


# Model types whose causal-LM head is `lm_head(last hidden state)` and nothing more.
_PLAIN_HEADS = {"llama", "mistral", "qwen2", "qwen3", "phi3", "smollm3", "olmo2", "starcoder2", "gemma", "nemotron"}


def head_split(model: Any) -> tuple[Any, Any] | None:
    """(backbone, output layer) when the logits are the output layer applied to the backbone's last
    hidden state, else None."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(inner, "config", None)
    if getattr(config, "model_type", None) not in _PLAIN_HEADS:
        return None
    get_decoder, get_head = getattr(inner, "get_decoder", None), getattr(inner, "get_output_embeddings", None)
    if get_decoder is None or get_head is None or get_head() is None:
        return None
    return get_decoder(), get_head()


def _states(model: Any, split: Any, keep_from: int, **kwargs: Any) -> Any:
    """[B, T - keep_from, D] outputs from position keep_from on: hidden states (D = hidden size)
    when the head is split off, else logits."""
    if split is not None:
        return split[0](**kwargs).last_hidden_state[:, keep_from:]
    length = kwargs["input_ids"].shape[1]
    return model(**kwargs, logits_to_keep=max(1, length - keep_from)).logits[:, -(length - keep_from):]


def _run_plain(model: Any, tm: Any, split: Any, ids: Any, attn: Any, offset: int, source: Any, b_idx: Any) -> tuple[Any, Any]:
    rows, length = ids.shape
    with tm.autocast():
        states = _states(model, split, offset, input_ids=ids, attention_mask=attn, use_cache=False)
    width = length - offset
    return states.reshape(rows * width, -1), b_idx * width + (source - offset)


def _run_shared(model: Any, tm: Any, split: Any, ids: Any, attn: Any, shared: int, offset: int, source: Any, b_idx: Any,
                grad: bool) -> tuple[Any, Any]:
    """The prefix once (batch 1, with or without gradient), then every row's rest on its keys and
    values; returns the outputs of both, flattened, and where each masked token's predecessor is.
    With a frozen trunk kept (train/trunk.py) the first layers' outputs come from it."""
    rows, length = ids.shape
    pre_from = min(offset, shared - 1)  # prefix outputs needed from here (trained tokens inside it)
    trunk = getattr(tm, "trunk_cache", None)
    if trunk is not None and not (trunk.enabled and split is not None and split[0] is trunk.decoder):
        trunk = None
    if trunk is not None and not trunk.checked:
        _check_trunk(trunk, model, tm, split, ids, attn, shared, pre_from)
    if trunk is not None and trunk.enabled:
        pre, rest = trunk.run_shared(tm, ids, attn, shared, pre_from, grad)
    else:
        pre, rest = _prefix_then_rest(model, tm, split, ids, attn, shared, pre_from, grad)
    import torch

    n_pre = shared - pre_from
    width = length - shared
    states = torch.cat([pre, rest.reshape(rows * width, -1)], dim=0)
    in_prefix = source < shared
    index = torch.where(in_prefix, source - pre_from, n_pre + b_idx * width + (source - shared))
    return states, index


def _prefix_then_rest(model: Any, tm: Any, split: Any, ids: Any, attn: Any, shared: int, pre_from: int,
                      grad: bool) -> tuple[Any, Any]:
    """The outputs for the prefix from `pre_from` ([shared - pre_from, D]) and for every row's rest."""
    import contextlib

    import torch
    from transformers import DynamicCache

    rows, length = ids.shape
    cache = DynamicCache()
    with (contextlib.nullcontext() if grad else torch.no_grad()), tm.autocast():
        pre = _states(model, split, pre_from, input_ids=ids[:1, :shared], attention_mask=attn[:1, :shared],
                      past_key_values=cache, use_cache=True)
    expanded = DynamicCache()
    for layer, entry in enumerate(cache.layers):
        # The backward of expand sums every row's gradient into the one prefix.
        expanded.update(entry.keys.expand(rows, -1, -1, -1), entry.values.expand(rows, -1, -1, -1), layer)
    positions = torch.arange(shared, length, device=ids.device)[None].expand(rows, -1)
    with tm.autocast():
        rest = _states(model, split, 0, input_ids=ids[:, shared:], attention_mask=attn, position_ids=positions,
                       past_key_values=expanded, use_cache=True)
    return pre[0], rest


def _check_trunk(trunk: Any, model: Any, tm: Any, split: Any, ids: Any, attn: Any, shared: int, pre_from: int) -> None:
    """Once a run: the kept trunk's outputs against the plain forward's on the first batch; a
    decoder that does not feed `inputs_embeds` straight to its first layer turns the cache off."""
    import torch

    trunk.checked = True
    with torch.no_grad():
        want = _prefix_then_rest(model, tm, split, ids, attn, shared, pre_from, False)
        try:
            got = trunk.run_shared(tm, ids, attn, shared, pre_from, False)
            mask = attn[:, shared:].bool()
            same = all(torch.allclose(g.float(), w.float(), rtol=1e-3, atol=1e-3)
                       for g, w in ((got[0], want[0]), (got[1][mask], want[1][mask])))
            why = "its outputs differ from the plain forward's"
        except Exception as exc:  # an unusual decoder: the plain forward still works
            same, why = False, f"{type(exc).__name__}: {exc}"
    if not same:
        trunk.disable(why)
