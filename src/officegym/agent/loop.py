"""The agent loop, the one rollout loop of the project: model turns and tool executions, then the verdict.

`play` drives any episode (core/episode.py): one seat or several, each with its own conversation,
tools and policy. A single-agent environment plays as a `ToolEpisode`, whose rules follow NeMo
Gym's simple agent: a step is one model turn (which may carry several tool calls); the episode ends
when the model answers without a tool call or after `max_steps` turns (calls made in the last turn
are executed and count); every call the model made, valid or not, is what the verifier replays.
Multi-agent environments (the council) build their own episode and play through the same loop.

A failure ends its own rollout only, as an error row that says who failed (`Trajectory.error_source`):
a policy call that fails is the backend's (or a scripted policy's) error for that turn; an exception
from the environment's code (session, tools, verifier) or the reward function ends the rollout with
stop_reason "error", the cause (type, message, where) in `error`, and reward 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from officegym.agent.batching import Batcher
from officegym.agent.messages import assistant_message, responses_items_to_chat_messages
from officegym.core.environment import BaseEnvironment
from officegym.core.episode import Episode
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.session import BaseSession
from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall, ToolResult, ToolSpec, Verdict

INVALID_CALL_HINT = (
    "Invalid tool call: {reason}. Call a tool with "
    '<tool_call>{{"name": "<tool name>", "arguments": {{...}}}}</tool_call>.'
)


@dataclass
class LoopConfig:
    max_steps: int = 6
    max_tool_output_chars: int | None = 8000  # None: never truncate
    mode: str | None = None  # verification mode; None: the environment's default
    params: SamplingParams = field(default_factory=SamplingParams)


def truncate(text: str, limit: int | None) -> tuple[str, bool]:
    if limit is None or len(text) <= limit:
        return text, False
    return f"{text[:limit]}... [truncated {len(text) - limit} characters]", True


async def _resolve(value: Any) -> Any:
    """An episode's hooks may be plain methods or coroutines (core/episode.py)."""
    return await value if inspect.isawaitable(value) else value


def error_text(exc: BaseException) -> str:
    """An exception as an error row shows it: type, message and the line that raised it."""
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ is not None else []
    at = f" (at {where[0].filename.rsplit('/', 1)[-1]}:{where[0].lineno} in {where[0].name})" if where else ""
    return f"{type(exc).__name__}: {exc}{at}"


ENVIRONMENT = "environment"  # Trajectory.error_source of a failure in the environment's or scorer's code


RewardFn = Callable[[Task, Trajectory, Any], Any]
Submit = Callable[[PolicyRequest], Awaitable[Completion]]


class ToolEpisode(Episode):
    """A single-agent environment as a one-seat episode, by NeMo Gym's simple-agent rules: a turn
    per step; the episode ends when the model answers without a call (or a malformed one), when a
    turn fails, or after `max_steps` turns; the verifier replays every call the model made."""

    SEAT = "agent"
    seats = (SEAT,)

    def __init__(self, env: BaseEnvironment, task: Task, config: LoopConfig):
        self.env, self.task, self.config = env, task, config
        self.session: BaseSession | None = None
        self._tools: list[ToolSpec] = []
        self.steps = 0
        self.stop: str | None = None

    async def start(self) -> None:
        self.session = await self.env.asession(self.task)
        self._tools = self.env.tools(self.task)

    def opening(self, seat: str) -> list[dict[str, Any]]:
        return responses_items_to_chat_messages(self.task.input)

    def tools(self, seat: str) -> list[ToolSpec]:
        return self._tools

    def next_group(self) -> tuple[str, ...]:
        return () if self.stop is not None or self.steps >= self.config.max_steps else self.seats

    async def execute(self, seat: str, call: ToolCall) -> ToolResult:
        args = call.arguments if call.parse_error is None else call.raw_arguments
        return await self.session.aexecute(call.name, args)

    def end_turn(self, seat: str, completion: Completion, calls: Sequence[ToolCall]) -> None:
        self.steps += 1
        if completion.error:
            self.stop = "error"
        elif not calls and not completion.invalid:
            self.stop = "length" if completion.finish_reason == "length" else "answered"

    async def finish(self, trajectories: Mapping[str, Trajectory]) -> Verdict:
        await self.close()  # a remote session frees its server-side state
        return await self.env.averify(self.task, trajectories[self.SEAT].calls, self.config.mode)

    async def abort(self) -> None:
        await self.close()

    async def close(self) -> None:
        if self.session is not None:  # None: the environment failed to open it
            await self.session.aclose()

    def stop_reason(self, seat: str) -> str:
        return self.stop or "max_steps"


async def play(
    episode: Episode,
    submit: Mapping[str, Submit],
    config: LoopConfig,
    task: Task,
    names: Mapping[str, str] | None = None,
    sample_index: int = 0,
) -> tuple[dict[str, Trajectory], Verdict]:
    """The one rollout loop: drive `episode` to its end, each seat's turns sent through its
    `submit`. Returns every seat's trajectory (verdict, team reward and the seat's components set)
    and the verdict (see core/episode.py). When the environment raises, every seat's trajectory is
    an error row with the cause and the verdict says so (reward 0): the caller's other rollouts go on."""
    start = time.perf_counter()
    trajs = {s: Trajectory(task_id=task.id, policy=(names or {}).get(s, ""), sample_index=sample_index)
             for s in episode.seats}
    convs: dict[str, list[dict[str, Any]]] = {s: [] for s in episode.seats}
    env_clock = [0.0]  # seconds spent in the environment, kept when it fails part way
    try:
        verdict = await _drive(episode, submit, config, task, trajs, convs, env_clock)
        ends = {s: (verdict.to_dict(), episode.components(s, verdict), episode.stop_reason(s)) for s in trajs}
    except Exception as exc:  # a bug or outage in the environment: this rollout fails, the others go on
        cause = error_text(exc)
        with contextlib.suppress(Exception):
            await _resolve(episode.abort())
        verdict = failure_verdict(cause, config)
        ends = {s: (verdict.to_dict(), {"outcome": 0.0}, "error") for s in trajs}
        for traj in trajs.values():
            traj.error, traj.error_source = cause, ENVIRONMENT
    for seat, traj in trajs.items():
        traj.messages = convs[seat]
        traj.verdict, traj.reward_components, traj.stop_reason = ends[seat]
        traj.reward = verdict.reward
        traj.env_seconds = env_clock[0]
        traj.seconds = time.perf_counter() - start
    return trajs, verdict


async def _drive(episode: Episode, submit: Mapping[str, Submit], config: LoopConfig, task: Task,
                 trajs: dict[str, Trajectory], convs: dict[str, list[dict[str, Any]]], env_clock: list[float]) -> Verdict:
    """`play`'s turns, from `start` to the verdict of `finish`; fills `convs` and `env_clock` as it goes."""
    t0 = time.perf_counter()
    await _resolve(episode.start())
    env_clock[0] += time.perf_counter() - t0
    for s in episode.seats:
        convs[s] = list(episode.opening(s))
    tools = {s: episode.tools(s) for s in episode.seats}
    previous: dict[str, Completion | None] = dict.fromkeys(episode.seats)
    used_ids: dict[str, set[str]] = {s: set() for s in episode.seats}
    while group := tuple(episode.next_group()):
        requests = []
        for seat in group:  # every seat of the group sees the same snapshot
            news = episode.news(seat)
            if news:
                convs[seat].append({"role": "user", "content": news})
            turn_index = len(trajs[seat].turns)
            request = PolicyRequest(list(convs[seat]), tools[seat], task, turn_index, previous[seat])
            requests.append(episode.request(seat, request))
        if len(group) == 1:  # one seat (every single-agent turn): no task to gather
            completions = [await _ask(submit[group[0]], requests[0])]
        else:
            completions = await asyncio.gather(*(_ask(submit[seat], r) for seat, r in zip(group, requests)))
        for seat, completion in zip(group, completions):
            previous[seat] = completion
            env_clock[0] += await _take_turn(episode, seat, completion, trajs[seat], convs[seat], used_ids[seat], config)
    t0 = time.perf_counter()
    verdict = await _resolve(episode.finish(trajs))
    env_clock[0] += time.perf_counter() - t0
    return verdict


async def _ask(submit: Submit, request: PolicyRequest) -> Completion:
    """One policy call; a `submit` that raises fails this turn as a backend error, not the episode."""
    try:
        return await submit(request)
    except Exception as exc:
        return Completion(finish_reason="error", error=error_text(exc))


def failure_verdict(cause: str, config: LoopConfig) -> Verdict:
    """The verdict of a rollout the environment failed: nothing was judged, so reward 0."""
    return Verdict(0.0, False, config.mode or "error",
                   details={"label": "error", "graded": False, "error": cause, "error_source": ENVIRONMENT})


def _fail(traj: Trajectory, cause: str) -> None:
    """Make a finished trajectory an error row of the environment (its reward function failed)."""
    traj.error, traj.error_source, traj.stop_reason = cause, ENVIRONMENT, "error"
    traj.reward, traj.reward_components = 0.0, {"outcome": 0.0}


async def _take_turn(episode: Episode, seat: str, completion: Completion, traj: Trajectory,
                     messages: list[dict[str, Any]], used_ids: set[str], config: LoopConfig) -> float:
    """Record one model turn of `seat` and run its calls; returns the seconds spent in the environment."""
    step = len(traj.turns)
    turn = Turn.from_completion(completion)
    traj.turns.append(turn)
    if completion.error:
        traj.error, traj.error_source = completion.error, completion.error_source
        episode.end_turn(seat, completion, [])
        return 0.0
    calls = []
    for i, c in enumerate(completion.tool_calls):
        if not c.call_id or c.call_id in used_ids:  # text formats number calls per turn
            c = c.with_id(episode.call_id(seat, step, i))
        used_ids.add(c.call_id)
        calls.append(c)
    messages.append(assistant_message(completion.text, calls))
    refusal = episode.refuse(seat, completion)
    seconds = 0.0
    for call in calls:
        if refusal is not None:  # the episode runs none of this turn's calls
            result, spent = ToolResult(refusal, "error", body=refusal), 0.0
        else:
            e0 = time.perf_counter()
            result = await _resolve(episode.execute(seat, call))
            spent = time.perf_counter() - e0
        seconds += spent
        output, cut = truncate(result.text, config.max_tool_output_chars)
        turn.executions.append(ToolExecution(call, output, result.status, cut, spent))
        messages.append({"role": "tool", "tool_call_id": call.call_id, "content": output})
    for reason in completion.invalid if refusal is None else ():
        messages.append({"role": "tool", "tool_call_id": None, "content": INVALID_CALL_HINT.format(reason=reason)})
    episode.end_turn(seat, completion, calls)
    return seconds


async def rollout(
    env: BaseEnvironment,
    task: Task,
    submit: Submit,
    config: LoopConfig,
    reward_fn: RewardFn | None = None,
    sample_index: int = 0,
    policy_name: str = "",
) -> Trajectory:
    """One episode of `task`: `submit` sends a request to the policy (directly or via a Batcher)."""
    seat = ToolEpisode.SEAT
    trajs, verdict = await play(ToolEpisode(env, task, config), {seat: submit}, config, task, {seat: policy_name},
                                sample_index)
    traj = trajs[seat]
    if reward_fn is not None and traj.error_source != ENVIRONMENT:
        try:
            result = reward_fn(task, traj, verdict)
            traj.reward = float(result.total)
            traj.reward_components = dict(result.components)
        except Exception as exc:  # a scorer too: its failure is this rollout's, not the batch's
            _fail(traj, f"reward function: {error_text(exc)}")
    return traj


def submitter(policy: Policy, params: SamplingParams, max_batch: int = 32) -> tuple[Submit, Batcher | None]:
    """How turns reach `policy`: through a Batcher that gathers concurrent turns into one call, or
    one by one for a backend that batches across conversations itself (continuous batching, so a
    rollout never waits for other rollouts' longer turns). A failing backend fails the turn, never
    the run. Close the Batcher (second item, None when there is none) when done."""
    if policy.continuous:
        async def one_by_one(request: PolicyRequest) -> Completion:
            try:
                return (await policy.complete([request], params))[0]
            except Exception as exc:
                return Completion(finish_reason="error", error=f"{type(exc).__name__}: {exc}")

        return one_by_one, None
    batcher = Batcher(policy, params, max_batch=max_batch)
    return batcher.submit, batcher


async def run_rollouts(
    env: BaseEnvironment,
    jobs: Iterable[tuple[Task, int]],
    policy: Policy,
    config: LoopConfig,
    reward_fn: RewardFn | None = None,
    concurrency: int = 64,
    max_batch: int = 32,
    on_done: Callable[[Task, Trajectory], None] | None = None,
) -> list[Trajectory]:
    """Run (task, sample index) jobs concurrently, each in its own session; results in job order.
    `on_done` is called as each finishes (to write it out and advance a progress bar)."""
    submit, batcher = submitter(policy, config.params, max_batch)
    gate = asyncio.Semaphore(max(1, concurrency))
    name = policy.name

    async def one(task: Task, k: int) -> Trajectory:
        async with gate:
            traj = await rollout(env, task, submit, config, reward_fn, k, name)
        if on_done is not None:
            on_done(task, traj)
        return traj

    job_list: Sequence[tuple[Task, int]] = list(jobs)
    try:
        return list(await asyncio.gather(*(one(t, k) for t, k in job_list)))
    finally:
        if batcher is not None:
            await batcher.close()
