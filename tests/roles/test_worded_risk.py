"""The Risk dossier in prose (issue 45 items 2-3): seeded generation, the oracle's computed calls score
1.0 in both wordings, held-out wordings stay out of train and validation, the fixed rule written from
the training wordings reads every trained phrase and scores <= 0.5 on held-out wordings, and the
tools answer bad arguments with text."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import make_policy
from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.roles import risk, risk_brief, risk_rule
from officegym.envs.roles.prose import HELDOUT, HELDOUT_SHARE, TRAINED, id_fraction
from officegym.envs.roles.risk_model import FIELDS, LICENSES
from officegym.envs.roles.risk_phrases import MONEY, PHRASES, Say
from officegym.sdg.env_tasks import generate_env_tasks

N = 300


@pytest.fixture(scope="module")
def env():
    return risk.RiskEnvironment()


@pytest.fixture(scope="module")
def tasks(env):
    return env.generate_tasks(N, 5)


def test_generation_is_seeded_and_a_row_rebuilds_its_scenario(env, tasks):
    again = env.generate_tasks(40, 5)
    assert [t.to_row() for t in again] == [t.to_row() for t in tasks[:40]]
    for t in tasks[:40]:
        s = env.scenario(Task.from_row(json.loads(json.dumps(t.to_row()))))
        assert s.brief == t.input[1]["content"] and s.subset == t.metadata["subset"]
        assert list(s.wording) == t.metadata["wording_features"]


def test_the_oracle_scores_one_on_every_scenario_in_both_wordings(env, tasks):
    for t in tasks:
        assert env.verify(t, t.ground_truth).reward == 1.0, t.id
        meta = t.metadata["scenario"]
        other = HELDOUT if t.metadata["subset"] == TRAINED else TRAINED
        twin = env.build(meta["seed"], meta["difficulty"], other)
        twin_task = env.task_from_scenario(twin, t.id)
        assert env.verify(twin_task, twin.ground_truth).reward == 1.0, t.id
        # the same facts and answer, other words
        assert twin.answer == env.scenario(t).answer and twin.checks == env.scenario(t).checks
        assert twin.brief != env.scenario(t).brief
    assert {t.metadata["subset"] for t in tasks} == {TRAINED, HELDOUT}
    assert sum(t.metadata["infeasible"] for t in tasks) == pytest.approx(0.075 * N, abs=1)


def test_the_oracle_replayed_turn_by_turn_scores_one(env, tasks):
    sample = tasks[:24]
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in sample], make_policy("oracle"), LoopConfig(max_steps=4)))
    assert [tr.reward for tr in trajs] == [1.0] * len(sample)


def test_every_fact_is_stated_and_decoys_are_not_risks(env, tasks):
    """Every item's name is in the text the agent can read, and the register of the oracle's facts is the
    truth: the decoys (planted to look risky) are found not to be risks by the rule book."""
    decoys = 0
    for t in tasks:
        s = env.scenario(t)
        text = " ".join([s.brief, *s.public["documents"].values()])
        for area, rows in s.public["artifacts"].items():
            for row in rows:
                assert row[risk.ARTIFACTS[area][1]] in text, (t.id, area)
        if s.infeasible:
            assert s.public["restricted"] in s.brief and not s.checks
            continue
        out = risk.assess(s.checks[0].arguments["items"])
        keys = {(e["risk_type"], e["artifact"], e["item"]) for e in out["entries"]}
        assert keys == {(x["risk_type"], x["artifact"], x["item"]) for x in s.private["truth"]}
        decoys += sum("mitigated" in f["finding"] for f in out["findings"])
    assert decoys > 100


def test_each_kind_of_fact_has_at_least_ten_forms_and_held_out_ones():
    for kind in (*risk_brief.AREA_FORMS, "advisory"):
        forms = risk_brief.FORMS[kind]
        assert len(forms.trained) + len(forms.heldout) >= 10 and forms.heldout, kind
        assert not set(forms.trained) & set(forms.heldout)
    for kind in ("update", "hearsay", "restricted"):
        assert risk_brief.FORMS[kind].heldout
    for field in {f for fields in FIELDS.values() for f in fields} - {"advisories"} | {"fixed_in", "cvss"}:
        trained, heldout = PHRASES[field]
        assert trained and heldout and not set(trained) & set(heldout), field


def _held_features() -> set[str]:
    held = {f for forms in risk_brief.FORMS.values() for f in forms.features(HELDOUT)}
    held |= {f"{field}_style:{s}" for field, (_, styles) in PHRASES.items() for s in styles}
    return held | {f"money_style:{s}" for s in MONEY[1]}


@pytest.mark.parametrize("fractions", [(0.8, 0.1, 0.1), (0.75, 0.1, 0.15)])
def test_held_out_wordings_never_reach_train_or_validation(env, fractions):
    rows = generate_env_tasks(env, 400, 9, fractions=fractions).rows
    held = _held_features()
    held_text = [f.split("{")[0] for forms in risk_brief.FORMS.values() for f in forms.heldout if len(f.split("{")[0]) > 12]
    held_text += ["running cop", "standing by to take over", "nights of validity", "people who know the code",
                  "ready to step in", "a data centre in", "requests a minute", "per annum", "already gone", " grand"]
    for split in ("train", "validation"):
        for row in rows[split]:
            assert row["subset"] == TRAINED
            assert not held & set(row["wording_features"]), (split, row["id"])
            s = env.scenario(Task.from_row(row))
            text = " ".join([s.brief, *s.public["documents"].values()])
            assert not any(h in text for h in held_text), (split, row["id"])
    assert all(r["subset"] == HELDOUT for r in rows["test"] if id_fraction(r["id"]) >= 1 - HELDOUT_SHARE)
    assert sum(r["subset"] == HELDOUT for r in rows["test"]) >= 25
    heldout = [r for r in rows["test"] if r["subset"] == HELDOUT]
    assert all(held & set(r["wording_features"]) for r in heldout)


def _values(field: str) -> list:
    return {"replicas": [1, 2, 3], "incidents_90d": [0, 1, 4], "days_to_expiry": [3, 14, 120], "maintainers": [1, 3],
            "backup_interval_hours": [1, 6, 144], "rpo_hours": [1, 4, 24], "records_millions": [0.4, 1.0, 6.3],
            "current_peak_rps": [950, 2345], "monthly_growth_pct": [2, 8], "horizon_months": [6, 9, 12],
            "capacity_rps": [1000, 4600], "autoscaling_max_rps": [0, 5200], "budget_cap_usd": [200_000, 1_950_000],
            "spent_usd": [41_000, 388_000], "monthly_burn_usd": [12_000, 406_000], "months_remaining": [1, 7],
            "approved_increase_usd": [0, 71_000], "term_months": [6, 24, 48], "annual_value_usd": [20_000, 900_000],
            "occurrences_90d": [1, 2, 4], "version": ["2.3.1", "4.10.0"], "license": list(LICENSES),
            "scope": ["runtime", "dev"], "tier": list(risk.TIERS), "attrition_risk": list(risk.LEVELS3),
            "criticality": list(risk.LEVELS3), "data_class": list(risk.DATA_CLASSES), "region": list(risk.REGIONS),
            "allowed_regions": [["eu-west"], ["eu-central", "eu-west"]], "fix_status": ["open", "deployed"],
            "severity": list(risk.SEVERITY)}.get(field, [True, False])


def test_the_rule_reads_every_trained_phrase_and_no_held_out_one():
    for field, parse in risk_rule.PARSERS.items():
        trained, heldout = PHRASES[field]
        for value in _values(field):
            for number in ("digits", "words"):
                for style in MONEY[0]:
                    for name, phrase in trained.items():
                        text = phrase(value, Say(number, style))
                        assert [v for _, v in parse(text)] == [value], (field, name, text)
                for style in MONEY[1]:
                    for name, phrase in heldout.items():
                        text = phrase(value, Say(number, style))
                        assert [v for _, v in parse(text)] != [value], (field, name, text)


def _rule_reward(env, t: Task) -> float:
    s = env.scenario(t)
    texts = [s.brief, *(s.public["documents"][d] for d in risk_rule.documents_to_read(s.brief))]
    reason = risk_rule.escalation(texts)
    if reason:
        return env.verify(t, [ToolCall("escalate", {"reason": reason})]).reward
    try:
        out = risk.assess(risk_rule.solver_arguments(texts)["items"])
    except ValueError:
        out = None
    name, args = risk_rule.answer(out)
    return env.verify(t, [ToolCall(name, args)]).reward


def test_the_fixed_rule_reads_trained_wordings_and_fails_held_out_ones(env, tasks):
    by = {TRAINED: [], HELDOUT: []}
    for t in tasks:
        by[t.metadata["subset"]].append(_rule_reward(env, t))
    trained, heldout = (sum(v) / len(v) for v in (by[TRAINED], by[HELDOUT]))
    assert trained >= 0.95  # a strong rule on what it was written from
    assert heldout <= 0.5 and len(by[HELDOUT]) >= 20  # the target of issue 45, by construction


def test_the_rule_policy_plays_through_the_loop_from_the_conversation_alone(env, tasks):
    trained = [t for t in tasks if t.metadata["subset"] == TRAINED]
    sample = trained[:10] + [t for t in trained if t.metadata["infeasible"]][:3]
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in sample], make_policy("rule", environment="roles/risk"),
                                     LoopConfig(max_steps=4)))
    assert [tr.reward for tr in trajs] == [_rule_reward(env, t) for t in sample] == [1.0] * len(sample)


NASTY = (None, True, -1, 0, 1e308, "", "x" * 3000, [], {}, "NaN", 10**400, [{}], [{"area": "architecture"}],
         [{"area": "budget", "item": "x", "budget_cap_usd": 0}], [{"area": "dependencies", "item": "a", "version": "x.y"}],
         [{"area": "nowhere", "item": "a"}])


def test_the_tools_answer_bad_arguments_with_text(env, tasks):
    rng = random.Random(3)
    keys = ("items", "doc_id", "expression", "entries", "x")
    for t in tasks[:30]:
        session = env.session(t)
        s = env.scenario(t)
        for _ in range(30):
            args = {k: rng.choice(NASTY) for k in rng.sample(keys, rng.randint(0, 3))}
            for name in (risk.SOLVE, risk.READ, risk.CALCULATE, risk.SCORE):
                assert isinstance(json.loads(session.call(name, args)), dict)
        if s.checks:  # a good item made bad one fact at a time: refused with the reason, never an exception
            item = s.checks[0].arguments["items"][0]
            for key in [k for k in item if k != "area"]:
                for bad in (None, "x", -(10**6), 10**12, [1], {"a": 1}):
                    result = session.execute(risk.SOLVE, {"items": [{**item, key: bad}]})
                    assert result.status in ("rejected", "error") or key == "item", result.value
            missing = session.execute(risk.SOLVE, {"items": [{"area": item["area"], "item": item["item"]}]})
            assert missing.status == "rejected" and "missing" in missing.value
            twice = session.execute(risk.SOLVE, {"items": [item, item]})
            assert twice.status == "rejected" and "twice" in twice.value
        assert "error" in json.loads(session.call(risk.READ, {"doc_id": "MAIL-0"}))
    assert session.answer is None


def test_an_update_or_a_rumour_read_as_fact_changes_the_register(env):
    """Updates and hearsay are not decoration: reading the superseded or rumoured value as the fact
    changes the register the rule book gives in many scenarios."""
    changed = 0
    for t in env.generate_tasks(200, 8, difficulty=(6, 10)):
        s = env.scenario(t)
        if s.infeasible:
            continue
        items = s.checks[0].arguments["items"]
        truth = risk.assess(items)["entries"]
        for field in {f for fields in risk_brief.UPDATABLE.values() for f in fields}:
            for i, item in enumerate(items):
                if field in item:
                    row = {**item, risk.ARTIFACTS[item["area"]][1]: item["item"],
                           "autoscaling_max_rps": item.get("autoscaling_max_rps") or None}
                    other = risk_brief._other(field, row, random.Random(i))
                    value = (other or 0) if field == "autoscaling_max_rps" else other
                    wrong = [*items[:i], {**item, field: value}, *items[i + 1:]]
                    changed += risk.assess(wrong)["entries"] != truth
    assert changed > 200
