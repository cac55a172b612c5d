"""Intervals and paired tests for graded rewards (eval/stats.py), checked against brute force, the
exact McNemar test they reduce to on 0/1 rewards, and scipy where it is installed."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from officegym.eval.stats import (
    EXACT_SIGN_FLIPS,
    bootstrap_mean_interval,
    mcnemar_exact,
    paired_reward_verdict,
    paired_rewards,
    reward_interval,
    sign_flip_p_value,
    task_rewards,
    wilson_interval,
)


def _rows(rewards, ids=None):
    return [{"id": n if ids is None else ids[n], "reward": r} for n, r in enumerate(rewards)]


def _brute_force_p(d):
    d = [x for x in d if x != 0]
    observed = abs(sum(d))
    flips = list(itertools.product((1, -1), repeat=len(d)))
    return sum(abs(sum(s * x for s, x in zip(signs, d))) >= observed - 1e-9 for signs in flips) / len(flips)


def test_on_0_1_rewards_the_sign_flip_test_is_the_exact_mcnemar_test():
    for b, c in ((10, 2), (2, 10), (3, 3), (0, 6), (7, 1), (5, 0)):
        d = [1.0] * b + [-1.0] * c + [0.0] * 4  # ties carry no sign
        p, method = sign_flip_p_value(d)
        assert method == "exact" and p == pytest.approx(mcnemar_exact(b, c))


def test_the_exact_sign_flip_test_matches_brute_force_on_graded_differences():
    rng = random.Random(0)
    for n in (1, 3, 8, EXACT_SIGN_FLIPS):
        d = [round(rng.uniform(-1, 1), 3) for _ in range(n)]
        p, method = sign_flip_p_value(d)
        assert method == "exact" and p == pytest.approx(_brute_force_p(d))
    assert sign_flip_p_value([]) == (1.0, "exact") and sign_flip_p_value([0.0, 0.0]) == (1.0, "exact")


def test_the_monte_carlo_sign_flip_test_is_close_to_the_exact_one_and_seeded():
    rng = random.Random(1)
    d = [round(rng.uniform(-0.6, 1.0), 2) for _ in range(EXACT_SIGN_FLIPS + 1)]  # 2**17 sign vectors
    exact = _brute_force_p(d)
    p, method = sign_flip_p_value(d)
    assert method == "monte carlo" and abs(p - exact) < 0.01 and 0.0 < p <= 1.0
    assert sign_flip_p_value(d) == (p, method)  # seeded: a rebuilt report says the same
    strong = [0.5] * 40
    assert sign_flip_p_value(strong)[0] == pytest.approx(1 / (1 + 20_000))  # never 0: (1 + hits) / (1 + R)


def test_the_bootstrap_interval_is_seeded_covers_the_mean_and_narrows_with_more_tasks():
    rng = random.Random(2)
    values = [rng.random() for _ in range(40)]
    low, high = bootstrap_mean_interval(values)
    mean = sum(values) / len(values)
    assert low < mean < high and bootstrap_mean_interval(values) == (low, high)
    wider = bootstrap_mean_interval(values[:10])
    assert wider[1] - wider[0] > high - low
    # roughly the normal interval for a mean of 40 uniforms (sd 1/sqrt(12))
    half = 1.96 / math.sqrt(12 * 40)
    assert (high - low) / 2 == pytest.approx(half, rel=0.25)
    assert math.isnan(bootstrap_mean_interval([])[0])


def test_reward_interval_is_wilson_for_0_1_rewards_and_the_bootstrap_over_tasks_for_graded_ones():
    assert reward_interval(_rows([0, 0, 0, 0])) == wilson_interval(0, 4)  # never collapses at 0/n
    assert reward_interval(_rows([1, 0, 1, 1, 0])) == wilson_interval(3, 5)
    graded = _rows([0.2, 0.9, 0.5, 0.5], ids=["a", "a", "b", "b"])  # two samples of each task
    assert task_rewards(graded) == {"a": pytest.approx(0.55), "b": 0.5}
    assert reward_interval(graded) == bootstrap_mean_interval([0.55, 0.5])


def test_paired_rewards_on_the_tasks_both_ran():
    a = _rows([0.0, 0.5, 1.0, 0.2, 0.0], ids=list("abcde"))
    b = _rows([1.0, 0.5, 0.8, 0.6, 1.0, 1.0], ids=list("abcdez"))
    cmp = paired_rewards(a, b)
    assert (cmp.n, cmp.higher, cmp.lower, cmp.tied) == (5, 3, 1, 1)
    assert cmp.mean_a == pytest.approx(0.34) and cmp.mean_b == pytest.approx(0.78)
    assert cmp.delta == pytest.approx(0.44) and cmp.delta_ci95[0] <= 0.44 <= cmp.delta_ci95[1]
    assert cmp.p_value == pytest.approx(_brute_force_p([1.0, 0.0, -0.2, 0.4, 1.0]))
    text = paired_reward_verdict({"from": "untrained", "to": "after GRPO", **cmp.as_dict()})
    assert text.startswith("after GRPO vs untrained: no significant change in reward, mean reward 0.340 -> 0.780 (+0.440")
    assert "3 tasks scored higher, 1 lower, 1 the same, 5 tasks, paired sign-flip (exact) p = 0.25" in text


def test_a_clear_gain_is_called_significant():
    a = _rows([0.1] * 30)
    b = _rows([0.6 + 0.01 * i for i in range(30)])
    t = {"from": "a", "to": "b", **paired_rewards(a, b).as_dict()}
    assert t["p_value"] < 0.001 and "raised the reward significantly" in paired_reward_verdict(t)


def test_scipy_s_paired_permutation_test_agrees():
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(3)
    x = [rng.random() for _ in range(12)]
    y = [min(1.0, v + rng.uniform(-0.2, 0.5)) for v in x]
    ref = stats.permutation_test((x, y), lambda u, v: sum(v) / len(v) - sum(u) / len(u),
                                 permutation_type="samples", n_resamples=math.inf).pvalue
    assert sign_flip_p_value([b - a for a, b in zip(x, y)])[0] == pytest.approx(ref, rel=1e-9)
