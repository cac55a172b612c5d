"""Fuzzed bodies never give a 5xx, every answer is strict JSON (NeMo Gym reads bodies with orjson,
which rejects NaN and lone surrogates), tool answers equal the in-process text, and the server keeps
serving afterwards."""

from __future__ import annotations

import json
import os
import re
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.server.app import RESERVED_PATHS, create_app

try:
    import orjson

    def strict_json(text: bytes):
        return orjson.loads(text)
except ImportError:  # pragma: no cover
    def strict_json(text: bytes):
        def no_constants(name):
            raise ValueError(f"{name} is not JSON")

        return json.loads(text.decode("utf-8"), parse_constant=no_constants)


# OFFICEGYM_FUZZ_EXAMPLES=5000 for a deeper search than CI's.
FUZZ = settings(max_examples=int(os.environ.get("OFFICEGYM_FUZZ_EXAMPLES", "120")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TOOL_NAMES = [s.name for s in TOOL_SPECS]
ALLOWED = {200, 400, 404, 405, 413, 422}

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
           | st.sampled_from(["00000001", "00000002", "ana.lee@acme.com", "2023-11-29", "Lead", "\ud800", "", ".*("]))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
                           max_leaves=16)
# Argument objects: mostly the tools' own parameter names, so that the tools' code paths run.
param_names = st.sampled_from(sorted({p for s in TOOL_SPECS for p in s.parameters["properties"]})) | st.text(max_size=8)
arguments = st.dictionaries(param_names, json_values, max_size=5)


def encode(value) -> bytes:
    return json.dumps(value).encode()  # NaN/Infinity literals and \ud800 escapes included on purpose


raw_bodies = (st.binary(max_size=64) | json_values.map(encode) | arguments.map(encode)
              | st.sampled_from([b"", b"{", b"[]", b"null", b'{"a": NaN}', b"\xff\xfe{}", b"[" * 5000, b'"\\ud800"']))
paths = (st.sampled_from(["/seed_session", "/verify", "/aggregate_metrics", "/close_session", "/officegym/call", "/",
                          "/health", "/tools", "/reverify_mode"])
         | st.sampled_from(TOOL_NAMES).map(lambda n: "/" + n)
         | st.text(min_size=1, max_size=12).map(lambda t: "/" + quote(t, safe="")))


def check(response) -> None:
    assert response.status_code in ALLOWED, (response.status_code, response.text[:300])
    strict_json(response.content)


@pytest.fixture(scope="module")
def app(tiny_world):
    from officegym.envs.workplace.env import WorkplaceEnvironment

    return create_app(WorkplaceEnvironment(tiny_world), max_body_bytes=64 * 1024)


@FUZZ
@given(path=paths, body=raw_bodies, seed=st.booleans(), method=st.sampled_from(["POST", "POST", "GET"]))
def test_any_body_to_any_endpoint_is_a_clean_answer(app, path, body, seed, method):
    c = TestClient(app)
    if seed:
        c.post("/seed_session", json={})
    check(c.request(method, path, content=body, headers={"content-type": "application/json"}))
    assert c.get("/health").status_code == 200


@FUZZ
@given(name=st.sampled_from(TOOL_NAMES) | st.text(max_size=10), args=arguments)
def test_fuzzed_tool_calls_answer_as_in_process(app, tiny_world, name, args):
    c = TestClient(app)
    c.post("/seed_session", json={})
    routable = re.fullmatch(r"[A-Za-z0-9_.\-]+", name) and name not in (".", "..") and name not in RESERVED_PATHS
    if not routable:  # as officegym's client routes such names
        r = c.post("/officegym/call", content=encode({"name": name, "arguments": args}), headers={"content-type": "application/json"})
    else:
        r = c.post("/" + name, content=encode(args), headers={"content-type": "application/json"})
    check(r)
    assert r.status_code == 200
    local = tiny_world.new_session().execute(name, json.loads(encode(args)))
    try:
        expected = local.text
    except Exception:  # the in-process renderer cannot write a lone surrogate; the server replaces it
        assert "\ufffd" in r.text or "\\ud" in r.text or r.text.startswith('{"output"')
        return
    assert r.text == expected


def _verify_row(tiny_tasks, i: int) -> dict:
    task = tiny_tasks[i % len(tiny_tasks)]
    row = task.to_row()
    row["response"] = {"output": [c.to_function_call() for c in task.ground_truth]}
    return row


@FUZZ
@given(i=st.integers(0, 4), key=st.sampled_from(["responses_create_params", "response", "ground_truth", "id", "category",
                                                  "environment_name", "verifier_metadata", "extra"]),
       value=json_values, nested=st.booleans())
def test_fuzzed_verify_rows(app, tiny_tasks, i, key, value, nested):
    row = _verify_row(tiny_tasks, i)
    if nested and isinstance(row.get(key), dict) and row[key]:
        inner = sorted(row[key])[0]
        row[key][inner] = value
    elif nested and isinstance(row.get(key), list) and row[key]:
        row[key][0] = value
    else:
        row[key] = value
    r = TestClient(app).post("/verify", content=encode(row), headers={"content-type": "application/json"})
    check(r)
    if r.status_code == 200:
        assert r.json()["reward"] in (0.0, 1.0)


@FUZZ
@given(calls=st.lists(st.fixed_dictionaries({"type": st.just("function_call"), "name": st.sampled_from(TOOL_NAMES) | st.text(max_size=6),
                                              "arguments": arguments.map(json.dumps) | st.text(max_size=20)}), max_size=6))
def test_fuzzed_predictions_verify(app, tiny_tasks, calls):
    row = _verify_row(tiny_tasks, 4)
    row["response"] = {"output": calls}
    r = TestClient(app).post("/verify", content=encode(row), headers={"content-type": "application/json"})
    check(r)
    assert r.status_code == 200


@FUZZ
@given(rows=st.lists(json_values | st.fixed_dictionaries({"reward": json_values, "_ng_task_index": json_values}), max_size=5))
def test_fuzzed_aggregate_metrics(app, rows):
    check(TestClient(app).post("/aggregate_metrics", content=encode({"verify_responses": rows}),
                               headers={"content-type": "application/json"}))


@FUZZ
@given(extra=st.dictionaries(st.sampled_from(["model", "api", "max_steps", "mode", "model_server_url"]), json_values, max_size=4),
       rcp=json_values)
def test_fuzzed_run_settings_never_reach_a_model(app, tiny_tasks, extra, rcp):
    row = tiny_tasks[0].to_row()
    if isinstance(rcp, dict):
        row["responses_create_params"] = {**row["responses_create_params"], **rcp}
    extra["model_server_url"] = "ftp://nowhere"  # never an http URL: the server must refuse before calling out
    r = TestClient(app).post("/run", content=encode({**row, **extra}), headers={"content-type": "application/json"})
    check(r)
    assert r.status_code == 422


messages = st.lists(st.dictionaries(st.sampled_from(["role", "content", "type", "name", "arguments", "call_id", "output"]),
                                    json_values, max_size=4), max_size=4)
tool_lists = st.lists(st.dictionaries(st.sampled_from(["type", "name", "description", "parameters", "function", "strict"]),
                                      json_values, max_size=4), max_size=3)


@pytest.fixture(scope="module")
def scripted_model(fake_openai):
    """One fake model server for the module; `script["answer"]` decides what it says."""
    script = {"answer": "Done."}

    def answer(body, n):
        value = script["answer"]
        if isinstance(value, dict):  # a malformed tool call
            return {"tool_calls": [{"id": "c", "type": "function", "function": {"name": str(value)[:20], "arguments": str(value)}}]}
        return {"content": value if isinstance(value, str) else json.dumps(value)}

    with fake_openai.FakeOpenAI(answer) as model:
        yield model, script


@settings(max_examples=int(os.environ.get("OFFICEGYM_FUZZ_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(given_input=messages, tools=tool_lists, answer=json_values)
@example(given_input=[{"role": "user", "content": "hi"}], tools=[], answer="\ud800 lone surrogate")  # a CI fresh-venv find
def test_fuzzed_run_rows_against_a_model_server(tiny_env, tiny_tasks, scripted_model, given_input, tools, answer):
    model, script = scripted_model
    script["answer"] = answer
    row = tiny_tasks[0].to_row()
    row["responses_create_params"] = {**row["responses_create_params"], "input": given_input, "tools": tools}
    with TestClient(create_app(tiny_env, max_steps=2)) as c:
        r = c.post("/run", content=encode({**row, "model_server_url": model.base_url, "model": "fake-model"}),
                   headers={"content-type": "application/json"})
    assert r.status_code in (200, 422), r.text[:300]
    strict_json(r.content)
