"""pass@k and pass^k over n samples of a task of which c are correct: the evaluation report and the
server's aggregate metrics both give them, and they sit on floors that cannot import each other."""

from __future__ import annotations

from math import comb


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): the chance that at least one of k samples drawn from n
    (c correct) is correct, 1 - C(n-c, k) / C(n, k); k above n counts as n."""
    if k > n:
        k = n
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that k samples drawn from n (c correct) are all correct."""
    if k > n:
        k = n
    return comb(c, k) / comb(n, k)
