"""ReconcileGPT when a stakeholder can gain nothing: its best admissible utility equals its status quo.

Found by `officegym pipeline --config configs/roles_reconcile.yaml`: its baselines stage stopped
because `role-random:0` claimed the rule score of a plan in such a scenario and `Table.score` divided
by zero (issue 45).
"""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from officegym.agent.baseline_policy import make_baseline_policy
from officegym.agent.loop import LoopConfig
from officegym.core import registry
from officegym.core.rollout_row import officegym_of
from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.roles import reconcile
from officegym.envs.roles.base import Scenario
from officegym.envs.roles.baseline_answers import random_answer
from officegym.eval.run import run_eval
from officegym.sdg.env_tasks import generate_env_tasks

CRASHED = "reconcile-0-00042"  # the test task whose random answer raised ZeroDivisionError
# the settings of configs/roles_reconcile.yaml when it crashed (tasks n=200, seed 0, levels 1-2, the first
# 16 test tasks): the regression stays on that exact task whatever the config says today
SETTINGS = {"n": 200, "seed": 0, "difficulty": (1, 2), "fractions": (0.75, 0.1, 0.15), "max_tasks": 16}


def pipeline_test_tasks() -> list[Task]:
    """The tasks that pipeline's baselines stage played: its tasks stage, then the eval cap."""
    env = registry.make("roles/reconcile")
    rows = generate_env_tasks(env, SETTINGS["n"], SETTINGS["seed"], SETTINGS["difficulty"], name="roles/reconcile",
                              fractions=SETTINGS["fractions"]).rows["test"]
    return [Task.from_row(r) for r in rows[: SETTINGS["max_tasks"]]]


def test_normalised_gain_without_a_possible_gain():
    assert reconcile.normalised_gain(7, 10, 4) == 0.5  # the ordinary ratio
    assert reconcile.normalised_gain(60, 60, 60) == 1.0  # gets its best, which is its status quo
    assert reconcile.normalised_gain(61, 60, 60) == 1.0  # a vetoed plan above its best
    assert reconcile.normalised_gain(55, 60, 60) == 0.0
    assert reconcile.normalised_gain(55, 50, 60) == 1.0  # best below the status quo
    assert reconcile.normalised_gain(40, -math.inf, 60) == 1.0  # every plan vetoed


def test_the_pipeline_scenario_scores_and_grades_without_error():
    task = next(t for t in pipeline_test_tasks() if t.id == CRASHED)
    s = registry.make("roles/reconcile").scenario(task)
    table = reconcile.Table(s.public)
    assert s.infeasible and s.public["rule"] == "utilitarian"
    assert table.best[0] == table.status_quo[0] == 60  # the stakeholder with no possible gain
    scores = [table.score(i) for i in range(len(s.public["plans"]))]
    assert all(math.isfinite(x) for x in scores)
    answer = random_answer(s, random.Random(f"0:{task.id}"))  # what role-random:0 submitted
    assert answer.name == reconcile.SUBMIT and math.isfinite(answer.arguments["claimed_score"])
    verdict = registry.make("roles/reconcile").verify(task, [*s.lookups, answer])
    assert (verdict.reward, verdict.details["label"]) == (0.0, "missed_escalation")
    assert reconcile.evaluate(s.public, 0)["score"] is None  # the calculator still says why it has none


def test_the_baselines_stage_finishes_every_rollout(tmp_path):
    tasks = pipeline_test_tasks()
    assert CRASHED in {t.id for t in tasks}
    result = run_eval(registry.make("roles/reconcile"), tasks, make_baseline_policy("role-random:0"), tmp_path,
                      config=LoopConfig(max_steps=2))
    assert len(result.rows) == len(tasks) == 16
    assert not [r for r in result.rows if officegym_of(r).get("error")]
    crashed = next(r for r in result.rows if officegym_of(r)["task_id"] == CRASHED)
    assert crashed["reward"] == 0.0 and officegym_of(crashed)["verdict"]["label"] == "missed_escalation"


VETOES = ({"field": "vendor", "equals": "vendor-a"}, {"field": "compliance", "below": 5},
          {"field": "timeline_weeks", "below": 12}, {"field": "risk_reduction", "below": 11})  # the last: every plan


@st.composite
def tables(draw) -> dict:
    """Any small ReconcileGPT table: status quos anywhere (at, above or below every utility), weights
    that may all be zero, vetoes that may bar every plan."""
    names = draw(st.lists(st.sampled_from(reconcile.STAKEHOLDERS), min_size=1, max_size=4, unique=True))
    score = st.integers(0, 10)
    plans = [{"id": f"PLAN-{k + 1:02d}", "vendor": draw(st.sampled_from(reconcile.VENDORS)),
              "timeline_weeks": draw(st.sampled_from(reconcile.TIMELINES)), "budget_k_usd": 500, "scope": ["api"],
              "scores": {a: draw(score) for a in reconcile.ATTRIBUTES}} for k in range(draw(st.integers(1, 5)))]
    memos = [{"agent": n, "weights": {a: draw(st.integers(0, 5)) for a in reconcile.ATTRIBUTES},
              "status_quo_utility": draw(st.integers(-5, 260)), "bargaining_weight": draw(st.integers(1, 2)),
              "vetoes": draw(st.lists(st.sampled_from(VETOES), max_size=2))} for n in names]
    return {"stakeholders": names, "rule": draw(st.sampled_from(("utilitarian", "maxmin", "nash"))),
            "plans": plans, "memos": memos}


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(tables())
def test_any_table_scores_and_grades_within_bounds(public):
    found = reconcile.labels(public)
    table = reconcile.Table(public)
    for i, plan in enumerate(public["plans"]):
        assert math.isfinite(table.score(i))
        shown = reconcile.evaluate(public, i)["score"]
        assert shown is None or math.isfinite(shown)
        s = Scenario("reconcile", 0, 5, found["best"] is None, False, public,
                     {**found, "why_infeasible": "", "optimum_note": ""}, "", (), ToolCall("escalate", {}))
        answer = ToolCall(reconcile.SUBMIT, {"plan_id": plan["id"], "claimed_score": table.score(i),
                                             "conflicts": [p.split("|") for p in found["conflicts"]],
                                             "binding_vetoes": found["binding_vetoes"]})
        grade = reconcile.grade(s, answer)
        assert 0.0 <= grade.reward <= 1.0 and all(math.isfinite(v) for v in grade.components.values())
