"""Helpers the role generators share: the infeasible share of scenarios, a scenario's seed and its
drawing rng, and the small formatting and arithmetic the grading text uses."""

from __future__ import annotations

import math
import random
from typing import Any

# Scenarios built without a feasible answer (the right answer is to escalate): those whose seed is
# 0, 1 or 2 modulo 40, i.e. 7.5 %. A scenario stays a function of its seed alone, and generate_tasks
# spreads them evenly, so any run of tasks holds 7.5 % of them to within one task.
INFEASIBLE_MODULUS, INFEASIBLE_RESIDUES = 40, 3
INFEASIBLE_SHARE = INFEASIBLE_RESIDUES / INFEASIBLE_MODULUS


def ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator in [0, 1], guarding a zero or negative denominator."""
    if denominator <= 0 or not math.isfinite(numerator) or not math.isfinite(denominator):
        return 0.0
    return max(0.0, min(1.0, numerator / denominator))


def infeasible_seed(seed: int) -> bool:
    """Whether the scenario of `seed` is built infeasible (see INFEASIBLE_MODULUS)."""
    return seed % INFEASIBLE_MODULUS < INFEASIBLE_RESIDUES


def draw_scenario(role: str, seed: int, difficulty: int, draw: Any) -> tuple[dict[str, Any], random.Random]:
    """`draw(rng, difficulty, infeasible)` retried until it returns a scenario, from an rng salted
    with the role (the same seed gives unrelated scenarios per role); the rng goes on to the brief."""
    rng = random.Random(f"{role}:{seed}")
    infeasible = infeasible_seed(seed)
    for _ in range(1000):
        drawn = draw(rng, difficulty, infeasible)
        if drawn is not None:
            return drawn, rng
    raise RuntimeError(f"no {role} scenario for seed {seed}, level {difficulty}")


def scenario_seed(rng: random.Random, infeasible: bool) -> int:
    """A fresh 48-bit scenario seed of the wanted kind."""
    base = rng.getrandbits(48) // INFEASIBLE_MODULUS * INFEASIBLE_MODULUS
    if infeasible:
        return base + rng.randrange(INFEASIBLE_RESIDUES)
    return base + INFEASIBLE_RESIDUES + rng.randrange(INFEASIBLE_MODULUS - INFEASIBLE_RESIDUES)


def money(x: float) -> str:
    return f"${x:,.0f}"
