"""Difficulty 1-10 of a task from what solving it takes."""

from __future__ import annotations

import math


def difficulty(reads: int, writes: int, domains: int, conditions: int, date_steps: int) -> int:
    """1 + 0.5 per read (up to 4) + 0.8 per write beyond the first (up to 5 more) + 1.5 per extra
    domain + 1.5 per condition + 1 per date computation (up to 2), rounded half up, clipped to 1-10.

    A single fully specified write is 1; a two-domain conditional chain with lookups, several
    writes and relative dates reaches 8-9.
    """
    score = (1 + 0.5 * min(reads, 4) + 0.8 * min(max(writes - 1, 0), 5) + 1.5 * max(domains - 1, 0)
             + 1.5 * conditions + 1.0 * min(date_steps, 2))
    return max(1, min(10, math.floor(score + 0.5)))
