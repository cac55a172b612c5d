"""One evaluation flow, for `officegym eval` and the pipeline's evaluation stages: the settings an
evaluation runs with, and `evaluate`, which rolls a policy out over tasks into a run folder (resuming
what is there) under a progress bar and says what came of it.

The callers keep their edges: the CLI takes its tasks, environment and policy from its options and
prints and exits non-zero; the pipeline takes them from its config, adds its BFCL subset and
reference examples, and raises. Each writes its own run.json, metrics and report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.agent.loop import LoopConfig, RewardFn
from officegym.core.environment import BaseEnvironment
from officegym.core.policy import Policy, SamplingParams
from officegym.core.rollout_row import error_source, retryable
from officegym.core.task import Task
from officegym.eval import run
from officegym.eval.defaults import EVAL_DEFAULTS, settings_line
from officegym.progress import Stage, heartbeat, policy_activity, progress


@dataclass(frozen=True)
class EvalSettings:
    """How an evaluation runs: samples per task, the episode and sampling settings (EVAL_DEFAULTS
    unless given), the verification mode (None: the environment's) and the rollouts played at once."""

    k: int = 1
    max_steps: int = EVAL_DEFAULTS.max_steps
    temperature: float = EVAL_DEFAULTS.temperature
    max_new_tokens: int = EVAL_DEFAULTS.max_new_tokens
    max_tool_output_chars: int | None = EVAL_DEFAULTS.max_tool_output_chars  # None: never cut
    seed: int | None = EVAL_DEFAULTS.seed
    mode: str | None = None
    concurrency: int = 64

    def loop_config(self) -> LoopConfig:
        return LoopConfig(max_steps=self.max_steps, max_tool_output_chars=self.max_tool_output_chars, mode=self.mode,
                          params=SamplingParams(temperature=self.temperature, max_new_tokens=self.max_new_tokens,
                                                seed=self.seed))

    def line(self) -> str:
        """The settings in one line, as an evaluation starts."""
        return settings_line(self.max_steps, self.temperature, self.max_new_tokens, self.max_tool_output_chars,
                             self.seed, self.k)


@dataclass
class Evaluation:
    """The run folder's rollout rows (earlier ones included) and how many were new or already there."""

    rows: list[dict[str, Any]]
    new: int
    skipped: int

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Rows the model backend failed: not scored, retried by a rerun."""
        return [r for r in self.rows if retryable(r)]

    @property
    def broken(self) -> list[dict[str, Any]]:
        """Rows the environment or a scripted policy failed: kept as error rows, not retried."""
        return [r for r in self.rows if error_source(r) in ("environment", "policy")]


def evaluate(env: BaseEnvironment, tasks: Sequence[Task], policy: Policy, out: Path, settings: EvalSettings, *,
             console: Any, label: str, reward_fn: RewardFn | None = None, stage: Stage | None = None,
             start: Callable[[Callable[[], None]], Any] | None = None, env_spec: Any = None) -> Evaluation:
    """Roll `policy` out `settings.k` times over `tasks` into out/rollouts.jsonl, resuming what is
    there, under a progress bar named `label` whose heartbeat shows the policy's activity (or the
    caller's `stage`) from the first second. `start(refresh)`, run under it, is the caller's setup
    before the first rollout (a preflight that loads the model, run.json); it may return a Ray fleet
    to play the episodes on, closed at the end (`env_spec` says how its workers build `env`).
    Raises what eval/run.py's run_eval raises (PolicyUnusable, ValueError); rows written stay."""
    with progress(console) as bar:
        job = bar.add_task(label, total=len(tasks) * settings.k, info="")
        # from the first second: a model can load, and answer its first call, for minutes
        with heartbeat(bar, job, lambda: policy_activity(policy, stage)) as beat:
            fleet = start(beat) if start is not None else None
            try:
                result = run.run_eval(env, list(tasks), policy, out, k=settings.k, config=settings.loop_config(),
                                      reward_fn=reward_fn, concurrency=settings.concurrency,
                                      progress=lambda n: (beat(), bar.advance(job, n)), fleet=fleet, env_spec=env_spec)
            finally:
                if fleet is not None:
                    fleet.close()
    return Evaluation(result.rows, result.new, result.skipped)
