"""Exact solvers used at generation time (and the brute force and MILP they are tested against).

- `min_cost_choice`: multiple-choice minimisation (one option per group) with linear resource caps,
  forbidden pairs, a non-linear exact cost (volume discounts) and an exact leaf check, by depth-first
  branch and bound. It serves the CTO, Cost and council scenarios (a few hundred microseconds at
  9 groups x 5 options, where scipy's MILP costs milliseconds per call).
- `best_allocation`: the COO's generalised assignment with capacities, exclusive pairs, must-do
  projects, prerequisites and deadlines, by branch and bound; `one_to_one_allocation` solves the
  one-project-per-person case with the Hungarian algorithm (scipy's linear_sum_assignment).
- `brute_force_choice`, `brute_force_allocation` and `milp_choice` are the references the tests
  compare against.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

EPS = 1e-9

Choice = tuple[int, ...]


def min_cost_choice(
    costs: Sequence[Sequence[float]],
    resources: Sequence[tuple[Sequence[Sequence[float]], float]] = (),
    conflicts: Sequence[tuple[tuple[int, int], tuple[int, int]]] = (),
    exact: Callable[[Choice], float] | None = None,
    leaf_ok: Callable[[Choice], bool] | None = None,
) -> tuple[float, Choice | None]:
    """The cheapest choice of one option per group, exactly.

    costs[k][o] is the cost of option o in group k, or a lower bound of its share of the true cost
    when `exact(choice)` gives the true total (it must be >= the sum of these bounds). Each resource
    (usage, cap) requires sum_k usage[k][choice[k]] <= cap; usages may be negative. `conflicts` are
    option pairs that cannot both be chosen. `leaf_ok` re-checks a complete choice exactly (e.g. a
    product of availabilities that the resource rows approximate with logarithms).
    Returns (value, choice), or (inf, None) when no choice is feasible.
    """
    k_groups = len(costs)
    if k_groups == 0:
        value = exact(()) if exact else 0.0
        return (value, ()) if leaf_ok is None or leaf_ok(()) else (math.inf, None)
    if any(len(c) == 0 for c in costs):
        return math.inf, None
    # Fail first: groups with few options near the root; options by cost within a group.
    order = sorted(range(k_groups), key=lambda k: (len(costs[k]), k))
    opts = [sorted(range(len(costs[k])), key=lambda o, k=k: costs[k][o]) for k in order]
    cost_rows = [[costs[k][o] for o in opts[i]] for i, k in enumerate(order)]
    use_rows = [[[usage[k][o] for o in opts[i]] for i, k in enumerate(order)] for usage, _ in resources]
    caps = [cap + EPS * max(1.0, abs(cap)) for _, cap in resources]
    suffix_cost = _suffix([min(row) for row in cost_rows])
    suffix_use = [_suffix([min(row) for row in rows]) for rows in use_rows]
    position = {k: i for i, k in enumerate(order)}
    # clash[i][j] = the positions (level, option index) that option j at level i excludes above it
    clash: list[list[set[tuple[int, int]]]] = [[set() for _ in row] for row in cost_rows]
    for (k1, o1), (k2, o2) in conflicts:
        if k1 == k2:
            continue
        i1, i2 = position[k1], position[k2]
        j1, j2 = opts[i1].index(o1), opts[i2].index(o2)
        if i1 < i2:
            clash[i2][j2].add((i1, j1))
        else:
            clash[i1][j1].add((i2, j2))
    n_res = len(resources)
    picked = [0] * k_groups
    used = [0.0] * n_res
    best = [math.inf, None]

    def leaf() -> None:
        choice = [0] * k_groups
        for i, k in enumerate(order):
            choice[k] = opts[i][picked[i]]
        t = tuple(choice)
        if leaf_ok is not None and not leaf_ok(t):
            return
        value = exact(t) if exact is not None else sum(cost_rows[i][picked[i]] for i in range(k_groups))
        if value < best[0] - EPS:
            best[0], best[1] = value, t

    def descend(i: int, partial: float) -> None:
        if i == k_groups:
            leaf()
            return
        row = cost_rows[i]
        rest = suffix_cost[i + 1]
        for j, c in enumerate(row):
            if partial + c + rest >= best[0] - EPS:
                break  # options are sorted by cost: the rest of the row is no better
            ok = True
            for r in range(n_res):
                if used[r] + use_rows[r][i][j] + suffix_use[r][i + 1] > caps[r]:
                    ok = False
                    break
            if not ok:
                continue
            if clash[i][j] and any(picked[a] == b for a, b in clash[i][j]):
                continue
            picked[i] = j
            for r in range(n_res):
                used[r] += use_rows[r][i][j]
            descend(i + 1, partial + c)
            for r in range(n_res):
                used[r] -= use_rows[r][i][j]

    descend(0, 0.0)
    return best[0], best[1]


def _suffix(values: Sequence[float]) -> list[float]:
    out = [0.0] * (len(values) + 1)
    for i in range(len(values) - 1, -1, -1):
        out[i] = out[i + 1] + values[i]
    return out


def brute_force_choice(
    costs: Sequence[Sequence[float]],
    resources: Sequence[tuple[Sequence[Sequence[float]], float]] = (),
    conflicts: Sequence[tuple[tuple[int, int], tuple[int, int]]] = (),
    exact: Callable[[Choice], float] | None = None,
    leaf_ok: Callable[[Choice], bool] | None = None,
) -> tuple[float, Choice | None]:
    """Every combination, for tests: same contract as `min_cost_choice`."""
    banned = {frozenset(p) for p in conflicts}
    best: tuple[float, Choice | None] = (math.inf, None)
    for choice in itertools.product(*(range(len(c)) for c in costs)):
        if any(sum(u[k][o] for k, o in enumerate(choice)) > cap + EPS * max(1.0, abs(cap)) for u, cap in resources):
            continue
        pairs = list(enumerate(choice))
        if any(frozenset((a, b)) in banned for a, b in itertools.combinations(pairs, 2)):
            continue
        if leaf_ok is not None and not leaf_ok(choice):
            continue
        value = exact(choice) if exact else sum(costs[k][o] for k, o in enumerate(choice))
        if value < best[0] - EPS:
            best = (value, choice)
    return best


def milp_choice(
    costs: Sequence[Sequence[float]],
    resources: Sequence[tuple[Sequence[Sequence[float]], float]] = (),
    conflicts: Sequence[tuple[tuple[int, int], tuple[int, int]]] = (),
) -> float:
    """The same separable problem as a MILP with scipy (binary x[k,o], one per group); the optimum
    value or inf. Used to cross-check `min_cost_choice` on instances too large to enumerate."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    index = [(k, o) for k, row in enumerate(costs) for o in range(len(row))]
    col = {ko: i for i, ko in enumerate(index)}
    n = len(index)
    c = np.array([costs[k][o] for k, o in index], dtype=float)
    rows, lo, hi = [], [], []
    for k, row in enumerate(costs):
        a = np.zeros(n)
        for o in range(len(row)):
            a[col[(k, o)]] = 1
        rows.append(a)
        lo.append(1)
        hi.append(1)
    for usage, cap in resources:
        rows.append(np.array([usage[k][o] for k, o in index], dtype=float))
        lo.append(-np.inf)
        hi.append(cap + EPS * max(1.0, abs(cap)))
    for a_ko, b_ko in conflicts:
        a = np.zeros(n)
        a[col[a_ko]] = a[col[b_ko]] = 1
        rows.append(a)
        lo.append(-np.inf)
        hi.append(1)
    res = milp(c, constraints=LinearConstraint(np.array(rows), lo, hi), integrality=np.ones(n), bounds=Bounds(0, 1))
    return float(res.fun) if res.status == 0 else math.inf


# --- COO: allocation of projects to staff


@dataclass
class AllocationProblem:
    """Projects p and staff e. gain[p][e] is value minus labour cost, None when e lacks the skill.
    A project is done by one person or left unstaffed. Rules: capacity hours and maximum project
    count per person; `exclusive` project pairs never share a person; must-do projects are staffed;
    `requires[p]` (an earlier project) must be staffed for p to be; with deadlines, a person works
    their projects back to back in deadline order at `weekly_hours` and finishes each by its deadline."""

    gain: list[list[float | None]]
    hours: list[float]
    capacity: list[float]
    max_projects: list[int]
    must: list[bool]
    exclusive: set[tuple[int, int]] = field(default_factory=set)
    requires: list[int | None] = field(default_factory=list)
    deadline: list[float | None] = field(default_factory=list)
    weekly_hours: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = len(self.gain)
        self.requires = self.requires or [None] * n
        self.deadline = self.deadline or [None] * n
        self.weekly_hours = self.weekly_hours or [1.0] * len(self.capacity)


Assignment = tuple[int | None, ...]


def meets_deadlines(problem: AllocationProblem, person: int, projects: Sequence[int]) -> bool:
    """Earliest-deadline-first is optimal for one person with all work available now."""
    timed = sorted((problem.deadline[p], problem.hours[p]) for p in projects if problem.deadline[p] is not None)
    done = 0.0
    for deadline, hours in timed:
        done += hours
        if done > problem.weekly_hours[person] * deadline + EPS:
            return False
    return True  # undated work goes last and has no deadline to miss


def allocation_value(problem: AllocationProblem, assign: Assignment) -> float:
    return sum(problem.gain[p][e] for p, e in enumerate(assign) if e is not None)  # type: ignore[misc]


def allocation_feasible(problem: AllocationProblem, assign: Assignment) -> bool:
    n_staff = len(problem.capacity)
    load = [0.0] * n_staff
    members: list[list[int]] = [[] for _ in range(n_staff)]
    for p, e in enumerate(assign):
        if e is None:
            if problem.must[p]:
                return False
            continue
        if problem.gain[p][e] is None:
            return False
        req = problem.requires[p]
        if req is not None and assign[req] is None:
            return False
        load[e] += problem.hours[p]
        members[e].append(p)
    for e in range(n_staff):
        if load[e] > problem.capacity[e] + EPS or len(members[e]) > problem.max_projects[e]:
            return False
        if any((min(a, b), max(a, b)) in problem.exclusive for a, b in itertools.combinations(members[e], 2)):
            return False
        if not meets_deadlines(problem, e, members[e]):
            return False
    return True


def best_allocation(problem: AllocationProblem) -> tuple[float, Assignment | None]:
    """The maximum total gain over feasible allocations, by branch and bound over projects in index
    order (prerequisites come first). Returns (value, assignment) or (-inf, None) if infeasible."""
    n = len(problem.gain)
    n_staff = len(problem.capacity)
    choices: list[list[int | None]] = []
    optimistic = []
    for p in range(n):
        eligible = sorted((e for e in range(n_staff) if problem.gain[p][e] is not None),
                          key=lambda e, p=p: -problem.gain[p][e])  # type: ignore[operator]
        row: list[int | None] = list(eligible)
        if not problem.must[p]:
            # leaving a project unstaffed is worth 0: try it before any loss-making person
            at = next((i for i, e in enumerate(eligible) if problem.gain[p][e] < 0), len(eligible))  # type: ignore[operator]
            row.insert(at, None)
        if not row:
            return -math.inf, None
        choices.append(row)
        gains = [problem.gain[p][e] for e in eligible]
        top = max(gains) if gains else -math.inf
        optimistic.append(top if problem.must[p] else max(0.0, top))
    suffix = _suffix(optimistic)  # type: ignore[arg-type]
    exclusive_with = [set() for _ in range(n)]
    for a, b in problem.exclusive:
        exclusive_with[a].add(b)
        exclusive_with[b].add(a)
    dated = any(d is not None for d in problem.deadline)
    load = [0.0] * n_staff
    members: list[list[int]] = [[] for _ in range(n_staff)]
    assign: list[int | None] = [None] * n
    best: list = [-math.inf, None]

    def descend(p: int, value: float) -> None:
        if p == n:
            if value > best[0] + EPS:
                best[0], best[1] = value, tuple(assign)
            return
        if value + suffix[p] <= best[0] + EPS:
            return
        req = problem.requires[p]
        for e in choices[p]:
            if e is None:
                assign[p] = None
                descend(p + 1, value)
                continue
            if req is not None and assign[req] is None:
                continue
            if load[e] + problem.hours[p] > problem.capacity[e] + EPS or len(members[e]) >= problem.max_projects[e]:
                continue
            if exclusive_with[p] and any(q in exclusive_with[p] for q in members[e]):
                continue
            members[e].append(p)
            if dated and not meets_deadlines(problem, e, members[e]):
                members[e].pop()
                continue
            load[e] += problem.hours[p]
            assign[p] = e
            descend(p + 1, value + problem.gain[p][e])  # type: ignore[operator]
            load[e] -= problem.hours[p]
            members[e].pop()
            assign[p] = None

    descend(0, 0.0)
    return best[0], best[1]


def one_to_one_allocation(problem: AllocationProblem) -> tuple[float, Assignment | None]:
    """The case where everyone takes at most one project and has the hours for any of them: a
    rectangular assignment problem (projects x (staff + one 'unstaffed' column per project))."""
    try:
        import numpy as np
        from scipy.optimize import linear_sum_assignment
    except ImportError as exc:
        raise ImportError(f"the role environments need scipy and numpy ({exc}): pip install 'officegym[roles]'") from None

    n, n_staff = len(problem.gain), len(problem.capacity)
    big = 1e12
    cost = np.full((n, n_staff + n), big)
    for p in range(n):
        for e in range(n_staff):
            g = problem.gain[p][e]
            if g is not None and problem.hours[p] <= problem.capacity[e] + EPS and problem.max_projects[e] >= 1:
                cost[p, e] = -g
        if not problem.must[p]:
            cost[p, n_staff + p] = 0.0
    rows, cols = linear_sum_assignment(cost)
    if any(cost[r, c] >= big for r, c in zip(rows, cols)):
        return -math.inf, None
    assign: list[int | None] = [None] * n
    for r, c in zip(rows, cols):
        assign[r] = int(c) if c < n_staff else None
    value = allocation_value(problem, tuple(assign))
    return value, tuple(assign)


def brute_force_allocation(problem: AllocationProblem) -> tuple[float, Assignment | None]:
    """Every assignment, for tests."""
    n_staff = len(problem.capacity)
    best: tuple[float, Assignment | None] = (-math.inf, None)
    for assign in itertools.product([None, *range(n_staff)], repeat=len(problem.gain)):
        if allocation_feasible(problem, assign):
            value = allocation_value(problem, assign)
            if value > best[0] + EPS:
                best = (value, assign)
    return best
