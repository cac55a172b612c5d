"""`officegym pipeline`: world -> tasks -> baselines -> eval -> SFT -> eval -> GRPO -> eval -> report.

Every stage writes into one run folder and is skipped when its output is already there, so an
interrupted pipeline resumes by running the same command again. The resolved config is saved as
`config.yaml` in the run folder.

The environment (`env`) decides what the stages do, by what it declares (core/environment.py): one
that takes a world gets the world stage (its own world generator); one that takes none (the roles)
has the world stage recorded as not needed in stages.json. Its tasks come from sdg's templates over
the world when it declares `sdg_templates` (the workplace), else from its own generator. SFT
imitates the oracle's rollouts on the train split for environments that generate their own tasks
(`sft_data: auto`), and the baselines stage evaluates scripted policies (greedy and oracle for the
roles) on the same tasks as the models, for the report to put beside them.

This module holds the stages' order, resume, the stage records and timings; the stages' bodies
are functions over the run's context (context.py): world_tasks.py, evaluation.py, training.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from officegym.core import registry
from officegym.core.files import atomic_write
from officegym.pipeline import evaluation, training, world_tasks
from officegym.pipeline.config import STAGES, PipelineConfig, PipelineError
from officegym.pipeline.context import RunContext
from officegym.pipeline.report import write_pipeline_report
from officegym.pipeline.resume import check as check_resume
from officegym.pipeline.resume import record
from officegym.pipeline.review import run_review_rounds
from officegym.train.config_files import save_config


class Pipeline(RunContext):
    """Runs the config's stages into its run folder (`out_dir`), skipping those already done. The
    stages are functions over the run's context (context.py), which a Pipeline is."""

    def __init__(self, cfg: PipelineConfig, console: Any = None):
        super().__init__(cfg, Path(cfg.out_dir), console)
        self.ran: list[str] = []
        self.skipped: list[str] = []
        self.not_needed: list[str] = []

    def check_setup(self) -> None:
        """Refuse, before any stage runs, a config the environment cannot follow; the message says why."""
        from officegym.core.environment import EnvironmentSetupError

        name, t = self.cfg.env, self.cfg.tasks
        try:
            declared = registry.environment_class(name)
        except EnvironmentSetupError as exc:
            raise PipelineError(f"env: {exc}") from None
        own_tasks = registry.has_task_generator(name)
        seats = declared.seats
        if seats:
            raise PipelineError(f"env: {self.env_name} is a multi-agent environment (seats: {', '.join(seats)}); the "
                                "pipeline trains one policy on single-agent episodes. Train a role that sits in it "
                                "(roles/cto, roles/cost, roles/risk, roles/reconcile) instead")
        if declared.sdg_templates:
            if t.demonstrated is not None and t.templates is not None and set(t.demonstrated) - set(t.templates):
                raise PipelineError(f"tasks.demonstrated: {', '.join(sorted(set(t.demonstrated) - set(t.templates)))} "
                                    "not in tasks.templates")
            if t.difficulty is not None:
                raise PipelineError(f"tasks.difficulty: {self.env_name} builds tasks from templates over a world; "
                                    "difficulty levels are for environments that generate their own tasks")
            return
        if not own_tasks:
            raise PipelineError(f"env: {self.env_name} has no task generator of its own and no task templates, so the "
                                "pipeline has no tasks for it")
        if self.cfg.world.path is not None and not declared.takes_world:
            raise PipelineError(f"world.path: {self.env_name} takes no world (its scenarios come from the task rows)")
        if (t.templates is not None or t.holdout_templates or t.demonstrated is not None or t.holdout_wordings
                or t.tools == "mixed"):
            raise PipelineError(f"tasks.templates / holdout_templates / holdout_wordings / demonstrated / tools: mixed "
                                f"choose workplace templates and prompts; {self.env_name} "
                                "generates its own tasks (tasks.difficulty chooses their levels)")

    def evaluate(self, name: str, model: str, out: Path | None = None, tasks: list[Any] | None = None,
                 max_steps: int | None = None, k: int | None = None) -> dict[str, Any]:
        """`evaluation.evaluate` in this run (the review rounds and benchmarks call it)."""
        return evaluation.evaluate(self, name, model, out, tasks, max_steps, k)

    def train_grpo(self, start: str, out_dir: Path, sections: dict[str, Any], tasks: Path | None = None) -> None:
        """`training.train_grpo` in this run (the review rounds retrain with it)."""
        training.train_grpo(self, start, out_dir, sections, tasks)

    def run(self, hook: Callable[[str], None] | None = None) -> list[str]:
        self.check_setup()
        self._check_same_environment()
        baselines = self.baseline_specs()
        steps: dict[str, tuple[Callable[[], None], list[Path]]] = {
            "world": (lambda: world_tasks.world(self), [self.world_dir / "processed" / "emails.csv"]),
            # generation.json is the last file either generator writes
            "tasks": (lambda: world_tasks.tasks(self), [self.tasks_dir / "generation.json"]),
            "baselines": (lambda: evaluation.baselines(self), [self.baseline_dir(b) / "metrics.json" for b in baselines]),
            "eval_base": (lambda: self.evaluate("eval_base", self.cfg.model), [self.out / "eval_base" / "metrics.json"]),
            "sft": (lambda: training.sft(self), [self.out / "sft" / "model"]),
            "eval_sft": (lambda: self.evaluate("eval_sft", self.model_after("sft")), [self.out / "eval_sft" / "metrics.json"]),
            "grpo": (lambda: training.grpo(self), [self.out / "grpo" / "model"]),
            "eval_grpo": (lambda: self.evaluate("eval_grpo", self.model_after("grpo")), [self.out / "eval_grpo" / "metrics.json"]),
            "review": (lambda: run_review_rounds(self), [self.out / "review" / f"round_{self.cfg.review.rounds:03d}" / "summary.json"]),
            "report": (lambda: write_pipeline_report(self.out), [self.out / "report.md"]),
        }
        done = [stage for stage in STAGES if stage not in ("review", "report") and steps[stage][1]
                and all(p.exists() for p in steps[stage][1])]
        check_resume(self, done)  # before anything is written (pipeline/resume.py)
        self.out.mkdir(parents=True, exist_ok=True)
        save_config(self.cfg, self.out / "config.yaml")
        self._check_load()
        for stage in STAGES:
            if stage not in self.cfg.stages:
                continue
            fn, done = steps[stage]
            if (stage == "review" and self.cfg.review.rounds == 0) or (stage == "baselines" and not baselines):
                continue
            if stage == "world" and not self.takes_world:
                self._record_not_needed(stage, f"{self.env_name} takes no world (its scenarios come from the task rows)")
                continue
            if stage != "report" and all(p.exists() for p in done):
                self.skipped.append(stage)
                self.say(f"[dim]{stage}: done already ({done[0] if len(done) == 1 else done[0].parent})[/]")
                continue
            self.say(f"[bold]{stage}[/]")
            t0 = time.perf_counter()
            try:
                fn()
            finally:  # an interrupted or failed stage keeps its time: the resumed run adds to it
                self._record_time(stage, time.perf_counter() - t0)
            record(self, stage)  # what it ran with, for a later resume to check (pipeline/resume.py)
            self.ran.append(stage)
            if hook is not None:
                hook(stage)
        return self.ran

    def _check_load(self) -> None:
        """Say so when other processes keep cores busy: every stage then runs slower."""
        from officegym.machine import load_advice, measure_load

        advice = load_advice(measure_load(0.3))
        if advice:
            self.say(f"[yellow]{advice}[/]")

    def _check_same_environment(self) -> None:
        """A run folder holds one environment's stages: resuming it for another would skip stages
        whose outputs belong to the first (its tasks, its models) and report them as the second's."""
        saved = self.out / "config.yaml"
        if not saved.exists():
            return
        import yaml

        try:
            before = (yaml.safe_load(saved.read_text()) or {}).get("env", "workplace_assistant")
        except (OSError, ValueError, AttributeError, ImportError, yaml.YAMLError, RecursionError):
            return
        if isinstance(before, str) and registry.canonical_name(before) != self.env_name:
            raise PipelineError(f"{self.out} holds a pipeline run of {before}, not {self.env_name}: choose another "
                                "out_dir (or remove that folder)")

    def _record_not_needed(self, stage: str, why: str) -> None:
        """A stage this environment does not need: said, and kept in stages.json for the report."""
        self.not_needed.append(stage)
        self.say(f"[dim]{stage}: not needed ({why})[/]")
        path = self.out / "stages.json"
        try:
            record = json.loads(path.read_text()) if path.exists() else {}
        except ValueError:
            record = {}
        if not isinstance(record, dict) or not isinstance(record.get("not_needed"), dict):
            record = {"not_needed": {}}
        if record["not_needed"].get(stage) != why:
            record["not_needed"][stage] = why
            atomic_write(path, json.dumps(record, indent=1) + "\n")

    def _record_time(self, stage: str, seconds: float) -> None:
        """Seconds per stage in timings.json (a resumed stage adds its new time to the old)."""
        path = self.out / "timings.json"
        try:
            timings = json.loads(path.read_text()) if path.exists() else {}
        except ValueError:
            timings = {}
        if not isinstance(timings, dict):
            timings = {}
        try:
            before = float(timings.get(stage, 0.0))
        except (TypeError, ValueError):
            before = 0.0
        timings[stage] = round(before + seconds, 2) if stage != "report" else round(seconds, 2)
        atomic_write(path, json.dumps(timings, indent=1) + "\n")
