"""The Cost brief in prose (issue 45 items 2-3): seeded generation, the oracle's computed calls score
1.0, held-out wordings stay out of train and validation, every stated requirement and term binds,
the fixed rule written from the training wordings scores <= 0.5 on held-out ones, find_plan is the
exact optimum of the arguments it is given, and the new tools answer bad arguments with text."""

from __future__ import annotations

import asyncio
import itertools
import json
import random

import pytest

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.policies import make_policy
from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.roles import cost, cost_brief, cost_model, cost_rule
from officegym.envs.roles.prose import HELDOUT, HELDOUT_SHARE, TRAINED, id_fraction, words
from officegym.sdg.env_tasks import generate_env_tasks
from officegym.sdg.splits import SplitPlan

N = 300
REQUIREMENTS = ("floor", "latency", "mean", "spot", "pipeline")  # broken: the plan is infeasible
TERMS = ("discount", "commitment", "rate")  # misread: the plan costs more than the optimum


@pytest.fixture(scope="module")
def env():
    return cost.CostEnvironment()


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
        s = env.scenario(t)
        other = HELDOUT if t.metadata["subset"] == TRAINED else TRAINED
        twin = env.build(s.seed, s.difficulty, other)
        # the same numbers and answer, other words
        assert twin.answer == s.answer and twin.checks == s.checks
        assert [twin.brief, *twin.public["documents"].values()] != [s.brief, *s.public["documents"].values()]
        if not s.infeasible:
            assert s.answer.arguments["plan"] == s.private["plan"]
    assert {t.metadata["subset"] for t in tasks} == {TRAINED, HELDOUT}
    assert sum(t.metadata["infeasible"] for t in tasks) == pytest.approx(0.075 * N, abs=1)


def test_the_oracle_replayed_turn_by_turn_scores_one(env, tasks):
    sample = tasks[:24]
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in sample], make_policy("oracle"), LoopConfig(max_steps=4)))
    assert [tr.reward for tr in trajs] == [1.0] * len(sample)


def test_every_stated_requirement_and_term_binds(env, tasks):
    """Leaving any statement out of find_plan's arguments gives a plan that breaks a requirement or
    costs more than the optimum (billed honestly): a reader who misses one sentence loses the task."""
    checked = {kind: 0 for kind in (*REQUIREMENTS, *TERMS)}
    for t in tasks:
        s = env.scenario(t)
        if s.infeasible:
            continue
        args = s.checks[0].arguments
        for item in cost_model.items_of(args):
            out = cost_model.find(s.public, cost_model.without(args, item))
            assert out["plan"] is not None
            claim = cost.simulate(s.public, out["plan"])["total_usd"]
            verdict = env.verify(t, [ToolCall(cost.SUBMIT, {"plan": out["plan"], "claimed_monthly_cost": claim})])
            if item[0] in REQUIREMENTS:
                assert verdict.reward == 0.0 and verdict.details["label"] == "infeasible", (t.id, item)
            else:
                assert verdict.reward < 1.0 and verdict.details["label"] in ("infeasible", "suboptimal"), (t.id, item)
            checked[item[0]] += 1
    assert all(n >= 5 for n in checked.values()), checked


def test_each_kind_of_statement_has_at_least_ten_forms_and_held_out_ones():
    for kind in cost_brief.KINDS:
        forms = cost_brief.FORMS[kind]
        assert len(forms.trained) + len(forms.heldout) >= 10 and forms.heldout, kind
        assert not set(forms.trained) & set(forms.heldout)
    for kind in ("update", "hearsay"):
        assert cost_brief.FORMS[kind].heldout
    for kind, (trained, heldout) in cost_brief.STYLES.items():
        assert heldout and not set(trained) & set(heldout), kind


def test_values_in_other_units_state_the_same_figure():
    """Every style is exact: the figure a reader recovers with the stated convention (730 hours a
    month, 12 months a year) is the model's."""
    hours = cost_model.HOURS_PER_MONTH

    def number(text: str) -> float:
        return float(text.split()[0].lstrip("$").replace(",", "").rstrip("k"))

    for value in (0.3, 0.45, 1.07, 12.34, 14.99):
        back = {"per_million": 1, "per_1m": 1, "per_thousand": 1000, "per_billion": 1 / 1000, "cents_thousand": 10}
        for style, scale in back.items():
            assert number(cost_brief.render_value("llm_price", value, style)) * scale == pytest.approx(value, abs=1e-12)
    for value in (0.0123, 0.0412, 0.1187):
        back = {"hourly": 1, "monthly": 1 / hours, "yearly": 1 / (12 * hours), "cents_hour": 1 / 100}
        for style, scale in back.items():
            assert number(cost_brief.render_value("compute_price", value, style)) * scale == pytest.approx(value, abs=1e-12)
    for k in range(1, 12):
        value = hours // 2 * k
        back = {"monthly": 1, "monthly_usd": 1, "hourly": hours, "hourly_per": hours, "yearly": 1 / 12,
                "cents_hourly": hours / 100}
        for style, scale in back.items():
            assert number(cost_brief.render_value("commitment", value, style)) * scale == pytest.approx(value), style
        assert cost_rule.number_from_words(cost_brief.render_value("commitment", value, "monthly_words")) == value
    for value in (1000, 5500, 10000):
        assert number(cost_brief.render_value("threshold", value, "k")) * 1000 == value
        assert number(cost_brief.render_value("threshold", value, "yearly")) == 12 * value
    assert cost_brief.render_value("quality", 82, "unit_fraction") == "0.82 on a 0-1 scale"
    assert cost_brief.render_value("latency", 450, "seconds") == "0.45 seconds"


@pytest.mark.parametrize("fractions", [(0.8, 0.1, 0.1), (0.75, 0.1, 0.15)])
def test_held_out_wordings_never_reach_train_or_validation(env, fractions):
    rows = generate_env_tasks(env, 400, 9, fractions=fractions).rows
    held = {f for forms in cost_brief.FORMS.values() for f in forms.features(HELDOUT)}
    held |= {f"{k}_style:{s}" for k, (_, styles) in cost_brief.STYLES.items() for s in styles}
    held_text = [f.split("{")[0] for forms in cost_brief.FORMS.values() for f in forms.heldout if len(f.split("{")[0]) > 12]
    held_text += ["on a 0-1 scale", " seconds", "cents on the dollar", " per cent", " a year", " grand ",
                  "per billion tokens", "cents per thousand tokens", "per vCPU-year", "cents per vCPU-hour"]
    for split in ("train", "validation"):
        for row in rows[split]:
            assert row["subset"] == TRAINED
            assert not held & set(row["wording_features"]), (split, row["id"])
            s = env.scenario(Task.from_row(row))
            text = " ".join([s.brief, *s.public["documents"].values()])
            assert not any(h in text for h in held_text), (split, row["id"])
    assert all(r["subset"] == HELDOUT for r in rows["test"] if id_fraction(r["id"]) >= 1 - HELDOUT_SHARE)
    assert sum(r["subset"] == HELDOUT for r in rows["test"]) >= 25


def test_the_subset_follows_the_split_hash():
    plan = SplitPlan((0.8, 0.1, 0.1))
    for i in range(2000):
        key = f"cost-3-{i:05d}"
        if id_fraction(key) >= 1 - HELDOUT_SHARE:
            assert plan.assign(key, "", "") == "test"


def _rule_reward(env, t: Task) -> float:
    s = env.scenario(t)
    texts = [s.brief, *(s.public["documents"][d] for d in cost_rule.documents_to_read(s.brief))]
    session = env.session(t)
    out = json.loads(session.call(cost_rule.SOLVE, cost_rule.solver_arguments(texts)))
    name, args = cost_rule.answer(out.get("output"))
    return env.verify(t, [ToolCall(name, args)]).reward


def test_the_fixed_rule_reads_trained_wordings_and_fails_held_out_ones(env, tasks):
    by = {TRAINED: [], HELDOUT: []}
    for t in tasks:
        by[t.metadata["subset"]].append(_rule_reward(env, t))
    trained, heldout = (sum(v) / len(v) for v in (by[TRAINED], by[HELDOUT]))
    assert trained >= 0.95  # a strong rule on what it was written from
    assert heldout <= 0.5 and len(by[HELDOUT]) >= 20  # the target of issue 45, by construction


def test_the_rule_on_both_wordings_of_the_same_scenarios(env, tasks):
    """The same numbers written both ways: the drop is the wording's alone."""
    sample = [t for t in tasks if t.metadata["subset"] == TRAINED][:60]
    rewards = {TRAINED: [], HELDOUT: []}
    for t in sample:
        for subset in (TRAINED, HELDOUT):
            s = env.build(t.metadata["scenario"]["seed"], t.metadata["difficulty"], subset)
            row = env.task_from_scenario(s, t.id).to_row()
            rewards[subset].append(_rule_reward(env, Task.from_row(row)))
    assert sum(rewards[TRAINED]) / len(sample) >= 0.95 and sum(rewards[HELDOUT]) / len(sample) <= 0.5


def test_the_rule_policy_plays_through_the_loop_from_the_conversation_alone(env, tasks):
    sample = [t for t in tasks if t.metadata["subset"] == TRAINED][:12]
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in sample], make_policy("rule", environment="roles/cost"),
                                     LoopConfig(max_steps=4)))
    assert [tr.reward for tr in trajs] == [_rule_reward(env, t) for t in sample]


def test_numbers_in_words_read_back():
    for n in [*range(0, 1200), 4015, 12_000, 182_000, 1_250_340]:
        assert cost_rule.number_from_words(words(n)) == n


def _random_arguments(rng: random.Random, public: dict) -> dict:
    args: dict = {}
    bench = public["benchmarks"]
    ids = [w["id"] for w in public["workloads"]]
    providers = sorted({s["provider"] for s in public["skus"].values()} - {"self-hosted"})
    for w in rng.sample(ids, rng.randint(0, len(ids))):
        args.setdefault("quality_floors", {})[w] = rng.choice([b["quality"] for b in bench[w].values()])
    for w in rng.sample(ids, rng.randint(0, 2)):
        args.setdefault("latency_limits_ms", {})[w] = rng.choice([b["latency_ms"] for b in bench[w].values()])
    if rng.random() < 0.5:
        args["min_mean_quality"] = rng.randint(60, 90)
    if rng.random() < 0.5:
        args["max_spot_workloads"] = rng.randint(0, 2)
    if rng.random() < 0.5:
        args["llm_pipeline_latency_ms"] = rng.randint(300, 2500)
    for p in rng.sample(providers, rng.randint(0, len(providers))):
        args.setdefault("volume_discounts", {})[p] = {"threshold_usd": rng.randint(0, 8000), "rate": rng.choice([0.1, 25])}
    for p in rng.sample(providers, rng.randint(0, len(providers))):
        args.setdefault("reserved_minimums_usd", {})[p] = rng.randint(0, 4000)
    for s in rng.sample(list(public["skus"]), rng.randint(0, 2)):
        args.setdefault("negotiated_prices", {})[s] = public["skus"][s]["unit_price_usd"] * rng.uniform(0.3, 1.2)
    return args


def test_find_plan_is_the_brute_force_optimum_of_any_arguments(env):
    rng = random.Random(11)
    checked = 0
    for t in env.generate_tasks(30, 2, difficulty=(3, 6)):
        public = env.scenario(t).public
        for _ in range(4):
            args = _random_arguments(rng, public)
            out = json.loads(env.session(t).call(cost.SOLVE, args))["output"]
            model = cost_model.model_of(public, cost.normalised(args))
            ids = [w["id"] for w in public["workloads"]]
            plans = [dict(zip(ids, combo)) for combo in itertools.product(*(w["options"] for w in public["workloads"]))]
            costs = [cost_model.bill(model, p)["exact_total"] for p in plans if not cost_model.violations(model, p)]
            if not costs:
                assert out["plan"] is None
                continue
            assert cost_model.bill(model, out["plan"])["exact_total"] == pytest.approx(min(costs))
            assert out["total_usd"] == pytest.approx(min(costs), abs=0.01)
            checked += 1
    assert checked >= 60


NASTY = (None, True, -1, 0, 1e308, "", "x" * 3000, [], {}, {"nimbus": {"rate": 5}}, {"nowhere": 3}, "NaN", 10**400,
         {"checkout-api": -5}, {"nimbus": {"threshold_usd": 1e9, "rate": 100}}, {"Nimbus": 1e9})


def test_the_new_tools_answer_bad_arguments_with_text(env, tasks):
    rng = random.Random(3)
    keys = ("quality_floors", "latency_limits_ms", "min_mean_quality", "max_spot_workloads", "llm_pipeline_latency_ms",
            "volume_discounts", "reserved_minimums_usd", "negotiated_prices", "doc_id", "expression", "plan",
            "provider", "x")
    for t in tasks[:30]:
        session = env.session(t)
        for _ in range(30):
            args = {k: rng.choice(NASTY) for k in rng.sample(keys, rng.randint(0, 4))}
            for name in (cost.SOLVE, cost.READ, cost.CALCULATE, cost.SIMULATE, "get_price_list"):
                text = session.call(name, args)
                assert isinstance(json.loads(text), dict)
        assert "error" in json.loads(session.call(cost.READ, {"doc_id": "MAIL-0"}))
        assert "error" in json.loads(session.call(cost.SOLVE, {"quality_floors": {"mainframe": 50}}))
        assert "error" in json.loads(session.call(cost.SOLVE, {"negotiated_prices": {"nimbus.quantum": 1}}))
        ids = [w["id"] for w in env.scenario(t).public["workloads"]]
        out = json.loads(session.call(cost.SOLVE, {"quality_floors": {ids[0]: 100}, "min_mean_quality": 100}))
        assert out["output"]["plan"] is None
        assert session.answer is None  # no tool but the answer tools ends the episode


def test_find_plan_reads_percentages_and_provider_names_in_any_case(env, tasks):
    for t in tasks:
        s = env.scenario(t)
        args = s.checks[0].arguments
        if "volume_discounts" not in args or s.infeasible:
            continue
        loud = {**args, "volume_discounts": {p.upper(): {"threshold_usd": d["threshold_usd"], "rate": d["rate"] * 100}
                                             for p, d in args["volume_discounts"].items()}}
        assert json.loads(env.session(t).call(cost.SOLVE, loud))["output"]["plan"] == s.answer.arguments["plan"]
