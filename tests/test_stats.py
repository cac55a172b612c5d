"""Wilson intervals and the exact McNemar test against values computed independently (scipy when
installed) and by hand."""

from __future__ import annotations

import math

import pytest

from officegym.eval.stats import mcnemar_exact, paired_outcomes, wilson_interval


def test_wilson_interval_known_values():
    low, high = wilson_interval(7, 21)
    assert (round(low, 4), round(high, 4)) == (0.1719, 0.5463)  # scipy's binomtest(...).proportion_ci("wilson")
    assert wilson_interval(0, 20)[0] == 0.0 and wilson_interval(0, 20)[1] == pytest.approx(0.1611, abs=1e-4)
    assert wilson_interval(20, 20)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(5, 3)
    scipy_stats = pytest.importorskip("scipy.stats")
    for k, n in ((1, 60), (33, 60), (59, 60)):
        ci = scipy_stats.binomtest(k, n).proportion_ci(method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_mcnemar_exact_matches_the_binomial_test():
    # b=10, c=2: 2 * P(X <= 2), X ~ Bin(12, 1/2) = 2 * (1 + 12 + 66) / 4096
    assert mcnemar_exact(10, 2) == pytest.approx(2 * 79 / 4096)
    assert mcnemar_exact(2, 10) == mcnemar_exact(10, 2)
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0
    scipy_stats = pytest.importorskip("scipy.stats")
    for b, c in ((14, 4), (9, 1), (25, 12), (0, 6)):
        assert mcnemar_exact(b, c) == pytest.approx(scipy_stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


def test_paired_outcomes_count_tasks_both_evaluations_ran():
    a = [{"id": i, "reward": r} for i, r in enumerate([1, 1, 0, 0, 1, 0])]
    b = [{"id": i, "reward": r} for i, r in enumerate([1, 0, 1, 1, 1, 0])] + [{"id": 99, "reward": 1}]
    cmp = paired_outcomes(a, b)
    assert (cmp.n, cmp.both, cmp.only_a, cmp.only_b, cmp.neither) == (6, 2, 1, 2, 1)
    assert math.isclose(cmp.delta, 1 / 6) and cmp.p_value == 1.0
