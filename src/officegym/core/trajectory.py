"""Trajectories: what happened in one rollout, turn by turn, with the token ledger when known."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from officegym.core.policy import Completion
from officegym.core.types import ToolCall


class TemplateMismatchError(ValueError):
    """A turn's prompt does not extend the previous turn's prompt and completion token for token."""


@dataclass
class ToolExecution:
    """One tool call the model made and what the environment answered."""

    call: ToolCall
    output: str
    status: str = "ok"  # ok | rejected | error | invalid (could not be parsed as a call)
    truncated: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.call.name,
            "arguments": self.call.arguments_json if self.call.parse_error is None else self.call.raw_arguments,
            "call_id": self.call.call_id,
            "output": self.output,
            "status": self.status,
            "truncated": self.truncated,
            "seconds": self.seconds,
        }


@dataclass
class Turn:
    """One model turn: the text it produced, the calls it made and their results.

    With a backend that exposes tokens, `prompt_ids` are the exact ids the model was conditioned on,
    `completion_ids` the ids it sampled (end-of-turn token included) and `logprobs` the sampler's
    log-probabilities of those ids.
    """

    text: str = ""
    executions: list[ToolExecution] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)  # malformed call fragments, with the reason
    finish_reason: str = "stop"
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def calls(self) -> list[ToolCall]:
        return [e.call for e in self.executions]

    @classmethod
    def from_completion(cls, c: Completion) -> Turn:
        """The record of a model turn, before its calls are executed."""
        return cls(
            text=c.text, invalid=list(c.invalid), finish_reason=c.finish_reason, prompt_ids=c.prompt_ids,
            completion_ids=c.completion_ids, logprobs=c.logprobs, prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens, seconds=c.seconds,
        )

    def to_dict(self) -> dict[str, Any]:
        d = {
            "text": self.text,
            "executions": [e.to_dict() for e in self.executions],
            "invalid": self.invalid,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": self.seconds,
        }
        if self.completion_ids is not None:
            d.update(prompt_ids=self.prompt_ids, completion_ids=self.completion_ids, logprobs=self.logprobs)
        return d


@dataclass
class Trajectory:
    """A rollout: the task, every turn, the verdict's reward and its components, timings."""

    task_id: Any
    turns: list[Turn] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)  # the conversation, Chat-Completions form
    reward: float | None = None
    reward_components: dict[str, float] = field(default_factory=dict)
    verdict: dict[str, Any] | None = None
    stop_reason: str = ""  # answered | max_steps | length | error
    error: str | None = None
    seconds: float = 0.0
    env_seconds: float = 0.0
    policy: str = ""
    sample_index: int = 0

    @property
    def calls(self) -> list[ToolCall]:
        return [c for t in self.turns for c in t.calls]

    @property
    def tokens(self) -> int:
        return sum(t.prompt_tokens + t.completion_tokens for t in self.turns)

    def token_ledger(self) -> tuple[list[int], list[int], list[float]]:
        """The whole episode as one token sequence: (ids, loss mask, sampler log-probs).

        Built by appending the exact ids of every turn, never by re-tokenising text: each turn's
        prompt must start with everything before it (previous prompt + sampled completion); the new
        part (tool results, template scaffolding) gets mask 0, sampled ids get mask 1.
        """
        ids: list[int] = []
        mask: list[int] = []
        logps: list[float] = []
        for k, turn in enumerate(self.turns):
            if turn.prompt_ids is None or turn.completion_ids is None:
                raise ValueError(f"turn {k} has no token ids: this backend does not expose tokens")
            if turn.prompt_ids[: len(ids)] != ids:
                at = next((i for i, (a, b) in enumerate(zip(ids, turn.prompt_ids)) if a != b), min(len(ids), len(turn.prompt_ids)))
                raise TemplateMismatchError(
                    f"turn {k}: the prompt does not extend the previous turns (first difference at token {at}); "
                    "the chat template re-tokenises earlier turns differently"
                )
            new = turn.prompt_ids[len(ids) :]
            ids += new
            mask += [0] * len(new)
            logps += [0.0] * len(new)
            ids += turn.completion_ids
            mask += [1] * len(turn.completion_ids)
            lp = turn.logprobs if turn.logprobs is not None else [0.0] * len(turn.completion_ids)
            logps += list(lp)
        return ids, mask, logps

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "sample_index": self.sample_index,
            "policy": self.policy,
            "reward": self.reward,
            "reward_components": self.reward_components,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "seconds": self.seconds,
            "env_seconds": self.env_seconds,
            "turns": [t.to_dict() for t in self.turns],
            "messages": self.messages,
            "verdict": self.verdict,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=_default)


def _default(o: Any) -> Any:
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    return str(o)
