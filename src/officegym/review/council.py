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

The rules are the environment's (CouncilEnvironment's hooks; envs/roles/council_review.py):
`review_findings` with the council's acts gives the escalations and low margins of its decision on
the team verdict; `replay_episode` makes the acts again in a fresh council state, re-scores it and
gives the seats' disagreements (commit_without_consensus, unresolved_objection,
accepted_over_objection). A council whose replayed acts score differently from what the row records
is a `verifier_error`. The single-agent form (roles/council rollout rows) gets the same disagreement
rules from its replayed calls.

A correction of a council is the mediator's decision (`decision_plan`: a commit of a selection or of
a plan the council proposed, or an escalation), verified in roles/council's single-agent form and
refused unless the team verifier gives it full credit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from officegym.agent.council_file import is_council_row, read_settings
from officegym.core.environment import BaseEnvironment, EpisodeReplay, Finding
from officegym.core.registry import make
from officegym.core.rollout_row import RolloutRow, make_row, officegym_of
from officegym.core.task import Task, TaskFormatError, read_tasks
from officegym.core.types import ToolCall
from officegym.review.replay import CorrectionCheck, CorrectionError, replay_cleanly
from officegym.review.roles import verdict_sentence

COUNCIL = "council"  # the block's key in an item row's officegym record
ENV_NAME = "roles/council"  # the environment councils are played in, by its registry name
TOKEN_KEYS = ("prompt_ids", "completion_ids", "logprobs")


def council_block(row: Any) -> dict[str, Any] | None:
    """The council block of an item row, or None for any other row."""
    block = officegym_of(row).get(COUNCIL)
    return block if isinstance(block, dict) and isinstance(block.get("acts"), list) else None


def is_council_env(env: BaseEnvironment | None) -> bool:
    """A multi-agent environment (the council): its items replay acts."""
    return env is not None and bool(env.seats)


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
    one a seat was shown: every seat's first user turn opens with it), or None."""
    trajs = council["trajectories"] if isinstance(council["trajectories"], dict) else {}
    brief = next((m.get("content") for m in task.input if isinstance(m, dict) and m.get("role") == "user"), None)
    for traj in trajs.values():
        messages = traj.get("messages") if isinstance(traj, dict) else None
        if not isinstance(messages, list) or len(messages) < 2 or not isinstance(messages[1], dict):
            continue
        shown = messages[1].get("content")
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


def decision_act(acts: Sequence[Any]) -> dict[str, Any] | None:
    return next((a for a in acts if isinstance(a, dict) and a.get("act") in ("commit", "escalate")), None)


def rollout_replay(env: BaseEnvironment, task: Task, row: dict[str, Any]) -> EpisodeReplay | None:
    """The council state a roles/council (single-agent) rollout leaves: its calls replayed."""
    return env.replay_episode(task, calls=RolloutRow(row).calls())


def council_findings(row: dict[str, Any], task: Task, env: BaseEnvironment | None, rules: BaseEnvironment | None,
                     bands: dict[str, tuple[float, float]]) -> list[Finding]:
    """Every rule for a council item: the replayed re-score (in `env`, None: no replay),
    escalations and margins (`rules`, the environment the task names), disagreements."""
    block = council_block(row) or {}
    verdict = RolloutRow(row).verdict or {}
    acts = block.get("acts") or []
    out: list[Finding] = []
    replayed = None
    if is_council_env(env):
        assert env is not None
        try:
            replayed = env.replay_episode(task, acts=acts, rounds=block.get("rounds"))
        except ValueError as exc:
            out.append(("verifier_error", f"the council's scenario cannot be rebuilt: {exc}"))
        if replayed is not None and replayed.grade is not None:
            problems = list(replayed.refused)
            grade, reward = replayed.grade, RolloutRow(row).reward
            label = grade.details.get("label")
            if reward is not None and (abs(grade.reward - reward) > 1e-9 or label != verdict.get("label")):
                problems.append(f"replaying the council's {len(acts)} acts gives reward {grade.reward:.4g} ({label}); "
                                f"the row records {reward:.4g} ({verdict.get('label')})")
            if problems:
                out.append(("verifier_error", "; ".join(problems)))
    if rules is not None:
        out += rules.review_findings(task, verdict, [], bands, acts=acts)
    if replayed is not None:
        out += replayed.findings
    return out


# -- corrections -----------------------------------------------------------------------------------


def proposals_of(row: dict[str, Any], task: Task, env: BaseEnvironment) -> dict[str, Any]:
    """The plans a council (or a roles/council rollout) proposed: plan id -> selection."""
    block = council_block(row)
    if block is not None:
        return {str(a.get("plan_id")): a.get("selection") for a in block["acts"]
                if isinstance(a, dict) and a.get("act") == "propose" and isinstance(a.get("selection"), dict)}
    replayed = rollout_replay(env, task, row)
    return dict(replayed.state["proposals"]) if replayed is not None else {}


def mediator_plan(env: BaseEnvironment, decision: ToolCall, proposals: dict[str, Any]) -> list[ToolCall]:
    """A council decision in the environment's single-agent form (decision_plan)."""
    return env.decision_plan([decision], proposals)[0]


def check_council_correction(env: BaseEnvironment, task: Task, row: dict[str, Any], calls: list[ToolCall],
                             mode: str | None = None) -> CorrectionCheck:
    """Verify a corrected mediator decision (see the module docstring); CorrectionError says why not."""
    if not is_council_env(env):
        raise CorrectionError(f"a council correction needs the {ENV_NAME} environment, not {env.name!r}")
    try:
        plan, turns = env.decision_plan(calls, proposals_of(row, task, env))
    except ValueError as exc:
        raise CorrectionError(str(exc)) from None
    results = replay_cleanly(env, task, plan)
    verdict = env.verify(task, plan, mode)
    if not verdict.matched:
        raise CorrectionError(f"the council's verifier does not accept this decision ({verdict_sentence(verdict)}); if "
                              "you believe the verifier is wrong, reject the item as 'verifier too strict' instead")
    block = council_block(row)
    if block is not None:
        replayed = env.replay_episode(task, acts=block["acts"], rounds=block.get("rounds"))
        assert replayed is not None and replayed.grade is not None
        rescored = replayed.grade
    else:
        rescored = env.verify(task, RolloutRow(row).calls(), mode)
    return CorrectionCheck(plan, results, verdict, rescored, [], turns=turns)


def case_matched(case_council: dict[str, Any], task: Task, env: BaseEnvironment) -> bool:
    """The current verifier's `matched` for a council regression case (its acts replayed)."""
    replayed = env.replay_episode(task, acts=case_council.get("acts") or [], rounds=case_council.get("rounds"))
    if replayed is None or replayed.grade is None:
        raise ValueError(f"a council case needs {ENV_NAME}")
    return replayed.grade.matched
