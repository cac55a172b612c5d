"""What the one agent loop (agent/loop.py `play`) drives: an episode with one or more seats.

A seat is a participant with its own conversation, tools and policy. The loop asks the episode
which seats act next (`next_group`: they all act on the same snapshot, so their requests can be
batched), shows each of them what happened since its last turn (`news`, a user message), sends
their requests to their policies, runs each call through `execute` (in the group's order) and
tells the episode the turn is over (`end_turn`). When `next_group` returns no seat, `finish` gives
the verdict, and every seat's trajectory gets the team's reward with its own components.

A single-agent environment is the one-seat case: agent/loop.py wraps any environment in a
`ToolEpisode` with NeMo Gym's simple-agent rules. A multi-agent environment (the council) builds
its own through `BaseEnvironment.episode`.

`start`, `execute` and `finish` may return awaitables (a remote environment); the loop awaits them.
When one of the episode's methods raises, the loop calls `abort` and records the rollout as an error
of the environment (agent/loop.py): the episode needs no handler of its own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from officegym.core.types import ToolCall, ToolSpec, Verdict

if TYPE_CHECKING:
    from officegym.core.policy import Completion, PolicyRequest
    from officegym.core.trajectory import Trajectory


class Episode(ABC):
    seats: tuple[str, ...] = ()

    def start(self) -> Any:
        """Set up before the first turn (open sessions, fetch tools); may be awaitable."""
        return None

    @abstractmethod
    def opening(self, seat: str) -> list[dict[str, Any]]:
        """The seat's first messages (system prompt, brief): chat-format dicts."""

    @abstractmethod
    def tools(self, seat: str) -> list[ToolSpec]:
        """The tools the seat may call."""

    @abstractmethod
    def next_group(self) -> Sequence[str]:
        """The seats that act next, all on the same snapshot; empty when the episode is over."""

    def news(self, seat: str) -> str | None:
        """What the seat is shown before its turn (a user message), or None."""
        return None

    def request(self, seat: str, request: PolicyRequest) -> PolicyRequest:
        """The request the seat's policy gets this turn: an episode whose task or tools change
        between turns (BFCL's user turns) adjusts the loop's request here."""
        return request

    def call_id(self, seat: str, step: int, index: int) -> str:
        """The id a call gets when the policy gave it none (or a repeated one)."""
        return f"call_{step}_{index}"

    def refuse(self, seat: str, completion: Completion) -> str | None:
        """Why none of the turn's calls runs (each is answered with this text, and malformed call
        fragments get no hint), or None: each call runs through `execute`. BFCL refuses a turn whose
        calls do not all decode; NeMo Gym's rules run every call."""
        return None

    @abstractmethod
    def execute(self, seat: str, call: ToolCall) -> Any:
        """Run one call of the seat: a ToolResult (or an awaitable of one); never raises on model input."""

    def end_turn(self, seat: str, completion: Completion, calls: Sequence[ToolCall]) -> None:
        """The seat's turn is over: `completion` as the policy gave it, `calls` as executed."""
        return None

    @abstractmethod
    def finish(self, trajectories: Mapping[str, Trajectory]) -> Any:
        """The verdict of the finished episode (or an awaitable of it); every seat shares its reward."""

    def abort(self) -> Any:
        """The episode failed part way (one of its methods raised): release what `start` opened, such
        as a remote session; may be awaitable. Its own errors are ignored."""
        return None

    def stop_reason(self, seat: str) -> str:
        """Why the seat's episode ended: answered | length | error | max_steps."""
        return "max_steps"

    def components(self, seat: str, verdict: Verdict) -> dict[str, float]:
        """The seat's reward components (the team's, plus the seat's own credit where there is one)."""
        return {"outcome": verdict.reward}


__all__ = ["Episode"]
