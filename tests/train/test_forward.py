"""The training forward with a shared prefix (train/forward.py): "exact" gives the loss AND the
gradient of the unshared forward (full weights, LoRA, rows that share a first turn and diverge
after it, trained tokens inside the prefix, padding), "no_grad" gives the exact loss; the shared
length is right; little sharing falls back to the plain forward; SFT learns with either; a kept
frozen trunk (train/trunk.py) changes none of it."""

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
    _same_gradients(g_a, g_b)


def _same_gradients(g_a, g_b):
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
    from officegym.train.forward import forward_logprobs, head_split

    tm = _tm(tiny_model_dir)
    assert head_split(tm.model) is not None  # a Llama: the fast path runs
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


# -- the frozen trunk's cache (train/trunk.py): with adapters on the last layers only, the first
# layers' outputs are kept across steps and reused for prefixes that share tokens; the log-probs and
# the gradient equal the uncached forward's, the cache stays within its budget, and a decoder whose
# outputs the kept trunk cannot reproduce turns it off.


def _top_tm(model_dir, last_layers=2, lora=True):
    pytest.importorskip("peft")
    from officegym.train.config import LoraConfig, ModelConfig
    from officegym.train.modeling import load_train_model

    tm = load_train_model(ModelConfig(name=str(model_dir), device="cpu", threads=1),
                          LoraConfig(enabled=lora, r=4, last_layers=last_layers), seed=0)
    with torch.no_grad():  # B starts at 0: perturb it so the adapters matter
        for name, p in tm.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.05)
    tm.model.eval()
    return tm


def _same(a, b, atol=1e-5):
    lp_a, ent_a, off_a, loss_a, g_a = a
    lp_b, ent_b, off_b, loss_b, g_b = b
    assert off_a == off_b and lp_a.shape == lp_b.shape
    assert torch.allclose(lp_a, lp_b, atol=atol), (lp_a - lp_b).abs().max()
    assert torch.allclose(loss_a, loss_b, atol=1e-6) and torch.allclose(ent_a, ent_b, atol=1e-5)
    _same_gradients(g_a, g_b)


def test_the_trunk_is_the_layers_without_adapters(tiny_deep_model_dir):
    from officegym.train.trunk import TrunkCache

    tm = _top_tm(tiny_deep_model_dir, last_layers=2)
    cache = tm.keep_trunk(64)
    assert cache is not None and cache.n == 2 and cache.n_layers == 4
    assert tm.keep_trunk(0) is None  # 0 MB: off
    every = _top_tm(tiny_deep_model_dir, last_layers=None)
    assert every.keep_trunk(64) is None  # every layer trains: nothing to keep
    full = _top_tm(tiny_deep_model_dir, lora=False)
    assert full.keep_trunk(64) is None
    assert TrunkCache.build(tm.base.model, 64).n == 2


@pytest.mark.parametrize("share", ["exact", "no_grad"])
@pytest.mark.parametrize("kind", ["prompt", "multi_turn", "trained_prefix"])
def test_kept_trunk_gives_the_uncached_log_probs_and_gradient(tiny_deep_model_dir, share, kind):
    tm = _top_tm(tiny_deep_model_dir)
    batch = {"prompt": _batch, "multi_turn": _multi_turn_batch,
             "trained_prefix": lambda: _batch(prefix_len=40, first_trained=33)}[kind]()
    adv = torch.tensor([1.0, -0.5, 2.0, -1.5][: batch["input_ids"].shape[0]])
    plain = _loss_and_grads(tm, batch, share, adv)
    cache = tm.keep_trunk(64)
    first = _loss_and_grads(tm, batch, share, adv)  # fills the cache (and checks it once)
    assert cache.enabled and cache.checked and cache.entries
    counts = cache.take_counts()
    assert counts["train/trunk_computed_tokens"] > 0
    again = _loss_and_grads(tm, batch, share, adv)  # the prefix's trunk from the cache
    counts = cache.take_counts()
    assert counts["train/trunk_reused_tokens"] >= 24
    _same(plain, first)
    _same(plain, again)


def test_a_prompt_reuses_the_prefix_it_shares_with_a_kept_one(tiny_deep_model_dir):
    """Two prompts with the same 30-token "tool list" and different "user turns": the second runs
    the trunk only from where they differ, and still gets the uncached result."""
    tm = _top_tm(tiny_deep_model_dir)
    one = _batch(prefix_len=40, seed=1)
    two = _batch(prefix_len=40, seed=2)
    two["input_ids"][:, :30] = one["input_ids"][0, :30]
    adv = torch.tensor([1.0, -0.5, 2.0])
    plain = _loss_and_grads(tm, two, "no_grad", adv)
    cache = tm.keep_trunk(64)
    _loss_and_grads(tm, one, "no_grad", adv)
    cache.take_counts()
    got = _loss_and_grads(tm, two, "no_grad", adv)
    counts = cache.take_counts()
    assert counts["train/trunk_reused_tokens"] == 30
    rows_tokens = int(two["attention_mask"][:, 40:].sum())  # the rows' own tokens after the 40-token prompt
    assert counts["train/trunk_computed_tokens"] == 40 - 30 + rows_tokens
    _same(plain, got)
    assert len(cache.entries) == 1  # the second ran 10 tokens of trunk: the first serves its tool list


def test_a_prompt_that_adds_a_long_tail_is_kept_too(tiny_deep_model_dir, monkeypatch):
    from officegym.train import trunk

    monkeypatch.setattr(trunk, "KEEP_TAIL", 5)
    tm = _top_tm(tiny_deep_model_dir)
    cache = tm.keep_trunk(64)
    one = _batch(prefix_len=40, seed=1)
    two = _batch(prefix_len=40, seed=2)
    two["input_ids"][:, :30] = one["input_ids"][0, :30]
    for b in (one, two):
        _loss_and_grads(tm, b, "no_grad", torch.ones(3))
    assert len(cache.entries) == 2  # neither prompt is a prefix of the other: both kept


def test_the_cache_keeps_within_its_budget(tiny_deep_model_dir):
    from officegym.train.trunk import TrunkCache

    tm = _top_tm(tiny_deep_model_dir)
    cache = tm.keep_trunk(64)
    _loss_and_grads(tm, _batch(prefix_len=40, seed=1), "no_grad", torch.ones(3))
    one = next(iter(cache.entries.values())).nbytes
    small = TrunkCache(cache.decoder, cache.n, int(2.5 * one))
    tm.trunk_cache = small
    for seed in range(2, 7):
        _loss_and_grads(tm, _batch(prefix_len=40, seed=seed), "no_grad", torch.ones(3))
        assert small.bytes <= small.budget and small.bytes == sum(e.nbytes for e in small.entries.values())
    assert len(small.entries) == 2  # the least recently used went first
    tiny = TrunkCache(cache.decoder, cache.n, one // 2)
    tm.trunk_cache = tiny
    _loss_and_grads(tm, _batch(prefix_len=40, seed=1), "no_grad", torch.ones(3))
    assert not tiny.entries and tiny.bytes == 0  # larger than the whole budget: not kept


def test_a_decoder_the_kept_trunk_cannot_reproduce_turns_it_off(tiny_deep_model_dir, caplog):
    tm = _top_tm(tiny_deep_model_dir)
    batch = _batch()
    adv = torch.tensor([1.0, -0.5, 2.0])
    plain = _loss_and_grads(tm, batch, "exact", adv)
    cache = tm.keep_trunk(64)
    real = cache.run_shared

    def wrong(*args, **kwargs):
        pre, rest = real(*args, **kwargs)
        return pre + 1.0, rest

    cache.run_shared = wrong
    with caplog.at_level("WARNING"):
        got = _loss_and_grads(tm, batch, "exact", adv)
    assert not cache.enabled and not cache.entries and "trunk" in caplog.text
    _same(plain, got)


def test_a_longer_prefix_replaces_the_kept_one_it_extends(tiny_deep_model_dir, monkeypatch):
    from officegym.train import trunk

    monkeypatch.setattr(trunk, "KEEP_TAIL", 5)
    tm = _top_tm(tiny_deep_model_dir)
    cache = tm.keep_trunk(64)
    ids = _batch(prefix_len=40)["input_ids"][0, :40]
    short = cache.prefix(ids[:30], tm)
    long = cache.prefix(ids, tm)
    assert len(cache.entries) == 1 and len(next(iter(cache.entries.values())).ids) == 40
    assert cache.take_counts()["train/trunk_reused_tokens"] == 30
    assert torch.allclose(long.hidden[:30], short.hidden, atol=1e-5)
    again = cache.prefix(ids[:20], tm)  # served from the kept 40 tokens: no new entry
    assert len(cache.entries) == 1 and cache.take_counts()["train/trunk_computed_tokens"] == 0
    assert torch.equal(again.hidden, long.hidden[:20])
