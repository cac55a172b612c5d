"""Councils in the review queue: the rows `officegym council` writes, the disagreement rules, a
re-score by replaying the acts, and corrections of the mediator's decision (the item page's view of
a council is review/council_view.py).

A council row (councils.jsonl; its format is agent/council_file.py) holds the team reward, label,
components, evidence, every act and every seat's conversation, but only the task's id. The task is
rebuilt from what the run folder's run.json says it was played from (a task file, or the generator's
seed and difficulty range; `--tasks` overrides), and checked against the mediator's recorded brief.
Each council becomes an item whose row is the roles/council task row plus a `response` with no
output (the council's turns are not the single-agent mediator's), the council's reward, and the
`officegym` record with the team verdict and a `council` block: the acts, rounds, the seats'
policies and their conversations (token ids dropped).

Disagreement between seats (each rule says who and about what):
- commit_without_consensus: the mediator committed a plan that not every member accepted (a member
  objected, or never answered).
- unresolved_objection: objections standing at the commit (their seat did not accept the committed
  plan), or, when the council ended without a commit, objections to its last proposal. The verifier
  deducts 0.1 for each valid one; invalid ones are listed too (is the validity check right?).
- accepted_over_objection: a member accepted a plan after seeing another member's objection to it
  (made in an earlier round and never withdrawn); the objection's validity says which seat erred.
Escalations and low margins follow the role rules (review/roles.py) on the team verdict, with the
commit's claimed TCO as the claim. A council whose acts, replayed in order into a fresh council state,
score differently from what the row records is a `verifier_error`.

The single-agent form (roles/council rollout rows: the model mediates, scripted members answer) gets
the same disagreement rules from its replayed session.

A correction of a council is the mediator's decision: `commit_plan` with a `selection` (component ->
option) or a `plan_id` the council proposed, and `claimed_tco`; or `escalate` with a reason. It is
verified in roles/council's single-agent form (facts from every member, the plan proposed to
truthful members, then committed) and refused unless the team verifier gives it full credit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from officegym.agent.council_file import is_council_row, read_settings
from officegym.core.environment import BaseEnvironment
from officegym.core.registry import make
from officegym.core.rollout_row import RolloutRow, make_row, officegym_of
from officegym.core.task import Task, TaskFormatError, read_tasks
from officegym.core.types import ToolCall, Verdict
from officegym.envs.roles.base import ESCALATE, Grade, ScenarioError
from officegym.envs.roles.council import CouncilEnvironment, CouncilSession
from officegym.envs.roles.council_episode import act
from officegym.envs.roles.council_model import COMMIT, MEDIATOR, MEMBERS
from officegym.envs.roles.council_state import CouncilState, score_council
from officegym.review.replay import CorrectionCheck, CorrectionError, replay_cleanly
from officegym.review.roles import Found, escalation_findings, margin_notes, verdict_sentence

if TYPE_CHECKING:
    from officegym.review.flag import FlagConfig

COUNCIL = "council"  # the block's key in an item row's officegym record
ENV_NAME = CouncilEnvironment.name
TOKEN_KEYS = ("prompt_ids", "completion_ids", "logprobs")


def council_block(row: Any) -> dict[str, Any] | None:
    """The council block of an item row, or None for any other row."""
    block = officegym_of(row).get(COUNCIL)
    return block if isinstance(block, dict) and isinstance(block.get("acts"), list) else None


def is_council_env(env: Any) -> bool:
    return isinstance(env, CouncilEnvironment)


# -- reading councils.jsonl ---------------------------------------------------------------------


def _task_file(name: str | Path, folder: Path) -> Path | None:
    path = Path(name)
    tries = [path] if path.is_absolute() else [Path.cwd() / path, folder.parent / path, folder / path]
    return next((p for p in tries if p.is_file()), None)


def council_tasks(folder: Path, task_ids: Sequence[str], tasks_file: str | Path | None,
                  problems: list[str]) -> dict[str, Task]:
    """The tasks of the councils in `folder` by id: from `tasks_file`, else run.json's task file,
    else regenerated from run.json's seed and difficulty (ids `council-SEED-N`: the generator's
    first N+1 tasks, of which a shorter list is a prefix), else from the ids with the council
    command's default difficulty range."""
    settings = read_settings(folder)
    named = tasks_file if tasks_file is not None else settings.get("tasks")
    if isinstance(named, str | Path) and str(named):
        path = _task_file(named, folder)
        if path is None:
            problems.append(f"the councils' task file {named} is not there (give it with --tasks); councils skipped")
            return {}
        try:
            return {str(t.id): t for t in read_tasks(path)}
        except (TaskFormatError, OSError) as exc:
            problems.append(f"the councils' task file cannot be read ({exc}); councils skipped")
            return {}
    seed, difficulty = settings.get("seed"), settings.get("difficulty")
    wanted: dict[int, list[int]] = {}
    for tid in task_ids:
        m = re.fullmatch(r"council-(\d+)-(\d+)", tid)
        if m and (not isinstance(seed, int) or int(m.group(1)) == seed):
            wanted.setdefault(int(m.group(1)), []).append(int(m.group(2)))
    if isinstance(difficulty, list) and len(difficulty) == 2 and all(isinstance(x, int) for x in difficulty):
        levels: tuple[int, int] | None = (difficulty[0], difficulty[1])
    else:
        levels = None  # the council command's default, 1-10
    env = make(ENV_NAME)
    out: dict[str, Task] = {}
    for s, indices in sorted(wanted.items()):
        try:
            out.update((str(t.id), t) for t in env.generate_tasks(max(indices) + 1, s, difficulty=levels))
        except ValueError as exc:
            problems.append(f"cannot regenerate the council tasks of seed {s}: {exc}")
    return out


def _slim(traj: Any) -> dict[str, Any]:
    """A seat's trajectory without its token ledger (review shows text, not token ids)."""
    if not isinstance(traj, dict):
        return {}
    turns = [{k: v for k, v in t.items() if k not in TOKEN_KEYS} if isinstance(t, dict) else t
             for t in traj.get("turns") or []]
    return {**traj, "turns": turns}


def _brief_mismatch(council: dict[str, Any], task: Task) -> str | None:
    """Why the rebuilt task is not the one the council was played on (its brief differs from the
    one the mediator was shown), or None."""
    messages = (council["trajectories"].get(MEDIATOR) or {}).get("messages") if isinstance(council["trajectories"], dict) else None
    if not isinstance(messages, list) or len(messages) < 2 or not isinstance(messages[1], dict):
        return None
    shown = messages[1].get("content")
    brief = next((m.get("content") for m in task.input if isinstance(m, dict) and m.get("role") == "user"), None)
    if isinstance(shown, str) and isinstance(brief, str) and not shown.startswith(brief):
        return "the rebuilt task's brief is not the one the council was shown (another seed, difficulty or task file?)"
    return None


def item_row(council: dict[str, Any], task: Task) -> dict[str, Any]:
    """A council as a review item's row (see the module docstring)."""
    trajs = {str(s): _slim(t) for s, t in council["trajectories"].items()}
    reward = council.get("reward")
    recorded = next((t.get("verdict") for t in trajs.values() if isinstance(t.get("verdict"), dict)), None) or {}
    matched = recorded.get("matched")
    if not isinstance(matched, bool):
        matched = isinstance(reward, int | float) and not isinstance(reward, bool) and reward >= 1 - 1e-9
    verdict = {
        "reward": reward, "matched": matched, "mode": recorded.get("mode", "exact"), "side_effects": False, "diff": {},
        "invalid_calls": [], "role": COUNCIL, "label": council.get("label"), "graded": True,
        "difficulty": task.metadata.get("difficulty"), "infeasible_scenario": task.metadata.get("infeasible"),
        "components": council.get("components") if isinstance(council.get("components"), dict) else {},
        "evidence": council.get("evidence") if isinstance(council.get("evidence"), list) else [],
        "acts": len(council["acts"]),
    }
    seats = council.get("seats") if isinstance(council.get("seats"), dict) else {}
    og = {
        "task_id": task.id, "sample_index": council.get("sample_index", 0) if isinstance(council.get("sample_index"), int) else 0,
        "policy": "council " + ", ".join(f"{s}={n}" for s, n in seats.items()),
        "reward_components": {"outcome": reward}, "verdict": verdict,
        "stop_reason": "answered" if any(a.get("act") in ("commit", "escalate") for a in council["acts"] if isinstance(a, dict)) else "max_steps",
        "error": None, "turns": sum(len(t.get("turns") or []) for t in trajs.values()), "invalid_fragments": [],
        "call_status": [], "seconds": council.get("seconds"),
        COUNCIL: {"acts": council["acts"], "rounds": council.get("rounds"), "seats": seats, "trajectories": trajs},
    }
    return make_row(task.to_row(), {"output": []}, reward, og)


def read_council_rows(rows: list[tuple[int, Any]], rel: str, folder: Path, tasks_file: str | Path | None,
                      problems: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """(line, item row) for the council rows of one file (its folder's run.json names the tasks)."""
    good = [(n, r) for n, r in rows if is_council_row(r)]
    for n, _ in (x for x in rows if not is_council_row(x[1])):
        problems.append(f"{rel}:{n}: not a council row; line skipped")
    before = len(problems)
    tasks = council_tasks(folder, [str(r["task_id"]) for _, r in good], tasks_file, problems)
    if good and not tasks and len(problems) == before:
        problems.append(f"{rel}: cannot rebuild the councils' tasks (ids like {good[0][1]['task_id']!r}, settings "
                        f"{read_settings(folder) or 'none'}): give their task file with --tasks; councils skipped")
    out = []
    for n, r in good:
        task = tasks.get(str(r["task_id"]))
        if task is None:
            if tasks:
                problems.append(f"{rel}:{n}: no task {r['task_id']!r} among the councils' tasks; council skipped")
            continue
        wrong = _brief_mismatch(r, task)
        if wrong:
            problems.append(f"{rel}:{n}: {wrong}; council skipped")
            continue
        out.append((n, item_row(r, task)))
    return out


# -- the council state, re-scored -----------------------------------------------------------------


def act_call(event: dict[str, Any]) -> ToolCall | None:
    """The tool call that makes a logged act again."""
    kind = event.get("act")
    if kind == "share":
        return ToolCall("share_facts", {"fact_ids": [f.get("id") for f in event.get("facts") or [] if isinstance(f, dict)]})
    if kind == "propose":
        return ToolCall("propose_plan", {"selection": event.get("selection")})
    if kind == "accept":
        return ToolCall("accept_plan", {"plan_id": event.get("plan_id")})
    if kind == "object":
        return ToolCall("object_plan", {"plan_id": event.get("plan_id"), "reason_code": event.get("reason_code"),
                                        "fact_id": event.get("fact_id") or ""})
    if kind == "commit":
        return ToolCall(COMMIT, {"plan_id": event.get("plan_id"), "claimed_tco": event.get("claimed_tco")})
    if kind == "escalate":
        return ToolCall(ESCALATE, {"reason": event.get("reason")})
    return None


def replay_acts(env: CouncilEnvironment, task: Task, acts: Sequence[Any], rounds: Any) -> tuple[CouncilState, Grade, list[str]]:
    """A fresh council state with the logged acts made again in order (each in its round), its
    grade, and any act the state refused (ScenarioError when the task names no scenario)."""
    state = CouncilState(env.scenario(task))
    problems = []
    for i, event in enumerate(acts, 1):
        call = act_call(event) if isinstance(event, dict) else None
        if call is None:
            problems.append(f"act {i} is not an act ({str(event)[:80]})")
            continue
        if isinstance(event.get("round"), int):
            state.rounds = event["round"]
        seat = str(event.get("seat"))
        result = act(state, seat, call)
        if not result.ok:
            problems.append(f"act {i} ({seat} {event.get('act')}) is refused on replay: {result.text}")
    if isinstance(rounds, int):
        state.rounds = rounds
    return state, score_council(state), problems


def rollout_state(env: BaseEnvironment, task: Task, calls: Sequence[ToolCall]) -> CouncilState | None:
    """The council state a roles/council (single-agent) rollout leaves: its calls replayed."""
    session = env.session(task)
    if not isinstance(session, CouncilSession) or session.state is None:
        return None
    session.replay(calls)
    return session.state


def grade_verdict(grade: Grade) -> Verdict:
    return Verdict(grade.reward, grade.matched, "exact", details={
        "role": COUNCIL, "label": grade.label, "graded": True, "components": grade.components, "evidence": grade.evidence})


def _objection(o: Any) -> str:
    valid = "valid" if o.valid else "not valid by the verifier's check"
    return f"{o.seat} objected to {o.plan_id} ({o.reason}, citing {o.fact_id or 'no fact'}; {valid})"


def disagreement_findings(state: CouncilState) -> Found:
    """The seats' disagreements in a council state (see the module docstring)."""
    out: Found = []
    outcome = state.outcome
    if outcome is not None and outcome[0] == "commit":
        plan = outcome[1]
        responses = state.responses.get(plan, {})
        missing = [s for s in MEMBERS if responses.get(s) != "accept"]
        if missing:
            parts = [f"{s} {'objected' if responses.get(s) == 'object' else 'never answered'}" for s in missing]
            out.append(("commit_without_consensus", f"{plan} was committed without every member's acceptance: "
                                                     + ", ".join(parts)))
        standing = [o for o in state.objections if responses.get(o.seat) != "accept"]
        if standing:
            valid = sum(o.valid for o in standing)
            out.append(("unresolved_objection", f"standing at the commit of {plan}: " + "; ".join(map(_objection, standing))
                        + f" ({valid} valid: the verifier deducts 0.1 for each)"))
    elif outcome is None and state.proposals:
        last = list(state.proposals)[-1]
        responses = state.responses.get(last, {})
        standing = [o for o in state.objections if o.plan_id == last and responses.get(o.seat) == "object"]
        if standing:
            out.append(("unresolved_objection", f"the council ended without a commit; standing against its last "
                                                f"proposal {last}: " + "; ".join(map(_objection, standing))))
    objection_events = [(i, e) for i, e in enumerate(state.events) if e.get("act") == "object"]
    by_event = {i: o for (i, _), o in zip(objection_events, state.objections)}
    notes = []
    for j, e in enumerate(state.events):
        if e.get("act") != "accept":
            continue
        plan, seat = e.get("plan_id"), e.get("seat")
        for i, oe in objection_events:
            o = by_event.get(i)
            if (o is not None and i < j and oe.get("plan_id") == plan and o.seat != seat
                    and oe.get("round", 0) < e.get("round", 0) and state.responses.get(plan, {}).get(o.seat) == "object"):
                notes.append(f"{seat} accepted {plan} in round {e.get('round')} after {_objection(o)} in round {oe.get('round')}")
    if notes:
        out.append(("accepted_over_objection", "; ".join(dict.fromkeys(notes))))
    return out


def decision_act(acts: Sequence[Any]) -> dict[str, Any] | None:
    return next((a for a in acts if isinstance(a, dict) and a.get("act") in ("commit", "escalate")), None)


def council_findings(row: dict[str, Any], task: Task, env: BaseEnvironment | None, config: FlagConfig) -> Found:
    """Every rule for a council item: the replayed re-score, escalations, margins, disagreements."""
    block = council_block(row) or {}
    verdict = RolloutRow(row).verdict or {}
    acts = block.get("acts") or []
    out: Found = []
    state = None
    if isinstance(env, CouncilEnvironment):
        try:
            state, grade, problems = replay_acts(env, task, acts, block.get("rounds"))
        except ScenarioError as exc:
            out.append(("verifier_error", f"the council's scenario cannot be rebuilt: {exc}"))
        else:
            reward = RolloutRow(row).reward
            if reward is not None and (abs(grade.reward - reward) > 1e-9 or grade.label != verdict.get("label")):
                problems.append(f"replaying the council's {len(acts)} acts gives reward {grade.reward:.4g} ({grade.label}); "
                                f"the row records {reward:.4g} ({verdict.get('label')})")
            if problems:
                out.append(("verifier_error", "; ".join(problems)))
    decided = decision_act(acts)
    answer = None
    if decided is not None:
        answer = (ToolCall(ESCALATE, {"reason": decided.get("reason")}) if decided.get("act") == "escalate"
                  else ToolCall(COMMIT, {"plan_id": decided.get("plan_id"), "claimed_tco": decided.get("claimed_tco")}))
    infeasible = task.metadata.get("infeasible")
    out += escalation_findings(verdict, infeasible if isinstance(infeasible, bool) else None, answer)
    claims = {"claimed_tco": decided.get("claimed_tco")} if decided is not None and decided.get("act") == "commit" else {}
    near = margin_notes(verdict, claims, config)
    if near:
        out.append(("low_margin", "; ".join(near)))
    if state is not None:
        out += disagreement_findings(state)
    return out


# -- corrections -----------------------------------------------------------------------------------


def proposals_of(row: dict[str, Any], task: Task, env: BaseEnvironment) -> dict[str, dict[str, str]]:
    """The plans a council (or a roles/council rollout) proposed: plan id -> selection."""
    block = council_block(row)
    if block is not None:
        return {str(a.get("plan_id")): a.get("selection") for a in block["acts"]
                if isinstance(a, dict) and a.get("act") == "propose" and isinstance(a.get("selection"), dict)}
    state = rollout_state(env, task, RolloutRow(row).calls())
    return dict(state.proposals) if state is not None else {}


USAGE = ('a correction of a council is the mediator\'s decision: one commit_plan call with {"selection": {component: '
         'option, ...}, "claimed_tco": N} (or a "plan_id" the council proposed), or one escalate call with a reason')


def mediator_plan(decision: ToolCall, proposals: dict[str, dict[str, str]]) -> list[ToolCall]:
    """The decision in roles/council's single-agent form: every member's facts, then the plan
    proposed and committed (or the escalation)."""
    plan = [ToolCall("request_facts", {"seat": s}) for s in MEMBERS]
    args = decision.arguments if isinstance(decision.arguments, dict) else {}
    if decision.name == ESCALATE:
        return [*plan, ToolCall(ESCALATE, {"reason": args.get("reason")})]
    selection = args.get("selection")
    if selection is None and "plan_id" in args:
        selection = proposals.get(str(args["plan_id"]))
        if selection is None:
            known = ", ".join(proposals) or "none"
            raise CorrectionError(f"the council proposed no plan {args['plan_id']!r} (its plans: {known})")
    if not isinstance(selection, dict):
        raise CorrectionError(USAGE)
    claimed = args.get("claimed_tco")
    if isinstance(claimed, bool) or not isinstance(claimed, int | float):
        raise CorrectionError("commit_plan needs claimed_tco, the plan's 12-month TCO in dollars (it is recomputed)")
    return [*plan, ToolCall("propose_plan", {"selection": selection}), ToolCall(COMMIT, {"plan_id": "PLAN-1", "claimed_tco": claimed})]


def check_council_correction(env: BaseEnvironment, task: Task, row: dict[str, Any], calls: list[ToolCall],
                             mode: str | None = None) -> CorrectionCheck:
    """Verify a corrected mediator decision (see the module docstring); CorrectionError says why not."""
    if not isinstance(env, CouncilEnvironment):
        raise CorrectionError(f"a council correction needs the {ENV_NAME} environment, not {env.name!r}")
    if len(calls) != 1 or calls[0].name not in (COMMIT, ESCALATE):
        raise CorrectionError(USAGE)
    plan = mediator_plan(calls[0], proposals_of(row, task, env))
    results = replay_cleanly(env, task, plan)
    verdict = env.verify(task, plan, mode)
    if not verdict.matched:
        raise CorrectionError(f"the council's verifier does not accept this decision ({verdict_sentence(verdict)}); if "
                              "you believe the verifier is wrong, reject the item as 'verifier too strict' instead")
    block = council_block(row)
    if block is not None:
        _, grade, _ = replay_acts(env, task, block["acts"], block.get("rounds"))
        rescored = grade_verdict(grade)
    else:
        rescored = env.verify(task, RolloutRow(row).calls(), mode)
    turns = [len(MEMBERS), 1] if calls[0].name == ESCALATE else [len(MEMBERS), 1, 1]
    return CorrectionCheck(plan, results, verdict, rescored, [], turns=turns)


def case_matched(case_council: dict[str, Any], task: Task, env: BaseEnvironment) -> bool:
    """The current verifier's `matched` for a council regression case (its acts replayed)."""
    if not isinstance(env, CouncilEnvironment):
        raise ValueError(f"a council case needs {ENV_NAME}")
    _, grade, _ = replay_acts(env, task, case_council.get("acts") or [], case_council.get("rounds"))
    return grade.matched
