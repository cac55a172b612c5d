"""The Policy contract: conversations in, completions (with tokens where known) out.

`Policy` declares every capability generic code may ask of a backend, with the default a backend
without it has, so callers read attributes instead of probing for them. One async lifecycle:
`preflight()` before a run, `aclose()` after it (`close()` is its thin wrapper for sync callers)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

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
    its exact ids instead of re-tokenising the conversation. `max_new_tokens`, when set, caps this
    request's sampled tokens below `SamplingParams.max_new_tokens` (a trainer's per-episode budget;
    0 gives an empty completion with finish_reason "length"); backends without token control ignore it."""

    messages: list[dict[str, Any]]
    tools: list[ToolSpec]
    task: Task | None = None
    turn: int = 0
    previous: Completion | None = None
    max_new_tokens: int | None = None


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


class Policy:
    """The base of every policy backend. Subclasses implement `complete` and override the
    capabilities they have; the defaults below describe a backend without them."""

    name: str = ""  # how rows and reports name the policy; a subclass without one is named by its class
    # Takes conversations one by one and batches across them itself (continuous batching): the agent
    # loop then sends each turn as it comes instead of gathering turns into one call.
    continuous: bool = False
    # Token-level backends: the padding id and tokenizer of their token ledger, the chat template's
    # name (for logs and checks), and whether completions carry the sampler's log-probs.
    pad_id: int | None = None
    tokenizer: Any = None
    template_name: str | None = None
    supports_logprobs: bool = False
    # Samples from the very module a trainer updates in this process (nothing to push after a step).
    trains_in_process: bool = False
    # Its log-probs come from other kernels than the trainer's forward pass (vLLM): the policy loss
    # corrects for the gap with the sampler's own log-probs.
    sampler_differs: bool = False
    # Takes new weights from a trainer (`sync_weights`); `partial_weights`: also only the changed part.
    takes_weights: bool = False
    partial_weights: bool = False
    synced_version: Any = None
    # A trainer's generation spread over Ray actors: the fleet its episodes are sent to.
    fleet: Any = None
    stats: Mapping[str, float] = MappingProxyType({})  # counters (calls, tokens, seconds); backends keep their own dict
    phase: tuple[str, float] | None = None  # what it is doing now and since when, for a heartbeat
    unusable: PolicyUnusable | None = None  # set when no request of this run can succeed

    _auto_named: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        inherited = "name" not in cls.__dict__
        cls._auto_named = inherited and (not cls.name or cls._auto_named)
        if cls._auto_named:  # as type(policy).__name__ named an unnamed policy before
            cls.name = cls.__name__

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        raise NotImplementedError

    async def preflight(self) -> str | None:
        """What keeps this policy from running (a backend unreachable, a model missing), or None."""
        return None

    async def aclose(self) -> None:
        """Release what belongs to the running event loop (API clients); the policy may be used
        again afterwards, in another loop."""

    def close(self) -> None:
        """Release everything (a model backend's weights too): `aclose` for callers outside an
        event loop, unless a backend frees more here."""
        if type(self).aclose is not Policy.aclose:  # nothing to run otherwise: no event loop needed
            asyncio.run(self.aclose())

    def set_threads(self, n: int) -> None:
        """CPU threads for the next calls (a trainer re-chooses them every step); ignored by default."""

    def sync_weights(self, weights: Iterable[tuple[str, Any]], version: Any = None, partial: bool = False) -> bool:
        """Load a trainer's weights (`takes_weights`); returns whether anything was sent."""
        raise NotImplementedError(f"{self.name} takes no weights")
