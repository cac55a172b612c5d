"""Trajectories: what happened in one rollout, turn by turn, with the token ledger when known."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from officegym.core.policy import Completion
from officegym.core.types import ToolCall


class TemplateMismatchError(ValueError):
    """A turn's prompt does not extend the previous turn's prompt and completion token for token.

    `turn`, `position` (index in the episode's token sequence), `expected` (the id the ledger holds
    there), `found` (the prompt's id there; None where the prompt ends early) and `template` (the
    chat template's name, when known) say where.
    """

    def __init__(
        self,
        message: str,
        *,
        turn: int | None = None,
        position: int | None = None,
        expected: int | None = None,
        found: int | None = None,
        template: str | None = None,
    ):
        super().__init__(message)
        self.turn = turn
        self.position = position
        self.expected = expected
        self.found = found
        self.template = template


@dataclass
class ToolExecution:
    """One tool call the model made and what the environment answered."""

    call: ToolCall
    output: str
    status: str = "ok"  # ok | rejected | error | invalid (could not be parsed as a call)
    truncated: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

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
    # Who failed, when `error` is set: "backend" (the model backend; transient, so eval retries it),
    # "policy" (a scripted policy's own code) or "environment" (a session, tool, verifier or reward
    # function raised); the last two are deterministic: a retry fails the same way.
    error_source: str | None = None
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

    def token_ledger(self, template: str | None = None) -> tuple[list[int], list[int], list[float]]:
        """The whole episode as one token sequence: (ids, loss mask, sampler log-probs).

        Built by appending the exact ids of every turn, never by re-tokenising text: each turn's
        prompt must start with everything before it (previous prompt + sampled completion), else
        TemplateMismatchError names `template` (the chat template, e.g. the tokenizer's name, when
        known), the turn, the position and the two differing ids. The new part of a prompt (tool
        results, template scaffolding) gets mask 0 and log-prob 0.0; the sampled ids (the
        end-of-turn token included, when the model produced it) get mask 1 and their log-probs
        (0.0 where the backend gave none). A last turn that failed before sampling anything
        (finish_reason "error", no completion ids) adds nothing and is left out.
        """
        ids: list[int] = []
        mask: list[int] = []
        logps: list[float] = []
        where = f" ({template})" if template else ""
        for k, turn in enumerate(self.turns):
            if turn.completion_ids is None and turn.finish_reason == "error" and k == len(self.turns) - 1:
                break  # nothing was sampled: there is nothing to train on in this turn
            if turn.prompt_ids is None or turn.completion_ids is None:
                raise ValueError(f"turn {k} has no token ids: this backend does not expose tokens")
            if turn.logprobs is not None and len(turn.logprobs) != len(turn.completion_ids):
                raise ValueError(
                    f"turn {k} has {len(turn.completion_ids)} completion ids but {len(turn.logprobs)} log-probs"
                )
            prompt = turn.prompt_ids
            if prompt[: len(ids)] != ids:
                at = next((i for i, (a, b) in enumerate(zip(ids, prompt)) if a != b), len(prompt))
                found = prompt[at] if at < len(prompt) else None
                there = f"the prompt has id {found}" if found is not None else f"the prompt ends (it has {len(prompt)} ids)"
                raise TemplateMismatchError(
                    f"chat template{where or ' (unknown)'}: turn {k}'s prompt does not extend the previous turns: "
                    f"at token position {at} the episode so far has id {ids[at]} but {there}. The template "
                    "re-renders earlier turns differently (re-tokenisation, stripped reasoning, truncation); "
                    "build each prompt by appending to the previous ids",
                    turn=k,
                    position=at,
                    expected=ids[at],
                    found=found,
                    template=template,
                )
            new = prompt[len(ids) :]
            ids += new
            mask += [0] * len(new)
            logps += [0.0] * len(new)
            ids += turn.completion_ids
            mask += [1] * len(turn.completion_ids)
            lp = turn.logprobs if turn.logprobs is not None else [0.0] * len(turn.completion_ids)
            logps += [float(x) for x in lp]
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
            "error_source": self.error_source,
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
