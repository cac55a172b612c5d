"""Where NeMo Gym's servers and agent expect something of a resources server: the rollout path
prefix, the liveness routes, and /aggregate_metrics computed as its RewardProfiler computes it."""

from __future__ import annotations

import math
import random

import pytest
from fastapi.testclient import TestClient

from officegym.server.metrics import aggregate_metrics


def verify_body(task) -> dict:
    row = task.to_row()
    row["response"] = {"output": [dict(c.to_function_call(), call_id=f"c{i}") for i, c in enumerate(task.ground_truth)]}
    return row


# -- C: /ng-rollout/<id>/... ---------------------------------------------------------------------------


def test_rollout_prefixed_routes_are_served_as_the_bare_ones(tiny_app, tiny_tasks):
    c = TestClient(tiny_app)
    prefix = "/ng-rollout/12-3.a_b"
    assert c.post(f"{prefix}/seed_session", json={}).status_code == 200
    r = c.post(f"{prefix}/company_directory_find_email_address", json={"name": "bo"})
    assert r.status_code == 200 and r.json() == {"output": ["bo.kim@acme.com"]}
    assert c.post("/company_directory_find_email_address", json={"name": "bo"}).status_code == 200  # same session
    out = c.post(f"{prefix}/verify", json=verify_body(tiny_tasks[4]))
    assert out.status_code == 200 and out.json()["reward"] == 1.0
    assert c.post(f"{prefix}/aggregate_metrics", json={"verify_responses": [{"reward": 1.0}]}).status_code == 200
    assert c.get(f"{prefix}/reverify_mode").json() == "stateless"
    assert c.post(f"{prefix}/verify?mode=nemo_gym", json=verify_body(tiny_tasks[4])).json()["reward"] == 1.0


def test_only_well_formed_rollout_prefixes_are_stripped(tiny_app):
    c = TestClient(tiny_app)
    c.post("/seed_session", json={})
    for path in ("/ng-rollout/.hidden/seed_session", "/ng-rollout//seed_session", "/ng-rollout/a b/seed_session"):
        assert c.post(path, json={}).status_code in (404, 405), path
    assert c.get("/ng-rollout/abc").status_code in (404, 405)  # no route after the id


# -- F: liveness routes --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/health", "/healthz", "/livez", "/readyz"])
def test_liveness_routes_answer_get_as_nemo_gym_servers_do(tiny_app, path):
    r = TestClient(tiny_app).get(path)
    assert r.status_code == 200 and r.json()["status"] == "ok"


# -- E: /aggregate_metrics as NeMo Gym's RewardProfiler ----------------------------------------------------


def test_std_is_the_sample_standard_deviation(tiny_app):
    rows = [{"_ng_task_index": 0, "reward": 1.0}, {"_ng_task_index": 0, "reward": 0.0}, {"_ng_task_index": 1, "reward": 1.0}]
    out = TestClient(tiny_app).post("/aggregate_metrics", json={"verify_responses": rows}).json()
    assert out["group_level_metrics"][0]["std/reward"] == pytest.approx(math.sqrt(0.5))  # pandas' std, ddof=1
    assert out["group_level_metrics"][1]["std/reward"] == 0.0  # one rollout: 0, as RewardProfiler fills it
    assert out["agent_metrics"]["std/reward"] == pytest.approx(math.sqrt(1 / 3))


def test_masked_rows_are_left_out(tiny_app):
    rows = [{"_ng_task_index": 0, "reward": 1.0}, {"_ng_task_index": 0, "reward": 0.0, "mask_sample": True},
            {"_ng_task_index": 1, "reward": 0.0, "mask_sample": True}]
    out = TestClient(tiny_app).post("/aggregate_metrics", json={"verify_responses": rows}).json()
    agent = out["agent_metrics"]
    assert agent["num_rollouts"] == 1 and agent["num_masked"] == 2 and agent["num_tasks"] == 1
    assert agent["mean/reward"] == 1.0 and agent["pass@1"] == 1.0
    assert [g["_ng_task_index"] for g in out["group_level_metrics"]] == [0]
    assert "mean/mask_sample" not in agent
    assert aggregate_metrics([{"reward": 0.0, "mask_sample": True}])["agent_metrics"] == {
        "num_tasks": 0, "num_rollouts": 0, "num_masked": 1, "coverage/measured_rollouts": 0,
        "coverage/masked_rollouts": 1, "coverage/measured_tasks": 0, "coverage/fully_masked_tasks": 1}
    assert agent["coverage/masked_rollouts"] == 2 and agent["coverage/fully_masked_tasks"] == 1


def test_token_usage_and_numeric_fields_are_described_and_key_metrics_hold_every_mean(tiny_app):
    rows = [{"_ng_task_index": 1, "_ng_rollout_index": 0, "reward": 1.0, "verify_s": 0.5,
             "response": {"usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
                                    "input_tokens_details": {"cached_tokens": 0}}}},
            {"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 0.0, "verify_s": 1.5,
             "response": {"usage": {"input_tokens": 300, "output_tokens": 30, "total_tokens": 330}}}]
    out = TestClient(tiny_app).post("/aggregate_metrics", json={"verify_responses": rows}).json()
    agent = out["agent_metrics"]
    assert agent["mean/input_tokens"] == 200 and agent["max/output_tokens"] == 30 and agent["median/total_tokens"] == 220
    assert agent["std/input_tokens"] == pytest.approx(math.sqrt(2 * 100**2))
    assert agent["mean/verify_s"] == 1.0
    assert not any(k.endswith(("_ng_task_index", "_ng_rollout_index", "cached_tokens", "input_tokens_details"))
                   for k in agent)
    assert [g["_ng_task_index"] for g in out["group_level_metrics"]] == [0, 1]  # sorted, as pandas' groupby
    assert out["key_metrics"] == {"mean/reward": 0.5, "mean/verify_s": 1.0, "mean/input_tokens": 200,
                                  "mean/output_tokens": 20, "mean/total_tokens": 220, "pass@1": 0.5}


def _reward_profiler(rows: list[dict]) -> tuple[list[dict], dict]:
    """NeMo Gym's RewardProfiler statistics computed with pandas as it computes them (numeric fields
    of each row joined by its response usage, booleans as 0/1, grouped by _ng_task_index; std with
    pandas' default ddof=1, filled with 0 where every std of a group is NaN; NaN entries dropped)."""
    pd = pytest.importorskip("pandas")
    records = []
    for row in rows:
        merged = row | ((row.get("response") or {}).get("usage") or {})
        records.append({k: int(v) if isinstance(v, bool) else v for k, v in merged.items()
                        if isinstance(v, (bool, int, float)) and k != "mask_sample"})
    df = pd.DataFrame.from_records(records)

    def describe(frame) -> dict:
        std = frame.std()
        if std.isna().all():
            full = frame.columns[frame.notna().all()]
            std[full] = std[full].fillna(0)
        stats = {"mean": frame.mean(), "max": frame.max(), "min": frame.min(), "median": frame.median(), "std": std}
        return {f"{name}/{col}": float(v) for name, series in stats.items() for col, v in series.items() if pd.notna(v)}

    groups = [describe(g.drop(columns=["_ng_task_index", "_ng_rollout_index"])) for _, g in df.groupby("_ng_task_index")]
    return groups, describe(df.drop(columns=["_ng_task_index", "_ng_rollout_index"]))


def test_statistics_equal_reward_profilers_on_random_rollouts():
    rng = random.Random(7)
    for _ in range(60):
        rows = []
        for task in rng.sample(range(10), rng.randint(1, 4)):
            for rollout in range(rng.randint(1, 4)):
                row = {"_ng_task_index": task, "_ng_rollout_index": rollout,
                       "reward": rng.choice([0.0, 1.0, 0.5, rng.random()])}
                if rng.random() < 0.5:
                    row["n_calls"] = rng.randint(0, 9)  # present in some rows only
                if rng.random() < 0.5:
                    row["flag"] = rng.random() < 0.5
                if rng.random() < 0.7:
                    row["response"] = {"usage": {"input_tokens": rng.randint(1, 999), "output_tokens": rng.randint(1, 99)}}
                rows.append(row)
        ours = aggregate_metrics(rows)
        groups, agent = _reward_profiler(rows)
        for mine, theirs in zip(ours["group_level_metrics"], groups, strict=True):
            described = {k: v for k, v in mine.items() if "/" in k}
            assert described.keys() == theirs.keys()
            assert all(math.isclose(described[k], theirs[k], rel_tol=1e-12, abs_tol=1e-12) for k in theirs)
        # the across-repeats summaries (NeMo Gym 0.7) are checked against its own code in
        # test_nemo_gym_metrics_reference.py; the profiler here describes the rows
        described = {k: v for k, v in ours["agent_metrics"].items() if "/" in k and "_across_repeats/" not in k}
        assert described.keys() == agent.keys()
        assert all(math.isclose(described[k], agent[k], rel_tol=1e-12, abs_tol=1e-12) for k in agent)


def test_repeat_completeness_and_observability_keys_as_nemo_gym_07_defines_them(tiny_app):
    """Issue 47 item 5 (values checked against NeMo Gym's own code in test_nemo_gym_metrics_reference.py)."""
    rows = [{"_ng_task_index": t, "_ng_rollout_index": r, "reward": v}
            for (t, r), v in {(0, 0): 1.0, (1, 0): 0.0, (0, 1): 1.0, (1, 1): 1.0}.items()]
    rows[0]["ng_perf"] = {"num_turns": 2, "completion_tokens": 10, "total_latency_ms": 100}
    rows[1]["ng_perf"] = {"num_turns": 4, "completion_tokens": 30, "total_latency_ms": 300, "token_observability_coverage": 1}
    out = TestClient(tiny_app).post("/aggregate_metrics", json={"verify_responses": rows}).json()
    group = out["group_level_metrics"][0]
    assert (group["num_rollouts"], group["expected_num_rollouts"], group["missing_num_rollouts"]) == (2, 2, 0)
    assert group["reward_profile_completion_pct"] == 100.0
    assert [i["rollout_id"] for i in group["rollout_infos"]] == ["0:0", "0:1"]
    agent = out["agent_metrics"]
    assert agent["num_repeats"] == 2 and agent["mean_across_repeats/mean/reward"] == 0.75
    assert agent["se_across_repeats/mean/reward"] == pytest.approx(0.25)
    t = 12.706204736174707  # Student t, 1 degree of freedom, 97.5%
    assert agent["ci_low_95_across_repeats/mean/reward"] == pytest.approx(0.75 - t * 0.25, rel=1e-12)
    assert agent["ci_high_95_across_repeats/mean/reward"] == pytest.approx(0.75 + t * 0.25, rel=1e-12)
    first, second = out["repeat_level_metrics"]
    assert (first["_ng_rollout_index"], first["sample_count"], first["missing_count"]) == (0, 2, 0)
    assert first["mean/reward"] == 0.5 and first["p25/reward"] == 0.25 and second["mean/reward"] == 1.0
    perf = out["perf_summary"]
    assert perf["overall_observability_coverage"] == 0.5 and perf["token_observability_coverage"] == 0.25
    assert perf["mean_num_turns"] == 3 and perf["p90_num_turns"] == pytest.approx(3.8)
    assert perf["mean_tokens_per_turn"] == 6.25 and perf["total_completion_tokens"] == 40
    assert perf["total_latency_p50_ms"] == 200
    one_repeat = TestClient(tiny_app).post("/aggregate_metrics", json={"verify_responses": rows[:2]}).json()
    assert one_repeat["repeat_level_metrics"] == [] and one_repeat["agent_metrics"]["num_repeats"] == 1
    assert not any("_across_repeats/" in k for k in one_repeat["agent_metrics"])
    assert TestClient(tiny_app).post("/aggregate_metrics", json={"verify_responses": [{"reward": 1}]}).json()[
        "perf_summary"] is None


@pytest.mark.parametrize("path", ["/", "/health", "/healthz", "/livez", "/readyz", "/tools", "/reverify_mode",
                                  "/ng-rollout/r1/healthz"])
def test_head_is_not_allowed_where_nemo_gyms_routes_refuse_it(tiny_app, path):
    r = TestClient(tiny_app).head(path)
    assert r.status_code == 405 and r.headers["allow"] == "GET"
    assert TestClient(tiny_app).get(path).status_code == 200


def test_student_t_quantiles_equal_scipys():
    stats = pytest.importorskip("scipy.stats")
    from officegym.server.repeats import t_ppf

    for df in [*range(1, 60), 99, 250, 999, 1000, 5000, 10**6]:
        for p in (0.975, (1.0 - 0.95) / 2, 0.9, 0.6, 0.99999):
            assert t_ppf(p, df) == pytest.approx(float(stats.t.ppf(p, df)), rel=1e-12, abs=1e-15)
