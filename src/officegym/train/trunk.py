"""The frozen trunk's outputs, kept across steps.

With adapters on the last layers only (`lora.last_layers`), the decoder's first layers (the
trunk) and the embeddings never change during a run, so what they compute for a token sequence
is a constant: the hidden state entering the first adapted layer, and the trunk's keys and
values. GRPO forwards the same tool lists every step (a group's prompt, the SFT term's
conversations: ~1.1k of a quickstart row's ~1.3k tokens are the system prompt and tools), so
this cache keeps the trunk's output for the prefixes `forward_logprobs` runs once, and a new
prompt reuses the longest prefix it shares with a kept one (the same tool list) and runs the
trunk only on the rest. The adapted layers (the top) run every time, on the kept hidden states.
What is kept is about one prompt per tool list (36 MB for SmolLM2-135M's 1.1k-token prompts with 20
of 30 layers frozen), least recently used first out of `grpo.trunk_cache_mb`.

The result is the same function of the weights: the trunk has no parameter with gradient, so no
gradient is lost, and the loss differs from the uncached forward only by float rounding (a
prefix run in two pieces). Tested against the uncached forward (train/forward.py); the first use
in a run also compares both and turns the cache off, with a warning, on a model whose decoder does
not pass `inputs_embeds` straight to its first layer."""

from __future__ import annotations

import copy
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from officegym.train.forward import lcp

log = logging.getLogger(__name__)

MIN_REUSE = 16  # a kept prefix shorter than this is not worth the extra call
# A prefix is kept when the trunk ran on more than this many of its tokens (or on all of them): a new
# tool list is kept, a new user turn after a kept tool list is not. Prompts rarely come back whole
# (a task is drawn again seldom), while every prompt of a tool set reuses its first-kept one.
KEEP_TAIL = 256


@dataclass
class _Entry:
    ids: Any  # [n] token ids
    hidden: Any  # [n, D]: the hidden state entering the first adapted layer
    keys: list[Any]  # per trunk layer, [1, heads, n, head_dim]
    values: list[Any]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in [self.ids, self.hidden, *self.keys, *self.values])


def frozen_trunk_layers(decoder: Any) -> int:
    """How many leading decoder layers have no trainable parameter, the embeddings frozen too; at
    most all but one (the top runs at least one layer). 0 when there is nothing to keep."""
    layers = getattr(decoder, "layers", None)
    embed = decoder.get_input_embeddings() if hasattr(decoder, "get_input_embeddings") else None
    if layers is None or embed is None or not hasattr(decoder, "norm"):
        return 0
    if any(p.requires_grad for p in embed.parameters()):
        return 0
    n = 0
    for layer in layers:
        if any(p.requires_grad for p in layer.parameters()) or any(
                float(getattr(m, "p", 0.0)) > 0 and m.training for m in layer.modules() if "Dropout" in type(m).__name__):
            break
        n += 1
    return min(n, len(layers) - 1)


def _view(decoder: Any, layers: list[Any], final_norm: bool) -> Any:
    """The decoder with only `layers` (and no final norm): the same modules and parameters, so
    the decoder's own forward builds the masks and rotary embeddings."""
    import torch

    view = copy.copy(decoder)
    view._modules = dict(decoder._modules)  # copy.copy shares the dict: replace, never mutate it
    view._modules["layers"] = torch.nn.ModuleList(layers)
    if not final_norm:
        view._modules["norm"] = torch.nn.Identity()
    return view


_SLOT: Any = None


def _placeholder_layer(length: int) -> Any:
    """A trunk layer's slot in the top's cache: it holds nothing and reports the prefix's length
    (the causal mask is sized from the cache's first layer)."""
    global _SLOT
    if _SLOT is None:
        from transformers.cache_utils import DynamicLayer

        class Slot(DynamicLayer):
            length = 0

            def get_seq_length(self) -> int:
                return self.length

            def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
                return self.length + query_length, 0

            def update(self, *args: Any, **kwargs: Any) -> Any:
                raise RuntimeError("a trunk layer ran in the top's cache")

        _SLOT = Slot
    slot = _SLOT()
    slot.length = length
    return slot


class TrunkCache:
    """Keeps the trunk's outputs for prefixes, within `budget_bytes` (least recently used first)."""

    def __init__(self, decoder: Any, n_trunk: int, budget_bytes: int):
        self.decoder = decoder
        self.n = n_trunk
        self.n_layers = len(decoder.layers)
        self.trunk = _view(decoder, list(decoder.layers[:n_trunk]), final_norm=False)
        self.top = _view(decoder, list(decoder.layers[n_trunk:]), final_norm=True)
        self.budget = budget_bytes
        self.entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next = 0
        self.bytes = 0
        self.enabled = True
        self.checked = False
        self.reused_tokens = 0  # prefix tokens whose trunk came from the cache
        self.computed_tokens = 0  # prefix and row tokens the trunk ran on

    @classmethod
    def build(cls, decoder: Any, budget_mb: float) -> TrunkCache | None:
        n = frozen_trunk_layers(decoder)
        if budget_mb <= 0 or n == 0:
            return None
        return cls(decoder, n, int(budget_mb * 2**20))

    def disable(self, why: str) -> None:
        """Off for the rest of the run (the plain forward serves), what was kept freed."""
        self.enabled = False
        self.entries.clear()
        self.bytes = 0
        log.warning("the frozen trunk's cache is off for this run (%s); training goes on without it", why)

    def take_counts(self) -> dict[str, float]:
        """Tokens reused and computed since the last call (a step's metrics)."""
        out = {"train/trunk_reused_tokens": float(self.reused_tokens), "train/trunk_computed_tokens": float(self.computed_tokens),
               "train/trunk_cache_mb": self.bytes / 2**20}
        self.reused_tokens = self.computed_tokens = 0
        return out

    # -- the trunk ------------------------------------------------------------------------------

    def _cache_of(self, keys: list[Any], values: list[Any], rows: int, upto: int) -> Any:
        from transformers import DynamicCache

        cache = DynamicCache()
        for i, (k, v) in enumerate(zip(keys, values)):
            cache.update(k[:, :, :upto].expand(rows, -1, -1, -1), v[:, :, :upto].expand(rows, -1, -1, -1), i)
        return cache

    def prefix(self, ids: Any, tm: Any) -> _Entry:
        """The trunk's output for `ids` ([n], all real tokens), from the cache where it can."""
        import torch
        from transformers import DynamicCache

        best, longest = None, 0
        for key, entry in self.entries.items():
            common = lcp(entry.ids, ids)
            if common > longest:
                best, longest = key, common
        n = len(ids)
        if best is not None and longest == n:
            entry = self.entries[best]
            self.entries.move_to_end(best)
            self.reused_tokens += n
            return _Entry(ids, entry.hidden[:n], [k[:, :, :n] for k in entry.keys], [v[:, :, :n] for v in entry.values])
        start = longest if best is not None and longest >= MIN_REUSE else 0
        if start:
            kept = self.entries[best]
            self.entries.move_to_end(best)
            cache = self._cache_of(kept.keys, kept.values, 1, start)
        else:
            cache = DynamicCache()
        with torch.no_grad(), tm.autocast():
            out = self.trunk(input_ids=ids[None, start:], position_ids=torch.arange(start, n, device=ids.device)[None],
                             past_key_values=cache, use_cache=True).last_hidden_state[0]
        hidden = torch.cat([kept.hidden[:start], out]) if start else out
        entry = _Entry(ids.clone(), hidden, [layer.keys for layer in cache.layers[: self.n]],
                       [layer.values for layer in cache.layers[: self.n]])
        self.reused_tokens += start
        self.computed_tokens += n - start
        if start == 0 or n - start > KEEP_TAIL:
            self._keep(entry)
        return entry

    def _keep(self, entry: _Entry) -> None:
        # a kept prefix of the new one is redundant: the new one serves it
        for key in [k for k, e in self.entries.items() if len(e.ids) <= len(entry.ids) and lcp(e.ids, entry.ids) == len(e.ids)]:
            self.bytes -= self.entries.pop(key).nbytes
        size = entry.nbytes
        if size > self.budget:
            return
        while self.entries and self.bytes + size > self.budget:
            self.bytes -= self.entries.popitem(last=False)[1].nbytes
        self.entries[self._next] = entry
        self._next += 1
        self.bytes += size

    def rows(self, ids: Any, attn: Any, shared: int, prefix: _Entry, tm: Any) -> Any:
        """The trunk's output for every row's tokens after the shared prefix: [rows, L - shared, D]."""
        import torch

        rows, length = ids.shape
        cache = self._cache_of(prefix.keys, prefix.values, rows, shared)
        positions = torch.arange(shared, length, device=ids.device)[None].expand(rows, -1)
        with torch.no_grad(), tm.autocast():
            out = self.trunk(input_ids=ids[:, shared:], attention_mask=attn, position_ids=positions,
                             past_key_values=cache, use_cache=True).last_hidden_state
        self.computed_tokens += int(attn[:, shared:].sum())
        return out

    # -- the top --------------------------------------------------------------------------------

    def run_shared(self, tm: Any, ids: Any, attn: Any, shared: int, pre_from: int, grad: bool) -> tuple[Any, Any]:
        """What forward.py's shared-prefix forward returns, with the trunk from the cache: the top's
        outputs for the prefix from `pre_from` ([shared - pre_from, D]) and for every row's rest
        ([rows, L - shared, D])."""
        import contextlib

        import torch
        from transformers import DynamicCache

        rows, length = ids.shape
        prefix = self.prefix(ids[0, :shared], tm)
        cache = DynamicCache()
        with (contextlib.nullcontext() if grad else torch.no_grad()), tm.autocast():
            pre = self.top(inputs_embeds=prefix.hidden[None], position_ids=torch.arange(shared, device=ids.device)[None],
                           past_key_values=cache, use_cache=True).last_hidden_state[0, pre_from:]
        hidden = self.rows(ids, attn, shared, prefix, tm)
        expanded = DynamicCache()
        expanded.layers.extend(_placeholder_layer(shared) for _ in range(self.n))
        for i in range(self.n, self.n_layers):
            layer = cache.layers[i]
            expanded.update(layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1), i)
        positions = torch.arange(shared, length, device=ids.device)[None].expand(rows, -1)
        with tm.autocast():
            rest = self.top(inputs_embeds=hidden, attention_mask=attn, position_ids=positions,
                            past_key_values=expanded, use_cache=True).last_hidden_state
        return pre, rest
