"""One rank of the data-parallel check (tests/train/test_distributed.py): the GRPO update of a fixed
set of rows, split over WORLD_SIZE ranks with gloo, and the adapter it leaves. Prints the trained
parameters' sum and a hash-free fingerprint (their flattened values) as JSON on rank 0."""

from __future__ import annotations

import json
import sys

import torch


def main() -> None:
    model_dir, out_path = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import build_config
    from officegym.train.distributed import setup, teardown
    from officegym.train.grpo_update import update_policy
    from officegym.train.ledger import LedgerRow
    from officegym.train.modeling import load_train_model
    from officegym.train.runtime import make_optimizer

    dist = setup("cpu")
    cfg = build_config(GRPORunConfig, {}, [f"model.name={model_dir}", "model.device=cpu", "model.threads=1",
                                           "grpo.micro_batch_size=2", "optim.lr=0.01", "grpo.skip_zero_advantage=false",
                                           "rollout.temperature=1.0"])
    torch.manual_seed(0)
    tm = load_train_model(cfg.model, cfg.lora, 0)
    tm.model.eval()
    params = tm.trainable_parameters()
    optimizer = make_optimizer(params, cfg.optim)
    # Eight rows of two groups: a shared 24-token prompt per group and completions of unequal length.
    g = torch.Generator().manual_seed(7)
    rows, adv = [], []
    for group in range(2):
        prompt = torch.randint(5, 200, (24,), generator=g)
        for k in range(4):
            rest = torch.randint(5, 200, (6 + 3 * k,), generator=g)
            ids = torch.cat([prompt, rest])
            mask = torch.cat([torch.zeros(24, dtype=torch.long), torch.ones(len(rest), dtype=torch.long)])
            rows.append(LedgerRow(ids, mask, -torch.rand(len(ids), generator=g) * mask, torch.zeros(len(ids), dtype=torch.long)))
            adv.append([1.0, -0.5, 0.25, -0.75][k] * (1 if group == 0 else -1))
    # Each rank trains the rows of its groups (a GRPO step's share), alone all of them.
    mine = [i for i in range(len(rows)) if (i // 4) % dist.world == dist.rank]
    metrics = update_policy(cfg, tm, [rows[i] for i in mine], [adv[i] for i in mine], optimizer, params, None, None, dist)
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    grads = torch.cat([p.grad.reshape(-1) for p in params])  # the summed, clipped gradient the step used
    if dist.main:
        with open(out_path, "w", encoding="utf-8") as fh:
            json.dump({"params": flat.tolist(), "grads": grads.tolist(), "loss": metrics["train/loss"], "tokens": metrics["train/trained_tokens"],
                       "rows": metrics["train/update_rows"], "grad_norm": metrics["train/grad_norm"]}, fh)
    teardown(dist)


if __name__ == "__main__":
    main()
