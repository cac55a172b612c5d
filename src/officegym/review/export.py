"""Turn review decisions into data: RL pool edits, SFT conversations, verifier regression cases,
and Argilla / Label Studio files. Exports are deterministic: the same store gives the same bytes.

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

import hashlib
import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from officegym.agent.scripted import plan_turns
from officegym.core.environment import BaseEnvironment
from officegym.core.files import atomic_write
from officegym.core.rollout_row import rollout_row
from officegym.core.task import Task, TaskFormatError, iter_jsonl
from officegym.core.toolcalls import parse_tool_call
from officegym.core.trajectory import ToolExecution, Trajectory, Turn
from officegym.core.types import ToolCall
from officegym.envs.roles.base import ESCALATE
from officegym.envs.roles.council import COMMIT
from officegym.review import council, council_view
from officegym.review.actions import item_mode, item_ref, item_task
from officegym.review.replay import oracle_calls, replay, with_ground_truth
from officegym.review.store import REJECT_REASONS, Store
from officegym.review.views import diff_tables, prompt_messages, trajectory_turns, verdict_of
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
VERIFIER_REJECTIONS = {"verifier_too_strict": True, "verifier_too_lenient": False}  # reason -> expected matched
DECISION_LABELS = ("accept", *REJECT_REASONS)
# What the flagger's reasons suggest a reviewer will find (Argilla suggestions, Label Studio predictions).
SUGGESTIONS = {
    "oracle_fails": "truth_wrong",
    "all_fail_unchecked": "truth_wrong",
    "distinct_rewarded_states": "verifier_too_lenient",
    "all_pass_hard": "verifier_too_lenient",
    "odd_high_reward": "verifier_too_lenient",
}
AGENT = "officegym-flagger"


@dataclass
class ExportBundle:
    files: dict[str, bytes]
    counts: dict[str, int]
    skipped: list[str] = field(default_factory=list)


def _jsonl(rows: Iterable[Any]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=False, default=str) + "\n" for r in rows).encode("utf-8")


def _json(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, indent=1, default=str) + "\n").encode("utf-8")


def reviewer_uuid(name: str) -> str:
    """A stable UUID for a reviewer name (Argilla wants user ids as UUIDs)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"officegym-reviewer:{name}"))


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
            sft_rows += _seat_conversations(item, task, kind)
        gold = _gold_rollout(env, item, task, kind, plan, final_text, review)
        if isinstance(gold, str):
            skipped.append(f"sft_rollouts for task {task_id}: {gold}")
        else:
            gold_rows.append(gold)
    removed_rows = [{"id": tid, "reason": d["reason"], "item": it["key"], "reviewer": d["reviewer"], "at": d["at"],
                     "note": d["note"]} for tid, (it, d) in sorted(removed.items())]

    cases = []
    for item_id, d in sorted(latest.items()):
        made = _cases(envs, items[item_id], d)
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
    decided = next((a for a in (block or {}).get("acts", []) if isinstance(a, dict) and a.get("act") in ("commit", "escalate")), None)
    if block is not None and decided is not None and item_ref(item).matched:
        call = ToolCall(ESCALATE, {"reason": decided.get("reason")}) if decided.get("act") == "escalate" else \
            ToolCall(COMMIT, {"plan_id": decided.get("plan_id"), "claimed_tco": decided.get("claimed_tco")})
        try:
            return council.mediator_plan(call, council.proposals_of(item["row"], task, env))
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


def _seat_conversations(item: dict[str, Any], task: Task, kind: str) -> list[dict[str, Any]]:
    """Every seat's conversation of an accepted council the verifier gave full credit."""
    return [{"messages": messages, "tools": tools,
             "metadata": {"task_id": task.id, "source": f"review:{kind}", "item": item["key"], "seat": seat,
                          "human_gold": True}}
            for seat, messages, tools in council_view.seat_conversations(item["row"])]


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
            call = ToolCall(c.name, c.arguments, c.raw_arguments, f"call_{len(traj.turns)}_{i}", c.parse_error)
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


# -- verifier regression cases ------------------------------------------------------------------


def _case(item: dict[str, Any], decision: dict[str, Any], kind: str, task: Task, calls: list[ToolCall],
          expected: bool, envs: Environments) -> dict[str, Any]:
    mode = item_mode(item)
    row = task.to_row()
    # The verifier never reads the tool schemas; leaving them out keeps case files small.
    (row.get("responses_create_params") or {}).pop("tools", None)
    case = {
        "case_id": f"{item['key']}#{decision['id']}:{kind}",
        "kind": "verifier_wrong" if kind.startswith("verifier") else "confirmed",
        "world": item.get("world"),
        "environment": task.environment_name,
        "mode": mode,
        "task": row,
        "calls": [c.to_nemo() for c in calls],
        "expected": {"matched": expected},
        "origin": {"item": item["key"], "decision": decision["action"], "reason": decision["reason"],
                   "reviewer": decision["reviewer"], "at": decision["at"], "note": decision["note"]},
    }
    block = council.council_block(item["row"])
    if block is not None and kind != "corrected_truth":  # the council itself: its acts are replayed
        case["council"] = {"acts": block["acts"], "rounds": block.get("rounds")}
    if case["kind"] == "verifier_wrong":
        got = run_case(case, envs)
        case["open"] = got != expected  # still wrong with the current verifier
    return case


def _cases(envs: Environments, item: dict[str, Any], d: dict[str, Any]) -> list[dict[str, Any]] | str:
    try:
        task = item_task(item)
    except ValueError as exc:
        return str(exc)
    calls = item_ref(item).calls()
    ref = item_ref(item)
    try:
        if d["action"] == "accept":
            return [_case(item, d, "accepted", task, calls, ref.matched, envs)]
        if d["action"] == "correct" and d["payload"]:
            fixed = with_ground_truth(task, [parse_tool_call(c) for c in d["payload"]["calls"]])
            out = [_case(item, d, "corrected_truth", fixed, list(fixed.ground_truth), True, envs)]
            rescored = (d["payload"].get("rescored") or {}).get("matched")
            if isinstance(rescored, bool):
                out.append(_case(item, d, "rescored", fixed, calls, rescored, envs))
            return out
        if d["action"] == "reject" and d["reason"] in VERIFIER_REJECTIONS:
            return [_case(item, d, f"verifier:{d['reason']}", task, calls, VERIFIER_REJECTIONS[d["reason"]], envs)]
    except CaseError as exc:
        return str(exc)
    return []


class CaseError(RuntimeError):
    """A case that cannot be run (no world, unreadable task)."""


def run_case(case: dict[str, Any], envs: Environments | None = None) -> bool:
    """The current verifier's `matched` for a case."""
    envs = envs or Environments()
    try:
        task = Task.from_row(case["task"])
        calls = [parse_tool_call(c) for c in case["calls"]]
        env = envs.get(case.get("environment") or task.environment_name, case.get("world"), case.get("mode"))
    except (TaskFormatError, KeyError, ValueError, TypeError) as exc:
        raise CaseError(f"case {case.get('case_id')!r}: {exc}") from None
    if isinstance(case.get("council"), dict):
        try:
            return council.case_matched(case["council"], task, env)
        except ValueError as exc:  # not a council environment, or a task naming no scenario
            raise CaseError(f"case {case.get('case_id')!r}: {exc}") from None
    return bool(env.verify(task, calls, case.get("mode")).matched)


@dataclass
class CaseResult:
    case_id: str
    expected: bool
    got: bool | None
    open: bool
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.got == self.expected


def read_cases(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    return [row for _, row in iter_jsonl(path)]


def check_cases(path: str | os.PathLike[str], envs: Environments | None = None) -> list[CaseResult]:
    """Run every case of a regression-cases file with the current verifier."""
    envs = envs or Environments()
    out = []
    for case in read_cases(path):
        expected = bool(case["expected"]["matched"])
        try:
            got = run_case(case, envs)
        except CaseError as exc:
            out.append(CaseResult(str(case.get("case_id")), expected, None, bool(case.get("open")), str(exc)))
            continue
        out.append(CaseResult(str(case["case_id"]), expected, got, bool(case.get("open"))))
    return out


# -- Argilla and Label Studio -------------------------------------------------------------------


def _transcript(row: dict[str, Any]) -> str:
    told = council_view.transcript(row)
    if told is not None:
        return told
    lines = []
    for t in trajectory_turns(row):
        lines.append(f"### turn {t['index']}")
        if t["text"]:
            lines.append(t["text"])
        for c in t["calls"]:
            lines.append(f"call {c['name']} [{c['status'] or '?'}]\narguments: {c['arguments']}\noutput: {c['output']}")
    return "\n\n".join(lines) or "(no turns)"


def _task_text(row: dict[str, Any]) -> str:
    return "\n\n".join(f"[{m['role']}] {m['content']}" for m in prompt_messages(row))


def _diff_text(row: dict[str, Any]) -> str:
    verdict = verdict_of(row)
    if isinstance(verdict, dict) and verdict.get("graded") is True:  # a grading verifier's evidence, not a diff
        return "\n".join([f"{verdict.get('label')}: reward {verdict.get('reward')}", *map(str, verdict.get("evidence") or [])])
    tables = diff_tables(verdict)
    if not tables:
        return "no difference from the expected state" if verdict else "no verdict"
    return json.dumps({t["table"]: t["rows"] for t in tables}, ensure_ascii=False, indent=1, default=str)


def _gt_text(item: dict[str, Any]) -> str:
    return json.dumps(item["row"].get("ground_truth"), ensure_ascii=False, indent=1)


def _suggestion(item: dict[str, Any]) -> tuple[str, float]:
    """The flagger's suggested decision and a score in [0, 1]."""
    codes = [r["code"] for r in item["reasons"]]
    label = next((SUGGESTIONS[c] for c in codes if c in SUGGESTIONS), "accept")
    score = min(1.0, float(item["priority"]) / 10.0)
    return label, round(score, 4)


def _decision_label(d: dict[str, Any]) -> str | None:
    if d["action"] == "accept":
        return "accept"
    if d["action"] == "reject":
        return d["reason"]
    if d["action"] == "correct":
        return "truth_wrong"
    return None


def argilla_settings() -> dict[str, Any]:
    """Dataset settings in the shape Argilla 2.x serialises `rg.Settings` to."""
    def text_field(name: str, title: str, markdown: bool = False) -> dict[str, Any]:
        return {"name": name, "title": title, "required": True, "description": None,
                "settings": {"type": "text", "use_markdown": markdown}}

    return {
        "guidelines": "Decide whether the verifier judged this rollout right. Accept when it did; reject with the "
                      "reason when the task, the ground truth or the verifier is wrong; put corrected ground-truth "
                      "calls (a JSON list of {name, arguments}) in corrected_calls.",
        "fields": [
            text_field("task", "Task"), text_field("trajectory", "Trajectory", markdown=True),
            text_field("diff", "Expected vs actual state"), text_field("ground_truth", "Ground truth"),
        ],
        "questions": [
            {"name": "decision", "title": "Decision", "description": None, "required": True,
             "settings": {"type": "label_selection",
                          "options": [{"value": v, "text": "accept" if v == "accept" else REJECT_REASONS[v], "description": None}
                                      for v in DECISION_LABELS],
                          "visible_options": None}},
            {"name": "corrected_calls", "title": "Corrected ground-truth calls (JSON)", "description": None,
             "required": False, "settings": {"type": "text", "use_markdown": False}},
            {"name": "note", "title": "Note", "description": None, "required": False,
             "settings": {"type": "text", "use_markdown": False}},
        ],
        "metadata": [
            {"name": "item_key", "title": "item", "visible_for_annotators": False, "settings": {"type": "terms", "values": None}},
            {"name": "category", "title": "category", "visible_for_annotators": True, "settings": {"type": "terms", "values": None}},
            {"name": "reasons", "title": "flag reasons", "visible_for_annotators": True, "settings": {"type": "terms", "values": None}},
            {"name": "priority", "title": "priority", "visible_for_annotators": True, "settings": {"type": "float", "min": None, "max": None}},
            {"name": "reward", "title": "reward", "visible_for_annotators": True, "settings": {"type": "float", "min": None, "max": None}},
        ],
        "vectors": [],
        "allow_extra_metadata": True,
        "distribution": {"strategy": "overlap", "min_submitted": 1},
    }


def argilla_record(item: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """One item as Argilla 2.x's `Record.to_dict()` shape (what `rg.Record.from_dict` reads)."""
    label, score = _suggestion(item)
    responses: dict[str, list[dict[str, Any]]] = {}
    for d in decisions:
        value = _decision_label(d)
        if value is None:
            continue
        user = reviewer_uuid(d["reviewer"])
        responses.setdefault("decision", []).append({"value": value, "user_id": user, "status": "submitted"})
        if d["action"] == "correct" and d["payload"]:
            responses.setdefault("corrected_calls", []).append(
                {"value": json.dumps(d["payload"]["calls"], ensure_ascii=False), "user_id": user, "status": "submitted"})
        if d["note"]:
            responses.setdefault("note", []).append({"value": d["note"], "user_id": user, "status": "submitted"})
    row = item["row"]
    return {
        "id": item["key"],
        "fields": {"task": _task_text(row), "trajectory": _transcript(row), "diff": _diff_text(row), "ground_truth": _gt_text(item)},
        "metadata": {"item_key": item["key"], "category": item.get("category") or "-",
                     "reasons": [r["code"] for r in item["reasons"]], "priority": item["priority"],
                     "reward": item.get("reward"), "reviewers": sorted({d["reviewer"] for d in decisions})},
        "suggestions": {"decision": {"value": label, "score": score, "agent": AGENT}},
        "responses": responses,
        "vectors": {},
        "_server_id": None,
    }


def label_studio_config() -> str:
    choices = "\n".join(f"    <Choice value={quoteattr(v)}/>" for v in DECISION_LABELS)
    return (
        "<View>\n"
        '  <Header value="Task"/>\n  <Text name="task" value="$task"/>\n'
        '  <Header value="Trajectory"/>\n  <Text name="trajectory" value="$trajectory"/>\n'
        '  <Header value="Expected vs actual state"/>\n  <Text name="diff" value="$diff"/>\n'
        '  <Header value="Ground truth"/>\n  <Text name="ground_truth" value="$ground_truth"/>\n'
        '  <Choices name="decision" toName="trajectory" choice="single" required="true">\n'
        f"{choices}\n  </Choices>\n"
        '  <TextArea name="corrected_calls" toName="trajectory" editable="true" maxSubmissions="1" '
        'placeholder="corrected ground-truth calls: [{&quot;name&quot;: ..., &quot;arguments&quot;: {...}}]"/>\n'
        '  <TextArea name="note" toName="trajectory" editable="true" maxSubmissions="1"/>\n'
        "</View>\n"
    )


def _ls_result(name: str, kind: str, value: dict[str, Any]) -> dict[str, Any]:
    rid = hashlib.sha1(f"{name}:{json.dumps(value, sort_keys=True)}".encode()).hexdigest()[:10]
    return {"id": rid, "from_name": name, "to_name": "trajectory", "type": kind, "value": value}


def label_studio_task(item: dict[str, Any], decisions: list[dict[str, Any]]) -> dict[str, Any]:
    """One item as a Label Studio task: `data` for the config's $variables, the flagger's
    suggestion as a prediction with a score, and each reviewer decision as an annotation."""
    label, score = _suggestion(item)
    row = item["row"]
    annotations = []
    for d in decisions:
        value = _decision_label(d)
        if value is None:
            continue
        result = [_ls_result("decision", "choices", {"choices": [value]})]
        if d["action"] == "correct" and d["payload"]:
            result.append(_ls_result("corrected_calls", "textarea", {"text": [json.dumps(d["payload"]["calls"], ensure_ascii=False)]}))
        if d["note"]:
            result.append(_ls_result("note", "textarea", {"text": [d["note"]]}))
        annotations.append({"result": result, "was_cancelled": False, "ground_truth": False, "created_at": d["at"],
                            "updated_at": d["at"], "meta": {"reviewer": d["reviewer"]}})
    return {
        "data": {"item_key": item["key"], "task": _task_text(row), "trajectory": _transcript(row), "diff": _diff_text(row),
                 "ground_truth": _gt_text(item), "category": item.get("category"), "priority": item["priority"],
                 "reasons": ", ".join(r["code"] for r in item["reasons"]), "reward": item.get("reward")},
        "predictions": [{"model_version": AGENT, "score": score,
                         "result": [_ls_result("decision", "choices", {"choices": [label]})]}],
        "annotations": annotations,
    }
