"""The one rollout loop (`play`) drives multi-seat episodes as it drives single-agent ones."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from officegym.agent.council import CouncilConfig, Seating, play_council
from officegym.agent.loop import INVALID_CALL_HINT, LoopConfig, play, submitter
from officegym.core.environment import EnvironmentSetupError
from officegym.core.episode import Episode
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.registry import make
from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import ToolCall, ToolResult, ToolSpec, Verdict

ECHO = ToolSpec("echo", "Echo a word.", {"type": "object", "properties": {"word": {"type": "string"}}})


class Relay(Episode):
    """Two seats, a and b, act together for `rounds` rounds; each sees the words the other said."""

    seats = ("a", "b")

    def __init__(self, rounds: int = 2):
        self.rounds, self.round = rounds, 0
        self.said: list[tuple[str, str]] = []
        self.seen = dict.fromkeys(self.seats, 0)
        self.ended: list[tuple[str, int]] = []

    def opening(self, seat):
        return [{"role": "system", "content": f"you are {seat}"}]

    def tools(self, seat):
        return [ECHO]

    def next_group(self):
        if self.round >= self.rounds:
            return ()
        self.round += 1
        return self.seats

    def news(self, seat):
        new = self.said[self.seen[seat]:]
        self.seen[seat] = len(self.said)
        return " ".join(f"{s}:{w}" for s, w in new if s != seat) or None

    def execute(self, seat, call):
        if call.name != "echo" or not isinstance(call.arguments, dict):
            return ToolResult("no such act", "error")
        self.said.append((seat, str(call.arguments.get("word"))))
        return ToolResult(None, "ok", body="x" * 50)

    def end_turn(self, seat, completion, calls):
        self.ended.append((seat, len(calls)))

    def finish(self, trajectories: Mapping[str, Trajectory]):
        words = len(self.said)
        return Verdict(words / 4, words == 4, "outcome")

    def components(self, seat, verdict):
        return {"outcome": verdict.reward, "own": float(sum(s == seat for s, _ in self.said))}


class Recorder(Policy):
    """Answers each request with an echo of the seat's name and turn; records the batches it got."""

    name = "recorder"

    def __init__(self, fail_seat: str | None = None, invalid_seat: str | None = None):
        self.batches: list[list[PolicyRequest]] = []
        self.fail_seat, self.invalid_seat = fail_seat, invalid_seat

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        self.batches.append(list(requests))
        out = []
        for r in requests:
            seat = r.messages[0]["content"].split()[-1]
            if seat == self.fail_seat and r.turn == 1:
                out.append(Completion(finish_reason="error", error="backend down"))
            elif seat == self.invalid_seat:
                out.append(Completion(text="<tool_call>{oops", invalid=["malformed JSON"]))
            else:
                out.append(Completion(tool_calls=[ToolCall("echo", {"word": f"{seat}{r.turn}"})]))
        return out


def play_relay(policy, rounds=2, tool_chars=None) -> tuple[Relay, dict[str, Trajectory], Verdict]:
    episode = Relay(rounds)

    async def main():
        submit, batcher = submitter(policy, SamplingParams(), max_batch=8)
        try:
            task = Task(id="t1", input=[])
            return await play(episode, {"a": submit, "b": submit}, LoopConfig(max_tool_output_chars=tool_chars),
                              task, {"a": "recorder", "b": "recorder"})
        finally:
            if batcher is not None:
                await batcher.close()

    trajs, verdict = asyncio.run(main())
    return episode, trajs, verdict


def test_the_seats_of_a_group_act_on_one_snapshot_and_share_one_batch():
    policy = Recorder()
    episode, trajs, verdict = play_relay(policy)
    # one policy call per round, holding both seats' requests
    assert [len(b) for b in policy.batches] == [2, 2]
    # round 2: each seat sees only the other's word of round 1, not what the other says in round 2
    second = {r.messages[0]["content"]: r.messages[-1]["content"] for r in policy.batches[1]}
    assert second == {"you are a": "b:b0", "you are b": "a:a0"}
    assert [r.turn for r in policy.batches[1]] == [1, 1]
    assert verdict.reward == 1.0 and verdict.matched
    for seat, traj in trajs.items():
        assert traj.reward == 1.0 and traj.reward_components == {"outcome": 1.0, "own": 2.0}
        assert [c.arguments["word"] for c in traj.calls] == [f"{seat}0", f"{seat}1"]
        assert [c.call_id for c in traj.calls] == ["call_0_0", "call_1_0"]
        assert traj.policy == "recorder" and traj.task_id == "t1"
    assert episode.ended == [("a", 1), ("b", 1), ("a", 1), ("b", 1)]


def test_a_failed_turn_costs_its_seat_that_turn_and_the_others_play_on():
    episode, trajs, _ = play_relay(Recorder(fail_seat="a"), rounds=3)
    assert trajs["a"].error == "backend down"
    assert len(trajs["a"].calls) == 2 and len(trajs["b"].calls) == 3
    assert ("a", 0) in episode.ended
    # the failed turn adds nothing to the seat's conversation
    assert [m["role"] for m in trajs["a"].messages].count("assistant") == 2


def test_malformed_calls_get_the_hint_and_outputs_are_cut():
    _, trajs, verdict = play_relay(Recorder(invalid_seat="b"), tool_chars=10)
    hints = [m["content"] for m in trajs["b"].messages if m["role"] == "tool"]
    assert hints == [INVALID_CALL_HINT.format(reason="malformed JSON")] * 2
    assert verdict.reward == 0.5
    outputs = [e.output for t in trajs["a"].turns for e in t.executions]
    assert all(o.startswith("x" * 10 + "... [truncated 40") for o in outputs)


def test_a_policy_that_raises_fails_the_turn_not_the_episode():
    class Broken(Policy):
        name = "broken"
        continuous = True

        async def complete(self, requests, params):
            raise RuntimeError("engine crashed")

    _, trajs, verdict = play_relay(Broken(), rounds=1)
    assert verdict.reward == 0.0
    assert all(t.error == "RuntimeError: engine crashed" for t in trajs.values())


def test_the_council_plays_through_the_one_loop():
    env = make("roles/council")
    task = env.generate_tasks(1, 7)[0]
    config = CouncilConfig()
    episode = env.episode(task, max_rounds=config.max_rounds)
    assert isinstance(episode, Episode) and episode.seats == env.seats

    async def main():
        seating = Seating({}, config)
        try:
            return await play_council(task, seating, config, env)
        finally:
            await seating.close()

    out = asyncio.run(main())
    assert out.reward == out.verdict.reward and set(out.trajectories) == set(env.seats)
    # members see the council's acts as one user message per round
    cto = out.trajectories["cto"].messages
    assert [m["content"].split(".")[0] for m in cto if m["role"] == "user"][:2] == [
        cto[1]["content"].split(".")[0], "Round 2"]


def test_a_single_agent_environment_has_no_seats():
    env = make("roles/cto")
    assert env.seats == ()
    with pytest.raises(EnvironmentSetupError, match="single-agent"):
        env.episode(env.generate_tasks(1, 0)[0])



class Strict(Relay):
    """Relay with its own request, call ids and refusals: b's turns carry their own task and count
    turns from 10; a turn with a malformed fragment runs none of its calls."""

    def request(self, seat, request):
        return PolicyRequest(request.messages, request.tools, Task(id=f"{seat}-task", input=[]), request.turn + 10)

    def call_id(self, seat, step, index):
        return f"{seat}-{step}-{index}"

    def refuse(self, seat, completion):
        return "refused: malformed" if completion.invalid else None


def test_an_episode_shapes_requests_names_calls_and_refuses_turns():
    class Mixed(Recorder):
        async def complete(self, requests, params):
            self.batches.append(list(requests))
            return [Completion(tool_calls=[ToolCall("echo", {"word": r.task.id})], invalid=["bad"] if r.turn == 11 else [])
                    for r in requests]

    episode, policy = Strict(rounds=2), Mixed()
    submit, batcher = submitter(policy, SamplingParams())

    async def main():
        try:
            return await play(episode, {"a": submit, "b": submit}, LoopConfig(), Task(id="t", input=[]))
        finally:
            await batcher.close()

    trajs, _ = asyncio.run(main())
    assert [(r.task.id, r.turn) for b in policy.batches for r in b] == [("a-task", 10), ("b-task", 10),
                                                                         ("a-task", 11), ("b-task", 11)]
    assert episode.said == [("a", "a-task"), ("b", "b-task")]  # the second round was refused
    tool = [m for m in trajs["a"].messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool] == [("a-0-0", "x" * 50), ("a-1-0", "refused: malformed")]
    assert trajs["a"].turns[1].executions[0].status == "error"
