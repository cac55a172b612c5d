"""Flag the rollouts a human should look at, each with its reasons, ranked by priority.

Humans are wanted where the verifier or the task may be wrong, which is not where GRPO learns
(sdg_roles_review.md 4.2). Per group of K samples of a task:

- oracle_fails: every sample fails and the task's oracle plan also fails on replay (a call errors,
  or it does not verify): a task or verifier bug. All fail with a sound oracle is a training
  problem (the policy is too weak), counted but not queued.
- all_fail_unchecked: every sample fails and no environment was there to replay the oracle.
- all_pass_hard: every sample passes a task of difficulty >= `hard_difficulty`.
- distinct_rewarded_states: rewarded samples leave different end states (compared strictly:
  letter case kept): the verifier may be too lenient. One item per distinct state.
Per rollout:
- verifier_error: no verdict, no numeric reward, a verdict that says it errored or abstained, the
  verifier raising on a re-verify, or a re-verify that disagrees with the recorded verdict.
- near_threshold: the reward (over `reward_max`) in the partial-credit band, or an efficiency-like
  component just under 1.
- odd_high_reward: a high reward with many invalid calls, far more calls than the ground truth, or
  no call at all where the ground truth has some.
- modes_disagree: the two verification modes disagree on this rollout.
- random_audit: a seeded, uniform share of all rollouts, to measure the verifier's precision.
Role rollouts (graded verdicts: roles/cto, coo, cost, reconcile, risk, council; the environment's
`review_findings` and `decision_key` define each rule and the margin, envs/roles/review_rules.py):
- low_margin: a component within a small distance of the threshold that would change the label
  (near-optimal, a claimed figure near the tolerance, near-perfect detection, one rule short of
  feasible, partial credit). It replaces near_threshold for graded verdicts.
- escalation_wrong, escalation_missed, escalated: the model escalated a feasible scenario, did not
  escalate an infeasible one, or escalated rightly (the reason is for a human to confirm).
- odd_high_reward also catches full credit without a single successful read.
- distinct_rewarded_states compares decisions (free text and claimed figures left out).
- verifier_error also when a fresh verify gives another graded reward.
Councils (councils.jsonl rows, and roles/council rollouts; review/council.py, the environment's
`replay_episode`):
- commit_without_consensus, unresolved_objection, accepted_over_objection: seats disagree.
- verifier_error when the council's acts, replayed, score otherwise than recorded.

An item's priority is the sum of its reasons' weights.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.task import Task, TaskFormatError
from officegym.review import council, roles
from officegym.review.replay import fingerprint_diff, oracle_calls, state_fingerprint
from officegym.review.rows import Group, RolloutRef, group_rows, read_run
from officegym.review.store import Store
from officegym.review.worlds import Environments, WorldSpecError, spec_for_run
from officegym.rewards.calls import count_calls

REASONS: dict[str, str] = {
    "oracle_fails": "every sample fails and the oracle fails on replay too: task or verifier bug",
    "verifier_error": "the verifier errored, abstained, or disagrees with a fresh verify",
    "distinct_rewarded_states": "different end states all got full reward: verifier too lenient?",
    "all_pass_hard": "every sample passes a hard task: verifier too lenient?",
    "odd_high_reward": "high reward with an odd trajectory (invalid calls, far too long, or no calls)",
    "all_fail_unchecked": "every sample fails; the oracle could not be replayed",
    "near_threshold": "reward near a threshold (partial credit, near-optimal ratio)",
    "modes_disagree": "the outcome and nemo_gym verification modes disagree",
    "escalation_wrong": "escalated although the verifier knows a feasible answer",
    "escalation_missed": "did not escalate an infeasible scenario",
    "commit_without_consensus": "a council committed a plan not every member accepted",
    "unresolved_objection": "objections left standing at the council's end",
    "accepted_over_objection": "a seat accepted a plan another seat had objected to",
    "low_margin": "a graded verdict near a decision boundary (near-optimal, claim near the tolerance, partial credit)",
    "escalated": "a correct escalation: its reason is for a human to confirm",
    "random_audit": "uniform random audit of the verifier's precision",
}

DEFAULT_WEIGHTS: dict[str, float] = {
    "oracle_fails": 10.0,
    "verifier_error": 8.0,
    "distinct_rewarded_states": 6.0,
    "all_pass_hard": 5.0,
    "odd_high_reward": 5.0,
    "all_fail_unchecked": 4.0,
    "near_threshold": 3.0,
    "modes_disagree": 2.0,
    "escalation_wrong": 6.0,
    "escalation_missed": 6.0,
    "commit_without_consensus": 5.0,
    "unresolved_objection": 5.0,
    "accepted_over_objection": 4.0,
    "low_margin": 3.0,
    "escalated": 3.0,
    "random_audit": 1.0,
}


@dataclass(frozen=True)
class FlagConfig:
    """Thresholds and weights of the flagging rules (see the module docstring)."""

    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    hard_difficulty: float = 7  # difficulty is 1-10
    partial_band: tuple[float, float] = (0.4, 0.6)
    ratio_band: tuple[float, float] = (0.98, 1.0)  # [lo, hi)
    claim_band: tuple[float, float] = (0.5, 2.0)  # claimed-figure error over the verifier's tolerance
    detection_band: tuple[float, float] = (0.8, 1.0)  # [lo, hi) of an F1 component
    satisfaction_band: tuple[float, float] = (0.9, 1.0)  # [lo, hi) of the rules an infeasible plan meets
    ratio_components: tuple[str, ...] = ("efficiency", "optimality", "optimality_ratio")
    reward_max: float | None = None  # None: max(1, the largest reward in the run)
    high_reward: float = 0.9  # a share of reward_max
    invalid_calls: int = 2
    length_ratio: float = 3.0  # calls > max(length_ratio * gt calls, gt calls + length_slack)
    length_slack: int = 4
    audit_share: float = 0.05
    seed: int = 0
    replay: bool = True  # replay oracles, re-verify and compare end states (needs environments)

    @property
    def bands(self) -> dict[str, tuple[float, float]]:
        """The margins' bands as the environments' review_findings take them."""
        return {"ratio": self.ratio_band, "claim": self.claim_band, "detection": self.detection_band,
                "satisfaction": self.satisfaction_band, "partial": self.partial_band}

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(REASONS))
        if unknown:
            raise ValueError(f"unknown flag reason(s) {', '.join(unknown)}; known: {', '.join(REASONS)}")
        if not 0.0 <= self.audit_share <= 1.0:
            raise ValueError(f"audit_share must be in [0, 1], got {self.audit_share}")
        object.__setattr__(self, "weights", {**DEFAULT_WEIGHTS, **self.weights})


@dataclass
class Reason:
    code: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "detail": self.detail}


@dataclass
class FlaggedItem:
    """A rollout queued for review: its key, row, reasons, priority and its group's summary."""

    key: str
    ref: RolloutRef
    sample_index: int
    group: dict[str, Any]
    reasons: list[Reason] = field(default_factory=list)
    priority: float = 0.0


@dataclass
class FlagReport:
    items: list[FlaggedItem]
    rollouts: int
    groups: int
    by_reason: dict[str, int]
    training_only: int  # groups where all fail but the oracle passes (too hard, not a human item)
    problems: list[str]


EnvFor = Callable[[RolloutRef, Task], BaseEnvironment | None]


def audit_draw(seed: int, key: str) -> float:
    """A uniform number in [0, 1) fixed by (seed, key), so that re-flagging picks the same items."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _difficulty(task: Task) -> float | None:
    d = task.metadata.get("difficulty")
    if isinstance(d, bool) or not isinstance(d, int | float):
        try:
            return float(d) if isinstance(d, str) else None
        except ValueError:
            return None
    return float(d)


def _calls_count(ref: RolloutRef) -> tuple[int, int]:
    """(calls made, invalid ones: rewards/calls.py, failed statuses plus malformed fragments)."""
    status = ref.og.get("call_status") if isinstance(ref.og.get("call_status"), list) else []
    frags = ref.og.get("invalid_fragments") if isinstance(ref.og.get("invalid_fragments"), list) else []
    n = len(ref.calls())
    return n + len(frags), count_calls((str(s) for s in status), frags)[0]


def flag_rows(
    rows: list[RolloutRef],
    config: FlagConfig | None = None,
    env_for: EnvFor | None = None,
    run: str = "run",
) -> FlagReport:
    """Apply the rules to rows (all of one run); `env_for(ref, task)` gives the environment to
    replay in, or None (the replay-based checks are then skipped or reported as unchecked)."""
    config = config or FlagConfig()
    problems: list[str] = []
    groups = group_rows(rows)
    reward_max = config.reward_max or max([1.0] + [r.reward for r in rows if r.reward is not None])
    items: dict[str, FlaggedItem] = {}
    training_only = 0

    def item(g: Group, idx: int, ref: RolloutRef, summary: dict[str, Any]) -> FlaggedItem:
        key = f"{run}|{g.key}|{idx}"
        if key not in items:
            items[key] = FlaggedItem(key, ref, idx, summary)
        return items[key]

    for g in groups:
        # The samples of a group share their task row: parse it once and give them the same Task.
        tasks: list[Task | None] = []
        parsed: Task | None = None
        parsed_key: Any = None
        for _, ref in g.samples:
            key = (ref.row.get("ground_truth"), ref.row.get("responses_create_params"), ref.row.get("id"))
            if parsed is not None and key == parsed_key:
                tasks.append(parsed)
                continue
            try:
                parsed = ref.task()
                parsed_key = key
                tasks.append(parsed)
            except TaskFormatError as exc:
                problems.append(f"{ref.source}:{ref.line}: task row unreadable ({exc}); not flagged")
                tasks.append(None)
        if all(t is None for t in tasks):
            continue
        task = next(t for t in tasks if t is not None)
        env = env_for(g.samples[0][1], task) if (env_for is not None and config.replay) else None
        summary = {
            "group": g.key,
            "task_id": g.task_id,
            "step": g.step,
            "k": len(g.samples),
            "passed": sum(ref.matched for _, ref in g.samples),
            "samples": [
                {"sample_index": idx, "reward": ref.reward, "matched": ref.matched, "key": f"{run}|{g.key}|{idx}"}
                for idx, ref in g.samples
            ],
        }
        live = [(idx, ref, t) for (idx, ref), t in zip(g.samples, tasks) if t is not None]

        # Per rollout.
        for idx, ref, t in live:
            for reason in _rollout_reasons(ref, t, env, config, reward_max):
                item(g, idx, ref, summary).reasons.append(reason)
            key = f"{run}|{g.key}|{idx}"
            if config.audit_share and audit_draw(config.seed, key) < config.audit_share:
                item(g, idx, ref, summary).reasons.append(Reason("random_audit", f"drawn for a {config.audit_share:.0%} audit"))

        # Per group.
        first_idx, first_ref, _ = live[0]
        if not any(ref.matched for _, ref, _ in live):
            if env is None:
                why = "no environment to replay it in" if config.replay else "replay turned off"
                item(g, first_idx, first_ref, summary).reasons.append(
                    Reason("all_fail_unchecked", f"0/{len(live)} samples pass; oracle not replayed ({why})"))
            else:
                bad = _oracle_problem(env, task)
                if bad is None:
                    training_only += 1
                else:
                    item(g, first_idx, first_ref, summary).reasons.append(
                        Reason("oracle_fails", f"0/{len(live)} samples pass and the oracle fails: {bad}"))
        elif all(ref.matched for _, ref, _ in live):
            d = _difficulty(task)
            if d is not None and d >= config.hard_difficulty and len(live) > 1:
                item(g, first_idx, first_ref, summary).reasons.append(
                    Reason("all_pass_hard", f"{len(live)}/{len(live)} samples pass a task of difficulty {d:g}"))
        rewarded = [(idx, ref, t) for idx, ref, t in live if ref.matched and council.council_block(ref.row) is None]
        if env is not None and len(rewarded) > 1:
            states: dict[str, list[tuple[int, RolloutRef]]] = {}
            for idx, ref, t in rewarded:
                states.setdefault(_end_state(env, ref, t), []).append((idx, ref))
            if len(states) > 1:
                fps = list(states)
                listing = "; ".join(
                    f"state {n + 1}: samples {', '.join(str(i) for i, _ in states[fp])}"
                    + ("" if n == 0 else f" (vs state 1: {'; '.join(fingerprint_diff(fps[0], fp))})")
                    for n, fp in enumerate(fps)
                )
                for members in states.values():
                    idx, ref = members[0]
                    item(g, idx, ref, summary).reasons.append(Reason(
                        "distinct_rewarded_states",
                        f"{len(states)} different end states all got full reward ({listing})"))

    out = []
    for it in items.values():
        it.priority = sum(config.weights.get(r.code, 0.0) for r in it.reasons)
        if it.reasons:
            out.append(it)
    out.sort(key=lambda it: (-it.priority, it.key))
    by_reason = Counter(r.code for it in out for r in it.reasons)
    return FlagReport(out, len(rows), len(groups), dict(by_reason), training_only, problems)


def _end_state(env: BaseEnvironment, ref: RolloutRef, task: Task) -> str:
    """What two rewarded samples are compared on: what the environment says (a role answer's
    decision), else the strict end state of the calls."""
    decided = env.decision_key(roles.call_statuses(ref.row))
    if decided is not None:
        return decided
    return state_fingerprint(env, task, ref.calls(), env.write_tools)


def _oracle_problem(env: BaseEnvironment, task: Task) -> str | None:
    """Why the task's oracle plan fails on replay, or None when it replays cleanly and verifies."""
    plan = oracle_calls(task)
    try:
        verdict = env.verify(task, plan)
    except Exception as exc:  # a verifier crash on the oracle is exactly what this rule looks for
        return f"the verifier raised {type(exc).__name__}: {exc}"
    if verdict.invalid_calls:
        first = verdict.invalid_calls[0]
        return f"oracle call {first.index + 1} ({first.name}) fails: {first.error}"
    if not verdict.matched:
        return "the oracle plan does not verify against the ground truth"
    return None


def _rollout_reasons(
    ref: RolloutRef, task: Task, env: BaseEnvironment | None, config: FlagConfig, reward_max: float
) -> list[Reason]:
    if council.council_block(ref.row) is not None:
        return _council_reasons(ref, task, env, config)
    out: list[Reason] = []
    verdict = ref.verdict
    reward = ref.reward
    graded = roles.is_graded(verdict)
    errors = []
    if verdict is None:
        errors.append("no verdict recorded")
    else:
        for key in ("error", "abstain", "abstained"):
            if verdict.get(key):
                errors.append(f"the verdict says {key}: {verdict[key]}")
    if reward is None:
        errors.append(f"reward is not a number ({ref.row.get('reward')!r})")
    if env is not None:
        mode = verdict.get("mode") if verdict else None
        try:
            fresh = env.verify(task, ref.calls(), mode)
        except Exception as exc:  # a crash here is the signal, not a reason to stop flagging
            errors.append(f"the verifier raised {type(exc).__name__}: {exc}")
        else:
            if verdict is not None and isinstance(verdict.get("matched"), bool) and fresh.matched != verdict["matched"]:
                errors.append(f"recorded matched={verdict['matched']} but a fresh verify gives matched={fresh.matched}")
            elif graded and isinstance(verdict.get("reward"), int | float) and abs(fresh.reward - verdict["reward"]) > 1e-9:
                errors.append(f"recorded graded reward {verdict['reward']:.6g} but a fresh verify gives {fresh.reward:.6g} "
                              f"({fresh.details.get('label')})")
    if errors:
        out.append(Reason("verifier_error", "; ".join(errors)))

    if reward is not None:
        share = reward / reward_max if reward_max else reward
        lo, hi = config.partial_band
        near = []
        if lo <= share <= hi:
            near.append(f"reward {reward:g} is {share:.0%} of the maximum {reward_max:g}")
        rlo, rhi = config.ratio_band
        components = ref.og.get("reward_components")
        for name, value in (components if isinstance(components, dict) else {}).items():
            is_ratio = name.rsplit("/", 1)[-1] in config.ratio_components and isinstance(value, int | float)
            if is_ratio and rlo <= value < rhi:
                near.append(f"{name} = {value:.4g}, just under 1")
        if near and not graded:  # a graded verdict's margins are low_margin's (its environment's review_findings)
            out.append(Reason("near_threshold", "; ".join(near)))
        if share >= config.high_reward:
            n_calls, n_invalid = _calls_count(ref)
            gt = len(task.ground_truth)
            odd = []
            if n_invalid >= config.invalid_calls:
                odd.append(f"{n_invalid} invalid calls")
            limit = max(config.length_ratio * gt, gt + config.length_slack)
            if n_calls > limit:
                odd.append(f"{n_calls} calls against {gt} in the ground truth")
            if gt and n_calls == 0:
                odd.append(f"no tool call, the ground truth has {gt}")
            if odd:
                out.append(Reason("odd_high_reward", f"reward {reward:g} with " + ", ".join(odd)))
    if verdict is not None and verdict.get("modes_disagree"):
        other = verdict.get("other_mode_reward")
        out.append(Reason("modes_disagree", f"{verdict.get('mode')} gives {reward}, {verdict.get('other_mode')} gives {other}"))
    if graded:
        rules = env if env is not None else roles.rules_env(task.environment_name)
        if rules is not None:
            found = rules.review_findings(task, verdict or {}, roles.call_statuses(ref.row), config.bands)
            out += [Reason(c, d) for c, d in found]
        replayed = env.replay_episode(task, calls=ref.calls()) if env is not None else None
        if replayed is not None:
            out += [Reason(c, d) for c, d in replayed.findings]
        return _merge(out)
    return out


def _merge(reasons: list[Reason]) -> list[Reason]:
    """One reason per code, details joined (a rule may be met more than one way)."""
    merged: dict[str, Reason] = {}
    for r in reasons:
        if r.code in merged:
            merged[r.code].detail += "; " + r.detail
        else:
            merged[r.code] = Reason(r.code, r.detail)
    return list(merged.values())


def _council_reasons(ref: RolloutRef, task: Task, env: BaseEnvironment | None, config: FlagConfig) -> list[Reason]:
    """A council item: the recorded verdict's sanity, then review/council.py's rules."""
    out = []
    if ref.verdict is None or ref.reward is None:
        out.append(Reason("verifier_error", f"the council row has no verdict or reward ({ref.row.get('reward')!r})"))
    rules = env if env is not None else roles.rules_env(task.environment_name)
    out += [Reason(c, d) for c, d in council.council_findings(ref.row, task, env, rules, config.bands)]
    return _merge(out)


@dataclass
class FlagRunResult:
    report: FlagReport
    added: int
    refreshed: int
    world: dict[str, Any]


def flag_run(
    run_dir: Path,
    store: Store,
    config: FlagConfig | None = None,
    world: str | Path | dict[str, Any] | None = None,
    envs: Environments | None = None,
    run: str | None = None,
    round: int | None = None,
    actor: str = "flagger",
    tasks: str | Path | None = None,
) -> FlagRunResult:
    """Read a run folder, flag its rollouts and queue them in the store (re-flagging refreshes
    reasons and priorities and keeps every decision already made). `tasks` names the task rows a
    council run was played from (default: its run.json's)."""
    run_dir = Path(run_dir)
    spec = spec_for_run(run_dir, world)
    envs = envs or Environments()
    run = run or run_dir.resolve().name
    read = read_run(run_dir, tasks)
    problems = list(read.problems)
    failed_worlds: dict[str, str] = {}

    def env_for(ref: RolloutRef, task: Task) -> BaseEnvironment | None:
        mode = (ref.verdict or {}).get("mode")
        try:
            return envs.get(task.environment_name, spec, mode if isinstance(mode, str) else None)
        except (WorldSpecError, KeyError, TypeError, ValueError) as exc:
            failed_worlds.setdefault(str(exc), task.environment_name)
            return None

    report = flag_rows(read.rows, config, env_for, run)
    problems += [f"no environment ({name}): {why}; replay-based checks skipped" for why, name in failed_worlds.items()]
    report.problems = problems + report.problems
    items = []
    for it in report.items:
        row = it.ref.row
        try:
            task = it.ref.task()
            difficulty = _difficulty(task)
            category = task.category
        except TaskFormatError:
            difficulty, category = None, row.get("category")
        items.append({
            "key": it.key, "run": run, "source": it.ref.source, "line": it.ref.line, "task_id": it.ref.task_id,
            "step": it.ref.step, "sample_index": it.sample_index, "category": category, "difficulty": difficulty,
            "reward": it.ref.reward, "priority": it.priority, "reasons": [r.to_dict() for r in it.reasons],
            "row": row, "group": it.group, "world": spec,
        })
    added, refreshed = store.upsert_items(items, actor=actor, round=round)
    return FlagRunResult(report, added, refreshed, spec)
