"""The `hf:` policy's decoding loop: prefill, then one token per step into a preallocated cache.

The loop, per batch of requests (sorted by prompt length, `batch_size` at a time):

1. Prefill. The longest common prefix of the batch's prompts (in practice the system prompt and the
   tool list, thousands of tokens) runs once with batch size 1, and its keys and values are kept
   for the next call: while the weights do not change (their in-place version counters say so),
   a later call that starts with the same tokens reuses them instead of running them again.
   The rest of each prompt follows, left-padded to the longest rest; padding therefore sits
   between the shared prefix and the rest, which the attention mask hides and the explicit
   position ids skip. Identical prompts (a GRPO group) share all but their last token.
   A conversation's earlier turns are not run again: when a row's turn ends, the keys and values of
   its prompt and completion are kept (agent/hf_conversations.py, within `conversation_cache_mb`),
   and its next prompt, which extends them, loads them and prefills only its new tokens (the tool
   results and the next generation prompt).
2. Decode, one token per step for every row still running, into a preallocated KV cache written in
   place (a growing cache copies itself at every step, which made decoding 4x slower at 4k tokens).
   A row stops at an end-of-turn token (kept in its completion), at a `stop` string, or after
   `max_new_tokens` (finish_reason "length"). Finished rows are dropped from the batch (and its
   cache) once a quarter of it has finished. On a GPU (`cuda_graphs`, the default there) the step
   is instead replayed from a CUDA graph recorded once per batch (agent/hf_graphs.py): the graph's
   shapes are fixed, so finished rows stay in the batch and their extra tokens are discarded.

Log-probabilities (`Completion.logprobs`): for temperature T > 0, the log-softmax of logits / T over
the whole vocabulary, computed in float32; this is exactly what a trainer recomputes from a forward
pass at the same temperature. With top_p < 1 the token is drawn from the nucleus (the smallest set
of most likely tokens whose probability reaches top_p, renormalised), but the reported log-prob is
still that of the full tempered distribution: the nucleus log-prob is it minus log(nucleus mass).
With T == 0 (greedy) the sampler is a point mass, so the log-prob of the raw logits (T = 1) is
reported instead.

Mixed into `HFPolicy` (agent/hf.py), which batches the requests and builds the Completions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from officegym.core.policy import SamplingParams

KEPT_PREFIXES = 8  # shared prefixes whose keys/values are kept between calls
GRAPH_MIN_STEPS = 8  # a batch decodes through a CUDA graph when some row may take this many tokens


@dataclass
class Row:
    """One request inside `_generate`: its prompt, its token budget, what it sampled."""

    prompt: list[int]
    limit: int
    ids: list[int]
    logprobs: list[float]
    finish: str = ""


def thousands(n: int) -> str:
    """4612 -> "4.6k": token counts as a heartbeat line shows them."""
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def common_prefix_length(seqs: Sequence[Sequence[int]]) -> int:
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for other in seqs[1:]:
        k = 0
        while k < n and other[k] == first[k]:
            k += 1
        n = k
        if n == 0:
            break
    return n


class HFDecoding:
    """Prefill, decoding steps, sampling and the kept prefixes (a part of `HFPolicy`)."""

    def _forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, cache: Any, autocast_cache: bool = True) -> Any:
        """Logits of the last position of every row (float32), extending `cache` in place."""
        kwargs: dict[str, Any] = {}
        if self._logits_to_keep:
            kwargs["logits_to_keep"] = 1
        with self._autocast(autocast_cache):
            out = self._model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                past_key_values=cache,
                use_cache=True,
                **kwargs,
            )
        return out.logits[:, -1, :].float()

    def _autocast(self, cache: bool = True) -> Any:
        import contextlib

        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        # a CUDA graph must not record casts into autocast's weight cache (freed when the region ends)
        return self._torch.autocast(self._device.type, dtype=getattr(self._torch, self.autocast_dtype), cache_enabled=cache)

    def weights_version(self) -> tuple[int, int]:
        """Changes whenever the weights change (see `_weights_version`)."""
        return self._weights_version()

    def _weights_version(self) -> tuple[int, int]:
        """Changes whenever the weights do: optimiser steps and load_state_dict write the parameters in
        place, which bumps their version counters; a new model object changes the id."""
        return id(self._model), sum(p._version for p in self._model.parameters())

    def _static_cache(self, length: int) -> Any:
        from transformers import StaticCache

        class UniformStaticCache(StaticCache):
            """Under CPU autocast the rotary embedding leaves keys in float32 while values stay
            bfloat16; a static cache holds one dtype (the first keys'), so values follow the keys."""

            def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> Any:
                if value_states.dtype != key_states.dtype:
                    value_states = value_states.to(key_states.dtype)
                return super().update(key_states, value_states, layer_idx, *args, **kwargs)

        return UniformStaticCache(config=self._model.config, max_cache_len=length)

    def _cache_from(self, kv: list[tuple[Any, Any]], length: int) -> Any:
        """A preallocated cache of `length` columns holding the given per-layer keys and values."""
        cache = self._static_cache(length)
        for layer, (keys, values) in enumerate(kv):
            cache.update(keys, values, layer)
        return cache

    def _prefix_kv(self, prefix: list[int], version: tuple[int, int]) -> list[tuple[Any, Any]]:
        """Per-layer keys and values (batch 1) of `prefix`, reusing the longest match among the
        prefixes kept from earlier calls while the weights have not changed since (the system prompt
        and tool list of each tool set)."""
        from transformers import DynamicCache

        torch = self._torch
        self._prefixes = [e for e in self._prefixes if e[0] == version]
        reuse, kept_kv, best = 0, None, None
        for entry in self._prefixes:
            n = common_prefix_length([entry[1], prefix])
            if n > reuse:
                reuse, kept_kv, best = n, entry[2], entry
        if best is not None and reuse == len(prefix):
            self._prefixes.remove(best)
            self._prefixes.append(best)  # most recently used last
            self.stats["prefix_reused_tokens"] += reuse
            return [(k[:, :, :reuse], v[:, :, :reuse]) for k, v in kept_kv]
        cache = DynamicCache()
        if reuse:
            for layer, (k, v) in enumerate(kept_kv):
                cache.update(k[:, :, :reuse], v[:, :, :reuse], layer)
        rest = torch.tensor([prefix[reuse:]], device=self._device)
        mask = torch.ones((1, len(prefix)), dtype=torch.long, device=self._device)
        self._forward(rest, mask, torch.arange(reuse, len(prefix), device=self._device)[None], cache)
        kv = [(layer.keys, layer.values) for layer in cache.layers]
        self._prefixes.append((version, list(prefix), kv))
        del self._prefixes[:-KEPT_PREFIXES]
        self.stats["prefix_reused_tokens"] += reuse
        self.stats["prefill_tokens"] += len(prefix) - reuse
        return kv

    def _row_limits(self, prompts: list[list[int]], params: SamplingParams, limits: Sequence[int | None] | None) -> list[int]:
        """Each row's token budget: params.max_new_tokens, the request's own cap, the context left."""
        budget = max(0, int(params.max_new_tokens))
        out = []
        for k, p in enumerate(prompts):
            limit = budget
            if limits is not None and limits[k] is not None:
                limit = min(limit, max(0, int(limits[k])))
            if self._context is not None:
                limit = min(limit, self._context - len(p))
            out.append(max(0, limit))
        return out

    def _generate(
        self, prompts: list[list[int]], params: SamplingParams, generator: Any, limits: Sequence[int | None] | None = None
    ) -> list[Row]:
        torch = self._torch
        dev = self._device
        rows = [Row(prompt=p, limit=n, ids=[], logprobs=[]) for p, n in zip(prompts, self._row_limits(prompts, params, limits))]
        for row in rows:
            if row.limit == 0:
                row.finish = "length"
        live = [k for k, row in enumerate(rows) if not row.finish]
        if not live:
            return rows
        with torch.inference_mode():
            seqs = [rows[k].prompt for k in live]
            # Keep at least one token per row outside the shared prefix: it yields that row's logits.
            shared = min(common_prefix_length(seqs), min(len(s) for s in seqs) - 1)
            rests = [s[shared:] for s in seqs]
            width = max(len(r) for r in rests)
            # Columns: shared prefix, left-padded rests, then one per new token. A preallocated cache is
            # written in place; a growing one would copy itself at every step.
            length = shared + width + max(rows[k].limit for k in live)
            version = self._weights_version()  # the kept prefixes and conversations are valid for it
            self.phase = (f"prefill: {len(live)} prompts, up to {thousands(shared + width)} tokens", time.perf_counter())
            if shared > 0:
                kv = self._prefix_kv(seqs[0][:shared], version)
                cache = self._cache_from([(k.expand(len(live), -1, -1, -1), v.expand(len(live), -1, -1, -1)) for k, v in kv], length)
            else:
                cache = self._static_cache(length)
            # A conversation's earlier turns come from the conversation cache: only the last `feed`
            # columns (every row's new tokens, right-aligned) run through the model.
            self._conversations.at_version(version)
            feed, reused = self._conversations.load(cache, seqs, shared, width)
            self.stats["conversation_reused_tokens"] += reused
            input_ids = torch.full((len(live), width), self._pad_id, dtype=torch.long)
            mask = torch.zeros((len(live), shared + width), dtype=torch.long)
            positions = torch.zeros((len(live), width), dtype=torch.long)
            mask[:, :shared] = 1
            for b, rest in enumerate(rests):
                n = len(rest)
                input_ids[b, width - n :] = torch.tensor(rest)
                mask[b, shared + width - n :] = 1
                positions[b, width - n :] = torch.arange(shared, shared + n)
            input_ids, mask, positions = input_ids[:, width - feed :].to(dev), mask.to(dev), positions[:, width - feed :].to(dev)
            self.stats["prefill_tokens"] += sum(min(len(r), feed) for r in rests)
            self.stats["prompt_tokens"] += sum(len(s) for s in seqs)
            logits = self._forward(input_ids, mask, positions, cache)
            # Where each live row's tokens start in the cache (its rest, then its completion).
            starts = [shared + width - len(r) for r in rests]
            next_pos = torch.tensor([len(s) for s in seqs], device=dev)
            self.phase = (f"generating: {len(live)} rows, up to {max(rows[k].limit for k in live)} tokens", time.perf_counter())
            if self._graphs_apply(rows, live):
                self._decode_static(rows, live, logits, cache, mask, next_pos, starts, shared, length, params, generator)
            else:
                self._decode_eager(rows, live, logits, cache, mask, next_pos, starts, shared, length, params, generator)
        self.stats["completion_tokens"] += sum(len(r.ids) for r in rows)
        return rows

    def _record(self, rows: list[Row], live: list[int], done: list[bool], tokens: Any, logps: Any, params: SamplingParams) -> None:
        """Append each running row's sampled token and log-prob; mark the rows that finished."""
        tokens_list, logps_list = tokens.tolist(), logps.tolist()
        for b, k in enumerate(live):
            if done[b]:
                continue
            row = rows[k]
            row.ids.append(int(tokens_list[b]))
            row.logprobs.append(float(logps_list[b]))
            if row.ids[-1] in self._stop_ids or self._hit_stop_string(row, params):
                row.finish = "stop"
            elif len(row.ids) >= row.limit:
                row.finish = "length"
            if row.finish:
                done[b] = True

    def _decode_eager(
        self, rows: list[Row], live: list[int], logits: Any, cache: Any, mask: Any, next_pos: Any, starts: list[int],
        shared: int, length: int, params: SamplingParams, generator: Any,
    ) -> None:
        """Decode step by step, dropping finished rows from the batch once a quarter has finished."""
        torch = self._torch
        dev = self._device
        done = [False] * len(live)
        while True:
            tokens, logps = self._sample(logits, params, generator)
            self._record(rows, live, done, tokens, logps, params)
            keep = [b for b in range(len(live)) if not done[b]]
            if not keep:
                break
            if len(live) - len(keep) >= max(1, len(live) // 4):
                # Drop finished rows: keep their conversations, copy the others into a smaller cache.
                self._conversations.keep(cache, [(rows[live[b]], starts[b], b) for b in range(len(live)) if done[b]], shared)
                index = torch.tensor(keep, dtype=torch.long, device=dev)
                used = mask.shape[1]
                kv = [(layer.keys[index, :, :used], layer.values[index, :, :used]) for layer in cache.layers]
                cache = self._cache_from(kv, length)
                mask, next_pos, tokens = mask[index], next_pos[index], tokens[index]
                live = [live[b] for b in keep]
                starts = [starts[b] for b in keep]
                done = [False] * len(live)
            mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype, device=dev)], dim=1)
            logits = self._forward(tokens[:, None], mask, next_pos[:, None], cache)
            next_pos = next_pos + 1
        self._conversations.keep(cache, [(rows[k], starts[b], b) for b, k in enumerate(live)], shared)

    def _graphs_apply(self, rows: list[Row], live: list[int]) -> bool:
        """Whether this batch decodes through `_decode_static` with a CUDA graph: on a GPU, with
        `cuda_graphs` on, no earlier recording failure, and enough steps to repay the recording."""
        return (
            self.cuda_graphs
            and self.graph_failure is None
            and self._device.type == "cuda"
            and max(rows[k].limit for k in live) >= GRAPH_MIN_STEPS
        )

    def _decode_static(
        self, rows: list[Row], live: list[int], logits: Any, cache: Any, mask: Any, next_pos: Any, starts: list[int],
        shared: int, length: int, params: SamplingParams, generator: Any, capture: bool | None = None,
    ) -> None:
        """Decode with fixed input tensors rewritten in place, each step one `GraphStep` call (a CUDA
        graph's replay on a GPU): the mask covers the whole cache (`length` columns, one more set
        per step), and finished rows stay in the batch until every row has finished."""
        from officegym.agent.hf_graphs import GraphStep

        torch = self._torch
        dev = self._device
        n = len(live)
        column = mask.shape[1]
        full = torch.zeros((n, 1, 1, length), dtype=torch.bool, device=dev)
        full[:, 0, 0, :column] = mask.bool()
        tokens_in = torch.zeros((n, 1), dtype=torch.long, device=dev)
        positions = next_pos[:, None].clone()
        step = GraphStep(
            lambda: self._forward(tokens_in, full, positions, cache, autocast_cache=False),
            capture=dev.type == "cuda" if capture is None else capture,
        )
        done = [False] * n
        while True:
            tokens, logps = self._sample(logits, params, generator)
            self._record(rows, live, done, tokens, logps, params)
            if all(done):
                break
            tokens_in.copy_(tokens[:, None])
            full[:, 0, 0, column] = True
            logits = step()
            positions.add_(1)
            column += 1
        self.stats["graph_steps"] += step.replays
        if step.failed is not None:
            self.graph_failure = step.failed
        self._conversations.keep(cache, [(rows[k], starts[b], b) for b, k in enumerate(live)], shared)

    def _hit_stop_string(self, row: Row, params: SamplingParams) -> bool:
        if not params.stop:
            return False
        text = self._tok.decode(row.ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        return any(s and s in text for s in params.stop)

    def _sample(self, logits: Any, params: SamplingParams, generator: Any) -> tuple[Any, Any]:
        """Next tokens and their log-probs (see the module docstring for which distribution)."""
        torch = self._torch
        if params.temperature <= 0:
            logp = torch.log_softmax(logits, dim=-1)
            tokens = logits.argmax(dim=-1)
            return tokens, logp.gather(1, tokens[:, None])[:, 0]
        logp = torch.log_softmax(logits / params.temperature, dim=-1)
        probs = logp.exp()
        if params.top_p < 1.0:
            sorted_probs, sorted_idx = probs.sort(dim=-1, descending=True)
            # Keep a token when the mass before it is below top_p: the first token always stays.
            outside = (sorted_probs.cumsum(dim=-1) - sorted_probs) >= params.top_p
            sorted_probs = sorted_probs.masked_fill(outside, 0.0)
            probs = torch.zeros_like(probs).scatter_(1, sorted_idx, sorted_probs)
        tokens = torch.multinomial(probs, 1, generator=generator)[:, 0]
        return tokens, logp.gather(1, tokens[:, None])[:, 0]
