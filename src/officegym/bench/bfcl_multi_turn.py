"""BFCL's multi-turn categories as episodes of the one rollout loop (agent/loop.play): the user
turns, the policy's calls executed against bfcl-eval's own backends (bfcl_session.py, with its rules
for what a call may run), and bfcl-eval's multi-turn checker on the calls each turn made.

The episode follows bfcl-eval's own inference loop (`BaseHandler.inference_multi_turn_FC`):

* The entry's backends are made once, when the episode starts, and live for the whole episode.
* Each user turn appends its messages and asks the policy for steps until one holds no call. A step's
  calls are executed in order and each result goes back, whole, as a tool message. A step whose calls
  do not decode (arguments that are not a JSON object, a malformed call fragment) ends the turn
  unexecuted, as a decoding failure does in BFCL (`refuse`). After BFCL's MAXIMUM_STEP_LIMIT (20)
  executed steps in one turn the episode is force-terminated, the whole entry failing.
* A request carries the current user turn's Task and counts its steps from that turn's start, so a
  scripted policy replays the turn's ground truth; calls without an id get `call_<turn>_<step>_<i>`.
* miss_func: functions listed in the entry's `missed_function` for a turn are added to the offered
  tools before that turn, whose (empty) user message becomes BFCL's "I have updated some more
  functions you can choose from. What about now?". The policy is then asked without `previous`,
  so a backend that extends token ids renders the conversation anew, the new tools included.
* The checker gets, per turn, the call strings of each step that executed calls (BFCL drops steps
  that made none), re-executes them and the ground truth in fresh backends and compares the
  backends' states and the calls' results after every turn.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from officegym.agent.loop import ENVIRONMENT, LoopConfig, Submit, play
from officegym.bench import bfcl_lib
from officegym.bench.bfcl_data import BfclCase
from officegym.bench.bfcl_score import backend_error_verdict, call_row
from officegym.bench.bfcl_session import BfclSession
from officegym.core.episode import Episode
from officegym.core.policy import Completion, PolicyRequest
from officegym.core.task import Task
from officegym.core.trajectory import Trajectory
from officegym.core.types import ToolCall, ToolSpec, Verdict

RESULT_CHARS_KEPT = 400  # per tool result in results.jsonl; the model sees the whole text
LOOP = LoopConfig(max_tool_output_chars=None)  # the episode ends itself; tool results go back whole


def _undecodable(completion: Completion) -> list[str]:
    """Why a step's calls do not decode (BFCL then ends the turn without executing them)."""
    reasons = []
    for i, call in enumerate(completion.tool_calls):
        if call.parse_error is not None:
            reasons.append(f"call {i + 1} ({call.name}): arguments are not valid JSON: {call.parse_error}")
        elif not isinstance(call.arguments, dict):
            reasons.append(f"call {i + 1} ({call.name}): arguments must be a JSON object, got "
                           f"{type(call.arguments).__name__}")
    reasons += [f"malformed tool call: {r}" for r in completion.invalid]
    return reasons


def _clip(text: str, limit: int = RESULT_CHARS_KEPT) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} more characters]"


@dataclass
class EpisodeRecord:
    """What one episode did: per turn, the call strings of each executing step (the checker's
    input), a compact transcript, the cost, and bfcl-eval's verdict once it is over."""

    decoded: list[list[list[str]]] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    forced_turn: int | None = None  # the turn that went past BFCL's step limit
    backend_error: str | None = None
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    last: Completion | None = None
    verdict: dict[str, Any] | None = None
    ended: float = 0.0  # perf_counter when the episode was over, before the check


class BfclEpisode(Episode):
    """One multi-turn entry as a one-seat episode: BFCL's user turns, steps and stopping rules."""

    SEAT = "model"
    seats = (SEAT,)

    def __init__(self, case: BfclCase):
        assert case.multi_turn is not None, f"{case.id} is not a multi-turn entry"
        self.case, self.spec = case, case.multi_turn
        self.limit = bfcl_lib.max_steps_per_turn()
        self.record = EpisodeRecord()
        self.session: BfclSession | None = None
        self._tools: list[ToolSpec] = list(case.tools)
        self._shown: list[dict[str, Any]] = []  # the current user turn's messages
        self._task: Task = case.task
        self._outputs: list[str] = []  # the current step's results
        self.turn = self.step = self.executed_steps = 0
        self.over = False

    def start(self) -> None:
        self.session = BfclSession(self.case)
        self._begin(0)

    def _begin(self, t: int) -> None:
        """Set up user turn `t` (or end the episode after the last one)."""
        self.turn, self.step, self.executed_steps = t, 0, 0
        if t == len(self.spec.turns):
            self.over = True
            return
        shown = [dict(m) for m in self.spec.turns[t]]
        if t in self.spec.added:
            self._tools = self._tools + self.spec.added[t][1]
            if not shown:
                shown = [{"role": "user", "content": bfcl_lib.added_functions_prompt()}]
        if t > 0 and not (len(shown) == 1 and shown[0].get("role") == "user" and set(shown[0]) == {"role", "content"}
                          and isinstance(shown[0]["content"], str) and shown[0]["content"]):
            raise ValueError(f"{self.case.id}: turn {t} is not one user message, the only shape a later turn takes")
        self._shown = shown
        self._task = self.spec.turn_task(self.case, t, self._tools)
        self.record.transcript.append({"user": [_clip(str(m.get("content", ""))) for m in shown], "steps": []})
        self.record.decoded.append([])

    def opening(self, seat: str) -> list[dict[str, Any]]:
        return self._shown

    def tools(self, seat: str) -> list[ToolSpec]:
        return self._tools

    def news(self, seat: str) -> str | None:
        return self._shown[0]["content"] if self.turn > 0 and self.step == 0 else None

    def request(self, seat: str, request: PolicyRequest) -> PolicyRequest:
        # Tools added at this turn: no `previous`, so the conversation is rendered anew with them.
        fresh = self.step == 0 and self.turn in self.spec.added
        return dataclasses.replace(request, tools=self._tools, task=self._task, turn=self.step,
                                   previous=None if fresh else request.previous)

    def call_id(self, seat: str, step: int, index: int) -> str:
        return f"call_{self.turn}_{self.step}_{index}"

    def next_group(self) -> tuple[str, ...]:
        return () if self.over else self.seats

    def refuse(self, seat: str, completion: Completion) -> str | None:
        reasons = _undecodable(completion)
        return "Not executed: this turn's tool calls did not decode (" + "; ".join(reasons) + ")." if reasons else None

    def execute(self, seat: str, call: ToolCall) -> Any:
        assert self.session is not None
        result = self.session.execute(call.name, call.arguments)
        self._outputs.append(result.text)
        return result

    def end_turn(self, seat: str, completion: Completion, calls: Sequence[ToolCall]) -> None:
        record = self.record
        record.steps += 1
        record.prompt_tokens += completion.prompt_tokens
        record.completion_tokens += completion.completion_tokens
        record.last = completion
        if completion.error:
            record.backend_error = completion.error
            self.over = True
            return
        step_log: dict[str, Any] = {"text": _clip(completion.text, 1000), "calls": [call_row(c) for c in calls]}
        record.transcript[-1]["steps"].append(step_log)
        self.step += 1
        outputs, self._outputs = self._outputs, []
        strings = self.session.drain() if self.session is not None else []
        if not calls and not completion.invalid:
            self._begin(self.turn + 1)  # the model answered: the turn is over
            return
        reasons = _undecodable(completion)
        if reasons:  # BFCL: a response that does not decode ends the turn; nothing of it ran
            step_log["undecodable"] = reasons
            self._begin(self.turn + 1)
            return
        step_log["results"] = [_clip(o) for o in outputs]
        if strings:
            record.decoded[-1].append(strings)
        self.executed_steps += 1
        if self.executed_steps > self.limit:
            record.forced_turn = self.turn
            self.over = True

    def finish(self, trajectories: Mapping[str, Trajectory]) -> Verdict:
        self.close()
        self.record.ended = time.perf_counter()
        verdict = self.record.verdict = episode_verdict(self.case, self.record)
        return Verdict(1.0 if verdict["valid"] else 0.0, bool(verdict["valid"]), "bfcl", details=verdict)

    def abort(self) -> None:
        self.close()

    def close(self) -> None:
        if self.session is not None:
            self.session.close()

    def stop_reason(self, seat: str) -> str:
        if self.record.backend_error:
            return "error"
        return "max_steps" if self.record.forced_turn is not None else "answered"


def _guarded(submit: Submit) -> Submit:
    """A continuous backend raising fails this entry as a backend error, not the run."""
    async def ask(request: PolicyRequest) -> Completion:
        try:
            return await submit(request)
        except Exception as exc:
            return Completion(finish_reason="error", error=f"{type(exc).__name__}: {exc}")

    return ask


async def run_episode(case: BfclCase, submit: Submit) -> EpisodeRecord:
    """Play one multi-turn entry through the agent loop (`submit` sends one request to the policy)."""
    episode = BfclEpisode(case)
    trajectories, _ = await play(episode, {BfclEpisode.SEAT: _guarded(submit)}, LOOP, case.task)
    trajectory = trajectories[BfclEpisode.SEAT]
    if trajectory.error_source == ENVIRONMENT:  # officegym's or bfcl-eval's code failed: stop the run
        raise RuntimeError(f"BFCL entry {case.id}: {trajectory.error}")
    return episode.record


def score_episode(case: BfclCase, episode: EpisodeRecord) -> dict[str, Any]:
    """{valid, error, error_type, details}: bfcl-eval's verdict on the episode."""
    spec = case.multi_turn
    assert spec is not None
    truth = spec.ground_truth
    if len(episode.decoded) != len(truth):
        # bfcl-eval's eval runner: a result with fewer turns than the ground truth was force-terminated.
        return {"valid": False, "error_type": "multi_turn:force_terminated", "details": None,
                "error": [f"Model was force-terminated during inference phase: turn {episode.forced_turn} went past "
                          f"{bfcl_lib.max_steps_per_turn()} steps, so {len(episode.decoded)} of {len(truth)} turns "
                          "were run."]}
    try:
        result = bfcl_lib.multi_turn_check(episode.decoded, truth, spec.entry, case.category)
    except Exception as exc:  # the checker must not stop the run on odd model output
        where = exc.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        at = f" (at {where.tb_frame.f_code.co_name}, line {where.tb_lineno})" if where is not None else ""
        return {"valid": False, "error_type": "officegym:checker_exception", "details": None,
                "error": [f"bfcl-eval's multi-turn checker raised {type(exc).__name__}: {exc}{at}"]}
    if result.get("valid"):
        return {"valid": True, "error_type": None, "error": [], "details": None}
    return {"valid": False, "error_type": result.get("error_type"), "error": [str(result.get("error_message", ""))],
            "details": _details(result)}


def _details(result: dict[str, Any]) -> Any:
    """The checker's evidence, small enough for results.jsonl (states can be whole file systems)."""
    details = result.get("details")
    if not isinstance(details, dict):
        return None
    out: dict[str, Any] = {}
    for key, value in details.items():
        if key == "differences" and isinstance(value, dict):
            out[key] = {k: {side: _clip(repr(v), 600) for side, v in d.items()} if isinstance(d, dict) else _clip(repr(d))
                        for k, d in value.items()}
        elif key in ("missing_items", "model response decoded"):
            out[key] = [_clip(str(v)) for v in value] if isinstance(value, list) else _clip(str(value))
    return out or None


def episode_verdict(case: BfclCase, episode: EpisodeRecord) -> dict[str, Any]:
    if episode.backend_error:
        return backend_error_verdict(episode.backend_error, details=None)
    return score_episode(case, episode)


def episode_row(case: BfclCase, episode: EpisodeRecord, seconds: float) -> dict[str, Any]:
    """The stored result of one multi-turn entry (the same keys as a single-turn row, plus turns)."""
    verdict = episode.verdict or episode_verdict(case, episode)
    last = episode.last or Completion()
    first_user = " / ".join(episode.transcript[0]["user"]) if episode.transcript else ""
    return {
        "id": case.id,
        "category": case.category,
        "index": case.index,
        "valid": verdict["valid"],
        "error_type": verdict["error_type"],
        "error": verdict["error"],
        "details": verdict["details"],
        "decoded": episode.decoded,
        "question": _clip(first_user, 600),
        "turns": episode.transcript,
        "text": last.text,
        "calls": [call_row(c) for c in last.tool_calls],
        "invalid": list(last.invalid),
        "finish_reason": last.finish_reason,
        "steps": episode.steps,
        "prompt_tokens": episode.prompt_tokens,
        "completion_tokens": episode.completion_tokens,
        "seconds": round(seconds, 4),
        "backend_error": episode.backend_error,
    }


async def run_and_row(case: BfclCase, submit: Submit) -> dict[str, Any]:
    start = time.perf_counter()
    record = await run_episode(case, submit)
    return episode_row(case, record, record.ended - start)
