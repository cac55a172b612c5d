"""Risk's curriculum (one artifact at level 1, two at level 2), a rule book whose every rule stands
alone, and task files of an older generator refused rather than graded against another scenario."""

from __future__ import annotations

import pytest

from officegym.core.task import Task
from officegym.envs.roles import risk
from officegym.envs.roles.base import ScenarioError


@pytest.mark.parametrize("level,artifacts,planted", [(1, 1, 1), (2, 2, 2)])
def test_low_levels_hold_one_and_two_artifacts(level, artifacts, planted):
    for seed in range(60):
        s = risk.generate(seed, level)
        assert len(s.public["artifacts"]) == artifacts
        if not s.infeasible:
            assert len(s.private["truth"]) == planted


def test_level_three_and_up_keep_the_version_one_sizes():
    for level in range(3, 11):
        assert {len(risk.generate(s, level).public["artifacts"]) for s in range(10)} == {3 + (level - 1) * 7 // 9}


# every categorical field a rule scores by, with the levels it maps to
SCALES = {"tier": risk.TIERS, "attrition_risk": {k: v + 1 for k, v in risk.LEVELS3.items()}, "criticality": risk.LEVELS3,
          "data_class": risk.DATA_CLASSES, "severity": risk.SEVERITY}


@pytest.mark.parametrize("rtype", risk.TYPES, ids=lambda t: t.name)
def test_each_rule_spells_out_the_scales_it_uses(rtype):
    """A dossier of one artifact shows one rule: 'I by tier.' would leave the model without the scale."""
    rows = [row for seed in range(200) for level in (1, 2, 3)
            for row in risk.generate(seed, level).public["artifacts"].get(rtype.artifact, [])]
    assert rows
    for field, scale in SCALES.items():
        if field in rows[0] and f"by {field}" in rtype.rule:
            for value, level in scale.items():
                assert f"{value} {level}" in rtype.rule, (rtype.name, field, value)
    if rtype.artifact in ("architecture", "certificates", "capacity_forecast"):
        assert "internal 1, customer 2, revenue 3" in rtype.rule


def test_a_task_of_the_previous_generator_is_refused(envs):
    env = envs["roles/risk"]
    task = env.generate_tasks(1, 3, difficulty=(1, 1))[0]
    assert task.metadata["scenario"]["version"] == 3  # 3: the dossier in prose, the rule book as a tool
    row = task.to_row()
    row["scenario"] = {**row["scenario"], "version": 2}
    with pytest.raises(ScenarioError, match="regenerate"):
        env.scenario(Task.from_row(row))
    verdict = env.verify(Task.from_row(row), task.ground_truth)
    assert verdict.reward == 0.0 and "version" in verdict.details["error"]
    # each role keeps its own version (roles/cost is at 2 since its brief became prose)
    assert envs["roles/cost"].generate_tasks(1, 3)[0].metadata["scenario"]["version"] == 2
