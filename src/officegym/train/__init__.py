"""Training: the pure GRPO math (advantages, losses), training rows from the token ledger, and the
SFT/GRPO trainers beside them.

Needs torch (pip install 'officegym[train]'). Names are imported on first use, so that importing a
light submodule (the config system, the CLI) does not load torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "group_advantages": "advantages", "zero_variance_groups": "advantages",
    "LedgerRow": "ledger", "audit_row": "ledger", "collate": "ledger", "ledger_row": "ledger",
    "ledger_rows": "ledger", "mask_spans": "ledger",
    "LossOutput": "losses", "aggregate": "losses", "entropy_from_logits": "losses", "global_normaliser": "losses",
    "policy_loss": "losses", "token_logprobs": "losses",
    "GRPORunConfig": "config", "SFTRunConfig": "config", "load_config": "config_files",
    "train_grpo": "grpo", "train_sft": "sft", "train_app": "cli", "plot_run": "plot",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'officegym.train' has no attribute {name!r}")
    return getattr(importlib.import_module(f"officegym.train.{module}"), name)
