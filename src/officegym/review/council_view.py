"""How a council item reads on the review page and in exports: the mediator's decision, the acts
round by round, each seat's turns and what it was shown, the transcript and the seats' conversations."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.rollout_row import RolloutRow
from officegym.core.task import Task
from officegym.core.types import ToolSpec
from officegym.review.council import council_block, decision_act, is_council_env, rollout_replay
from officegym.review.views import pretty_json


def decision_text(row: dict[str, Any], task: Task, env: BaseEnvironment) -> str:
    """What the correction form starts from: the council's decision with the committed plan's
    selection spelled out (or its last proposal when it never decided)."""
    block = council_block(row)
    if block is not None:
        acts = block["acts"]
    else:
        replayed = rollout_replay(env, task, row)
        acts = replayed.state["acts"] if replayed is not None else []
    proposals = {a.get("plan_id"): a.get("selection") for a in acts if isinstance(a, dict) and a.get("act") == "propose"}
    decided = decision_act(acts)
    # the tool names are the environment's: the calls that make a commit and an escalation again
    commit = env.act_call({"act": "commit"})
    commit_name = commit.name if commit is not None else "commit"
    if decided is not None and decided.get("act") == "escalate":
        escalate = env.act_call(decided)
        call: dict[str, Any] = {"name": escalate.name if escalate is not None else "escalate",
                                "arguments": {"reason": decided.get("reason")}}
    elif decided is not None:
        call = {"name": commit_name, "arguments": {"selection": proposals.get(decided.get("plan_id")),
                                                   "claimed_tco": decided.get("claimed_tco")}}
    elif proposals:
        call = {"name": commit_name, "arguments": {"selection": list(proposals.values())[-1], "claimed_tco": None}}
    else:
        call = {"name": commit_name, "arguments": {"selection": {}, "claimed_tco": None}}
    return json.dumps([call], indent=1, ensure_ascii=False)


# -- what the item page shows ---------------------------------------------------------------------


def _selection_text(selection: Any) -> str:
    if not isinstance(selection, dict):
        return str(selection)
    return ", ".join(f"{c}={o}" for c, o in selection.items())


def act_text(event: dict[str, Any], valid: bool | None = None) -> str:
    """One act in a sentence."""
    kind = event.get("act")
    if kind == "share":
        facts = [f.get("id") for f in event.get("facts") or [] if isinstance(f, dict)]
        shown = ", ".join(map(str, facts[:6])) + (f", ... ({len(facts)} in all)" if len(facts) > 6 else "")
        return f"shared {len(facts)} fact(s): {shown}"
    if kind == "propose":
        return f"proposed {event.get('plan_id')}: {_selection_text(event.get('selection'))}"
    if kind == "accept":
        return f"accepted {event.get('plan_id')}"
    if kind == "object":
        word = "" if valid is None else (" (valid)" if valid else " (not valid by the verifier's check)")
        return f"objected to {event.get('plan_id')}: {event.get('reason_code')}, citing {event.get('fact_id') or 'no fact'}{word}"
    if kind == "commit":
        return f"committed {event.get('plan_id')} claiming a 12-month TCO of {event.get('claimed_tco')}"
    if kind == "escalate":
        return f"escalated: {event.get('reason')}"
    return json.dumps(event, default=str)[:200]


def seat_turns(traj: dict[str, Any]) -> list[dict[str, Any]]:
    """A seat's turns: what it was shown before each (the round's council messages), its text, its
    acts with their status and the council's answer."""
    news: list[str | None] = []
    pending: str | None = None
    for m in traj.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "user":
            pending = m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        elif m.get("role") == "assistant":
            news.append(pending)
            pending = None
    out = []
    for k, t in enumerate(traj.get("turns") or []):
        if not isinstance(t, dict):
            continue
        calls = []
        for ex in t.get("executions") or []:
            if isinstance(ex, dict):
                status = ex.get("status")
                calls.append({"name": str(ex.get("name", "")), "arguments": pretty_json(ex.get("arguments", "")),
                              "status": status, "output": pretty_json(ex.get("output", "")), "failed": status not in (None, "ok")})
        out.append({"index": k + 1, "news": news[k] if k < len(news) else None, "text": t.get("text") or "",
                    "calls": calls, "invalid": t.get("invalid") or []})
    return out


def council_view(row: dict[str, Any], task: Task | None, env: BaseEnvironment | None) -> dict[str, Any] | None:
    """The council section of the item page: acts by round, the plans with every member's answer
    and what the verifier knows of them, each seat's turns. None for a row that is no council."""
    block = council_block(row)
    state = None  # the replayed council as the environment shows it (EpisodeReplay.state)
    problems: list[str] = []
    if task is not None and env is not None and is_council_env(env):
        try:
            if block is not None:
                replayed = env.replay_episode(task, acts=block["acts"], rounds=block.get("rounds"))
            else:
                replayed = rollout_replay(env, task, row)
        except ValueError as exc:
            problems = [f"the scenario cannot be rebuilt: {exc}"]
        else:
            if replayed is not None:
                state, problems = replayed.state, list(replayed.refused)
    if block is None and state is None:
        return None
    acts = block["acts"] if block is not None else (state["acts"] if state is not None else [])
    validity: dict[int, bool] = {}
    if state is not None:
        objecting = [i for i, a in enumerate(acts) if isinstance(a, dict) and a.get("act") == "object"]
        validity = dict(zip(objecting, state["objections_valid"]))
    rows = [{"round": a.get("round"), "seat": a.get("seat"), "act": a.get("act"), "text": act_text(a, validity.get(i))}
            for i, a in enumerate(acts) if isinstance(a, dict)]
    decided = decision_act(acts)
    committed = decided.get("plan_id") if decided is not None and decided.get("act") == "commit" else None
    plans = []
    for i, a in enumerate(acts):
        if not (isinstance(a, dict) and a.get("act") == "propose"):
            continue
        pid = a.get("plan_id")
        answers: dict[str, str] = {}
        for j, b in enumerate(acts):
            if isinstance(b, dict) and b.get("plan_id") == pid and b.get("act") in ("accept", "object"):
                answers[str(b.get("seat"))] = ("accept" if b.get("act") == "accept" else
                                               "object: " + act_text(b, validity.get(j)).split(": ", 1)[-1])
        truth = state["truths"].get(i) if state is not None else None
        plans.append({"plan_id": pid, "proposer": a.get("seat"), "selection": _selection_text(a.get("selection")),
                      "answers": answers, "committed": pid == committed, "truth": truth})
    seats = []
    if block is not None:
        credit = (RolloutRow(row).verdict or {}).get("components") or {}
        for seat, traj in block.get("trajectories", {}).items():
            messages = traj.get("messages") or []
            system = messages[0].get("content") if messages and isinstance(messages[0], dict) else ""
            seats.append({"seat": seat, "policy": (block.get("seats") or {}).get(seat, "?"), "system": system,
                          "credit": credit.get(f"credit/{seat}"), "stop": traj.get("stop_reason"),
                          "turns": seat_turns(traj)})
    optimum = state["optimum"] if state is not None else None
    return {"acts": rows, "plans": plans, "seats": seats, "rounds": block.get("rounds") if block else state["rounds"] if state else None,
            "problems": problems, "optimum": optimum, "multi_agent": block is not None}


def transcript(row: dict[str, Any]) -> str | None:
    """A council item as text (Argilla and Label Studio fields); None for other rows."""
    block = council_block(row)
    if block is None:
        return None
    lines = ["### acts"]
    lines += [f"round {a.get('round')} {a.get('seat')}: {act_text(a)}" for a in block["acts"] if isinstance(a, dict)]
    for seat, traj in block.get("trajectories", {}).items():
        lines.append(f"### {seat} ({(block.get('seats') or {}).get(seat, '?')})")
        for t in seat_turns(traj):
            if t["text"]:
                lines.append(t["text"])
            for c in t["calls"]:
                lines.append(f"call {c['name']} [{c['status'] or '?'}]\narguments: {c['arguments']}\noutput: {c['output']}")
    return "\n\n".join(lines)


def seat_conversations(row: dict[str, Any], seat_tools: Callable[[str], list[ToolSpec]]
                       ) -> list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    """(seat, chat messages, chat tools) of every seat of a council item; `seat_tools(seat)` gives
    the tools a seat plays with (its episode's)."""
    block = council_block(row)
    if block is None:
        return []
    out = []
    for seat, traj in block.get("trajectories", {}).items():
        messages = [m for m in traj.get("messages") or [] if isinstance(m, dict)]
        if any(m.get("role") == "assistant" for m in messages):
            out.append((seat, messages, [spec.to_chat_tool() for spec in seat_tools(seat)]))
    return out
