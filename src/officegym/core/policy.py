"""The Policy protocol: conversations in, completions (with tokens where known) out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolSpec


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 512
    seed: int | None = None
    stop: list[str] | None = None


@dataclass
class PolicyRequest:
    """One conversation to continue. `messages` use the Chat-Completions shape
    (`role`, `content`, `tool_calls`, `tool_call_id`). `task` lets scripted policies see the task.
    `previous` is the last Completion of this conversation, so that token-level backends can extend
    its exact ids instead of re-tokenising the conversation."""

    messages: list[dict[str, Any]]
    tools: list[ToolSpec]
    task: Task | None = None
    turn: int = 0
    previous: Completion | None = None


@dataclass
class Completion:
    """A model turn. `tool_calls` are parsed calls; `invalid` lists malformed call fragments with
    the reason (the loop reports them to the model). Token fields are None when the backend does not
    expose them."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    finish_reason: str = "stop"  # stop | length | error
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None
    # Who failed when `error` is set: "backend" (the model backend, transient) or "policy" (a scripted
    # policy's own code, deterministic); see Trajectory.error_source.
    error_source: str = "backend"


class PolicyUnusable(RuntimeError):
    """The backend can answer none of a run's requests (a server set up without tool calls, say): the
    run stops at once with this message, where a failed turn would only fail its own rollout."""


@runtime_checkable
class Policy(Protocol):
    name: str

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]: ...
