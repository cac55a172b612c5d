"""The pipeline's config: its sections, the stages in order, and the error a stage raises."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from officegym.bench.bfcl_pipeline import BfclSection
from officegym.eval.defaults import EVAL_DEFAULTS
from officegym.train.config_files import load_config

STAGES = ("world", "tasks", "baselines", "eval_base", "sft", "eval_sft", "grpo", "eval_grpo", "review", "report")
Stage = Literal["world", "tasks", "baselines", "eval_base", "sft", "eval_sft", "grpo", "eval_grpo", "review", "report"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorldSection(_Section):
    path: str | None = Field(None, description="an existing csv_data folder; null: generate one")
    seed: int = 0
    size: Literal["small", "reference", "large"] = "reference"


class TasksSection(_Section):
    n: int = Field(300, ge=1)
    seed: int = 0
    tools: Literal["all", "domain", "mixed"] = Field(
        "domain", description="workplace: offer each task its domains' tools (domain), all 27 (all, as NeMo Gym's "
        "dataset does), or all 27 to a share all_tools_share of the tasks and the domains' to the rest (mixed)")
    all_tools_share: float = Field(0.5, ge=0.0, le=1.0, description="workplace, tools: mixed: tasks offered all 27 tools")
    holdout_templates: int = Field(0, ge=0, description="workplace: templates held out whole for the test split")
    wordings: Literal["base", "composed"] = Field(
        "composed", description="workplace: each template's phrasings as written (base), or composed with surface "
        "features: sentence frames, verb synonyms, quotes, name case, typos (envs/workplace/tasks/surface.py)")
    holdout_wordings: int | list[str] = Field(
        0, description="workplace, composed wordings: K surface features drawn by the seed, or the features named "
        "('frame:could_you', 'typo:yes', ...), never trained on: their tasks go to the test split whole")
    do_nothing_weight: int = Field(4, ge=1, description="workplace: draws per round of a template that can ask to "
                                   "change nothing (more: more \"change nothing\" tasks)")
    do_nothing_max: float = Field(0.2, ge=0.0, le=1.0, description="workplace: the most \"change nothing\" tasks may make up")
    per_template_max: int | None = Field(None, ge=1, description="workplace: at most N tasks of a template per world "
                                         "(templates with many possible fills would otherwise crowd out the rest)")
    do_nothing_per_template_max: int | None = Field(None, ge=1, description="workplace: at most N \"change nothing\" "
                                                    "tasks of a template per world (default: per_template_max)")
    templates: list[str] | None = Field(None, description="workplace: only these template ids (default: all)")
    demonstrated: list[str] | None = Field(
        None, description="templates whose ground truth SFT and GRPO's SFT term may imitate; the others are "
        "verifier-only: GRPO learns them from their rewards alone (default: all demonstrated)")
    difficulty: tuple[int, int] | None = Field(None, description="environments with their own generator (roles): the "
                                               "levels drawn, LO..HI within 1..10 (default: the generator's range)")
    fractions: tuple[float, float, float] = Field((0.8, 0.1, 0.1), description="train / validation / test shares")
    hf: bool = Field(False, description="also write the splits as a Hugging Face DatasetDict into RUN/tasks/hf "
                     "(datasets.load_from_disk; needs the `datasets` package)")

    @field_validator("difficulty")
    @classmethod
    def _levels(cls, v: tuple[int, int] | None) -> tuple[int, int] | None:
        if v is not None and not 1 <= v[0] <= v[1] <= 10:
            raise ValueError(f"must be [LO, HI] with 1 <= LO <= HI <= 10, got {list(v)}")
        return v

    @field_validator("fractions")
    @classmethod
    def _shares(cls, v: tuple[float, float, float]) -> tuple[float, float, float]:
        if any(f < 0 for f in v) or abs(sum(v) - 1) > 1e-9:
            raise ValueError(f"shares must be >= 0 and sum to 1, got {list(v)}")
        return v


class EvalSection(_Section):
    split: Literal["validation", "test"] = "validation"
    max_tasks: int | None = Field(64, ge=1)
    per_subset: int | None = Field(None, ge=1, description="the first N tasks of each subset of the split (new fills "
                                   "of trained templates, held-out templates, held-out wordings) instead of "
                                   "max_tasks; metrics and the report give each subset apart")
    reference: str | None = Field(None, description="workplace: also evaluate each model on NeMo Gym's example tasks in "
                                  "their own world (a folder with example.jsonl or data/example.jsonl and csv_data/); "
                                  "auto: $OFFICEGYM_REFERENCE or the NeMo Gym reference cache, skipped when neither "
                                  "has them; null: none")
    base_max_tasks: int | None = Field(None, ge=1, description="eval_base's own cap (the first tasks of the same "
                                       "split); null: max_tasks. An untrained model writes to its token limit "
                                       "every turn, so its evaluation costs the most and says the least")
    k: int = Field(1, ge=1)
    max_steps: int = Field(EVAL_DEFAULTS.max_steps, ge=1)
    max_new_tokens: int = Field(EVAL_DEFAULTS.max_new_tokens, ge=1)
    temperature: float = Field(EVAL_DEFAULTS.temperature, ge=0)
    batch_size: int | None = Field(None, ge=1, description="hf: rows decoded together; null: 8 on a CPU, 64 on a GPU")
    threads: int | None = Field(None, ge=1)
    dtype: Literal["auto", "float32", "bfloat16"] = Field("auto", description="weights for hf evaluation; bfloat16 "
                                                          "decodes faster on CPUs with AMX/AVX512-BF16")
    cuda_graphs: bool = Field(True, description="hf evaluation on a GPU: replay each batch's decoding step from a CUDA graph")
    max_tool_output_chars: int | None = EVAL_DEFAULTS.max_tool_output_chars
    backend: Literal["hf", "vllm"] = Field("hf", description="vllm: the process's vLLM engine (started once, weights "
                                           "swapped per stage; pip install 'officegym[vllm]')")
    baselines: list[str] | None = Field(None, description="policies evaluated by the baselines stage on the same tasks "
                                        "as the models (scripted: oracle, greedy, role-random:SEED, noop, random:SEED); "
                                        "null: greedy and oracle where the greedy baseline plays the environment (the "
                                        "roles), none elsewhere; []: none")
    vllm: dict[str, Any] = Field(default_factory=dict, description="vllm.LLM options for the vllm backend (dtype, ...)")


class ReviewSection(_Section):
    """The active-learning loop after GRPO (issue: human review): flag, import reviews, retrain."""

    rounds: int = Field(0, ge=0, description="active-learning rounds; 0: no review stage")
    store: str | None = Field(None, description="the review store (default: RUN/review/review.sqlite)")
    reviews: list[str] = Field(default_factory=list, description="review files to import each round "
                               "(decisions.jsonl, Label Studio or Argilla exports)")
    audit_share: float = Field(0.05, ge=0.0, le=1.0, description="share of unflagged groups queued as a random audit")
    retrain: Literal["grpo", "none"] = Field("grpo", description="retrain on the reviewed pool each round, or only flag")
    grpo: dict[str, Any] = Field(default_factory=dict, description="overrides of the grpo section for retraining")


class PipelineConfig(_Section):
    out_dir: str = "runs/pipeline"
    env: str = Field("workplace_assistant", description="the environment trained and evaluated (officegym envs): the "
                     "workplace, or one that generates its own tasks such as roles/cost")
    model: str = Field("smollm2-135m", description="the starting policy: smollm2-135m, a local path (also as hf:PATH) "
                       "or a hub id")
    stages: list[Stage] = list(STAGES)
    sft_data: Literal["auto", "ground_truth", "oracle"] = Field(
        "auto", description="what SFT imitates. ground_truth: the trainer replays each train task's ground truth "
        "(sft.sft.calls_per_turn decides the turns); oracle: the oracle policy's rollouts on the train split "
        "(RUN/sft_data), turn by turn as the task plans them (a role's lookups, then the answer that uses their "
        "outputs), kept when the verifier gives them the full reward; auto: oracle for environments that generate "
        "their own tasks, ground_truth otherwise")
    world: WorldSection = Field(default_factory=WorldSection)
    tasks: TasksSection = Field(default_factory=TasksSection)
    eval: EvalSection = Field(default_factory=EvalSection)
    sft: dict[str, Any] = Field(default_factory=dict, description="SFT config sections (as in configs/sft_*.yaml)")
    grpo: dict[str, Any] = Field(default_factory=dict, description="GRPO config sections (as in configs/grpo_*.yaml)")
    review: ReviewSection = Field(default_factory=ReviewSection)
    bfcl: BfclSection | None = Field(None, description="a BFCL subset run by the listed evaluation stages "
                                     "(pip install --no-deps bfcl-eval); null: none")


    @field_validator("model")
    @classmethod
    def _model_path(cls, v: str) -> str:
        # hf:PATH names the same checkpoint as PATH: training loads it, evaluation picks its backend
        from officegym.agent.policies import PolicySpec

        spec = PolicySpec(v)
        return spec.arg if spec.kind == "hf" and v.startswith("hf:") and spec.arg else v


class PipelineError(RuntimeError):
    """A stage cannot run (its input is missing or broken); the message names the stage."""


def load_pipeline_config(path: str | None, overrides: list[str]) -> PipelineConfig:
    """The pipeline config from a YAML file (None: the defaults) with dotted.key=value overrides."""
    return load_config(PipelineConfig, path, overrides)
