"""Turn review decisions into data: RL pool edits, SFT conversations, verifier regression cases
(made in review/cases.py) and Argilla / Label Studio files (review/annotation_formats.py), as one
bundle. Exports are deterministic: the same store gives the same bytes.

How decisions flow back (sdg_roles_review.md 4.3):
- accept: the task stays in (or joins) the RL pool; its ground truth, replayed in the environment,
  becomes an SFT conversation; the verdict becomes a "confirmed" regression case.
- correct: the task joins the pool with the corrected ground truth (already replayed and
  re-verified when it was saved); SFT from the corrected truth; two cases: the corrected truth
  verifies against itself, and the reviewed rollout scores as it did against the corrected truth.
- reject task_ill_posed / truth_wrong: the task is listed for removal from the RL pool.
- reject verifier_too_strict / verifier_too_lenient: a "verifier_wrong" case expecting the
  opposite verdict; `open` while the current verifier still gets it wrong.
Per task, a correction or a task rejection overrides acceptances, and the latest of those wins.

Role rollouts and councils flow the same way. A role correction is the rollout's reads and the
corrected answer (review/roles.py), a council's the mediator's decision in roles/council's
single-agent form (review/council.py); either becomes the task's ground truth, with the calls per
turn (`oracle_turns`) it was verified with, so replays show each lookup's output before the answer
that uses it. An accepted council whose team outcome got full credit adds every seat's conversation
to sft.jsonl. Councils' regression cases replay their acts (`council` in the case).

sft_rollouts.jsonl holds the same gold trajectories as rollout rows (`officegym eval`'s format, the
reward the verifier's), which the SFT trainer reads with `sft.source=rollouts`: an accepted rollout
the verifier rewarded, as it was; otherwise the gold plan (the correction, a council's committed
decision, or the task's oracle) replayed in the environment turn by turn and kept only if it verifies.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.agent.scripted import plan_turns
from officegym.core.environment import BaseEnvironment
from officegym.core.files import atomic_write
from officegym.core.rollout_row import rollout_row
from officegym.core.task import Task
from officegym.core.toolcalls import parse_tool_call
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall
from officegym.review import council, council_view
from officegym.review.actions import item_mode, item_ref, item_task
from officegym.review.annotation_formats import (
    argilla_record,
    argilla_settings,
    label_studio_config,
    label_studio_task,
)
from officegym.review.cases import decision_cases
from officegym.review.replay import oracle_calls, replay, with_ground_truth
from officegym.review.store import Store
from officegym.review.views import prompt_messages, trajectory_turns
from officegym.review.worlds import Environments

EXPORT_FILES: dict[str, str] = {
    "decisions.jsonl": "every decision, oldest first; `officegym review import` reads it back",
    "rl_tasks.jsonl": "accepted and corrected tasks for the RL pool (NeMo Gym rows)",
    "rl_removed.jsonl": "tasks to drop from the RL pool (ill-posed, or a wrong ground truth)",
    "sft.jsonl": "SFT conversations: the ground truth replayed in the environment, real tool outputs (and the seats "
                 "of accepted councils)",
    "sft_rollouts.jsonl": "gold trajectories as rollout rows, for `sft.source=rollouts`: accepted rewarded rollouts, "
                          "corrections and oracles replayed and verified",
    "verifier_cases.jsonl": "verifier regression cases (tests/review reads them)",
    "argilla_settings.json": "Argilla 2.x dataset settings (fields, questions, metadata)",
    "argilla_records.json": "Argilla 2.x records with suggestions and reviewers' responses",
    "label_studio_config.xml": "Label Studio labelling config for the tasks file",
    "label_studio_tasks.json": "Label Studio tasks with predictions and reviewers' annotations",
    "manifest.json": "what was exported, with counts and what was skipped and why",
}
TASK_REJECTIONS = ("task_ill_posed", "truth_wrong")


@dataclass
class ExportBundle:
    files: dict[str, bytes]
    counts: dict[str, int]
    skipped: list[str] = field(default_factory=list)


def _jsonl(rows: Iterable[Any]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=False, default=str) + "\n" for r in rows).encode("utf-8")


def _json(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=1, default=str) + "\n").encode("utf-8")


def _undamaged(store: Store, skipped: list[str]) -> tuple[dict[int, Any], list[dict[str, Any]], dict[int, Any]]:
    """The store's items, decisions and latest decisions, less what a damaged column makes unusable:
    an item whose row, group or world is damaged, or whose latest verdict is a correction whose calls
    are damaged, is left out with its decisions (each named in `skipped`)."""
    latest = store.latest_decisions()
    items = {}
    for it in store.all_items():
        verdict = latest.get(it["id"])
        damaged = it.get("damaged") or ([] if verdict is None else verdict.get("damaged", []))
        if damaged:
            skipped.append(f"item {it['id']} ({it['key']}): its stored {', '.join(damaged)} is damaged, left out")
        else:
            items[it["id"]] = it
    decisions = [d for d in store.decisions() if d["item_id"] in items]
    return items, decisions, {i: d for i, d in latest.items() if i in items}


def build_export(store: Store, envs: Environments | None = None, final_text: str = "Done.") -> ExportBundle:
    """Everything `EXPORT_FILES` lists, in memory."""
    envs = envs or Environments()
    skipped: list[str] = []
    items, decisions, latest = _undamaged(store, skipped)

    decision_rows = []
    for d in decisions:
        it = items[d["item_id"]]
        row = {"decision_id": d["id"], "item_key": it["key"], "task_id": it["task_id"], "action": d["action"],
               "reason": d["reason"], "note": d["note"], "reviewer": d["reviewer"], "at": d["at"]}
        if d["action"] == "correct" and d["payload"]:
            row["calls"] = d["payload"]["calls"]
        decision_rows.append(row)

    pool, removed = _pool(items, latest)
    rl_rows, sft_rows, gold_rows = [], [], []
    for task_id, (kind, item, decision) in sorted(pool.items()):
        try:
            task = item_task(item)
        except ValueError as exc:
            skipped.append(f"task {task_id}: {exc}")
            continue
        if kind == "corrected":
            task = with_ground_truth(task, [parse_tool_call(c) for c in decision["payload"]["calls"]])
            turns = decision["payload"].get("turns")
            if isinstance(turns, list) and plan_turns(len(task.ground_truth), turns) == turns:
                task.metadata["oracle_turns"] = list(turns)
        review = {"status": kind, "item": item["key"], "reviewer": decision["reviewer"], "at": decision["at"]}
        task.metadata["review"] = review
        rl_rows.append(task.to_row())
        try:
            env = envs.get(task.environment_name, item.get("world"), item_mode(item))
        except Exception as exc:  # any failure to build the environment skips this task's SFT data only
            skipped.append(f"sft for task {task_id}: no environment ({exc})")
            continue
        plan = _gold_plan(env, item, task, kind)
        conversation = _sft_conversation(env, item, task, kind, plan, final_text)
        if isinstance(conversation, str):
            skipped.append(f"sft for task {task_id}: {conversation}")
        else:
            sft_rows.append(conversation)
        if kind == "accepted" and item_ref(item).matched:
            sft_rows += _seat_conversations(env, item, task, kind)
        gold = _gold_rollout(env, item, task, kind, plan, final_text, review)
        if isinstance(gold, str):
            skipped.append(f"sft_rollouts for task {task_id}: {gold}")
        else:
            gold_rows.append(gold)
    removed_rows = [{"id": tid, "reason": d["reason"], "item": it["key"], "reviewer": d["reviewer"], "at": d["at"],
                     "note": d["note"]} for tid, (it, d) in sorted(removed.items())]

    cases = []
    for item_id, d in sorted(latest.items()):
        made = decision_cases(envs, items[item_id], d)
        if isinstance(made, str):
            skipped.append(f"cases for item {items[item_id]['key']}: {made}")
        else:
            cases.extend(made)

    all_items = [items[i] for i in sorted(items)]
    files = {
        "decisions.jsonl": _jsonl(decision_rows),
        "rl_tasks.jsonl": _jsonl(rl_rows),
        "rl_removed.jsonl": _jsonl(removed_rows),
        "sft.jsonl": _jsonl(sft_rows),
        "sft_rollouts.jsonl": _jsonl(gold_rows),
        "verifier_cases.jsonl": _jsonl(cases),
        "argilla_settings.json": _json(argilla_settings()),
        "argilla_records.json": _json([argilla_record(it, store.decisions(it["id"])) for it in all_items]),
        "label_studio_config.xml": label_studio_config().encode("utf-8"),
        "label_studio_tasks.json": _json([label_studio_task(it, store.decisions(it["id"])) for it in all_items]),
    }
    counts = {
        "items": len(items), "decisions": len(decision_rows), "rl_tasks": len(rl_rows), "rl_removed": len(removed_rows),
        "sft": len(sft_rows), "sft_rollouts": len(gold_rows), "verifier_cases": len(cases),
        "verifier_cases_open": sum(1 for c in cases if c.get("open")),
    }
    files["manifest.json"] = _json({"files": {n: EXPORT_FILES[n] for n in files}, "counts": counts, "skipped": skipped})
    return ExportBundle(files, counts, skipped)


def write_export(bundle: ExportBundle, out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write every file atomically (temp file in the same folder, then rename)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in bundle.files.items():
        written.append(atomic_write(out / name, data))
    return written


def export_store(store: Store, out_dir: str | os.PathLike[str], envs: Environments | None = None,
                 actor: str = "export") -> ExportBundle:
    bundle = build_export(store, envs)
    write_export(bundle, out_dir)
    store.log(actor, "export", {"out": str(out_dir), **bundle.counts})
    return bundle


# -- RL pool ------------------------------------------------------------------------------------


def _pool(items: dict[int, dict[str, Any]], latest: dict[int, dict[str, Any]]):
    """Per task: ("accepted" | "corrected", item, decision) for the pool, or a removal."""
    by_task: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for item_id, d in latest.items():
        by_task.setdefault(items[item_id]["task_id"], []).append((items[item_id], d))
    pool: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {}
    removed: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for task_id, entries in by_task.items():
        strong = [(it, d) for it, d in entries
                  if d["action"] == "correct" or (d["action"] == "reject" and d["reason"] in TASK_REJECTIONS)]
        if strong:
            it, d = max(strong, key=lambda e: e[1]["id"])
            if d["action"] == "correct":
                pool[task_id] = ("corrected", it, d)
            else:
                removed[task_id] = (it, d)
            continue
        accepted = [(it, d) for it, d in entries if d["action"] == "accept"]
        if accepted:
            it, d = max(accepted, key=lambda e: e[1]["id"])
            pool[task_id] = ("accepted", it, d)
    return pool, removed


# -- SFT ----------------------------------------------------------------------------------------


def _gold_plan(env: BaseEnvironment, item: dict[str, Any], task: Task, kind: str) -> list[ToolCall]:
    """The calls a gold trajectory makes: the corrected ground truth, an accepted council's own
    decision when it got full credit (in the mediator's single-agent form), else the task's oracle."""
    if kind == "corrected":
        return list(task.ground_truth)
    block = council.council_block(item["row"])
    decided = council.decision_act((block or {}).get("acts", []))
    call = env.act_call(decided) if block is not None and decided is not None and item_ref(item).matched else None
    if call is not None:
        try:
            return council.mediator_plan(env, call, council.proposals_of(item["row"], task, env))
        except ValueError:
            pass
    return oracle_calls(task)


def _plan_batches(task: Task, results: list[Any]) -> list[list[Any]]:
    """The plan's calls (or their results) grouped into turns: the task's `oracle_turns` when they
    fit it (lookups before the answer that uses them), else all in one turn when the task allows
    parallel calls and one per turn when not."""
    planned = task.metadata.get("oracle_turns")
    turns = plan_turns(len(results), planned)
    if isinstance(planned, list) and turns == planned:
        out, k = [], 0
        for n in turns:
            out.append(results[k:k + n])
            k += n
        return out
    parallel = task.params.get("parallel_tool_calls", True) is not False
    return [results] if parallel and results else [[r] for r in results]


def _sft_conversation(env: BaseEnvironment, item: dict[str, Any], task: Task, kind: str, plan: list[ToolCall],
                      final_text: str) -> dict[str, Any] | str:
    """Chat messages built by replaying the gold plan (see _gold_plan) in the environment: every
    tool output is the real one. Returns the reason when it cannot be built."""
    _, results = replay(env, task, plan)
    bad = [(i, r) for i, r in enumerate(results, 1) if not r.ok]
    if bad:
        i, r = bad[0]
        return f"ground-truth call {i} ({r.call.name}) fails on replay: {r.output}"
    messages: list[dict[str, Any]] = [{"role": m["role"], "content": m["content"]} for m in prompt_messages(task.to_row())]
    n = 0
    for batch in _plan_batches(task, results):
        calls = []
        for r in batch:
            calls.append({"id": f"call_{n}", "type": "function",
                          "function": {"name": r.call.name, "arguments": _arguments(r.call)}})
            n += 1
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        for c, r in zip(calls, batch):
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": r.output})
    messages.append({"role": "assistant", "content": _final_text(item, kind, final_text)})
    tools = [spec.to_chat_tool() for spec in env.tools(task)]
    return {"messages": messages, "tools": tools,
            "metadata": {"task_id": task.id, "source": f"review:{kind}", "item": item["key"], "human_gold": True}}


def _seat_conversations(env: BaseEnvironment, item: dict[str, Any], task: Task, kind: str) -> list[dict[str, Any]]:
    """Every seat's conversation of an accepted council the verifier gave full credit."""
    return [{"messages": messages, "tools": tools,
             "metadata": {"task_id": task.id, "source": f"review:{kind}", "item": item["key"], "seat": seat,
                          "human_gold": True}}
            for seat, messages, tools in council_view.seat_conversations(item["row"], lambda seat: env.episode(task).tools(seat))]


def _gold_rollout(env: BaseEnvironment, item: dict[str, Any], task: Task, kind: str, plan: list[ToolCall],
                  final_text: str, review: dict[str, Any]) -> dict[str, Any] | str:
    """A gold trajectory as a rollout row (see the module docstring), or why there is none."""
    ref = item_ref(item)
    if kind == "accepted" and ref.matched and council.council_block(item["row"]) is None:
        og = {**ref.officegym, "review": review}
        reward = (ref.verdict or {}).get("reward", ref.reward)
        return {**item["row"], "reward": reward, "officegym": og}
    session = env.session(task)
    traj = Trajectory(task_id=task.id, policy=f"review:{kind}", stop_reason="answered")
    for batch in _plan_batches(task, plan):
        turn = Turn(text="")
        for i, c in enumerate(batch):
            call = c.with_id(f"call_{len(traj.turns)}_{i}")
            args = call.arguments if call.parse_error is None else call.raw_arguments
            result = session.execute(call.name, args)
            turn.executions.append(ToolExecution(call, result.text, result.status))
        traj.turns.append(turn)
    traj.turns.append(Turn(text=_final_text(item, kind, final_text)))
    failed = [e for t in traj.turns for e in t.executions if not e.ok]
    if failed:
        return f"call {failed[0].call.name} fails on replay: {failed[0].output}"
    verdict = env.verify(task, traj.calls, item_mode(item))
    if not verdict.matched:
        return f"the gold plan does not verify (reward {verdict.reward:.4g})"
    traj.verdict = verdict.to_dict()
    traj.reward = verdict.reward
    traj.reward_components = {"outcome": verdict.reward}
    row = rollout_row(task, traj)
    row["officegym"]["review"] = review
    return row


def _arguments(call: ToolCall) -> str:
    return json.dumps(call.arguments, ensure_ascii=False) if call.raw_arguments is None else call.raw_arguments


def _final_text(item: dict[str, Any], kind: str, default: str) -> str:
    """The reviewed rollout's closing message when it was right and accepted, else `default`."""
    ref = item_ref(item)
    if kind == "accepted" and ref.matched:
        turns = trajectory_turns(item["row"])
        if turns and turns[-1]["text"] and not turns[-1]["calls"]:
            return turns[-1]["text"]
    return default
