"""Training rows from trajectories, built from the token ledger (exact sampled ids, never re-encoded).

A row is one episode as one token sequence: every turn's new prompt ids (the first prompt, then
tool results and template scaffolding) with loss mask 0, and the ids the model sampled (its
end-of-turn token included) with loss mask 1 and the sampler's log-probs. `collate` right-pads rows
into a batch. `audit_row` re-checks a row against its trajectory (cheap enough to run on every
row), and `mask_spans` decodes the masked and unmasked spans for a human audit; decoding is for
display only and never feeds training.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from officegym.core.trajectory import Trajectory, Turn


@dataclass
class LedgerRow:
    """One episode as 1-D tensors of equal length L: `input_ids` (long), `loss_mask` (long, 1 on
    sampled tokens), `sampler_logprobs` (float32, the sampler's log-prob of each sampled token, 0
    elsewhere) and `turn_of_token` (long, the index of the turn that added the token: turn k's new
    prompt part and its completion)."""

    input_ids: Tensor
    loss_mask: Tensor
    sampler_logprobs: Tensor
    turn_of_token: Tensor

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def sampled_tokens(self) -> int:
        return int(self.loss_mask.sum())


def _ledger_turns(trajectory: Trajectory) -> list[Turn]:
    """The turns `Trajectory.token_ledger` uses (it leaves out a last turn that sampled nothing)."""
    return [t for t in trajectory.turns if t.completion_ids is not None]


def ledger_row(trajectory: Trajectory, *, template: str | None = None) -> LedgerRow:
    """The training row of one trajectory. Raises TemplateMismatchError (naming `template`, the turn,
    the position and the two ids) when a turn's prompt does not extend the previous ones, and
    ValueError when the backend recorded no ids or no sampler log-probs (the importance weights and
    the mismatch metrics need them)."""
    for k, turn in enumerate(_ledger_turns(trajectory)):
        if turn.logprobs is None:
            raise ValueError(f"task {trajectory.task_id!r}, turn {k}: no sampler log-probs were recorded for the sampled ids")
    ids, mask, logps = trajectory.token_ledger(template=template)
    turn_of_token = torch.empty(len(ids), dtype=torch.long)
    start = 0
    for k, turn in enumerate(_ledger_turns(trajectory)):
        end = len(turn.prompt_ids or []) + len(turn.completion_ids or [])
        turn_of_token[start:end] = k
        start = end
    return LedgerRow(
        input_ids=torch.tensor(ids, dtype=torch.long),
        loss_mask=torch.tensor(mask, dtype=torch.long),
        sampler_logprobs=torch.tensor(logps, dtype=torch.float32),
        turn_of_token=turn_of_token,
    )


def ledger_rows(trajectories: Iterable[Trajectory], *, template: str | None = None) -> list[LedgerRow]:
    """`ledger_row` of each trajectory, in order."""
    return [ledger_row(t, template=template) for t in trajectories]


def collate(rows: Sequence[LedgerRow], pad_id: int) -> dict[str, Tensor]:
    """Right-pad rows to the longest one. Returns [B, L] tensors: input_ids (long, pad_id on pads),
    attention_mask (long, 0 on pads), loss_mask (float32, 0 on pads), sampler_logprobs (float32, 0 on
    pads), turn_of_token (long, -1 on pads), and lengths [B] (long)."""
    if not rows:
        raise ValueError("collate needs at least one row")
    lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
    b, n = len(rows), int(lengths.max())
    out = {
        "input_ids": torch.full((b, n), int(pad_id), dtype=torch.long),
        "attention_mask": torch.zeros((b, n), dtype=torch.long),
        "loss_mask": torch.zeros((b, n), dtype=torch.float32),
        "sampler_logprobs": torch.zeros((b, n), dtype=torch.float32),
        "turn_of_token": torch.full((b, n), -1, dtype=torch.long),
    }
    for i, r in enumerate(rows):
        k = len(r)
        if not (r.loss_mask.shape[0] == r.sampler_logprobs.shape[0] == r.turn_of_token.shape[0] == k):
            raise ValueError(f"row {i}: its tensors differ in length")
        out["input_ids"][i, :k] = r.input_ids
        out["attention_mask"][i, :k] = 1
        out["loss_mask"][i, :k] = r.loss_mask.float()
        out["sampler_logprobs"][i, :k] = r.sampler_logprobs
        out["turn_of_token"][i, :k] = r.turn_of_token
    out["lengths"] = lengths
    return out


def audit_row(trajectory: Trajectory, row: LedgerRow) -> list[str]:
    """What is wrong with `row` as the training row of `trajectory` (an empty list: nothing).

    Checks, per turn k with prompt P_k and sampled ids C_k: the row's ids start with P_k + C_k (so
    the training ids are the concatenation of what the model saw and sampled); the mask is 0 on P_k's
    new part (tool results, scaffolding) and 1 exactly on C_k; the masked log-probs are the
    sampler's; the end-of-turn token of a turn that stopped is masked; and in total the mask counts
    every sampled token once.
    """
    problems: list[str] = []
    ids = row.input_ids.tolist()
    mask = row.loss_mask.tolist()
    logps = row.sampler_logprobs.tolist()
    if not (len(ids) == len(mask) == len(logps) == len(row.turn_of_token)):
        return ["the row's tensors differ in length"]
    start = 0
    total = 0
    for k, turn in enumerate(_ledger_turns(trajectory)):
        prompt, sampled = list(turn.prompt_ids or []), list(turn.completion_ids or [])
        end = len(prompt) + len(sampled)
        total += len(sampled)
        if ids[:end] != prompt + sampled:
            problems.append(f"turn {k}: the row's ids are not the turn's prompt followed by its sampled ids")
            break
        if any(mask[start : len(prompt)]):
            problems.append(f"turn {k}: a token of the new prompt part (tool output or scaffolding) has mask 1")
        if not all(mask[len(prompt) : end]):
            problems.append(f"turn {k}: a sampled token has mask 0")
        expected = torch.tensor(turn.logprobs or [], dtype=torch.float32).tolist()  # the row stores float32
        if turn.logprobs is not None and logps[len(prompt) : end] != expected:
            problems.append(f"turn {k}: the masked log-probs are not the sampler's")
        if row.turn_of_token[start:end].ne(k).any():
            problems.append(f"turn {k}: turn_of_token does not say {k} on the turn's tokens")
        if turn.finish_reason == "stop" and sampled and not mask[end - 1]:
            problems.append(f"turn {k}: the end-of-turn token is not in the loss mask")
        start = end
    if not problems and len(ids) != start:
        problems.append(f"the row has {len(ids) - start} ids after the last turn")
    if sum(mask) != total:
        problems.append(f"the mask covers {sum(mask)} tokens but the turns sampled {total}")
    return problems


def mask_spans(row: LedgerRow, decode: Callable[[list[int]], str]) -> list[tuple[bool, str]]:
    """The row as alternating (trained?, text) spans, each decoded on its own, for a human mask audit
    (e.g. print trained spans in colour): tool outputs and scaffolding must read as untrained."""
    ids, mask = row.input_ids.tolist(), row.loss_mask.tolist()
    spans: list[tuple[bool, str]] = []
    i = 0
    while i < len(ids):
        j = i
        while j < len(ids) and mask[j] == mask[i]:
            j += 1
        spans.append((bool(mask[i]), decode(ids[i:j])))
        i = j
    return spans
