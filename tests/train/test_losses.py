"""The policy loss against a slow reference: a loop over tokens with if/else on float values, whose
gradient is torch autograd through that loop. Loss value, gradient w.r.t. logprobs and statistics
are compared for every option, on random tensors with fully masked rows and garbage on pads."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from officegym.train.losses import (  # noqa: E402
    aggregate,
    entropy_from_logits,
    global_normaliser,
    policy_loss,
    token_logprobs,
)

torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------------
# The reference


def reference_loss(lp, old, adv, mask, *, eps_low=0.2, eps_high=0.2, dual_clip=None, aggregation="token_mean",
                   normaliser=None, ref=None, kl_beta=0.0, sampler=None, is_cap=None):
    """`lp`: float64 leaf [B, T]; every other input: nested lists of floats (adv: [B] or [B][T])."""
    rows, counts = [], []
    n_tok = n_clip = n_dual = 0
    ratios, kls, weights = [], [], []
    for b in range(len(mask)):
        row, n = lp.new_zeros(()), 0
        for t in range(len(mask[b])):
            if not mask[b][t]:
                continue
            a = adv[b][t] if isinstance(adv[b], list) else adv[b]
            r = torch.exp(lp[b, t] - old[b][t])
            lo, hi = 1.0 - eps_low, 1.0 + eps_high
            if r.item() < lo:
                r_clip = lp.new_tensor(lo)
            elif r.item() > hi:
                r_clip = lp.new_tensor(hi)
            else:
                r_clip = r
            surrogate, clipped_surrogate = r * a, r_clip * a
            if clipped_surrogate.item() < surrogate.item():
                token_loss, n_clip = -clipped_surrogate, n_clip + 1
            else:
                token_loss = -surrogate
            if dual_clip is not None and a < 0 and token_loss.item() > dual_clip * -a:
                token_loss, n_clip, n_dual = lp.new_tensor(dual_clip * -a), n_clip + 1, n_dual + 1
            if ref is not None:
                d = ref[b][t] - lp[b, t]
                k3 = torch.exp(d) - d - 1
                kls.append(k3.item())
                if kl_beta > 0:
                    token_loss = token_loss + kl_beta * k3
            if sampler is not None:
                w = math.exp(old[b][t] - sampler[b][t])
                if is_cap is not None:
                    w = min(w, is_cap)
                weights.append(w)
                token_loss = token_loss * w
            ratios.append(r.item())
            row, n, n_tok = row + token_loss, n + 1, n_tok + 1
        rows.append(row)
        counts.append(n)
    if aggregation == "seq_mean":
        total = sum((row / n for row, n in zip(rows, counts) if n), lp.new_zeros(()))
        denominator = normaliser if normaliser is not None else max(sum(1 for n in counts if n), 1)
    else:
        total = sum(rows, lp.new_zeros(()))
        denominator = normaliser if normaliser is not None else max(n_tok, 1)
    stats = {
        "tokens": n_tok,
        "clip_fraction": n_clip / n_tok if n_tok else 0.0,
        "dual_clip_fraction": n_dual / n_tok if n_tok else 0.0,
        "ratio_mean": sum(ratios) / n_tok if n_tok else 1.0,
        "ratio_max": max(ratios) if n_tok else 1.0,
        "kl": sum(kls) / n_tok if (n_tok and ref is not None) else 0.0,
        "is_weight_mean": sum(weights) / n_tok if (n_tok and sampler is not None) else 1.0,
    }
    return total / denominator, stats


# ---------------------------------------------------------------------------------------------------
# Inputs


def make_inputs(seed: int, b: int, t: int, per_token: bool):
    g = torch.Generator().manual_seed(seed)
    lp = -3 * torch.rand(b, t, generator=g)
    old = lp + 0.6 * torch.randn(b, t, generator=g)  # ratios from ~0.2 to ~5: every clip is reached
    ref = lp + 0.5 * torch.randn(b, t, generator=g)
    sampler = old + 0.4 * torch.randn(b, t, generator=g)
    adv = torch.randn(b, t, generator=g) if per_token else torch.randn(b, generator=g)
    mask = torch.rand(b, t, generator=g) < 0.7
    if b > 1:
        mask[1] = False  # a fully masked row (padding of a short episode, a dropped sample)
    return lp, old, ref, sampler, adv, mask


def with_garbage_on_pads(old, ref, sampler, adv, mask):
    """What padded positions may hold in practice: -inf, NaN. The loss must ignore them."""
    pad = ~mask
    old, ref, sampler = old.masked_fill(pad, -math.inf), ref.masked_fill(pad, math.inf), sampler.masked_fill(pad, math.nan)
    if adv.dim() == 2:
        adv = adv.masked_fill(pad, math.nan)
    return old, ref, sampler, adv


def run_both(seed, b, t, per_token, case):
    lp, old, ref, sampler, adv, mask = make_inputs(seed, b, t, per_token)
    kw = {k: v for k, v in case.items() if k not in ("ref", "sampler")}
    ref_in = ref if case.get("ref") else None
    sampler_in = sampler if case.get("sampler") else None
    want_lp = lp.double().requires_grad_(True)
    want_loss, want_stats = reference_loss(
        want_lp, old.tolist(), adv.tolist(), mask.tolist(),
        ref=ref.tolist() if ref_in is not None else None,
        sampler=sampler.tolist() if sampler_in is not None else None, **kw,
    )
    if want_loss.requires_grad:
        want_loss.backward()
    want_grad = want_lp.grad if want_lp.grad is not None else torch.zeros_like(want_lp)

    g_old, g_ref, g_sampler, g_adv = with_garbage_on_pads(old, ref, sampler, adv, mask)
    got_lp = lp.clone().requires_grad_(True)
    out = policy_loss(
        got_lp, g_old, g_adv, mask,
        ref_logprobs=g_ref if ref_in is not None else None,
        sampler_logprobs=g_sampler if sampler_in is not None else None, **kw,
    )
    out.loss.backward()
    return out, got_lp.grad, want_loss.item(), want_grad, want_stats


def assert_matches(out, grad, want_loss, want_grad, want_stats):
    assert out.loss.dim() == 0 and torch.isfinite(out.loss)
    assert out.loss.item() == pytest.approx(want_loss, rel=1e-5, abs=1e-6)
    assert torch.isfinite(grad).all()
    assert torch.allclose(grad.double(), want_grad, rtol=1e-4, atol=1e-6), (grad, want_grad)
    assert out.tokens == want_stats["tokens"]
    for name in ("clip_fraction", "dual_clip_fraction", "ratio_mean", "ratio_max", "kl", "is_weight_mean"):
        assert getattr(out, name) == pytest.approx(want_stats[name], rel=1e-5, abs=1e-6), name


CASES = {
    "defaults": {},
    "asymmetric eps": {"eps_low": 0.2, "eps_high": 0.28},
    "wide asymmetric eps": {"eps_low": 0.1, "eps_high": 0.5},
    "eps zero": {"eps_low": 0.0, "eps_high": 0.0},
    "dual clip": {"dual_clip": 3.0},
    "tight dual clip": {"dual_clip": 1.3, "eps_high": 0.28},
    "seq mean": {"aggregation": "seq_mean"},
    "constant": {"aggregation": "constant", "normaliser": 37.0},
    "token mean, given normaliser": {"normaliser": 50.0},
    "seq mean, given normaliser": {"aggregation": "seq_mean", "normaliser": 7.0},
    "kl statistic only": {"ref": True, "kl_beta": 0.0},
    "kl": {"ref": True, "kl_beta": 0.1},
    "is, no cap": {"sampler": True},
    "is, capped (tis)": {"sampler": True, "is_cap": 1.2},
    "everything, seq mean": {
        "sampler": True, "is_cap": 2.0, "ref": True, "kl_beta": 0.05, "dual_clip": 3.0, "eps_high": 0.28,
        "aggregation": "seq_mean",
    },
    "everything, constant": {
        "sampler": True, "is_cap": 1.5, "ref": True, "kl_beta": 0.2, "dual_clip": 2.0, "eps_low": 0.1,
        "eps_high": 0.3, "aggregation": "constant", "normaliser": 64.0,
    },
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("per_token", [False, True], ids=["adv[B]", "adv[B,T]"])
def test_matches_the_loop_reference(name, per_token):
    for seed, (b, t) in enumerate([(3, 7), (4, 10)]):
        assert_matches(*run_both(seed, b, t, per_token, CASES[name]))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    shape=st.tuples(st.integers(1, 4), st.integers(1, 9)),
    per_token=st.booleans(),
    eps=st.sampled_from([(0.2, 0.2), (0.2, 0.28), (0.0, 0.5)]),
    dual_clip=st.sampled_from([None, 1.5, 3.0]),
    aggregation=st.sampled_from([("token_mean", None), ("token_mean", 13.0), ("seq_mean", None), ("constant", 20.0)]),
    kl=st.sampled_from([(False, 0.0), (True, 0.0), (True, 0.3)]),
    is_=st.sampled_from([(False, None), (True, None), (True, 1.1), (False, 2.0)]),
)
def test_any_combination_matches_the_reference(seed, shape, per_token, eps, dual_clip, aggregation, kl, is_):
    case = {
        "eps_low": eps[0], "eps_high": eps[1], "dual_clip": dual_clip, "aggregation": aggregation[0],
        "normaliser": aggregation[1], "ref": kl[0], "kl_beta": kl[1], "sampler": is_[0], "is_cap": is_[1],
    }
    assert_matches(*run_both(seed, shape[0], shape[1], per_token, case))


def test_every_clip_is_reached_by_the_random_inputs():
    """Guards the golden tests: the options they compare are actually exercised."""
    out, *_ = run_both(1, 4, 10, False, CASES["tight dual clip"])
    assert 0 < out.dual_clip_fraction < out.clip_fraction < 1
    out, *_ = run_both(1, 4, 10, False, CASES["is, capped (tis)"])
    assert 0.5 < out.is_weight_mean < 1.2 and out.kl == 0.0
    uncapped, *_ = run_both(1, 4, 10, False, CASES["is, no cap"])
    assert uncapped.is_weight_mean > out.is_weight_mean


# ---------------------------------------------------------------------------------------------------
# Hand-computed values


def _one_token(log_ratio: float, advantage: float, **kw):
    lp = torch.tensor([[log_ratio]], requires_grad=True)
    out = policy_loss(lp, torch.zeros(1, 1), torch.tensor([advantage]), torch.ones(1, 1), **kw)
    out.loss.backward()
    return out.loss.item(), lp.grad.item(), out


def test_hand_computed_clips():
    # A > 0, r = 1.5: clipped at 1 + eps_high = 1.28 (no gradient); with eps_high 0.6 it is not.
    assert _one_token(math.log(1.5), 1.0, eps_high=0.28)[:2] == pytest.approx((-1.28, 0.0))
    assert _one_token(math.log(1.5), 1.0, eps_high=0.6)[:2] == pytest.approx((-1.5, -1.5))
    # A < 0, r = 0.5: the pessimistic term is clip(r) A = -0.8, loss 0.8, no gradient.
    assert _one_token(math.log(0.5), -1.0)[:2] == pytest.approx((0.8, 0.0))
    # A < 0, r = 5: PPO keeps r A = -5 (loss 5, gradient r|A| = 5); the dual clip caps the loss at 3|A|.
    assert _one_token(math.log(5.0), -1.0)[:2] == pytest.approx((5.0, 5.0))
    loss, grad, out = _one_token(math.log(5.0), -2.0, dual_clip=3.0)
    assert (loss, grad) == pytest.approx((6.0, 0.0))
    assert out.clip_fraction == 1.0 and out.dual_clip_fraction == 1.0 and out.ratio_max == pytest.approx(5.0)


def test_hand_computed_kl_and_importance_weight():
    lp = torch.tensor([[-1.0]], requires_grad=True)
    out = policy_loss(
        lp, torch.tensor([[-1.0]]), torch.tensor([0.0]), torch.ones(1, 1),
        ref_logprobs=torch.tensor([[-1.5]]), kl_beta=0.5,
        sampler_logprobs=torch.tensor([[-1.0 - math.log(4.0)]]), is_cap=3.0,
    )
    out.loss.backward()
    k3 = math.exp(-0.5) + 0.5 - 1
    assert out.kl == pytest.approx(k3)
    assert out.is_weight_mean == pytest.approx(3.0)  # exp(log 4) = 4, capped at 3
    assert out.loss.item() == pytest.approx(3.0 * 0.5 * k3, rel=1e-6)
    # d/dlp of w beta k3 = w beta (1 - exp(ref - lp))
    assert lp.grad.item() == pytest.approx(3.0 * 0.5 * (1 - math.exp(-0.5)), rel=1e-5)


def test_on_policy_loss_is_minus_the_mean_advantage():
    lp = torch.randn(3, 5).requires_grad_(True)
    adv = torch.tensor([1.0, -2.0, 0.5])
    mask = torch.tensor([[0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [0, 1, 0, 0, 0]])
    out = policy_loss(lp, lp.detach(), adv, mask)
    out.loss.backward()
    n = mask.sum()
    assert out.loss.item() == pytest.approx(float(-(adv[:, None] * mask).sum() / n), rel=1e-6)
    assert torch.allclose(lp.grad, -(adv[:, None] * mask) / n)
    assert out.clip_fraction == 0.0 and out.ratio_mean == pytest.approx(1.0) and out.tokens == 7


def test_no_masked_token_gives_zero_loss_with_a_graph():
    lp = torch.randn(2, 3, requires_grad=True)
    out = policy_loss(lp, lp.detach() + 1, torch.ones(2), torch.zeros(2, 3), normaliser=10.0)
    out.loss.backward()
    assert out.loss.item() == 0.0 and (lp.grad == 0).all()
    assert (out.tokens, out.ratio_mean, out.clip_fraction, out.kl, out.is_weight_mean) == (0, 1.0, 0.0, 0.0, 1.0)


def test_bfloat16_logprobs_are_computed_in_float32():
    lp32 = torch.randn(2, 6)
    old, adv, mask = lp32 + 0.1, torch.tensor([1.0, -1.0]), torch.ones(2, 6)
    lp16 = lp32.bfloat16().requires_grad_(True)
    out = policy_loss(lp16, old.bfloat16(), adv, mask)
    out.loss.backward()
    want = policy_loss(lp16.detach().float(), old.bfloat16().float(), adv, mask)
    assert out.loss.dtype == torch.float32 and out.loss.item() == pytest.approx(want.loss.item(), rel=1e-6)
    assert lp16.grad.dtype == torch.bfloat16


# ---------------------------------------------------------------------------------------------------
# Gradient accumulation


@pytest.mark.parametrize("aggregation", ["token_mean", "seq_mean", "constant"])
def test_micro_batches_with_the_global_normaliser_give_the_one_batch_gradient(aggregation):
    lp, old, ref, sampler, adv, mask = make_inputs(3, 6, 9, per_token=False)
    mask[0, :7] = False  # micro-batches with very different token counts
    mask[4] = False
    kw = {"dual_clip": 3.0, "eps_high": 0.28, "ref_logprobs": ref, "kl_beta": 0.1, "sampler_logprobs": sampler, "is_cap": 2.0}
    constant = 40.0 if aggregation == "constant" else None

    whole = lp.clone().requires_grad_(True)
    full = policy_loss(whole, old, adv, mask, aggregation=aggregation, normaliser=constant, **kw)
    full.loss.backward()

    parts = lp.clone().requires_grad_(True)
    splits = [slice(0, 2), slice(2, 6)]
    normaliser = constant or global_normaliser([mask[s] for s in splits], aggregation)
    total = 0.0
    for s in splits:
        micro_kw = {k: v[s] if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
        out = policy_loss(parts[s], old[s], adv[s], mask[s], aggregation=aggregation, normaliser=normaliser, **micro_kw)
        out.loss.backward()
        total += out.loss.item()
    assert total == pytest.approx(full.loss.item(), rel=1e-5, abs=1e-7)
    assert torch.allclose(parts.grad, whole.grad, rtol=1e-5, atol=1e-7)

    if aggregation != "constant":  # per-micro-batch normalisers weight the micro-batches wrongly
        naive = lp.clone().requires_grad_(True)
        for s in splits:
            micro_kw = {k: v[s] if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
            policy_loss(naive[s], old[s], adv[s], mask[s], aggregation=aggregation, **micro_kw).loss.backward()
        assert not torch.allclose(naive.grad, whole.grad, rtol=1e-3, atol=1e-5)


def test_global_normaliser_counts():
    masks = [torch.tensor([[1, 1, 0], [0, 0, 0]]), torch.tensor([[0, 1, 1]], dtype=torch.bool)]
    assert global_normaliser(masks, "token_mean") == 4.0
    assert global_normaliser(masks, "seq_mean") == 2.0
    assert global_normaliser([torch.zeros(2, 2)], "token_mean") == 1.0
    with pytest.raises(ValueError, match="constant"):
        global_normaliser(masks, "constant")


def test_aggregate_ignores_nan_on_masked_positions():
    values = torch.tensor([[1.0, float("nan")], [3.0, 5.0]])
    mask = torch.tensor([[True, False], [True, True]])
    assert aggregate(values, mask).item() == pytest.approx(3.0)
    assert aggregate(values, mask, "seq_mean").item() == pytest.approx((1.0 + 4.0) / 2)
    assert aggregate(values, mask, "constant", 9.0).item() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------------
# Input validation


def _valid():
    return {"logprobs": torch.zeros(2, 3), "old_logprobs": torch.zeros(2, 3), "advantages": torch.zeros(2), "mask": torch.ones(2, 3)}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"logprobs": torch.zeros(2, 3, 1)}, r"logprobs must be a \[B, T\]"),
        ({"old_logprobs": torch.zeros(2, 4)}, "old_logprobs must have the shape"),
        ({"old_logprobs": None}, "old_logprobs is required"),
        ({"advantages": torch.zeros(3)}, "advantages must have shape"),
        ({"mask": torch.ones(3, 2)}, "mask must have the shape"),
        ({"mask": torch.full((2, 3), 2.0)}, "only 0 and 1"),
        ({"eps_low": -0.1}, "eps_low and eps_high"),
        ({"eps_high": -0.1}, "eps_low and eps_high"),
        ({"eps_low": 1.5}, "eps_low must be <= 1"),
        ({"dual_clip": 1.0}, "dual_clip must be > 1"),
        ({"aggregation": "sum"}, "aggregation must be one of"),
        ({"aggregation": "constant"}, "needs a normaliser"),
        ({"normaliser": 0.0}, "normaliser must be"),
        ({"normaliser": float("inf")}, "normaliser must be"),
        ({"kl_beta": 0.1}, "needs ref_logprobs"),
        ({"kl_beta": -0.1}, "kl_beta must be"),
        ({"ref_logprobs": torch.zeros(2)}, "ref_logprobs must have the shape"),
        ({"sampler_logprobs": torch.zeros(1, 3)}, "sampler_logprobs must have the shape"),
        ({"is_cap": 0.0}, "is_cap must be"),
    ],
)
def test_bad_input_is_a_clear_value_error(change, match):
    kwargs = {**_valid(), **change}
    with pytest.raises(ValueError, match=match):
        policy_loss(**kwargs)


# ---------------------------------------------------------------------------------------------------
# token_logprobs and entropy_from_logits


def _reference_logprob(row: list[float], target: int, temperature: float) -> float:
    z = [v / temperature for v in row]
    top = max(z)
    return z[target] - (top + math.log(sum(math.exp(v - top) for v in z)))


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_token_logprobs_shift_and_values(temperature):
    g = torch.Generator().manual_seed(0)
    logits = 4 * torch.randn(2, 5, 11, generator=g)
    ids = torch.randint(0, 11, (2, 5), generator=g)
    got = token_logprobs(logits, ids, temperature=temperature)
    assert got.shape == (2, 5) and got.dtype == torch.float32
    for b in range(2):
        assert got[b, 0].item() == 0.0  # the first token has no prediction
        for t in range(1, 5):
            want = _reference_logprob(logits[b, t - 1].tolist(), int(ids[b, t]), temperature)
            assert got[b, t].item() == pytest.approx(want, abs=1e-5)


def test_token_logprobs_is_stable_and_differentiable():
    logits = torch.tensor([[[1e4, 0.0, -1e4], [0.0, 1e4, 1e4]]], requires_grad=True)
    ids = torch.tensor([[0, 2]])
    got = token_logprobs(logits, ids)
    assert got.tolist() == [[0.0, pytest.approx(-2e4)]]
    got.sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[0, 1].abs().sum() == 0  # last logits predict nothing
    half = token_logprobs(logits.detach().bfloat16(), ids)
    assert half.dtype == torch.float32 and torch.isfinite(half).all()


def test_token_logprobs_validates():
    with pytest.raises(ValueError, match=r"\[B, L, V\]"):
        token_logprobs(torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="ids must have shape"):
        token_logprobs(torch.zeros(2, 3, 4), torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 4\)"):
        token_logprobs(torch.zeros(1, 2, 4), torch.tensor([[0, 4]]))
    with pytest.raises(ValueError, match="integer"):
        token_logprobs(torch.zeros(1, 2, 4), torch.zeros(1, 2))
    with pytest.raises(ValueError, match="temperature"):
        token_logprobs(torch.zeros(1, 2, 4), torch.zeros(1, 2, dtype=torch.long), temperature=0.0)


def _reference_entropy(row: list[float], temperature: float) -> float:
    z = [v / temperature for v in row]
    top = max(z)
    total = sum(math.exp(v - top) for v in z)
    p = [math.exp(v - top) / total for v in z]
    return -sum(pi * math.log(pi) for pi in p if pi > 0)


@pytest.mark.parametrize("temperature", [1.0, 1.3])
def test_entropy_is_the_masked_mean_of_the_shifted_distributions(temperature):
    g = torch.Generator().manual_seed(1)
    logits = (3 * torch.randn(3, 6, 9, generator=g)).requires_grad_(True)
    mask = torch.rand(3, 6, generator=g) < 0.6
    mask[:, 0] = False
    mask[2] = False
    got = entropy_from_logits(logits, mask, temperature=temperature)
    picked = [(b, t) for b in range(3) for t in range(6) if mask[b, t]]
    want = sum(_reference_entropy(logits[b, t - 1].tolist(), temperature) for b, t in picked) / len(picked)
    assert got.item() == pytest.approx(want, rel=1e-5)
    got.backward()
    assert logits.grad[:, -1].abs().sum() == 0  # the last position predicts no token of the ids


def test_entropy_edge_cases():
    logits = torch.tensor([[[0.0, -math.inf, 0.0], [5.0, 5.0, 5.0]]], requires_grad=True)
    h = entropy_from_logits(logits, torch.tensor([[0, 1]]))
    assert h.item() == pytest.approx(math.log(2))  # the banned token contributes 0, not NaN
    h.backward()
    assert torch.isfinite(logits.grad).all()
    assert entropy_from_logits(logits, torch.zeros(1, 2)).item() == 0.0
    with pytest.raises(ValueError, match="first token has no prediction"):
        entropy_from_logits(logits, torch.tensor([[1, 1]]))
