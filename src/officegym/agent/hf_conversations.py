"""Keys and values of each conversation, kept from one turn to the next (the `hf:` backend).

A conversation's next prompt is its last prompt, the model's completion and the new scaffolding
(tool results, the next generation prompt): all but the scaffolding already ran through the model at
the previous turn. `HFPolicy` stores each row's keys and values when its turn ends and, at the next
call, loads them instead of prefilling those tokens again, so a turn costs its new tokens only.

An entry holds the tokens after the batch's shared prefix (the system prompt and tool list live in
the policy's kept prefixes), as one tensor per layer for keys and one for values, batch 1. Entries
are valid for one weights version (an optimiser step drops them all), a lookup takes the longest
entry whose tokens begin the new prompt, and the oldest entries go first when the memory budget is
exceeded. Using an entry removes it: the turn it starts stores a longer one.

In a batch, `load` writes each row's kept part into the decode cache (rows right-aligned after the
shared prefix) so that only the last columns, every row's new tokens, run; `keep` copies a finished
row's part back out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_BUDGET_MB = 1024


@dataclass
class Entry:
    """`tokens` is the whole sequence; `kv` covers tokens[start:], one (keys, values) pair per layer,
    each shaped (heads, len(tokens) - start, head_dim)."""

    tokens: list[int]
    start: int
    kv: list[tuple[Any, Any]]
    nbytes: int


class ConversationCache:
    def __init__(self, budget_mb: float = DEFAULT_BUDGET_MB):
        if budget_mb < 0:
            raise ValueError("the conversation cache budget must be >= 0 MB")
        self.budget = int(budget_mb * 2**20)
        self.version: Hashable | None = None
        self.entries: OrderedDict[int, Entry] = OrderedDict()
        self.nbytes = 0
        self._next_key = 0

    @property
    def enabled(self) -> bool:
        return self.budget > 0

    def clear(self) -> None:
        self.entries.clear()
        self.nbytes = 0

    def at_version(self, version: Hashable) -> None:
        """Forget every entry computed with other weights."""
        if version != self.version:
            self.clear()
            self.version = version

    def find(self, seq: Sequence[int], shared: int) -> tuple[int | None, int]:
        """The key of the longest entry that begins `seq` (all but its last token at most, which must
        run to give the next token's logits) and whose keys/values start at or before `shared`, and
        how many tokens of `seq` after `shared` it covers."""
        best, covered = None, 0
        last = len(seq) - 1
        for key, entry in self.entries.items():
            # Only a conversation's continuation: the same prompt again (a retry, a repeated seed)
            # prefills as it did the first time and so samples the same tokens.
            usable = len(entry.tokens)
            if usable > last or entry.start > shared or usable - shared <= covered:
                continue
            # the last token first: a sibling conversation usually differs there, and cheaply
            if seq[usable - 1] != entry.tokens[usable - 1] or list(seq[:usable]) != entry.tokens[:usable]:
                continue
            best, covered = key, usable - shared
        return best, covered

    def take(self, keys: Sequence[int | None]) -> dict[int, Entry]:
        """Remove the named entries (a batch's hits) and return them by key."""
        out: dict[int, Entry] = {}
        for key in keys:
            if key is not None and key in self.entries:
                entry = self.entries.pop(key)
                self.nbytes -= entry.nbytes
                out[key] = entry
        return out

    def put(self, tokens: list[int], start: int, kv: list[tuple[Any, Any]]) -> None:
        """Store a finished row's keys and values, then evict the oldest entries over budget."""
        if not self.enabled or len(tokens) <= start:
            return
        nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
        if nbytes > self.budget:
            return
        self.entries[self._next_key] = Entry(tokens, start, kv, nbytes)
        self._next_key += 1
        self.nbytes += nbytes
        while self.nbytes > self.budget:
            _, old = self.entries.popitem(last=False)
            self.nbytes -= old.nbytes

    def load(self, cache: Any, seqs: list[list[int]], shared: int, width: int) -> tuple[int, int]:
        """Write the kept keys/values of each row's earlier turns into `cache` (a static cache holding
        the `shared` prefix columns; rows right-aligned in the next `width` columns) and return how
        many of the last columns still have to run (at least 1: every row's newest token gives its
        logits) and how many tokens came from here. Rows shorter than that run whole."""
        if not self.enabled or not self.entries:
            return width, 0
        found = [self.find(seq, shared) for seq in seqs]
        feed = max(len(seq) - shared - covered for seq, (_, covered) in zip(seqs, found))
        skip = width - feed
        entries = self.take([key for key, _ in found])
        if skip <= 0:
            return width, 0
        import torch

        layers = []
        for k0, v0 in next(iter(entries.values())).kv:
            keys = torch.zeros((len(seqs), k0.shape[0], skip, k0.shape[-1]), dtype=k0.dtype, device=k0.device)
            values = torch.zeros((len(seqs), v0.shape[0], skip, v0.shape[-1]), dtype=v0.dtype, device=v0.device)
            layers.append((keys, values))
        reused = 0
        for b, (seq, (key, _)) in enumerate(zip(seqs, found)):
            n_old = len(seq) - shared - feed  # this row's tokens in the skipped columns
            if key is None or n_old <= 0:
                continue
            entry = entries[key]
            lo = shared - entry.start
            for (keys, values), (k, v) in zip(layers, entry.kv):
                keys[b, :, skip - n_old :] = k[:, lo : lo + n_old]
                values[b, :, skip - n_old :] = v[:, lo : lo + n_old]
            reused += n_old
        for layer, (keys, values) in enumerate(layers):
            cache.update(keys, values, layer)
        return feed, reused

    def keep(self, cache: Any, finished: Sequence[tuple[Any, int, int]], shared: int) -> None:
        """Store each finished row's keys/values after the shared prefix, from (row, its first column,
        its batch index): its prompt and its completion but the last token, which never ran."""
        if not self.enabled:
            return
        for row, start, b in finished:
            end = start + len(row.prompt) - shared + len(row.ids) - 1
            kv = [(layer.keys[b, :, start:end].clone(), layer.values[b, :, start:end].clone()) for layer in cache.layers]
            self.put(row.prompt + row.ids[:-1], shared, kv)
