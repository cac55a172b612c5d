"""lora.last_layers: adapters on the top decoder layers only, and no backward pass below them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def _adapted_layers(model):
    return sorted({int(n.split(".layers.")[1].split(".")[0]) for n, p in model.named_parameters()
                   if "lora_" in n and p.requires_grad})


def test_last_layers_adapts_the_top_layers_and_stops_the_backward_below(tiny_model_dir):
    from officegym.train.config import LoraConfig, ModelConfig
    from officegym.train.modeling import load_train_model

    model_cfg = ModelConfig(name=str(tiny_model_dir), device="cpu", threads=1)
    full = load_train_model(model_cfg, LoraConfig(enabled=True, r=4))
    top = load_train_model(model_cfg, LoraConfig(enabled=True, r=4, last_layers=1))
    assert _adapted_layers(full.base) == [0, 1] and _adapted_layers(top.base) == [1]
    # as many layers as the model has, or more: every layer
    every = load_train_model(model_cfg, LoraConfig(enabled=True, r=4, last_layers=5))
    assert _adapted_layers(every.base) == [0, 1]

    seen = {}
    for k, layer in enumerate(top.base.model.layers):
        layer.register_forward_hook(lambda m, i, o, k=k: seen.__setitem__(k, (o[0] if isinstance(o, tuple) else o).requires_grad))
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    for p in top.base.parameters():
        if p.requires_grad:
            torch.nn.init.normal_(p, std=0.05)  # B starts at 0: move the adapter so the merge shows it
    top.base(input_ids=ids).logits.sum().backward()
    assert seen == {0: False, 1: True}  # autograd records nothing in the layer without adapters
    assert all(p.grad is not None for n, p in top.base.named_parameters() if p.requires_grad)

    merged = dict(top.hf_weights())
    base = dict(full.hf_weights())  # full's adapters are untouched (B = 0): its merge is the base model
    q0, q1 = "model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.q_proj.weight"
    assert torch.equal(merged[q0], base[q0]) and not torch.equal(merged[q1], base[q1])
    assert set(merged) == set(base)

    # a partial push: only what training can change (the adapted layer's linear weights), equal to the full merge's
    changed = dict(top.hf_weights(changed_only=True))
    assert changed and all(".layers.1." in n and n.endswith("proj.weight") for n in changed)
    assert len(changed) == 7 and all(torch.equal(changed[n], merged[n]) for n in changed)  # q k v o gate up down

    from officegym.core.policy import Policy
    from officegym.train.modeling import push_weights

    class Engine(Policy):
        takes_weights = True
        synced_version = None

        def __init__(self, partial):
            self.partial_weights = partial
            self.got = None

        def sync_weights(self, weights, version=None, partial=False):
            self.got, self.synced_version, self.partial = dict(weights), version, partial
            return True

    partial, whole = Engine(True), Engine(False)
    assert push_weights(partial, top, 1) and push_weights(whole, top, 1) and not push_weights(partial, top, 1)
    assert set(partial.got) == set(changed) and partial.partial and set(whole.got) == set(merged)


def test_last_layers_is_validated():
    from officegym.train.config import LoraConfig

    with pytest.raises(ValueError):
        LoraConfig(enabled=True, last_layers=0)
