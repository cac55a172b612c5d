"""The agent loop: model turns and tool executions in an isolated session, then the verdict.

Semantics follow NeMo Gym's simple agent: a step is one model turn (which may carry several tool
calls); the episode ends when the model answers without a tool call or after `max_steps` turns
(calls made in the last turn are executed and count); every call the model made, valid or not, is
what the verifier replays.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from officegym.agent.batching import Batcher
from officegym.agent.formats import assistant_message, responses_items_to_chat_messages
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.protocols import Environment
from officegym.core.task import Task
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall

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
    """In-process environments answer directly; remote ones (server/client.py) return awaitables."""
    return await value if inspect.isawaitable(value) else value


async def _execute(session: Any, call: ToolCall) -> tuple[str, str]:
    """Run a call through the session; returns (text the model sees, status)."""
    args = call.arguments if call.parse_error is None else call.raw_arguments
    execute = getattr(session, "execute", None)
    if execute is not None:
        result = await _resolve(execute(call.name, args))
        return result.text, result.status
    return await _resolve(session.call(call.name, args)), "ok"


RewardFn = Callable[[Task, Trajectory, Any], Any]


async def rollout(
    env: Environment,
    task: Task,
    submit: Callable[[PolicyRequest], Any],
    config: LoopConfig,
    reward_fn: RewardFn | None = None,
    sample_index: int = 0,
    policy_name: str = "",
) -> Trajectory:
    """One episode of `task`: `submit` sends a request to the policy (directly or via a Batcher)."""
    start = time.perf_counter()
    env_seconds = 0.0
    traj = Trajectory(task_id=task.id, policy=policy_name, sample_index=sample_index)
    t0 = time.perf_counter()
    session = await _resolve(env.session(task))
    tools = await _resolve(env.tools(task))
    env_seconds += time.perf_counter() - t0
    messages = responses_items_to_chat_messages(task.input)
    previous = None
    used_ids: set[str] = set()
    stop = "max_steps"
    for step in range(config.max_steps):
        request = PolicyRequest(messages=list(messages), tools=tools, task=task, turn=step, previous=previous)
        completion = await submit(request)
        previous = completion
        turn = Turn.from_completion(completion)
        traj.turns.append(turn)
        if completion.error:
            traj.error = completion.error
            stop = "error"
            break
        calls = []
        for i, c in enumerate(completion.tool_calls):
            if not c.call_id or c.call_id in used_ids:  # text formats number calls per turn
                c = _with_id(c, step, i)
            used_ids.add(c.call_id)
            calls.append(c)
        messages.append(assistant_message(completion.text, calls))
        t0 = time.perf_counter()
        for call in calls:
            e0 = time.perf_counter()
            output, status = await _execute(session, call)
            output, cut = truncate(output, config.max_tool_output_chars)
            turn.executions.append(ToolExecution(call, output, status, cut, time.perf_counter() - e0))
            messages.append({"role": "tool", "tool_call_id": call.call_id, "content": output})
        env_seconds += time.perf_counter() - t0
        for reason in completion.invalid:
            messages.append({"role": "tool", "tool_call_id": None, "content": INVALID_CALL_HINT.format(reason=reason)})
        if not calls and not completion.invalid:
            stop = "length" if completion.finish_reason == "length" else "answered"
            break
    traj.stop_reason = stop
    traj.messages = messages
    t0 = time.perf_counter()
    close = getattr(session, "aclose", None)
    if close is not None:  # a remote session frees its server-side state
        await close()
    verdict = await _resolve(env.verify(task, traj.calls, config.mode))
    env_seconds += time.perf_counter() - t0
    traj.verdict = verdict.to_dict()
    if reward_fn is None:
        traj.reward = verdict.reward
        traj.reward_components = {"outcome": verdict.reward}
    else:
        result = reward_fn(task, traj, verdict)
        traj.reward = float(result.total)
        traj.reward_components = dict(result.components)
    traj.env_seconds = env_seconds
    traj.seconds = time.perf_counter() - start
    return traj


def _with_id(call: ToolCall, step: int, index: int) -> ToolCall:
    call.call_id = f"call_{step}_{index}"
    return call


async def run_rollouts(
    env: Environment,
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
    batcher = Batcher(policy, config.params, max_batch=max_batch)
    gate = asyncio.Semaphore(max(1, concurrency))
    name = getattr(policy, "name", type(policy).__name__)
    if getattr(policy, "continuous", False):
        # The backend batches across conversations itself (continuous batching): each turn goes in
        # on its own, so a rollout never waits for other rollouts' longer turns.
        async def submit(request: PolicyRequest) -> Completion:
            return (await policy.complete([request], config.params))[0]
    else:
        submit = batcher.submit

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
        await batcher.close()
