"""Group advantages against a slow reference written with plain Python loops over floats."""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from officegym.train.advantages import group_advantages, zero_variance_groups  # noqa: E402

torch.set_num_threads(1)

BASELINES = ("mean", "leave_one_out")
SCALES = ("group", "batch", "none")


def _stdev(values: list[float]) -> float:
    """Unbiased (n - 1) std; 0 for fewer than two values."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def reference_advantages(rewards, groups, baseline="leave_one_out", scale="group", eps=1e-6, clip=None):
    members: dict[int, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        rs = [rewards[i] for i in idx]
        n = len(rs)
        for i in idx:
            if baseline == "mean":
                b = sum(rs) / n
            elif n == 1:
                b = rewards[i]
            else:
                b = (sum(rs) - rewards[i]) / (n - 1)
            out[i] = rewards[i] - b
        if scale == "group":
            sd = _stdev(rs)
            if sd > eps:
                for i in idx:
                    out[i] /= sd + eps
    if scale == "batch":
        sd = _stdev(list(rewards))
        if sd > eps:
            out = [a / (sd + eps) for a in out]
    if clip is not None:
        out = [min(max(a, -clip), clip) for a in out]
    return out


def reference_zero_variance(rewards, groups, eps=1e-6):
    members: dict[int, list[float]] = defaultdict(list)
    for r, g in zip(rewards, groups):
        members[g].append(r)
    return [_stdev(members[g]) <= eps for g in sorted(members)]


def _random_batch(seed: int, binary: bool):
    """Groups of sizes 1..6 with scattered, non-contiguous ids, in shuffled order."""
    rng = random.Random(seed)
    rewards, groups = [], []
    for g in rng.sample(range(1000), rng.randint(1, 7)):
        n = rng.choice([1, 2, 3, 4, 6])
        for _ in range(n):
            rewards.append(float(rng.random() < 0.5) if binary else rng.uniform(-2, 3))
            groups.append(g)
    order = list(range(len(rewards)))
    rng.shuffle(order)
    return [rewards[i] for i in order], [groups[i] for i in order]


def _ours(rewards, groups, **kw):
    return group_advantages(torch.tensor(rewards), torch.tensor(groups), **kw).tolist()


@pytest.mark.parametrize("baseline", BASELINES)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("clip", [None, 0.8])
@pytest.mark.parametrize("binary", [True, False])
def test_matches_the_loop_reference(baseline, scale, clip, binary):
    for seed in range(4):
        rewards, groups = _random_batch(seed, binary)
        got = _ours(rewards, groups, baseline=baseline, scale=scale, clip=clip)
        want = reference_advantages(rewards, groups, baseline, scale, clip=clip)
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), (seed, rewards, groups)


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 5), st.sampled_from([0.0, 0.25, 0.5, 1.0, -1.0, 3.0])), min_size=1, max_size=24),
    baseline=st.sampled_from(BASELINES),
    scale=st.sampled_from(SCALES),
    clip=st.sampled_from([None, 0.5, 2.0]),
)
def test_matches_the_reference_on_generated_batches(data, baseline, scale, clip):
    groups = [g for g, _ in data]
    rewards = [r for _, r in data]
    got = _ours(rewards, groups, baseline=baseline, scale=scale, clip=clip)
    assert got == pytest.approx(reference_advantages(rewards, groups, baseline, scale, clip=clip), rel=1e-5, abs=1e-6)
    assert zero_variance_groups(torch.tensor(rewards), torch.tensor(groups)).tolist() == reference_zero_variance(rewards, groups)


def test_hand_computed_values():
    # One group [1, 0, 0, 0]: mean 1/4, unbiased std 1/2.
    r, g = [1.0, 0.0, 0.0, 0.0], [7, 7, 7, 7]
    assert _ours(r, g, baseline="mean", scale="none") == pytest.approx([0.75, -0.25, -0.25, -0.25])
    assert _ours(r, g, baseline="leave_one_out", scale="none") == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])
    assert _ours(r, g, baseline="leave_one_out", scale="group", eps=0.0) == pytest.approx([2.0, -2 / 3, -2 / 3, -2 / 3])
    assert _ours(r, g, baseline="mean", scale="group", eps=0.0, clip=1.0) == pytest.approx([1.0, -0.5, -0.5, -0.5])


def test_leave_one_out_is_the_mean_advantage_times_n_over_n_minus_1():
    rewards, groups = _random_batch(11, binary=False)
    size = {g: groups.count(g) for g in groups}
    loo = _ours(rewards, groups, baseline="leave_one_out", scale="none")
    mean = _ours(rewards, groups, baseline="mean", scale="none")
    for a, b, g in zip(loo, mean, groups):
        expected = 0.0 if size[g] == 1 else b * size[g] / (size[g] - 1)
        assert a == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("baseline", BASELINES)
@pytest.mark.parametrize("scale", SCALES)
def test_zero_variance_and_single_sample_groups_get_zero_and_stay_unscaled(baseline, scale):
    rewards = [1.0, 1.0, 1.0, 0.7, 0.7, 5.0, 0.0, 1.0]
    groups = [0, 0, 0, 1, 1, 2, 3, 3]  # all-ones, constant 0.7, a single sample, a mixed group
    got = _ours(rewards, groups, baseline=baseline, scale=scale)
    assert all(math.isfinite(a) for a in got)
    assert got[:6] == [0.0] * 6
    assert got[6] < 0 < got[7]
    assert zero_variance_groups(torch.tensor(rewards), torch.tensor(groups)).tolist() == [True, True, True, False]


def test_zero_variance_within_eps_is_not_scaled():
    rewards = torch.tensor([1.0, 1.0 + 1e-9, 0.0, 1.0], dtype=torch.float64)
    groups = torch.tensor([0, 0, 1, 1])
    adv = group_advantages(rewards, groups, baseline="mean", scale="group", eps=1e-6)
    # Group 0's std (7e-10) is below eps: its tiny differences are not blown up to +-0.7.
    assert abs(float(adv[0])) < 1e-8 and abs(float(adv[1])) < 1e-8
    assert float(adv[3]) == pytest.approx(0.5 / (math.sqrt(0.5) + 1e-6))
    assert zero_variance_groups(rewards, groups).tolist() == [True, False]


def test_all_groups_zero_variance_under_batch_scale_is_all_zero():
    got = _ours([1.0, 1.0, 0.0, 0.0], [0, 0, 1, 1], scale="batch")
    assert got == [0.0, 0.0, 0.0, 0.0]


def test_group_ids_need_not_be_sorted_or_contiguous():
    rewards, groups = [0.0, 1.0, 1.0, 0.0, 1.0], [9, 3, 9, 3, 9]
    got = _ours(rewards, groups, scale="none")
    sorted_got = _ours([1.0, 0.0, 0.0, 1.0, 1.0], [3, 3, 9, 9, 9], scale="none")
    assert got == pytest.approx([sorted_got[2], sorted_got[0], sorted_got[3], sorted_got[1], sorted_got[4]])
    assert zero_variance_groups(torch.tensor([1.0, 1.0, 0.0]), torch.tensor([5, 5, 2])).tolist() == [True, True]


def test_output_is_float32_without_grad_and_empty_input_is_fine():
    rewards = torch.tensor([1.0, 0.0], dtype=torch.float64, requires_grad=True)
    adv = group_advantages(rewards, torch.tensor([0, 0]))
    assert adv.dtype == torch.float32 and not adv.requires_grad
    assert group_advantages(torch.zeros(0), torch.zeros(0, dtype=torch.long)).shape == (0,)
    assert zero_variance_groups(torch.zeros(0), torch.zeros(0, dtype=torch.long)).shape == (0,)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rewards": torch.zeros(3), "group_ids": torch.zeros(2, dtype=torch.long)}, "same length"),
        ({"rewards": torch.zeros(2, 2), "group_ids": torch.zeros(2, dtype=torch.long)}, "1-D"),
        ({"rewards": torch.zeros(2), "group_ids": torch.zeros(2)}, "integer"),
        ({"rewards": torch.tensor([1.0, float("nan")]), "group_ids": torch.zeros(2, dtype=torch.long)}, "NaN"),
        ({"rewards": torch.zeros(2), "group_ids": torch.zeros(2, dtype=torch.long), "baseline": "median"}, "baseline"),
        ({"rewards": torch.zeros(2), "group_ids": torch.zeros(2, dtype=torch.long), "scale": "token"}, "scale"),
        ({"rewards": torch.zeros(2), "group_ids": torch.zeros(2, dtype=torch.long), "eps": -1.0}, "eps"),
        ({"rewards": torch.zeros(2), "group_ids": torch.zeros(2, dtype=torch.long), "clip": 0.0}, "clip"),
    ],
)
def test_bad_input_is_a_clear_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        group_advantages(**kwargs)
