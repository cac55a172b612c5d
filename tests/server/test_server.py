"""Contract tests of every endpoint against SPEC.md 5.1-5.3 and NeMo Gym 0.7's resources server."""

from __future__ import annotations

import base64
import json

import itsdangerous
import pytest
from fastapi.testclient import TestClient

from officegym.envs.workplace.results import not_an_object_result
from officegym.server.app import NOT_INITIALIZED, REFERENCE_COOKIE, STATUS_HEADER, create_app
from officegym.server.sessions import measure_session_memory


def seeded(app, body=None) -> TestClient:
    c = TestClient(app)
    r = c.post("/seed_session", json=body if body is not None else {})
    assert r.status_code == 200 and r.json() == {}
    return c


def cookie_session(value: str, secret: str = REFERENCE_COOKIE) -> dict:
    data = itsdangerous.TimestampSigner(secret).unsign(value.encode(), max_age=14 * 24 * 3600)
    return json.loads(base64.b64decode(data))


def make_cookie(session: dict, secret: str = REFERENCE_COOKIE) -> str:
    return itsdangerous.TimestampSigner(secret).sign(base64.b64encode(json.dumps(session).encode())).decode()


def set_cookie(c: TestClient, value: str) -> None:
    c.cookies.set(REFERENCE_COOKIE, value, domain="testserver.local")


def verify_body(task, calls=None, **extra):
    row = task.to_row()
    calls = task.ground_truth if calls is None else calls
    row["response"] = {"output": [dict(c.to_function_call(), call_id=f"c{i}") for i, c in enumerate(calls)]}
    row.update(extra)
    return row


# -- /seed_session and the cookie ----------------------------------------------------------------


def test_seed_session_sets_the_reference_cookie(tiny_app, tiny_tasks):
    c = TestClient(tiny_app)
    r = c.post("/seed_session", json=tiny_tasks[0].to_row())  # the agent sends the whole row; ignored
    assert r.status_code == 200 and r.text == "{}"
    header = r.headers["set-cookie"]
    assert header.startswith(f"{REFERENCE_COOKIE}=") and "path=/" in header and "httponly" in header
    value = c.cookies[REFERENCE_COOKIE]
    sid = cookie_session(value)["session_id"]  # signed with the cookie name as secret, as the reference
    assert len(sid) == 36 and sid.count("-") == 4


def test_every_response_resends_the_cookie_with_the_same_session_id(tiny_app):
    c = seeded(tiny_app)
    first = cookie_session(c.cookies[REFERENCE_COOKIE])["session_id"]
    r = c.post("/email_search_emails", json={"query": "Update"})
    assert REFERENCE_COOKIE in r.headers["set-cookie"]
    assert cookie_session(c.cookies[REFERENCE_COOKIE])["session_id"] == first


def test_a_cookie_signed_like_the_reference_is_accepted(tiny_app):
    c = TestClient(tiny_app)
    set_cookie(c, make_cookie({"session_id": "my-own-id"}))
    c.post("/seed_session", json={})
    assert cookie_session(c.cookies[REFERENCE_COOKIE])["session_id"] == "my-own-id"
    assert c.post("/company_directory_find_email_address", json={"name": "ana"}).json() == {"output": ["ana.lee@acme.com"]}


def test_seed_session_accepts_an_empty_body_and_rejects_a_non_object(tiny_app):
    c = TestClient(tiny_app)
    assert c.post("/seed_session").status_code == 200
    r = c.post("/seed_session", json=[1])
    assert r.status_code == 422 and r.json()["detail"][0]["type"] == "model_attributes_type"


def test_reseeding_gives_a_fresh_environment(tiny_app):
    c = seeded(tiny_app)
    c.post("/email_delete_email", json={"email_id": "00000001"})
    assert c.post("/email_get_email_information_by_id", json={"email_id": "00000001", "field": "subject"}).json() == {
        "output": "Email not found."}
    c.post("/seed_session", json={})
    assert c.post("/email_get_email_information_by_id", json={"email_id": "00000001", "field": "subject"}).json() == {
        "output": {"subject": "Task Update on Login page"}}


# -- POST /{tool_name} ----------------------------------------------------------------------------


@pytest.mark.parametrize("name, args", [
    ("email_search_emails", {"query": "Update"}),
    ("email_search_emails", {"query": "x", "page": "2"}),  # a Python-level error, in band
    ("company_directory_find_email_address", {"name": "bo"}),
    ("calendar_search_events", {"query": "sync up"}),
    ("email_delete_email", {"email_id": "99"}),  # the tool's own refusal
    ("email_get_email_information_by_id", {"email_id": "00000000", "field": "body", "useless_argument": 1}),
    ("analytics_total_visits_count", {"time_min": "2023-11-28", "time_max": "2023-11-30"}),
    ("no_such_tool", {}),
])
def test_tool_bodies_are_the_in_process_text(tiny_app, tiny_world, name, args):
    c = seeded(tiny_app)
    r = c.post(f"/{name}", json=args)
    result = tiny_world.new_session().execute(name, args)
    assert r.status_code == 200 and r.text == result.text
    assert r.headers["content-type"] == "application/json"
    assert r.headers[STATUS_HEADER] == result.status


def test_json_nulls_are_dropped_as_the_live_route_does(tiny_app):
    c = seeded(tiny_app)
    r = c.post("/customer_relationship_manager_add_customer",
               json={"customer_name": "Gus", "assigned_to_email": "cy.ortiz@acme.com", "status": "Lead", "notes": None})
    assert r.json() == {"output": "00000003"}
    row = c.post("/customer_relationship_manager_search_customers", json={"customer_name": "Gus"}).json()["output"]
    assert row["customers"][0]["notes"] == ""  # the tool's default: the null never reached it (SPEC 3.3, Q3)


def test_unseeded_unknown_and_forged_sessions_get_the_reference_400(tiny_app):
    expected = {"detail": NOT_INITIALIZED}
    r = TestClient(tiny_app).post("/email_search_emails", json={})
    assert r.status_code == 400 and r.json() == expected
    assert REFERENCE_COOKIE in r.headers["set-cookie"]  # a fresh id, as the reference's middleware does
    c = TestClient(tiny_app)
    set_cookie(c, make_cookie({"session_id": "never-seeded"}))
    assert c.post("/email_search_emails", json={}).json() == expected
    c = TestClient(tiny_app)
    set_cookie(c, make_cookie({"session_id": "x"}, secret="another secret"))  # bad signature
    assert c.post("/email_search_emails", json={}).status_code == 400
    signer = itsdangerous.TimestampSigner(REFERENCE_COOKIE)
    for forged in (make_cookie({"session_id": [1, 2]}), make_cookie([1, 2]),  # validly signed nonsense
                   signer.sign(b"not base64!").decode(), signer.sign(base64.b64encode(b"{not json")).decode()):
        c = TestClient(tiny_app)
        set_cookie(c, forged)
        r = c.post("/email_search_emails", json={})
        assert r.status_code == 400 and r.json() == expected
        assert c.post("/seed_session", json={}).status_code == 200  # and the client gets a fresh session
        assert c.post("/email_search_emails", json={}).status_code == 200


def test_bad_bodies_get_fastapis_422_before_the_session_check(tiny_app):
    for c in (TestClient(tiny_app), seeded(tiny_app)):
        r = c.post("/email_search_emails", content=b"{bad", headers={"content-type": "application/json"})
        assert r.status_code == 422
        assert r.json() == {"detail": [{"type": "json_invalid", "loc": ["body", 1], "msg": "JSON decode error", "input": {},
                                        "ctx": {"error": "Expecting property name enclosed in double quotes"}}]}
        r = c.post("/email_search_emails", content=b"")
        assert r.status_code == 422 and r.json()["detail"][0]["type"] == "missing"
        for value in ([1, 2], "x", None, 3):
            r = c.post("/email_search_emails", content=json.dumps(value), headers={"content-type": "application/json"})
            assert r.status_code == 422 and r.text == not_an_object_result(value).body


def test_fixed_routes_win_and_get_routes_do_not_shadow_tools(tiny_app):
    c = seeded(tiny_app)
    assert c.post("/health", json={}).json() == {"output": "Error executing tool 'health': 'health'"}
    assert c.post("/tools", json={}).json() == {"output": "Error executing tool 'tools': 'tools'"}
    assert c.get("/email_search_emails").status_code == 405
    assert c.post("/a/b", json={}).status_code == 404


def test_officegym_call_route_reaches_names_a_path_cannot(tiny_app):
    c = seeded(tiny_app)
    for name in ("verify", "", "a/b", "seed_session"):
        r = c.post("/officegym/call", json={"name": name, "arguments": {}})
        assert r.status_code == 200 and r.json() == {"output": f"Error executing tool '{name}': {name!r}"}
    r = c.post("/officegym/call", json={"name": "company_directory_find_email_address", "arguments": {"name": "bo"}})
    assert r.json() == {"output": ["bo.kim@acme.com"]}
    assert c.post("/officegym/call", json={"arguments": {}}).status_code == 422
    assert c.post("/officegym/call", json={"name": 3}).status_code == 422


def test_oversized_bodies_get_413_and_the_server_keeps_serving(tiny_env):
    app = create_app(tiny_env, max_body_bytes=4096)
    c = seeded(app)
    r = c.post("/email_search_emails", json={"query": "x" * 5000})
    assert r.status_code == 413 and "4096" in r.json()["detail"]

    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(10):
            yield b" " * 1000

    r = c.post("/email_search_emails", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert c.post("/email_search_emails", json={"query": "Update"}).status_code == 200


# -- POST /verify -----------------------------------------------------------------------------------


def test_verify_echoes_the_reference_fields_and_adds_evidence(tiny_app, tiny_tasks):
    task = tiny_tasks[4]
    body = verify_body(task, agent_ref={"name": "workplace_assistant_simple_agent"}, _ng_task_index=4, _ng_rollout_id="r1")
    r = TestClient(tiny_app).post("/verify", json=body)
    assert r.status_code == 200
    out = r.json()
    assert list(out) == ["responses_create_params", "response", "reward", "mask_sample", "failure_kind", "failure_reason",
                         "ground_truth", "id", "category", "environment_name", "officegym"]
    assert out["reward"] == 1.0 and out["mask_sample"] is False and out["failure_kind"] is None
    assert out["responses_create_params"] == body["responses_create_params"] and out["response"] == body["response"]
    assert out["ground_truth"] == body["ground_truth"] and out["id"] == 4
    verdict = out["officegym"]["verdict"]
    assert verdict["matched"] is True and verdict["mode"] == "outcome" and verdict["other_mode_reward"] == 1.0


def test_verify_scores_wrong_and_empty_predictions(tiny_app, tiny_tasks):
    c = TestClient(tiny_app)
    assert c.post("/verify", json=verify_body(tiny_tasks[0], calls=[])).json()["reward"] == 0.0
    out = c.post("/verify", json=verify_body(tiny_tasks[3], calls=tiny_tasks[1].ground_truth)).json()
    assert out["reward"] == 0.0 and out["officegym"]["verdict"]["side_effects"] is True
    assert c.post("/verify", json=verify_body(tiny_tasks[3], calls=[])).json()["reward"] == 1.0


def test_verify_mode_query_and_server_default(tiny_env, tiny_tasks):
    from officegym.core.toolcalls import parse_tool_call

    task = tiny_tasks[4]
    typed = [parse_tool_call({"name": "calendar_create_event", "arguments": json.dumps({
        "event_name": "sync", "participant_email": "ana.lee@acme.com", "event_start": "2023-12-01 10:00:00", "duration": 30})}),
        task.ground_truth[1]]
    c = TestClient(create_app(tiny_env))
    assert c.post("/verify", json=verify_body(task, typed)).json()["reward"] == 1.0  # outcome: 30 == "30"
    assert c.post("/verify?mode=nemo_gym", json=verify_body(task, typed)).json()["reward"] == 0.0  # the reference's quirk
    r = c.post("/verify?mode=bogus", json=verify_body(task, typed))
    assert r.status_code == 422 and "bogus" in r.json()["detail"]
    c = TestClient(create_app(tiny_env, mode="nemo_gym", evidence=False))
    out = c.post("/verify", json=verify_body(task, typed)).json()
    assert out["reward"] == 0.0 and "officegym" not in out


def test_verify_drops_the_session_as_nemo_gym_07_does(tiny_app, tiny_tasks):
    c = seeded(tiny_app)
    assert c.post("/email_search_emails", json={}).status_code == 200
    assert c.post("/verify", json=verify_body(tiny_tasks[0])).status_code == 200
    assert c.post("/email_search_emails", json={}).status_code == 400


@pytest.mark.parametrize("mutate, where", [
    (lambda b: b.pop("response"), "response"),
    (lambda b: b.update(response=[1]), "response"),
    (lambda b: b.update(response={"output": "x"}), "output"),
    (lambda b: b.pop("ground_truth"), "ground_truth"),
    (lambda b: b.update(ground_truth=5), "ground_truth"),
    (lambda b: b.update(ground_truth=[5]), "ground truth"),
    (lambda b: b.pop("responses_create_params"), "responses_create_params"),
    (lambda b: b.update(responses_create_params="x"), "responses_create_params"),
])
def test_verify_rejects_malformed_rows_with_422(tiny_app, tiny_tasks, mutate, where):
    body = verify_body(tiny_tasks[0])
    mutate(body)
    r = TestClient(tiny_app).post("/verify", json=body)
    assert r.status_code == 422 and where in r.text


def test_verify_accepts_a_string_ground_truth_and_junk_output_items(tiny_app, tiny_tasks):
    body = verify_body(tiny_tasks[0], calls=[])
    body["ground_truth"] = "not a list"  # the reference iterates it by character: nothing replays
    body["response"]["output"] = [1, None, {"type": "message"}, {"type": "function_call", "name": 5, "arguments": "{"}]
    r = TestClient(tiny_app).post("/verify", json=body)
    assert r.status_code == 200 and r.json()["reward"] == 1.0


# -- the other endpoints ------------------------------------------------------------------------


def test_health_tools_liveness_reverify_mode(tiny_app, tiny_world):
    c = TestClient(tiny_app)
    assert c.get("/").json() == {"status": "ok"}
    assert c.get("/reverify_mode").json() == "stateless"
    tools = c.get("/tools").json()
    assert len(tools) == 27 and tools[0]["name"] == "company_directory_find_email_address" and tools[0]["type"] == "function"
    seeded(c.app)
    health = c.get("/health").json()
    assert health["status"] == "ok" and health["environment"] == "workplace_assistant" and health["world"] == "tiny"
    assert health["sessions"]["live"] == 1 and health["max_sessions"] == 10_000 and len(health["write_tools"]) == 14


CLOSE = {"resources_session_id": "abc", "episode_id": {"rollout_id": "7-0", "attempt": 1}}


def test_close_session_validates_the_body_as_nemo_gym_does(tiny_app):
    c = seeded(tiny_app)
    for bad, where in (({}, "resources_session_id"), ({**CLOSE, "episode_id": "e"}, "episode_id"),
                       ({**CLOSE, "extra": 1}, "extra"), ({**CLOSE, "episode_id": {"rollout_id": "7-a2"}}, "rollout_id"),
                       ({**CLOSE, "episode_id": {"rollout_id": ".hidden"}}, "rollout_id")):
        r = c.post("/close_session", json=bad)
        assert r.status_code == 422 and where in json.dumps(r.json()["detail"][0]["loc"]), bad
    assert c.post("/close_session").status_code == 422  # no body: FastAPI's "missing"
    assert c.post("/email_search_emails", json={}).status_code == 200  # a refused close keeps the session
    assert c.post("/close_session", json=CLOSE).json() == {"resources_session_id": "abc"}
    assert c.post("/email_search_emails", json={}).status_code == 400  # a valid one drops it
    assert c.post("/close_session", json=CLOSE).status_code == 200  # closing twice is fine


def test_aggregate_metrics(tiny_app):
    rows = [{"_ng_task_index": 0, "reward": 1.0}, {"_ng_task_index": 0, "reward": 0.0},
            {"_ng_task_index": 1, "reward": 0.0}, {"_ng_task_index": 1, "reward": 0.0}]
    out = TestClient(tiny_app).post("/aggregate_metrics", json={"verify_responses": rows}).json()
    assert set(out) == {"group_level_metrics", "agent_metrics", "key_metrics", "perf_summary", "repeat_level_metrics"}
    assert [g["mean/reward"] for g in out["group_level_metrics"]] == [0.5, 0.0]
    agent = out["agent_metrics"]
    assert agent["num_tasks"] == 2 and agent["num_rollouts"] == 4 and agent["mean/reward"] == 0.25
    assert agent["pass@1"] == 0.25 and agent["pass@2"] == 0.5 and out["key_metrics"]["pass@2"] == 0.5
    c = TestClient(c_app := tiny_app)
    assert c.post("/aggregate_metrics", json={"verify_responses": []}).json()["agent_metrics"]["num_rollouts"] == 0
    for bad in ({}, {"verify_responses": 1}, {"verify_responses": [1]}, {"verify_responses": [{"reward": "x"}]}):
        assert TestClient(c_app).post("/aggregate_metrics", json=bad).status_code == 422


# -- sessions: isolation and eviction -----------------------------------------------------------


def test_sessions_never_cross(tiny_app):
    a, b = seeded(tiny_app), seeded(tiny_app)
    a.post("/email_delete_email", json={"email_id": "00000000"})
    b.post("/email_send_email", json={"recipient": "x@y.z", "subject": "hi", "body": "b"})
    assert a.post("/email_get_email_information_by_id", json={"email_id": "00000000", "field": "subject"}).json() == {
        "output": "Email not found."}
    assert b.post("/email_get_email_information_by_id", json={"email_id": "00000000", "field": "subject"}).json() == {
        "output": {"subject": "Update on Budget"}}
    assert a.post("/email_get_email_information_by_id", json={"email_id": "3", "field": "subject"}).json() == {
        "output": "Email not found."}


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_full_store_refuses_new_sessions_with_a_retryable_503(tiny_env, tiny_tasks):
    app = create_app(tiny_env, max_sessions=3)
    clients = [seeded(app) for _ in range(3)]
    late = TestClient(app)
    r = late.post("/seed_session", json={})
    assert r.status_code == 503 and r.headers["retry-after"] == "1" and "maximum of 3 sessions" in r.json()["detail"]
    # no live session was pushed out: every running rollout keeps its state
    assert [c.post("/email_search_emails", json={}).status_code for c in clients] == [200, 200, 200]
    assert late.post("/email_search_emails", json={}).status_code == 400
    assert clients[0].post("/verify", json=verify_body(tiny_tasks[0])).status_code == 200  # frees a slot
    assert late.post("/seed_session", json={}).status_code == 200
    assert late.post("/email_search_emails", json={}).status_code == 200
    health = TestClient(app).get("/health").json()["sessions"]
    assert health["live"] == 3 and health["evicted_lru"] == 0 and health["refused"] == 1


def test_a_full_store_still_lets_idle_sessions_expire(tiny_env):
    clock = FakeClock()
    app = create_app(tiny_env, max_sessions=1, idle_ttl_s=60, clock=clock)
    seeded(app)
    assert TestClient(app).post("/seed_session", json={}).status_code == 503
    clock.t += 61  # the first session idled past the TTL: its slot is free
    assert TestClient(app).post("/seed_session", json={}).status_code == 200


def test_idle_ttl_eviction(tiny_env):
    clock = FakeClock()
    app = create_app(tiny_env, idle_ttl_s=60, clock=clock)
    idle, busy = seeded(app), seeded(app)
    for _ in range(3):
        clock.t += 40
        assert busy.post("/email_search_emails", json={}).status_code == 200
    assert idle.post("/email_search_emails", json={}).status_code == 400
    assert TestClient(app).get("/health").json()["sessions"]["expired"] == 1


def test_memory_per_session_is_small(tiny_world, ref_world):
    def writes(s):
        s.call("email_send_email", {"recipient": "a@b.cd", "subject": "s", "body": "b"})
        s.call("customer_relationship_manager_update_customer", {"customer_id": "00000001", "field": "status", "new_value": "Won"})

    m = measure_session_memory(ref_world.new_session, n=200, exercise=writes)
    assert m.bytes_fresh < 4_000  # the reference holds 0.5-1 MB per session
    assert m.bytes_exercised < 100_000  # the written tables' row lists and labels, copied on write


# -- POST /run ------------------------------------------------------------------------------------


def test_run_plays_the_simple_agent_against_a_model_server(tiny_env, tiny_tasks, fake_openai):
    task = tiny_tasks[4]

    def script(body, n):
        if not any(m["role"] == "tool" for m in body["messages"]):
            return {"tool_calls": [fake_openai.tool_call(c.name, c.arguments, f"call_{i}") for i, c in enumerate(task.ground_truth)]}
        return {"content": "Done."}

    with fake_openai.FakeOpenAI(script) as model:
        c = TestClient(create_app(tiny_env))
        out = c.post("/run", json={**task.to_row(), "model_server_url": model.base_url, "model": "fake-model"}).json()
    assert out["reward"] == 1.0 and out["id"] == 4
    kinds = [item["type"] for item in out["response"]["output"]]
    assert kinds == ["function_call", "function_call", "function_call_output", "function_call_output", "message"]
    assert out["response"]["output"][2]["output"] == '{"output":"00000003"}'
    assert out["officegym"]["stop_reason"] == "answered" and out["officegym"]["turns"] == 2
    assert model.calls[0]["temperature"] == 1.0  # forwarded from responses_create_params


def test_run_max_steps_from_body_and_config(tiny_env, tiny_tasks, fake_openai):
    def script(body, n):
        return {"tool_calls": [fake_openai.tool_call("email_search_emails", {"query": "Update"}, f"c{n}")]}

    with fake_openai.FakeOpenAI(script) as model, TestClient(create_app(tiny_env, model_server_url=model.base_url,
                                                                         model="fake-model")) as c:
        row = tiny_tasks[3].to_row()
        out = c.post("/run", json={**row, "max_steps": 2}).json()
        assert out["officegym"]["turns"] == 2 and out["officegym"]["stop_reason"] == "max_steps"
        assert out["reward"] == 1.0  # reads only, empty ground truth
        out = c.post("/run", json=row).json()
        assert out["officegym"]["turns"] == 6


def test_run_rejects_bad_settings_and_reports_a_dead_model_server(tiny_env, tiny_tasks):
    c = TestClient(create_app(tiny_env, policy_options={"max_retries": 0, "timeout": 2}))
    row = tiny_tasks[0].to_row()
    for extra in ({}, {"model_server_url": "ftp://x", "model": "m"}, {"model_server_url": "http://127.0.0.1:9/v1"},
                  {"model_server_url": "http://127.0.0.1:9/v1", "model": "m", "api": "grpc"},
                  {"model_server_url": "http://127.0.0.1:9/v1", "model": "m", "max_steps": 0},
                  {"model_server_url": "http://127.0.0.1:9/v1", "model": "m", "max_steps": True},
                  {"model_server_url": "http://127.0.0.1:9/v1", "model": "m", "mode": "bogus"}):
        assert c.post("/run", json={**row, **extra}).status_code == 422, extra
    bad_temp = {**row, "responses_create_params": {**row["responses_create_params"], "temperature": "hot"}}
    assert c.post("/run", json={**bad_temp, "model_server_url": "http://127.0.0.1:9/v1", "model": "m"}).status_code == 422
    r = c.post("/run", json={**row, "model_server_url": "http://127.0.0.1:9/v1", "model": "m"})  # nothing listens on port 9
    assert r.status_code == 502 and "model server error" in r.json()["detail"]


# -- serve -------------------------------------------------------------------------------------------


def test_serve_refuses_bad_settings(reference_dir):
    from officegym.server.config import ServeConfig
    from officegym.server.serve import ServeError, build_environment, main, make_app

    for kwargs in ({"world": "/nonexistent"}, {"env": "nope", "world": "x"},
                   {"world": reference_dir / "csv_data", "mode": "bogus"}):
        with pytest.raises(ServeError):
            build_environment(**kwargs)
    with pytest.raises(ServeError):
        make_app(build_environment(world=reference_dir / "csv_data"), ServeConfig(mode="bogus"))
    with pytest.raises(SystemExit) as exc:
        main(["--world", "/nonexistent"])
    assert exc.value.code == 2
    app = make_app(build_environment(world=reference_dir / "csv_data", mode="nemo_gym"),
                   ServeConfig(mode="nemo_gym", max_sessions=5))
    health = TestClient(app).get("/health").json()
    assert health["mode"] == "nemo_gym" and health["max_sessions"] == 5
