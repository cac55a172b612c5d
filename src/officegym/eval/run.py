"""`officegym eval`: run a policy k times over every task, append rollouts as they finish, resume."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.agent.loop import LoopConfig, run_rollouts
from officegym.core.environment import BaseEnvironment
from officegym.core.files import load_appendable_jsonl
from officegym.core.policy import Policy, PolicyUnusable
from officegym.core.resumable import ResumableRows
from officegym.core.rollout_row import retryable, rollout_row, row_key
from officegym.core.task import Task

ROLLOUTS = "rollouts.jsonl"


@dataclass
class EvalResult:
    rows: list[dict[str, Any]]
    new: int
    skipped: int


def backend_failed(row: dict[str, Any]) -> bool:
    """The rollout stopped because the model backend failed (not because of anything the model did,
    nor because the environment or a scripted policy raised: see rollout_row.error_source)."""
    return retryable(row)


def load_rollouts(path: Path) -> list[dict[str, Any]]:
    """Rows already written (a torn last line from an interrupted run is dropped)."""
    return load_appendable_jsonl(path)


def run_eval(
    env: BaseEnvironment,
    tasks: list[Task],
    policy: Policy | None,
    out_dir: Path,
    k: int = 1,
    config: LoopConfig | None = None,
    reward_fn: Any = None,
    concurrency: int = 64,
    max_batch: int = 32,
    progress: Any = None,
    fleet: Any = None,
    env_spec: Any = None,
) -> EvalResult:
    """Roll out every (task, sample) not already in out_dir/rollouts.jsonl and append each as it
    finishes. `progress(advance)` is called once per finished rollout. With `fleet` (an
    agent.ray_rollouts.RolloutFleet) the episodes run on its Ray workers, in environments built
    from `env_spec` (an EnvSpec of `env`), and their rows stream into the same file. A policy that
    finds it can serve none of them (its `unusable`, a PolicyUnusable) stops the run: that error is
    raised, and the rows written so far stay."""
    # A rollout whose model call failed (backend error) is not done: it runs again, replacing the row.
    # An error of the environment or of a scripted policy would recur: its row stays (--fresh, or
    # deleting the row, runs it again once the cause is fixed).
    store = ResumableRows(out_dir / ROLLOUTS, row_key, retry=retryable)
    jobs = store.todo(((t, s) for t in tasks for s in range(k)), lambda job: (str(job[0].id), job[1]))
    skipped = len(tasks) * k - len(jobs)
    if progress is not None and skipped:
        progress(skipped)
    with store.appending() as append:

        def on_done(task: Task, traj) -> None:
            append(rollout_row(task, traj))
            if progress is not None:
                progress(1)
            # every rollout left would fail the same way (on a fleet, `policy` is None: its workers hold theirs)
            if policy is not None and isinstance(policy.unusable, PolicyUnusable):
                raise policy.unusable

        async def main() -> None:
            try:
                await run_rollouts(env, jobs, policy, config or LoopConfig(), reward_fn, concurrency, max_batch, on_done)
            finally:
                await policy.aclose()

        if fleet is not None:
            from officegym.agent.ray_workers import RunSetup

            if env_spec is None:
                raise ValueError("a Ray evaluation needs the environment's spec (env_spec) to build it on the workers")
            fleet.run(jobs, RunSetup(env_spec, config or LoopConfig(), reward_fn, max_batch=max_batch), on_done)
        else:
            asyncio.run(main())
    return EvalResult(store.rows, len(store.new), skipped)
