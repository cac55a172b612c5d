"""The training forward with a shared prefix (train/forward.py): "exact" gives the loss AND the
gradient of the unshared forward (full weights, LoRA, rows that share a first turn and diverge
after it, trained tokens inside the prefix, padding), "no_grad" gives the exact loss; the shared
length is right; little sharing falls back to the plain forward; SFT learns with either."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def _tm(tiny_model_dir, lora=False):
    from officegym.train.config import LoraConfig, ModelConfig
    from officegym.train.modeling import load_train_model

    tm = load_train_model(ModelConfig(name=str(tiny_model_dir), device="cpu", threads=1),
                          LoraConfig(enabled=lora, r=4), seed=0)
    if lora:  # B starts at 0: perturb it so the adapter matters and its A matrix gets a gradient
        with torch.no_grad():
            for name, p in tm.model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.05)
    tm.model.eval()
    return tm


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


def _multi_turn_batch(seed=0, vocab=300):
    """A GRPO group: one prompt (30 tokens), a first turn (8 sampled tokens) the first three rows
    share, a tool result (5 tokens, mask 0), a second turn that differs per row; the fourth row
    differs from its first sampled token on."""
    g = torch.Generator().manual_seed(seed)
    rand = lambda n: torch.randint(5, vocab, (n,), generator=g)  # noqa: E731
    prompt, turn1, tool = rand(30), rand(8), rand(5)
    rows = []
    for n in (6, 11, 3):
        ids = torch.cat([prompt, turn1, tool, rand(n)])
        mask = torch.cat([torch.zeros(30), torch.ones(8), torch.zeros(5), torch.ones(n)])
        rows.append((ids, mask))
    other = rand(9)
    rows.append((torch.cat([prompt, other]), torch.cat([torch.zeros(30), torch.ones(9)])))
    width = max(len(ids) for ids, _ in rows)
    ids_t = torch.zeros((len(rows), width), dtype=torch.long)
    attn = torch.zeros_like(ids_t)
    mask_t = torch.zeros((len(rows), width))
    for r, (ids, mask) in enumerate(rows):
        ids_t[r, : len(ids)] = ids
        attn[r, : len(ids)] = 1
        mask_t[r, : len(ids)] = mask
    return {"input_ids": ids_t, "attention_mask": attn, "loss_mask": mask_t}


def test_shared_prefix_length():
    from officegym.train.forward import shared_prefix_length

    b = _batch(prefix_len=40)
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"], "no_grad") == 40
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"], "exact") == 40
    b = _batch(prefix_len=40, first_trained=25)  # trained tokens inside the shared part
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"], "no_grad") == 24
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"], "exact") == 40
    b = _batch(prefix_len=40)
    b["input_ids"][1, 30] += 1  # rows differ from position 30
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"], "exact") == 30
    same = _batch(prefix_len=40, suffixes=(5, 5))
    same["input_ids"][1] = same["input_ids"][0]  # identical rows keep one token each outside the prefix
    assert shared_prefix_length(same["input_ids"], same["attention_mask"], same["loss_mask"], "exact") == 44
    b["loss_mask"].zero_()
    assert shared_prefix_length(b["input_ids"], b["attention_mask"], b["loss_mask"], "exact") == 0


def _loss_and_grads(tm, batch, share, advantages):
    from officegym.train.forward import forward_logprobs

    tm.model.zero_grad(set_to_none=True)
    lp, entropy, offset = forward_logprobs(tm.model, tm, batch, 0.9, share=share, want_entropy=True)
    mask = batch["loss_mask"][:, offset:]
    # A GRPO-like loss: each row's advantage times its token log-probs, token mean.
    loss = -(advantages[:, None] * lp * mask).sum() / mask.sum()
    loss.backward()
    grads = {n: p.grad.clone() for n, p in tm.model.named_parameters() if p.grad is not None}
    return lp.detach(), entropy, offset, loss.detach(), grads


@pytest.mark.parametrize("lora", [False, True])
@pytest.mark.parametrize("kind", ["prompt", "multi_turn", "trained_prefix"])
def test_exact_sharing_gives_the_unshared_loss_and_gradient(tiny_model_dir, lora, kind):
    if lora:
        pytest.importorskip("peft")
    from officegym.train.forward import shared_prefix_length

    tm = _tm(tiny_model_dir, lora)
    batch = {"prompt": _batch, "multi_turn": _multi_turn_batch,
             "trained_prefix": lambda: _batch(prefix_len=40, first_trained=33)}[kind]()
    shared = shared_prefix_length(batch["input_ids"], batch["attention_mask"], batch["loss_mask"], "exact")
    assert shared >= 30  # the sharing path really runs
    adv = torch.tensor([1.0, -0.5, 2.0, -1.5][: batch["input_ids"].shape[0]])
    lp_a, ent_a, off_a, loss_a, g_a = _loss_and_grads(tm, batch, "off", adv)
    lp_b, ent_b, off_b, loss_b, g_b = _loss_and_grads(tm, batch, "exact", adv)
    m = batch["loss_mask"][:, off_a:].bool()
    assert off_a == off_b and lp_a.shape == lp_b.shape
    assert torch.allclose(lp_a[m], lp_b[m], atol=1e-5), (lp_a[m] - lp_b[m]).abs().max()
    assert torch.allclose(loss_a, loss_b, atol=1e-6)
    assert torch.allclose(ent_a, ent_b, atol=1e-5) and float(ent_a) > 0
    assert g_a.keys() == g_b.keys() and g_a
    for name in g_a:
        scale = float(g_a[name].abs().max()) + 1e-12
        err = float((g_a[name] - g_b[name]).abs().max())
        assert err <= 1e-4 * scale + 1e-7, (name, err, scale)


def test_no_grad_sharing_keeps_the_loss_and_truncates_the_gradient(tiny_model_dir):
    tm = _tm(tiny_model_dir)
    b = _batch()
    adv = torch.ones(3)
    lp_a, _, off, loss_a, g_a = _loss_and_grads(tm, b, "off", adv)
    lp_b, _, off_b, loss_b, g_b = _loss_and_grads(tm, b, "no_grad", adv)
    m = b["loss_mask"][:, off:].bool()
    assert off == off_b and torch.allclose(lp_a[m], lp_b[m], atol=1e-5)
    assert torch.allclose(loss_a, loss_b, atol=1e-6)
    # the gradient still reaches the weights, but differs: the prefix's keys and values are constants
    assert any(float(g.abs().sum()) > 0 for g in g_b.values())
    assert any(not torch.allclose(g_a[n], g_b[n], atol=1e-7) for n in g_a)


def test_little_shared_falls_back_to_the_plain_forward(tiny_model_dir):
    from officegym.train.forward import MIN_SHARED, forward_logprobs

    tm = _tm(tiny_model_dir)
    b = _batch(prefix_len=MIN_SHARED - 2)
    with torch.no_grad():
        a, _, _ = forward_logprobs(tm.model, tm, b, 1.0, share="off")
        c, _, _ = forward_logprobs(tm.model, tm, b, 1.0, share="exact")
    assert torch.equal(a, c)
    with pytest.raises(ValueError, match="share"):
        forward_logprobs(tm.model, tm, b, 1.0, share="maybe")  # type: ignore[arg-type]


@pytest.mark.parametrize("prompt_grad", [True, False])
def test_sft_learns_with_a_shared_prefix(tmp_path, make_cfg, tiny_model_dir, workplace_tasks, tiny_world_dir, prompt_grad):
    from officegym.train.sft import train_sft

    cfg = make_cfg("sft", tmp_path / "sft", f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}",
                   f"data.world={tiny_world_dir}", "data.val_fraction=0", f"sft.prompt_grad={str(prompt_grad).lower()}",
                   "sft.max_steps=12", "sft.batch_size=4", "sft.micro_batch_size=4", "optim.lr=3e-3", "optim.min_lr=3e-3")
    hist = train_sft(cfg).history
    assert hist[-1]["train/loss"] < 0.6 * hist[0]["train/loss"], [h["train/loss"] for h in hist]


def test_prefix_micro_batches_keep_rows_with_a_long_common_prefix_together():
    from officegym.train.forward import SPLIT_LOSS, prefix_micro_batches

    tools_a, tools_b = list(range(1000, 1300)), list(range(2000, 2300))
    rows = [[*tools_b, 1, 2], [*tools_a, 7], [*tools_a, 5, 5], [*tools_b, 3], [*tools_a, 6], [9, 9, 9]]
    chunks = prefix_micro_batches(rows, max_rows=8)
    as_sets = sorted(sorted(c) for c in chunks)
    assert as_sets == [[0, 3], [1, 2, 4], [5]]
    # the row cap splits a long run of one prefix
    assert [len(c) for c in prefix_micro_batches([[*tools_a, k] for k in range(5)], max_rows=2)] == [2, 2, 1]
    # a row that would shorten the shared prefix by more than SPLIT_LOSS starts a new micro-batch
    late = tools_a[: 300 - SPLIT_LOSS - 10] + [99999] * 400  # sorts after the others
    assert sorted(sorted(c) for c in prefix_micro_batches([[*tools_a, 1], [*tools_a, 2], late], 8)) == [[0, 1], [2]]
    near = tools_a[: 300 - SPLIT_LOSS + 10] + [99999] * 400
    assert sorted(sorted(c) for c in prefix_micro_batches([[*tools_a, 1], [*tools_a, 2], near], 8)) == [[0, 1, 2]]
    assert prefix_micro_batches([], 4) == []
    # the token budget counts the shared prefix once and every row's rest
    group = [tools_a + [k] * 50 for k in range(6)]  # 300 shared + 50 each
    assert [len(c) for c in prefix_micro_batches(group, 8, max_tokens=300 + 4 * 51)] == [4, 2]
    assert [len(c) for c in prefix_micro_batches(group, 8, max_tokens=None)] == [6]


def test_grouped_stream_gives_batches_of_one_group_and_resumes():
    from officegym.train.data import DataError, GroupedStream

    items = [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(7)] + ["c0", "d0"]
    groups = [list(range(10)), list(range(10, 17)), [17], [18]]
    stream = GroupedStream(items, groups, run=4, seed=3)
    assert len(stream._order) % 4 == 0  # whole batches: alignment survives epoch boundaries
    epoch = [stream.take(4) for _ in range(len(stream._order) // 4)]
    assert set(x for b in epoch for x in b) == set(items)
    kinds = sorted("".join(sorted({x[0] for x in b})) for b in epoch)
    assert kinds == ["a", "a", "a", "b", "b", "cd"]  # one group per batch; the small groups share one
    for b in (stream.take(4) for _ in range(12)):  # later epochs stay aligned
        assert len({x[0] for x in b}) == 1 or set(b) <= {"c0", "d0"}
    state = stream.state_dict()
    again = GroupedStream(items, groups, run=4, seed=3)
    again.load_state_dict(state)
    assert again.take(9) == stream.take(9)
    with pytest.raises(DataError, match="cover"):
        GroupedStream(items, [[0, 1]], run=4, seed=0)


def test_log_probs_equal_the_model_logits_and_need_no_vocabulary_wide_prompt_logits(tiny_model_dir):
    """The head applied to masked positions only gives the log-softmax of the model's own logits."""
    from officegym.train.forward import _head_split, forward_logprobs

    tm = _tm(tiny_model_dir)
    assert _head_split(tm.model) is not None  # a Llama: the fast path runs
    b = _multi_turn_batch()
    with torch.no_grad():
        lp, _, off = forward_logprobs(tm.model, tm, b, 0.7, share="exact")
        logits = tm.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits.float() / 0.7
    ref = torch.log_softmax(logits[:, :-1], -1).gather(-1, b["input_ids"][:, 1:, None])[..., 0]
    m = b["loss_mask"].bool()
    assert torch.allclose(lp[m[:, off:]], ref[m[:, 1:]], atol=1e-5)
    assert float(lp[~m[:, off:]].abs().sum()) == 0.0
    empty = {**b, "loss_mask": torch.zeros_like(b["loss_mask"])}
    lp0, _, _ = forward_logprobs(tm.model, tm, empty, 1.0)
    (lp0.sum() * 0).backward()  # no trained token: still a graph, a zero gradient
