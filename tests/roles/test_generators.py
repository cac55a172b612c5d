"""Generators: deterministic, every level, the infeasible share, rows that round-trip."""

from __future__ import annotations

import json

import pytest

from officegym.core.task import Task, read_tasks, write_jsonl
from officegym.envs.roles import coo, cost, council_model, cto, reconcile, risk

MODULES = {"roles/cto": cto, "roles/coo": coo, "roles/reconcile": reconcile, "roles/risk": risk, "roles/cost": cost,
           "roles/council": council_model}
ENV_NAMES = tuple(MODULES)


@pytest.mark.parametrize("name", ENV_NAMES)
def test_same_arguments_give_the_same_rows_and_shorter_lists_are_prefixes(envs, name):
    env = envs[name]
    a = [json.dumps(t.to_row(), sort_keys=True) for t in env.generate_tasks(12, 5)]
    b = [json.dumps(t.to_row(), sort_keys=True) for t in env.generate_tasks(12, 5)]
    c = [json.dumps(t.to_row(), sort_keys=True) for t in env.generate_tasks(5, 5)]
    d = [json.dumps(t.to_row(), sort_keys=True) for t in env.generate_tasks(12, 6)]
    assert a == b
    assert a[:5] == c
    assert a != d


@pytest.mark.parametrize("name", ENV_NAMES)
def test_scenarios_are_rebuilt_identically_from_their_seed(name):
    module = MODULES[name]
    first = module.generate(4242, 7)
    module.generate.cache_clear()
    again = module.generate(4242, 7)
    assert first is not again
    assert first.public == again.public and first.brief == again.brief and first.ground_truth == again.ground_truth


@pytest.mark.parametrize("name", ENV_NAMES)
def test_difficulty_range_and_metadata(envs, name):
    tasks = envs[name].generate_tasks(30, 1, difficulty=(3, 5))
    assert {t.metadata["difficulty"] for t in tasks} <= {3, 4, 5}
    for t in tasks:
        meta = t.metadata
        assert meta["role"] == envs[name].role and t.environment_name == name
        assert meta["optimal_steps"] == len(t.ground_truth) == sum(meta["oracle_turns"])
        assert t.input[0]["role"] == "system" and t.input[1]["role"] == "user" and t.user_prompt
        assert t.ground_truth[-1].name in envs[name].answer_tools
        assert {c.name for c in t.ground_truth} <= set(t.tool_names)
    with pytest.raises(ValueError, match="difficulty"):
        envs[name].generate_tasks(1, 1, difficulty=(0, 11))


@pytest.mark.parametrize("name", ENV_NAMES)
def test_problem_size_grows_with_the_level(name):
    module = MODULES[name]

    def size(scenario):
        p = scenario.private.get("full", scenario.public)
        if "options" in p:
            return len(p["options"])
        if "projects" in p:
            return len(p["projects"]) * len(p["staff"])
        if "plans" in p:
            return len(p["plans"]) * len(p["memos"])
        if "artifacts" in p:
            return sum(len(rows) for rows in p["artifacts"].values())
        return sum(len(w["options"]) for w in p["workloads"])

    low = sum(size(module.generate(s, 1)) for s in range(20))
    high = sum(size(module.generate(s, 10)) for s in range(20))
    assert high > 2 * low


@pytest.mark.parametrize("name", ENV_NAMES)
def test_infeasible_share_is_between_5_and_10_percent(envs, name):
    module = MODULES[name]
    flags = [module.generate(10_000 + s, 1 + s % 4).infeasible for s in range(400)]
    assert sum(flags) / len(flags) == 0.075  # a function of the seed: 3 residues modulo 40
    for n, seed in ((40, 1), (200, 2)):
        share = sum(t.metadata["infeasible"] for t in envs[name].generate_tasks(n, seed)) / n
        assert 0.05 <= share <= 0.10, share
    esc = next(module.generate(s, 2) for s in range(200) if module.generate(s, 2).infeasible)
    assert esc.answer.name == "escalate" and esc.private["why_infeasible"]


@pytest.mark.parametrize("name", ENV_NAMES)
def test_rows_round_trip_through_jsonl_and_still_verify(envs, name, tmp_path):
    env = envs[name]
    tasks = env.generate_tasks(8, 9)
    path = tmp_path / "tasks.jsonl"
    write_jsonl(path, tasks)
    back = read_tasks(path)
    assert [t.to_row() for t in back] == [t.to_row() for t in tasks]
    for t in back:
        assert env.verify(t, t.ground_truth).reward == 1.0


def test_inline_levels_put_the_data_in_the_brief_and_need_no_lookup(envs):
    for name in ("roles/cto", "roles/coo", "roles/reconcile", "roles/risk", "roles/cost"):
        t = envs[name].generate_tasks(1, 3, difficulty=(1, 1))[0]
        s = envs[name].scenario(t)
        assert not s.lookups and t.metadata["template"].split("/")[-1] in ("inline", "escalate")
        # at most the calculator on the answer's own plan before the answer
        assert t.ground_truth == [*s.checks, s.answer] and len(s.checks) <= 1
        high = envs[name].generate_tasks(1, 3, difficulty=(9, 9))[0]
        assert envs[name].scenario(high).lookups


def test_reconcile_calculator_takes_the_memos_and_no_tool_serves_them(envs):
    env = envs["roles/reconcile"]
    for level in (2, 6):  # evaluate_plan needs the memos as arguments, so it leaks nothing at any level
        names = env.generate_tasks(1, 1, difficulty=(level, level))[0].tool_names
        assert "evaluate_plan" in names and "get_memo" not in names
    spec = next(s for s in env.tool_specs(6) if s.name == "evaluate_plan")
    assert {"rule", "stakeholders"} <= set(spec.parameters["required"])


def test_task_from_a_foreign_row_is_refused_cleanly(envs):
    env = envs["roles/cost"]
    row = env.generate_tasks(1, 2)[0].to_row()
    row["scenario"] = {"seed": -1, "difficulty": 3, "version": 1}
    verdict = env.verify(Task.from_row(row), [])
    assert verdict.reward == 0.0 and verdict.details["label"] == "bad_task" and "seed" in verdict.details["error"]
    row["scenario"] = {"seed": 1, "difficulty": 3, "version": 99}
    assert "version" in env.verify(Task.from_row(row), []).details["error"]
    del row["scenario"]
    session = env.session(Task.from_row(row))
    assert "scenario" in session.call("get_usage_report", {})
