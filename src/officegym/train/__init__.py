"""Training: the pure GRPO math (advantages, losses) and training rows from the token ledger.

Needs torch (pip install 'officegym[train]'). Trainer modules live beside these.
"""

from officegym.train.advantages import group_advantages, zero_variance_groups
from officegym.train.ledger import LedgerRow, audit_row, collate, ledger_row, ledger_rows, mask_spans
from officegym.train.losses import (
    LossOutput,
    aggregate,
    entropy_from_logits,
    global_normaliser,
    policy_loss,
    token_logprobs,
)

__all__ = [
    "LedgerRow",
    "LossOutput",
    "aggregate",
    "audit_row",
    "collate",
    "entropy_from_logits",
    "global_normaliser",
    "group_advantages",
    "ledger_row",
    "ledger_rows",
    "mask_spans",
    "policy_loss",
    "token_logprobs",
    "zero_variance_groups",
]
