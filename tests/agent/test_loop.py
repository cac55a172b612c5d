"""The agent loop against scripted policies and a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import pytest

from officegym.agent.loop import LoopConfig, rollout, run_rollouts
from officegym.agent.policies import PolicySpecError, make_policy
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.workplace.env import WorkplaceEnvironment


@pytest.fixture(scope="module")
def env(ref_world):
    return WorkplaceEnvironment(ref_world)


@pytest.fixture(scope="module")
def tasks(reference_dir):
    rows = [json.loads(x) for x in (reference_dir / "example.jsonl").read_text().splitlines()]
    out = [Task.from_row(r) for r in rows]
    empty = dict(rows[0], id=99, ground_truth=[])
    return [*out, Task.from_row(empty)]


def run(env, tasks, policy, config=None, k=1, **kw):
    jobs = [(t, s) for t in tasks for s in range(k)]
    return asyncio.run(run_rollouts(env, jobs, policy, config or LoopConfig(), **kw))


def test_oracle_scores_one_in_both_modes(env, tasks):
    for mode in ("outcome", "nemo_gym"):
        trajs = run(env, tasks, make_policy("oracle"), LoopConfig(mode=mode))
        assert [t.reward for t in trajs] == [1.0] * len(tasks)
        assert all(t.stop_reason == "answered" for t in trajs)


def test_noop_scores_exactly_the_empty_ground_truth_share(env, tasks):
    trajs = run(env, tasks, make_policy("noop"))
    share = sum(not t.ground_truth for t in tasks) / len(tasks)
    assert sum(t.reward for t in trajs) / len(trajs) == share
    assert all(len(t.turns) == 1 and not t.calls for t in trajs)


def test_random_policy_runs_and_is_reproducible(env, tasks):
    a = run(env, tasks, make_policy("random:3"))
    b = run(env, tasks, make_policy("random:3"))
    def calls(trajs):
        return [[(e.call.name, e.call.arguments, e.output) for turn in t.turns for e in turn.executions] for t in trajs]

    assert calls(a) == calls(b)
    assert all(t.calls for t in a)


class Reader(Policy):
    """Always calls a read tool: the loop must stop after max_steps turns."""

    name = "reader"

    def __init__(self):
        self.batches: list[int] = []

    async def complete(self, requests, params):
        self.batches.append(len(requests))
        return [Completion(tool_calls=[ToolCall("email_search_emails", {"query": ""})]) for _ in requests]


def test_max_steps_and_truncation(env, tasks):
    policy = Reader()
    traj = run(env, tasks[:1], policy, LoopConfig(max_steps=3, max_tool_output_chars=100))[0]
    assert traj.stop_reason == "max_steps" and len(traj.turns) == 3
    ex = traj.turns[0].executions[0]
    assert ex.truncated and ex.output.endswith("characters]") and "... [truncated" in ex.output
    tool_msgs = [m for m in traj.messages if m["role"] == "tool"]
    assert len(tool_msgs) == 3 and all(m["tool_call_id"] for m in tool_msgs)


def test_requests_from_concurrent_rollouts_are_batched(env, tasks):
    policy = Reader()
    trajs = run(env, tasks, policy, LoopConfig(max_steps=2), k=8)
    assert len(trajs) == len(tasks) * 8
    assert max(policy.batches) > 1


class Malformed(Policy):
    name = "malformed"

    async def complete(self, requests, params):
        out = []
        for r in requests:
            if r.turn == 0:
                bad = ToolCall("email_delete_email", None, '{"email_id": ', "c1", "invalid JSON arguments")
                out.append(Completion(tool_calls=[bad], invalid=["<tool_call> without a name"]))
            else:
                out.append(Completion(text="done"))
        return out


def test_malformed_calls_are_recorded_and_reported_to_the_model(env, tasks):
    traj = run(env, tasks[:1], Malformed())[0]
    ex = traj.turns[0].executions[0]
    assert ex.status == "error" and json.loads(ex.output)["error"].startswith("Invalid tool call arguments: JSONDecodeError")
    assert traj.turns[0].invalid == ["<tool_call> without a name"]
    notes = [m for m in traj.messages if m["role"] == "tool" and m["tool_call_id"] is None]
    assert notes and "Invalid tool call: <tool_call> without a name" in notes[0]["content"]
    assert traj.verdict["invalid_calls"] and traj.reward == 0.0


class SharedCalls(Policy):
    """Answers every first turn with the same ToolCall objects, which carry no id."""

    name = "shared"

    def __init__(self, calls):
        self.calls = calls

    async def complete(self, requests, params):
        return [Completion(tool_calls=list(self.calls)) if r.turn == 0 else Completion(text="done") for r in requests]


def test_the_loop_gives_calls_ids_without_changing_the_policy_s_calls(env, tasks):
    calls = [ToolCall(c.name, c.arguments, extra={"kept": True}) for c in tasks[0].ground_truth]
    trajs = run(env, tasks[:1], SharedCalls(calls), k=2)
    assert all(c.call_id is None for c in calls)
    for traj in trajs:
        ran = [e.call for e in traj.turns[0].executions]
        assert [c.call_id for c in ran] == [f"call_0_{i}" for i in range(len(calls))]
        assert all(c.extra == {"kept": True} for c in ran)


class Exploding(Policy):
    name = "exploding"

    async def complete(self, requests, params):
        raise RuntimeError("CUDA out of memory")


def test_a_failing_backend_fails_the_rollout_not_the_run(env, tasks):
    trajs = run(env, tasks[:2], Exploding())
    assert all(t.stop_reason == "error" and "CUDA out of memory" in t.error for t in trajs)
    assert all(t.reward == 0.0 for t in trajs)


def test_many_concurrent_rollouts_stay_isolated(env, tasks):
    trajs = run(env, tasks, make_policy("oracle"), k=40)
    assert len(trajs) == 40 * len(tasks) and all(t.reward == 1.0 for t in trajs)


def test_unknown_policy_spec():
    with pytest.raises(PolicySpecError, match="unknown policy"):
        make_policy("gpt5")
    with pytest.raises(PolicySpecError):
        make_policy("openai:")


# -- a fake OpenAI-compatible server --------------------------------------------------------------

@pytest.fixture
def fake_server(fake_openai_module):
    return fake_openai_module


def test_openai_chat_tool_calls_round_trip(env, tasks, fake_server):
    task = tasks[0]  # reply to e-mail 00000057
    gt = task.ground_truth[0]

    def script(body, n):
        if not any(m["role"] == "tool" for m in body["messages"]):
            assert body["tools"] and body["tools"][0]["type"] == "function"
            return {"tool_calls": [fake_server.tool_call(gt.name, gt.arguments)]}
        assert body["messages"][-1]["role"] == "tool" and body["messages"][-1]["tool_call_id"] == "call_1"
        return {"content": "Replied."}

    with fake_server.FakeOpenAI(script) as srv:
        policy = make_policy("openai:fake-model", base_url=srv.base_url)
        traj = run(env, [task], policy)[0]
    assert traj.reward == 1.0 and traj.stop_reason == "answered"
    assert traj.turns[0].executions[0].output == '{"output":"Email replied successfully."}'
    assert traj.turns[1].text == "Replied."


def test_openai_retries_server_errors_then_succeeds(env, tasks, fake_server):
    def script(body, n):
        return {"status": 503} if n == 1 else {"content": "ok"}

    with fake_server.FakeOpenAI(script) as srv:
        policy = make_policy("openai:fake-model", base_url=srv.base_url, backoff=0.01)
        traj = run(env, tasks[:1], policy)[0]
        assert len(srv.calls) == 2
    assert traj.stop_reason == "answered" and traj.error is None


def test_openai_malformed_arguments_and_client_errors(env, tasks, fake_server):
    def script(body, n):
        if n == 1:
            return {"tool_calls": [fake_server.tool_call("email_delete_email", '{"email_id": "0000')]}
        if n == 2:
            return {"status": 400, "json": {"error": {"message": "context too long"}}}
        return {"content": "unreachable"}

    with fake_server.FakeOpenAI(script) as srv:
        policy = make_policy("openai:fake-model", base_url=srv.base_url, backoff=0.01)
        traj = run(env, tasks[:1], policy)[0]
    ex = traj.turns[0].executions[0]
    assert ex.status == "error" and "Invalid tool call arguments" in ex.output
    assert traj.stop_reason == "error" and "HTTP 400" in traj.error and "context too long" in traj.error


def test_openai_timeouts_and_unreachable_server(env, tasks, fake_server):
    from officegym.agent.openai_compat import OpenAIPolicy

    with fake_server.FakeOpenAI(lambda body, n: {"delay": 2.0, "content": "late"}) as srv:
        policy = OpenAIPolicy("fake-model", base_url=srv.base_url, timeout=0.2, max_retries=1, backoff=0.01)
        traj = run(env, tasks[:1], policy)[0]
    assert traj.stop_reason == "error" and "timed out" in traj.error and "2 attempts" in traj.error
    dead = OpenAIPolicy("fake-model", base_url="http://127.0.0.1:9/v1", timeout=1, max_retries=0)
    problem = asyncio.run(dead.preflight())
    assert problem and "cannot reach the model server" in problem


def test_openai_preflight_names_a_missing_model(fake_server):
    from officegym.agent.openai_compat import OpenAIPolicy

    with fake_server.FakeOpenAI(lambda body, n: {"content": "x"}) as srv:
        problem = asyncio.run(OpenAIPolicy("other-model", base_url=srv.base_url).preflight())
    assert "does not serve model 'other-model'" in problem and "fake-model" in problem


def test_responses_api_backend(env, tasks, fake_server):
    task = tasks[0]
    gt = task.ground_truth[0]

    def script(body, n):
        if n == 1:
            assert body["tools"][0]["name"] and "input" in body
            return {"output": [{"type": "function_call", "name": gt.name, "arguments": gt.arguments_json, "call_id": "fc1"}]}
        assert any(i.get("type") == "function_call_output" for i in body["input"])
        return {"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}]}

    with fake_server.FakeOpenAI(script) as srv:
        traj = run(env, [task], make_policy("openai-responses:fake-model", base_url=srv.base_url))[0]
    assert traj.reward == 1.0 and traj.turns[-1].text == "done"


def test_text_tool_calls_from_a_server_without_a_tool_parser(env, tasks, fake_server):
    task = tasks[0]
    gt = task.ground_truth[0]
    text = f'<tool_call>\n{json.dumps({"name": gt.name, "arguments": gt.arguments})}\n</tool_call>'

    def script(body, n):
        return {"content": text} if n == 1 else {"content": "done"}

    with fake_server.FakeOpenAI(script) as srv:
        traj = run(env, [task], make_policy("openai:fake-model", base_url=srv.base_url))[0]
    assert traj.reward == 1.0


def test_single_rollout_api(env, tasks):
    policy = make_policy("oracle")

    async def submit(req: PolicyRequest):
        return (await policy.complete([req], SamplingParams()))[0]

    traj = asyncio.run(rollout(env, tasks[1], submit, LoopConfig()))
    assert traj.reward == 1.0 and traj.env_seconds > 0 and traj.seconds >= traj.env_seconds
