"""The exact solvers against brute force (and scipy's MILP), on random instances and on scenarios."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from officegym.envs.roles import coo, cost, council_model, cto, reconcile
from officegym.envs.roles.solvers import (
    AllocationProblem,
    allocation_feasible,
    allocation_value,
    best_allocation,
    brute_force_allocation,
    brute_force_choice,
    milp_choice,
    min_cost_choice,
    one_to_one_allocation,
)


def random_choice_problem(rng: random.Random, k: int, o: int):
    costs = [[rng.randint(1, 50) for _ in range(o)] for _ in range(k)]
    resources = []
    for _ in range(rng.randint(0, 3)):
        usage = [[rng.randint(-5, 10) for _ in range(o)] for _ in range(k)]
        low = sum(min(row) for row in usage)
        high = sum(max(row) for row in usage)
        resources.append((usage, rng.randint(low, high)))
    conflicts = []
    for _ in range(rng.randint(0, k) if k > 1 else 0):
        a, b = rng.sample(range(k), 2)
        conflicts.append(((a, rng.randrange(o)), (b, rng.randrange(o))))
    return costs, resources, conflicts


def test_min_cost_choice_matches_brute_force_on_random_instances():
    rng = random.Random(0)
    for _ in range(300):
        k, o = rng.randint(1, 5), rng.randint(1, 4)
        costs, resources, conflicts = random_choice_problem(rng, k, o)
        fast, choice = min_cost_choice(costs, resources, conflicts)
        slow, _ = brute_force_choice(costs, resources, conflicts)
        assert fast == slow
        if choice is not None:
            assert sum(costs[g][c] for g, c in enumerate(choice)) == fast


def test_min_cost_choice_with_a_non_linear_exact_cost_and_leaf_check():
    rng = random.Random(1)
    for _ in range(150):
        k, o = rng.randint(1, 5), rng.randint(2, 4)
        costs, resources, conflicts = random_choice_problem(rng, k, o)
        rate = [[rng.choice((0.0, 0.1, 0.3)) for _ in range(o)] for _ in range(k)]
        lower = [[c * (1 - r) for c, r in zip(cr, rr)] for cr, rr in zip(costs, rate)]

        def exact(choice, costs=costs, rate=rate):  # a volume discount above 60 on discounted options
            gross = sum(costs[g][c] for g, c in enumerate(choice))
            eligible = sum(costs[g][c] * rate[g][c] for g, c in enumerate(choice))
            return gross - (eligible if gross > 60 else 0.0)

        def odd(choice):
            return sum(choice) % 3 != 1

        fast = min_cost_choice(lower, resources, conflicts, exact=exact, leaf_ok=odd)[0]
        slow = brute_force_choice(lower, resources, conflicts, exact=exact, leaf_ok=odd)[0]
        assert fast == pytest.approx(slow)


def test_min_cost_choice_matches_milp_on_larger_instances():
    rng = random.Random(2)
    for _ in range(15):
        costs, resources, conflicts = random_choice_problem(rng, 9, 5)
        fast = min_cost_choice(costs, resources, conflicts)[0]
        assert fast == pytest.approx(milp_choice(costs, resources, conflicts))


def random_allocation(rng: random.Random, n: int, m: int, dated: bool) -> AllocationProblem:
    gain = [[(rng.randint(-20, 60) if rng.random() < 0.7 else None) for _ in range(m)] for _ in range(n)]
    hours = [rng.randint(1, 8) for _ in range(n)]
    exclusive = {tuple(sorted(rng.sample(range(n), 2))) for _ in range(rng.randint(0, n // 2))} if n > 1 else set()
    return AllocationProblem(
        gain=gain, hours=hours, capacity=[rng.randint(4, 16) for _ in range(m)],
        max_projects=[rng.randint(1, 3) for _ in range(m)], must=[rng.random() < 0.2 for _ in range(n)],
        exclusive=exclusive,  # type: ignore[arg-type]
        requires=[(rng.randrange(p) if dated and p and rng.random() < 0.3 else None) for p in range(n)],
        deadline=[(rng.randint(1, 4) if dated and rng.random() < 0.5 else None) for _ in range(n)],
        weekly_hours=[rng.randint(2, 5) for _ in range(m)],
    )


def test_best_allocation_matches_brute_force():
    rng = random.Random(3)
    for i in range(250):
        problem = random_allocation(rng, rng.randint(1, 6), rng.randint(1, 3), dated=i % 2 == 0)
        fast, assign = best_allocation(problem)
        slow, _ = brute_force_allocation(problem)
        assert fast == slow
        if assign is not None:
            assert allocation_feasible(problem, assign) and allocation_value(problem, assign) == fast


def test_hungarian_matches_branch_and_bound_when_everyone_takes_one_project():
    rng = random.Random(4)
    for _ in range(150):
        n, m = rng.randint(1, 6), rng.randint(1, 4)
        problem = random_allocation(rng, n, m, dated=False)
        problem.max_projects = [1] * m
        problem.capacity = [100] * m
        problem.exclusive = set()
        assert one_to_one_allocation(problem)[0] == best_allocation(problem)[0] == brute_force_allocation(problem)[0]


def all_selections(components):
    names = [c["component"] for c in components]
    for combo in itertools.product(*(c["options"] for c in components)):
        yield dict(zip(names, combo))


@pytest.mark.parametrize("level", [2, 5, 7])
def test_cto_optimum_is_the_brute_force_optimum(level):
    for seed in range(25):
        s = cto.generate(seed, level)
        if s.infeasible:
            continue
        feasible = [cto.evaluate(s.public, sel) for sel in all_selections(s.public["components"])]
        best = min(f["tco"] for f in feasible if not f["violations"])
        assert best == s.private["optimum"]


@pytest.mark.parametrize("level", [3, 6, 7])
def test_cost_optimum_is_the_brute_force_optimum(level):
    for seed in range(25):
        s = cost.generate(seed, level)
        plans = [dict(zip([w["id"] for w in s.public["workloads"]], combo))
                 for combo in itertools.product(*(w["options"] for w in s.public["workloads"]))]
        feasible = [cost.bill(s.public, p)["exact_total"] for p in plans if not cost.violations(s.public, p)]
        if s.infeasible:
            assert not feasible
        else:
            assert min(feasible) == pytest.approx(s.private["optimum"])


@pytest.mark.parametrize("level", [2, 4, 6])
def test_coo_optimum_is_the_brute_force_optimum(level):
    for seed in range(15):
        s = coo.generate(seed, level)
        value, _ = brute_force_allocation(coo.problem_of(s.public))
        if s.infeasible:
            assert value == -math.inf
        else:
            assert value == s.private["optimum"]


@pytest.mark.parametrize("level", [2, 5, 8])
def test_reconcile_winner_is_the_argmax_of_the_stated_rule(level):
    for seed in range(30):
        s = reconcile.generate(seed, level)
        memos, plans = s.public["memos"], s.public["plans"]
        admissible = [p for p in plans if not any(reconcile.vetoes(m, p) for m in memos)]
        best = {m["agent"]: max(reconcile.utility(m, p) for p in admissible) for m in memos}
        scores = []
        for p in admissible:
            gains = {m["agent"]: reconcile.utility(m, p) - m["status_quo_utility"] for m in memos}
            if min(gains.values()) <= 0:
                continue
            norm = [gains[m["agent"]] / (best[m["agent"]] - m["status_quo_utility"]) for m in memos]
            if s.public["rule"] == "utilitarian":
                scores.append(sum(norm))
            elif s.public["rule"] == "maxmin":
                scores.append(min(norm))
            else:
                scores.append(math.prod(gains[m["agent"]] ** m.get("bargaining_weight", 1) for m in memos))
        if s.infeasible:
            assert not scores
        else:
            assert max(scores) == pytest.approx(s.private["best_score"])


def test_council_optimum_is_the_brute_force_optimum():
    for seed in range(40):
        s = council_model.generate(seed, 1 + seed % 8)
        full = s.private["full"]
        figures = [council_model.evaluate(full, sel) for sel in all_selections(full["components"])]
        ok = [f["tco"] for f in figures if all(code == "over_budget" for code, _ in f["violations"])]
        if s.infeasible:
            assert min(ok) > full["requirements"]["budget_tco_usd"]
        else:
            assert min(ok) == s.private["optimum"] <= full["requirements"]["budget_tco_usd"]
