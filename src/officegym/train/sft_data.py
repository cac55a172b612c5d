"""SFT examples: conversations from replaying ground truth in the environment or from rollout files,
tokenised with the exact template and ledger rules of generation, loss on assistant tokens only.

Ground truth: each task's ground-truth calls are made through the agent loop by a scripted policy
(all calls in one turn, or one per turn), so tool outputs are the environment's real answers; a
final assistant answer closes the episode. Replays the verifier does not accept are dropped.

Rollouts: rows written by `officegym eval` (or a GRPO run) with reward >= min_reward; the
conversation is the task's input plus the row's `response.output`.

Tokenisation goes turn by turn like the HF policy's token ledger: turn k's prompt is the previous
prompt + the previous assistant tokens + the template's new scaffolding (tool results, the next
generation prompt), mask 0; the assistant turn's own tokens, its end-of-turn token included, have
mask 1. So SFT trains exactly the tokens the model would sample for that turn.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.agent.messages import responses_items_to_chat_messages
from officegym.core.environment import BaseEnvironment
from officegym.core.files import read_jsonl_text
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.rollout_row import RolloutRowError, parse
from officegym.core.task import Task, TaskFormatError
from officegym.core.trajectory import TemplateMismatchError
from officegym.core.types import ToolCall, ToolSpec
from officegym.train.data import template_of
from officegym.train.detours import DETOUR_ID, is_detour_turn, plan_detour
from officegym.train.token_kinds import token_weights


@dataclass
class Conversation:
    source: str
    messages: list[dict[str, Any]]
    tools: list[ToolSpec]


@dataclass
class Example:
    source: str
    input_ids: list[int]
    loss_mask: list[float]  # 0 or 1, or the token's weight (sft.token_weights)

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class BuildReport:
    conversations: int = 0
    detours: int = 0  # replays planned with a detour (train/detours.py)
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1


def reply_of(task: Task | None) -> str | None:
    """The text a task is answered with when no tool serves it (its row's `reply`), else None."""
    reply = task.metadata.get("reply") if task is not None else None
    return reply if isinstance(reply, str) and reply.strip() else None


class GroundTruthPolicy(Policy):
    """Makes a task's ground-truth calls (all in turn 0, or one per turn), then answers (with the
    task's own reply when it has one: a request no tool serves). One per turn, `detours` (task id ->
    (index, call), train/detours.py) puts a call before the ground truth's call at that index."""

    name = "ground_truth"

    def __init__(self, calls_per_turn: str = "all", final_answer: str = "Done.",
                 detours: Mapping[str, tuple[int, ToolCall]] | None = None):
        if detours and calls_per_turn != "one":
            raise ValueError("detours need calls_per_turn='one'")
        self.calls_per_turn = calls_per_turn
        self.final_answer = final_answer
        self.detours = dict(detours or {})

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        out = []
        for r in requests:
            truth = list(r.task.ground_truth) if r.task is not None else []
            detour = self.detours.get(str(r.task.id)) if r.task is not None else None
            if self.calls_per_turn == "all":
                chosen = truth if r.turn == 0 else []
            elif detour is not None and r.turn == detour[0]:
                out.append(Completion(text="", tool_calls=[detour[1].with_id(f"{DETOUR_ID}_{r.turn}")]))
                continue
            else:
                at = r.turn - (1 if detour is not None and r.turn > detour[0] else 0)
                chosen = truth[at : at + 1]
            calls = [c.with_id(f"call_{r.turn}_{i}")
                     for i, c in enumerate(chosen)]
            answer = reply_of(r.task) or self.final_answer
            out.append(Completion(text="", tool_calls=calls) if calls else Completion(text=answer))
        return out


def ground_truth_conversations(env: BaseEnvironment, tasks: Sequence[Task], calls_per_turn: str, final_answer: str,
                               max_tool_output_chars: int | None, report: BuildReport, detours: float = 0.0,
                               seed: int = 0) -> list[Conversation]:
    """Replay each task's ground truth through the agent loop; keep the replays the verifier accepts.
    `detours`: the share of tasks replayed with one untrained wrong read in them (train/detours.py)."""
    usable = [t for t in tasks if t.ground_truth or reply_of(t)]
    for _ in range(len(tasks) - len(usable)):
        report.drop("no ground truth")
    plans = {}
    if detours > 0:
        for t in usable:
            plan = plan_detour(t, env.tools(t), env.write_tools, detours, seed)
            if plan is not None:
                plans[str(t.id)] = plan
    report.detours += len(plans)
    longest = max((len(t.ground_truth) for t in usable), default=0) + (1 if plans else 0)
    steps = 1 + (1 if calls_per_turn == "all" else longest)
    config = LoopConfig(max_steps=max(steps, 2), max_tool_output_chars=max_tool_output_chars)
    policy = GroundTruthPolicy(calls_per_turn, final_answer, plans)
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in usable], policy, config))
    out = []
    for task, traj in zip(usable, trajs):
        if not (traj.verdict or {}).get("matched"):
            report.drop("ground truth not accepted by the verifier")
            continue
        out.append(Conversation(f"task:{task.id}", traj.messages, list(env.tools(task))))
    report.conversations += len(out)
    return out


def council_conversations(tasks: Sequence[Task], train_seats: Sequence[str], others: dict[str, str], max_rounds: int,
                          min_reward: float, report: BuildReport,
                          teachers: Sequence[str] = ("scripted",)) -> list[Conversation]:
    """The scripted `teachers`' conversations at `train_seats` (each teacher plays every task), in
    councils over `tasks` with the other seats as `others` names them (scripted by default); kept
    where the team reward reaches `min_reward`. Each conversation is one seat's, with the council's
    news between its turns."""
    from officegym.agent.council import CouncilConfig, run_councils
    from officegym.agent.council_seats import scripted_seat
    from officegym.envs.roles.council_episode import seat_specs

    out = []
    for teacher in teachers:
        seats = {seat: scripted_seat(seat, teacher if seat in train_seats else others.get(seat, "scripted"), max_rounds)
                 for seat in (*train_seats, *others)}
        if any(p is None for p in seats.values()):
            bad = sorted(s for s, p in seats.items() if p is None)
            raise ValueError(f"council SFT plays scripted seats only; {', '.join(bad)} name(s) another policy "
                             f"(teacher {teacher!r})")
        outcomes = asyncio.run(run_councils(list(tasks), seats, CouncilConfig(max_rounds=max_rounds)))
        tag = "" if teacher == "scripted" else f":{teacher}"
        for task, outcome in zip(tasks, outcomes):
            if outcome.reward < min_reward:
                report.drop(f"council below min_reward {min_reward}")
                continue
            for seat in train_seats:
                out.append(Conversation(f"council:{task.id}:{seat}{tag}", outcome.trajectories[seat].messages,
                                        seat_specs(seat)))
    report.conversations += len(out)
    return out


def rollout_conversations(paths: Sequence[str | Path], min_reward: float, report: BuildReport,
                          templates: Sequence[str] | None = None) -> list[Conversation]:
    """Conversations of rollout rows with reward >= min_reward (eval's rollouts.jsonl format), of
    tasks of `templates` only when given."""
    out = []
    for path in paths:
        p = Path(path)
        if not p.exists():
            raise FileNotFoundError(f"no such rollout file: {p}")
        for lineno, line in enumerate(read_jsonl_text(p), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                report.drop("unreadable line")
                continue
            try:
                rollout = parse(row)
            except RolloutRowError:
                report.drop("malformed row")
                continue
            if rollout.reward is None or rollout.reward < min_reward:
                report.drop(f"reward below {min_reward}")
                continue
            try:
                task = rollout.task()
                messages = responses_items_to_chat_messages([*task.input, *rollout.output])
            except (TaskFormatError, AttributeError, TypeError, KeyError):
                report.drop("malformed row")
                continue
            if templates is not None and template_of(task) not in templates:
                report.drop("template not in data.templates")
                continue
            if not any(m.get("role") == "assistant" for m in messages):
                report.drop("no assistant turn")
                continue
            out.append(Conversation(f"{p.name}:{lineno}", messages, [ToolSpec.from_schema(t) for t in task.tools]))
    report.conversations += len(out)
    return out


def assistant_turn_text(renderer: Any, messages: list[dict[str, Any]], index: int, tools: list[ToolSpec]) -> str:
    """The text of assistant message `index` as the model would generate it: what rendering the
    message adds after the generation prompt, up to and including the end-of-turn marker."""
    head = renderer.render(messages[:index], tools, True)
    full = renderer.render(messages[: index + 1], tools, False)
    if not full.startswith(head):
        raise TemplateMismatchError(f"{renderer.template_name}: an assistant turn does not follow its generation prompt")
    body = full[len(head):]
    eot = renderer.eot_text
    cut = body.find(eot)
    return body[: cut + len(eot)] if cut >= 0 else body


def encode_conversation(renderer: Any, conv: Conversation, weights: Mapping[str, float] | None = None) -> Example:
    """Token ids and the assistant-only loss mask of a conversation (see the module docstring);
    `weights` (by kind of token, train/token_kinds.py) make the mask a weight per assistant token."""
    ids: list[int] = []
    mask: list[float] = []
    previous: Completion | None = None
    turn = 0
    for i, message in enumerate(conv.messages):
        if message.get("role") != "assistant":
            continue
        request = PolicyRequest(messages=conv.messages[:i], tools=conv.tools, turn=turn, previous=previous)
        prompt = renderer.prompt_ids(request)
        if prompt[: len(ids)] != ids:
            raise TemplateMismatchError(f"{conv.source}: turn {turn}'s prompt does not extend the previous turns")
        completion = renderer.encode(assistant_turn_text(renderer, conv.messages, i, conv.tools))
        new = prompt[len(ids):]
        ids += new + completion
        if is_detour_turn(message):  # shown to the model, not taught
            trained = [0.0] * len(completion)
        else:
            trained = token_weights(renderer.tokenizer, completion, weights) if weights else [1] * len(completion)
        mask += [0] * len(new) + trained
        previous = Completion(prompt_ids=prompt, completion_ids=completion)
        turn += 1
    if not any(mask):
        raise ValueError(f"{conv.source}: no assistant tokens")
    return Example(conv.source, ids, mask)


def encode_all(renderer: Any, conversations: Sequence[Conversation], max_length: int, report: BuildReport,
               weights: Mapping[str, float] | None = None) -> list[Example]:
    out = []
    for conv in conversations:
        try:
            ex = encode_conversation(renderer, conv, weights)
        except (TemplateMismatchError, ValueError) as exc:
            report.drop(f"could not tokenise ({type(exc).__name__})")
            continue
        if len(ex) > max_length:
            report.drop(f"longer than max_length={max_length}")
            continue
        out.append(ex)
    return out


def ground_truth_examples(renderer: Any, env: BaseEnvironment, tasks: Sequence[Task], calls_per_turn: str, final_answer: str,
                          max_tool_output_chars: int | None, max_length: int, report: BuildReport,
                          weights: Mapping[str, float] | None = None, detours: float = 0.0,
                          seed: int = 0) -> list[Example]:
    """The tasks' verified ground-truth replays, tokenised: SFT's data, and GRPO's SFT term's."""
    convs = ground_truth_conversations(env, tasks, calls_per_turn, final_answer, max_tool_output_chars, report,
                                       detours, seed)
    return encode_all(renderer, convs, max_length, report, weights)
