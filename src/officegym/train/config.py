"""The SFT and GRPO run configs: typed pydantic sections with their defaults and checks.

Read from YAML with dotted-key overrides by train/config_files.py (`load_config`, `build_config`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(Section):
    name: str = Field("smollm2-135m", description="smollm2-135m, a local model directory or a hub id")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["auto", "fp32", "bf16"] = Field(
        "auto", description="auto: bf16 autocast on a GPU or CPU with bf16 hardware (AMX, AVX512-BF16), else fp32; "
        "weights stay fp32 either way"
    )
    chat_template: Literal["auto", "officegym", "officegym-signatures", "model"] = Field(
        "auto", description="auto: the model's own template when it renders tools (a model trained here keeps the one "
        "it was trained with), else officegym's (tools as JSON lines); officegym-signatures: tools as compact "
        "signatures, the workplace's prompts 25-38% shorter (benchmarks/tool_format_tokens.py)")
    threads: int | None = Field(None, ge=1, description="torch CPU threads (default: the cores this process may use)")
    gradient_checkpointing: bool = False
    cuda_graphs: bool = Field(True, description="on a GPU, hf: generation replays each batch's decoding step from a CUDA graph")


class LoraConfig(Section):
    enabled: bool = False
    r: int = Field(16, ge=1)
    alpha: float = 32.0
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | str = "all-linear"
    last_layers: int | None = Field(
        None, ge=1, description="adapters on the last N decoder layers only: the backward pass stops below them "
        "(cheaper updates); null: every layer")


class OptimConfig(Section):
    lr: float = Field(5e-6, gt=0)
    min_lr: float = Field(5e-7, ge=0)
    schedule: Literal["cosine", "linear", "constant"] = "cosine"
    warmup_steps: int = Field(0, ge=0)
    weight_decay: float = Field(0.01, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    grad_clip: float | None = Field(1.0, description="max global grad norm; null: no clipping")


class DataConfig(Section):
    tasks: str | None = Field(None, description="task JSONL (NeMo Gym rows with ground_truth)")
    val_tasks: str | None = Field(None, description="held-out task JSONL; without it val_fraction of tasks is held out")
    val_fraction: float = Field(0.1, ge=0.0, lt=1.0)
    max_val_tasks: int | None = Field(None, ge=1)
    val_sample: Literal["first", "per_template"] = Field(
        "first", description="which max_val_tasks of the held-out tasks validate: the first in the file, or taken "
        "in turn from each template (every template about equally)")
    env: str = Field("workplace", description="environment name in the registry (workplace, toy_pick, ...)")
    world: str | None = Field(None, description="world folder for the workplace env (default: generated seed 0)")
    verify_mode: str | None = None
    tools: Literal["all", "domain"] = Field("all", description="domain: offer only the task's domain tools (short prompts)")
    templates: list[str] | None = Field(None, description="only the tasks of these templates, for training and "
                                        "validation; null: all")
    shuffle: bool = True


class RayRolloutConfig(Section):
    """Where the rollout phase runs with `rollout.backend: ray` (agent/ray_rollouts.py)."""

    address: str | None = Field(None, description="null: a local cluster on this machine, bound to 127.0.0.1; auto: "
                                "the cluster this machine belongs to; HOST:PORT or ray://HOST:PORT")
    workers: int = Field(2, ge=1, description="rollout worker actors (environment sessions and the agent loop)")
    worker_cpus: float = Field(1.0, gt=0)
    engines: int = Field(1, ge=1, description="engine actors serving the trained policy (backend hf or vllm); "
                         "the trainer pushes its weights to them after every update")
    engine_cpus: float = Field(1.0, gt=0, description="CPUs per engine (also its torch threads with backend hf)")
    engine_gpus: float | None = Field(None, ge=0, description="GPUs per engine; null: 1 when the cluster has GPUs")
    max_restarts: int = Field(2, ge=0, description="restarts of a rollout worker that dies (its episodes are retried)")
    env_vars: dict[str, str] = Field(default_factory=dict, description="environment variables of the actors (e.g. "
                                     "VLLM_CPU_KVCACHE_SPACE, HF_HOME), set through Ray's runtime environment")


class RolloutConfig(Section):
    backend: Literal["local", "ray"] = Field("local", description="local: episodes in this process; ray: on Ray "
                                             "actors (rollout.ray), the policy served by engine actors")
    ray: RayRolloutConfig = Field(default_factory=RayRolloutConfig)
    max_steps: int = Field(6, ge=1, description="model turns per episode")
    max_new_tokens_per_turn: int = Field(256, ge=1)
    max_new_tokens_per_episode: int | None = Field(1024, ge=1, description="sampled tokens per episode; null: no cap")
    max_tool_output_chars: int | None = Field(2000, ge=1)
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    concurrency: int = Field(64, ge=1)
    batch_size: int = Field(16, ge=1, description="rows decoded together by the HF backend")


class LossConfig(Section):
    eps_low: float = Field(0.2, ge=0)
    eps_high: float = Field(0.2, ge=0)
    dual_clip: float | None = None
    aggregation: Literal["token_mean", "seq_mean", "constant"] = "token_mean"
    constant_normaliser: float | None = Field(None, gt=0, description="for aggregation=constant (Dr. GRPO); default: max episode tokens")
    kl_beta: float = Field(0.0, ge=0)
    is_cap: float | None = Field(None, gt=0, description="cap of the sampler importance weight (vLLM); null: off")
    entropy: bool = Field(True, description="log the policy entropy over trained tokens")


class SFTMixConfig(Section):
    """The SFT loss mixed into each GRPO step (train/sft_mix.py)."""

    coef: float = Field(0.0, ge=0, description="weight of the mean per-token SFT loss added to the GRPO loss; 0: off")
    examples: int = Field(8, ge=1, description="ground-truth conversations of training tasks per step")
    calls_per_turn: Literal["all", "one"] = Field("all", description="as sft.calls_per_turn: the SFT stage's choice")
    final_answer: str = "Done."
    max_length: int = Field(4096, ge=8, description="longer conversations are dropped (counted)")
    templates: list[str] | None = Field(None, description="only the ground truth of these templates' tasks; the "
                                        "others are learnt from their rewards alone. null: every training task's")
    prompt_grad: bool = Field(True, description="false: the prompt the conversations of a micro-batch share runs "
                              "without gradient (sft.prompt_grad: false does the same in SFT): a cheaper term")
    draw: Literal["any", "shared_prompt"] = Field(
        "any", description="any: the step's conversations are drawn from all; shared_prompt: from the conversations "
        "sharing the prompt of one drawn at random (one tool set on the workplace), so the term runs that prompt once: "
        "each conversation is as likely as under any, and a step costs ~1 prompt instead of ~1 per tool set (the quickstart "
        "keeps any: one of two seeds missed its gain; docs/benchmarks.md)")


class GRPOConfig(Section):
    max_steps: int = Field(100, ge=1)
    num_prompts_per_step: int = Field(4, ge=1)
    num_generations_per_prompt: int = Field(4, ge=2)
    mu: int = Field(1, ge=1, description="inner epochs over each batch; 1 skips the old-logprob forward")
    micro_batch_size: int = Field(4, ge=1, description="rollouts per forward/backward (gradient accumulation)")
    micro_batch_tokens: int | None = Field(8192, ge=1, description="tokens run with gradient per micro-batch (a shared "
                                           "prefix counts once): bounds activation memory; null: rows only")
    share_prefix: bool = Field(True, description="run the prefix the rollouts of a micro-batch share (a group's prompt, "
                               "often its first turn) once, with gradient: the same loss and gradient, less compute "
                               "(train/forward.py); micro-batches then take rollouts in token order")
    prompt_grad: bool = Field(True, description="false: the shared prompt runs without gradient (the loss is exact, "
                              "the gradient drops the path through the prompt's keys and values: a cheaper update)")
    trunk_cache_mb: float = Field(512, ge=0, description="with adapters on the last layers only (lora.last_layers), "
                                  "keep the frozen first layers' outputs for the prompts the update runs, up to this "
                                  "many MB, and reuse them across steps (train/trunk.py; the same loss); 0: off")
    baseline: Literal["leave_one_out", "mean"] = "leave_one_out"
    scale: Literal["group", "batch", "none"] = "group"
    advantage_eps: float = 1e-6
    advantage_clip: float | None = None
    negative_weight: float = Field(1.0, ge=0, le=1, description="multiplies negative advantages: below 1 a group's "
                                   "failures push less than its successes pull (0: reinforce successes only)")
    step_without_signal: bool = Field(False, description="run the optimiser on a step whose advantages are all 0: "
                                      "AdamW's momentum then repeats earlier updates with no new evidence")
    dynamic_sampling: Literal["off", "skip", "refill"] = "off"
    max_refill_batches: int = Field(4, ge=1, description="extra prompt batches sampled per step to refill groups")
    curriculum: Literal["uniform", "variance"] = Field("uniform", description="variance: draw prompts by the share of "
                                                        "their template's groups whose rewards varied (train/curriculum.py)")
    curriculum_floor: float = Field(0.05, gt=0, le=0.25, description="smallest draw weight of a template (variance curriculum)")
    reward: str | dict[str, Any] = Field("outcome", description="any officegym.rewards spec: outcome (the verifier's own "
                                         "score, graded where it grades), binary (1/0 on a match), shaped, "
                                         "{shaped: 0.5, binary: 0.5}")
    invalid_call_penalty: float = Field(0.0, ge=0, description="subtracted from the reward of a rollout with an invalid "
                                        "call (rewards/calls.py: malformed, unknown tool, bad arguments or refused)")
    invalid_call_advantage: float | None = Field(None, description="overrides the advantage of such rollouts (NeMo RL)")
    skip_zero_advantage: bool = Field(True, description="no forward/backward for rollouts whose advantage is 0 when "
                                      "kl_beta is 0: their loss and gradient are exactly 0 (the normaliser still counts them)")
    merge_duplicates: bool = Field(True, description="with skip_zero_advantage, forward identical rollouts of a group "
                                   "once with their advantages summed (the same gradient: the loss is linear in the "
                                   "advantage when kl_beta is 0)")
    loss: LossConfig = Field(default_factory=LossConfig)
    sft_mix: SFTMixConfig = Field(default_factory=SFTMixConfig, description="the SFT loss on ground-truth conversations "
                                  "added to every step (PPO-ptx): holds what SFT taught where groups carry no signal")


class ValidationConfig(Section):
    every: int = Field(10, ge=0, description="validate every N steps (0: never; always at the end)")
    at_start: bool = Field(False, description="also validate the starting model, logged as step 0 (GRPO): the first "
                           "point of the validation curve")
    accuracy: bool = Field(True, description="run the agent loop on the held-out tasks (greedy) and score them")
    temperature: float = 0.0
    samples: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1, description="model turns per validation episode (default: rollout's); "
                                  "set it to the evaluation's, or validation cannot see what evaluation will")
    max_new_tokens_per_turn: int | None = Field(None, ge=1, description="default: rollout's")
    overlap: bool = Field(True, description="GRPO on an in-process vLLM engine: validate a step's weights inside the "
                          "next step's rollouts (one engine batch, the same weights) instead of on their own; the "
                          "last step, a stop and other backends validate on their own")


class CheckpointConfig(Section):
    every: int = Field(10, ge=1, description="save every N steps (and on stop, and at the end)")
    keep_top_k: int = Field(3, ge=0, description="kept by the validation metric, besides the latest")
    metric: str = "val/accuracy"
    higher_is_better: bool = True
    resume: bool = Field(True, description="continue from the latest checkpoint in out_dir")
    export: Literal["last", "best"] = Field(
        "last", description="what out_dir/model holds at the end: the last step's weights, or the kept checkpoint "
        "best by `metric` (early stopping on validation; the last when none has the metric)")


class LoggingConfig(Section):
    tensorboard: bool = Field(True, description="when the tensorboard package is installed")
    wandb: bool = False
    trackio: bool = False
    project: str = "officegym"
    offline: bool = True
    write_rollouts: bool = True


class VLLMConfig(Section):
    gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    max_model_len: int | None = None
    enable_sleep_mode: bool = False
    extra: dict[str, Any] = Field(default_factory=dict, description="further vllm.LLM options")


class SFTSection(Section):
    source: Literal["ground_truth", "rollouts", "council"] = Field("ground_truth", description="ground_truth: replays "
                                                                   "of the tasks' ground truth; rollouts: eval rollout "
                                                                   "rows; council: the scripted seats' conversations "
                                                                   "at council.train_seats")
    rollouts: list[str] = Field(default_factory=list, description="eval rollouts.jsonl files (source=rollouts)")
    min_reward: float = 1.0
    calls_per_turn: Literal["all", "one"] = Field("all", description="ground-truth replay: all calls in one turn, or one per turn")
    final_answer: str = "Done."
    token_weights: dict[Literal["tool_name", "argument_values", "call_structure", "answer_text"], float] = Field(
        default_factory=dict, description="loss weight of each kind of assistant token (ground-truth replays; unnamed "
        "kinds weigh 1): e.g. {tool_name: 4} makes the choice of tool count more (benchmarks/token_loss.py)")
    detours: float = Field(0.0, ge=0.0, le=1.0, description="share of ground-truth replays with one wrong read "
                           "before a ground-truth call, answered by the environment and not trained on, so the model "
                           "learns to recover from it (train/detours.py; needs calls_per_turn: one)")
    epochs: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1, description="optimizer steps; default: epochs over the data")
    batch_size: int = Field(8, ge=1, description="conversations per optimizer step")
    micro_batch_size: int = Field(4, ge=1)
    max_length: int = Field(4096, ge=8, description="longer conversations are dropped (counted)")
    val_fraction_examples: float = Field(0.1, ge=0.0, lt=1.0, description="examples held out for validation loss")
    micro_batch_tokens: int | None = Field(8192, ge=1, description="tokens run with gradient per micro-batch (a shared "
                                           "prefix counts once): bounds activation memory; null: rows only")
    batch_by_prefix: bool = Field(False, description="draw each step's conversations from one tool set (conversations "
                                  "sharing a long prompt prefix), so the step runs that prompt once; batches are then not "
                                  "i.i.d. across tool sets")
    share_prefix: bool = Field(True, description="run the prefix the conversations of a micro-batch share (system prompt, "
                               "tool list) once, with gradient: exact loss and gradient (train/forward.py); "
                               "micro-batches then take conversations in token order")
    prompt_grad: bool = Field(True, description="false: the shared prefix runs without gradient (exact loss, truncated "
                              "gradient: a forward alone is cheaper than forward+backward; see train/forward.py)")

    @model_validator(mode="after")
    def _check_detours(self) -> SFTSection:
        if self.detours > 0 and (self.source != "ground_truth" or self.calls_per_turn != "one"):
            raise ValueError("sft.detours needs source: ground_truth and calls_per_turn: one (a detour is a turn of its own)")
        return self


class RunConfig(Section):
    """What SFT and GRPO runs share."""

    out_dir: str = "runs/run"
    # numpy's and vLLM's seeds are 32-bit; a larger one would fail deep in a run (issue 47 N6)
    seed: int = Field(0, ge=0, le=2**32 - 1)
    backend: Literal["hf", "vllm"] = "hf"
    model: ModelConfig = Field(default_factory=ModelConfig)
    lora: LoraConfig = Field(default_factory=LoraConfig)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    vllm: VLLMConfig = Field(default_factory=VLLMConfig)


class CouncilTrainConfig(Section):
    """Multi-agent GRPO on a multi-agent environment (data.env roles/council): which seats the
    trained policy plays, and who plays the others (train/council_rollouts.py)."""

    train_seats: list[str] = Field(default_factory=lambda: ["reconcile"], min_length=1,
                                   description="seats played by the policy being trained; several: self-play on the "
                                   "same weights (cto, cost, risk, reconcile)")
    seats: dict[str, str] = Field(default_factory=dict, description="the other seats' fixed policies: scripted "
                                  "(default), oracle, greedy, silent (members), or a model spec (openai:MODEL, hf:PATH)")
    max_rounds: int = Field(4, ge=1, description="council rounds (members, then the mediator)")
    teachers: list[str] = Field(default_factory=lambda: ["scripted"], min_length=1,
                                description="sft.source=council: the scripted policies whose conversations at "
                                "train_seats SFT imitates, each playing every train task: scripted, recovering "
                                "(the mediator: the cheapest plan first, the scripted plan after an objection)")

    @model_validator(mode="after")
    def _check_teachers(self) -> CouncilTrainConfig:
        bad = [t for t in self.teachers if t not in ("scripted", "oracle", "recovering")]
        if bad:
            raise ValueError(f"council.teachers: unknown teacher(s) {', '.join(map(repr, bad))}; "
                             "choose from scripted, oracle, recovering")
        if "recovering" in self.teachers and any(s != "reconcile" for s in self.train_seats):
            raise ValueError("council.teachers: recovering teaches the mediator's seat (reconcile) only")
        return self


class GRPORunConfig(RunConfig):
    grpo: GRPOConfig = Field(default_factory=GRPOConfig)
    council: CouncilTrainConfig | None = Field(None, description="multi-agent training in the council; null: one agent")

    @model_validator(mode="after")
    def _check(self) -> GRPORunConfig:
        if self.grpo.invalid_call_advantage is not None and self.grpo.invalid_call_penalty:
            raise ValueError("set grpo.invalid_call_penalty or grpo.invalid_call_advantage, not both")
        if self.council is not None and self.rollout.backend != "local":
            raise ValueError("council training plays its councils in this process: rollout.backend must be local")
        return self


# SFT's own defaults for sections it shares with GRPO; a config that sets some keys of a section
# keeps these for the others (a partial section used to fall back to GRPO's defaults entirely)
_SFT_DEFAULTS: dict[str, dict[str, Any]] = {
    "optim": {"lr": 2e-5, "min_lr": 2e-6},
    "checkpoint": {"every": 50, "metric": "val/loss", "higher_is_better": False},
    "validation": {"every": 50, "accuracy": False},
}


class SFTRunConfig(RunConfig):
    sft: SFTSection = Field(default_factory=SFTSection)
    council: CouncilTrainConfig | None = Field(None, description="sft.source=council: the seats to learn; its "
                                               "accuracy validation plays councils")
    optim: OptimConfig = Field(default_factory=lambda: OptimConfig(**_SFT_DEFAULTS["optim"]))
    checkpoint: CheckpointConfig = Field(default_factory=lambda: CheckpointConfig(**_SFT_DEFAULTS["checkpoint"]))
    validation: ValidationConfig = Field(default_factory=lambda: ValidationConfig(**_SFT_DEFAULTS["validation"]))

    @model_validator(mode="before")
    @classmethod
    def _sft_section_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for key, defaults in _SFT_DEFAULTS.items():
            if isinstance(out.get(key), dict):
                out[key] = {**defaults, **out[key]}
        return out

    @field_validator("backend")
    @classmethod
    def _hf_only(cls, v: str) -> str:
        if v != "hf":
            raise ValueError("SFT trains with the hf backend (vLLM only generates)")
        return v

    @field_validator("rollout")
    @classmethod
    def _local_rollouts(cls, v: RolloutConfig) -> RolloutConfig:
        if v.backend != "local":
            raise ValueError("SFT has no rollout phase (its accuracy validation runs in this process): backend must be local")
        return v
