"""The shared-prompt forward (`sft.prompt_grad=false`): exact log-probs, the right shared length,
fallback when little is shared, and SFT still learning with it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def _tm(tiny_model_dir, lora=False):
    from officegym.train.config import LoraConfig, ModelConfig
    from officegym.train.modeling import load_train_model

    return load_train_model(ModelConfig(name=str(tiny_model_dir), device="cpu", threads=1),
                            LoraConfig(enabled=lora, r=4), seed=0)


def _batch(prefix_len=40, suffixes=(12, 20, 7), first_trained=None, vocab=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    prefix = torch.randint(5, vocab, (prefix_len,), generator=g)
    width = prefix_len + max(suffixes)
    ids = torch.zeros((len(suffixes), width), dtype=torch.long)
    attn = torch.zeros_like(ids)
    mask = torch.zeros((len(suffixes), width))
    for r, n in enumerate(suffixes):
        ids[r, :prefix_len] = prefix
        ids[r, prefix_len : prefix_len + n] = torch.randint(5, vocab, (n,), generator=g)
        attn[r, : prefix_len + n] = 1
        start = first_trained if first_trained is not None else prefix_len + 2
        mask[r, start : prefix_len + n] = 1
    return {"input_ids": ids, "attention_mask": attn, "loss_mask": mask}


def test_shared_prefix_length():
    from officegym.train.prefix import shared_prefix_length

    b = _batch(prefix_len=40)
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"]) == 40
    b = _batch(prefix_len=40, first_trained=25)  # trained tokens inside the shared part: stop one before
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"]) == 24
    b = _batch(prefix_len=40)
    b["input_ids"][1, 30] += 1  # rows differ from position 30
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"]) == 30
    b["loss_mask"].zero_()
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"]) == 0


@pytest.mark.parametrize("lora", [False, True])
def test_shared_prefix_forward_equals_the_full_forward(tiny_model_dir, lora):
    from officegym.train.grpo import _forward_logprobs
    from officegym.train.prefix import forward_logprobs_shared_prefix

    if lora:
        pytest.importorskip("peft")
    tm = _tm(tiny_model_dir, lora)
    b = _batch()
    full, _, off_full = _forward_logprobs(tm.model, tm, b, 1.0)
    fast, _, off_fast = forward_logprobs_shared_prefix(tm.model, tm, b, 1.0)
    m = b["loss_mask"][:, off_full:].bool()
    assert off_full == off_fast and full.shape == fast.shape
    assert torch.allclose(full[m], fast[m], atol=1e-5), (full[m] - fast[m]).abs().max()
    # the gradient reaches the weights through the unshared rest
    (-(fast * b["loss_mask"][:, off_fast:]).sum()).backward()
    grads = [p.grad for p in tm.trainable_parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)


def test_little_shared_falls_back_to_the_full_forward(tiny_model_dir):
    from officegym.train.grpo import _forward_logprobs
    from officegym.train.prefix import MIN_SHARED, forward_logprobs_shared_prefix

    tm = _tm(tiny_model_dir)
    b = _batch(prefix_len=MIN_SHARED - 2)
    with torch.no_grad():
        a, _, _ = _forward_logprobs(tm.model, tm, b, 1.0)
        c, _, _ = forward_logprobs_shared_prefix(tm.model, tm, b, 1.0)
    assert torch.equal(a, c)


def test_sft_learns_without_prompt_gradient(tmp_path, make_cfg, tiny_model_dir, workplace_tasks, tiny_world_dir):
    from officegym.train.sft import train_sft

    cfg = make_cfg("sft", tmp_path / "sft", f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}",
                   f"data.world={tiny_world_dir}", "data.val_fraction=0", "sft.prompt_grad=false", "sft.max_steps=12",
                   "sft.batch_size=4", "sft.micro_batch_size=4", "optim.lr=3e-3", "optim.min_lr=3e-3")
    hist = train_sft(cfg).history
    assert hist[-1]["train/loss"] < 0.6 * hist[0]["train/loss"], [h["train/loss"] for h in hist]
