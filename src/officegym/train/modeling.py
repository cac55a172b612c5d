"""The model being trained: loading (full or LoRA), precision, saving, and the policy that samples
from it.

Precision: the weights (the optimiser's master copy) are always float32. `precision: bf16` runs the
forward passes under torch.autocast(bfloat16); `auto` does so on a GPU that supports bf16 and on a
CPU with bf16 matrix units (AMX or AVX512-BF16), and stays float32 elsewhere: an AVX2 CPU emulates
bf16, and a training step there was 31x slower than in float32 (a warning says so when bf16 is
asked for on such a CPU).

Generation shares the trained module: `generation_policy` wraps it in an HFPolicy (no copy, no
sync; the policy sees every optimiser step at once) or, with backend vllm, starts a VLLMPolicy
whose weights are pushed after each update (`push_weights`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.core.files import replace_dir, temp_dir
from officegym.train.config import LoraConfig, ModelConfig, RunConfig

log = logging.getLogger(__name__)
EXPORT_MARK = "officegym-export.json"  # in every folder TrainModel.export writes: `train export` may replace such a folder


class ModelSetupError(RuntimeError):
    """The model, its tokenizer or the adapter could not be set up; the message says why."""


def resolve_device(option: str) -> str:
    import torch

    if option == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if option == "cuda" and not torch.cuda.is_available():
        raise ModelSetupError("model.device=cuda but torch sees no CUDA device; use cpu or auto")
    return option


def autocast_dtype(precision: str, device: str) -> Any:
    """The autocast dtype for `precision` on `device`, or None for plain float32."""
    import torch

    if precision == "fp32":
        return None
    from officegym.machine import cpu_bf16

    if precision == "bf16":
        if device == "cuda" and not torch.cuda.is_bf16_supported():
            raise ModelSetupError("model.precision=bf16 but this GPU does not support bfloat16; use fp32")
        if device == "cpu" and not cpu_bf16():
            log.warning("model.precision=bf16 on a CPU without bf16 matrix units (no amx_bf16 or avx512_bf16): "
                        "PyTorch emulates it, about 30x slower than fp32 here; use precision auto or fp32")
        return torch.bfloat16
    if device == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    return torch.bfloat16 if cpu_bf16() else None


@dataclass
class TrainModel:
    """The trainable module (a PeftModel under LoRA), its tokenizer and how to run it."""

    model: Any
    tokenizer: Any
    device: Any
    amp_dtype: Any  # torch dtype for autocast, or None
    path: Path | str
    lora: bool
    trunk_cache: Any = None  # train/trunk.py: the frozen first layers' outputs, kept across steps

    def keep_trunk(self, budget_mb: float) -> Any:
        """Keep the frozen trunk's outputs (adapters on the last layers only) within `budget_mb`;
        returns the cache, or None when every layer trains."""
        from officegym.train.forward import head_split
        from officegym.train.trunk import TrunkCache

        split = head_split(self.model)
        self.trunk_cache = TrunkCache.build(split[0], budget_mb) if split is not None else None
        return self.trunk_cache

    def autocast(self) -> Any:
        import torch

        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    @property
    def base(self) -> Any:
        """The transformers model (under LoRA: the base model with the adapter layers injected)."""
        return self.model.get_base_model() if self.lora else self.model

    def trainable_parameters(self) -> list[Any]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def reference(self) -> Any:
        """Context in which the module computes the reference policy: the adapter disabled (LoRA)."""
        if not self.lora:
            raise ModelSetupError("a reference model without LoRA is a frozen copy: use reference_copy()")
        return self.model.disable_adapter()

    def reference_copy(self) -> Any:
        """A frozen copy of the current weights (KL to the starting point without LoRA)."""
        import copy

        ref = copy.deepcopy(self.base)
        ref.requires_grad_(False)
        ref.eval()
        return ref

    # -----------------------------------------------------------------------------------------------
    # Weights in and out

    def hf_weights(self, changed_only: bool = False) -> list[tuple[str, Any]]:
        """(name, float32 tensor) pairs under the base model's checkpoint names; under LoRA the
        adapter is merged into them out of place (base + B A scaling, computed in float32), so the
        trained module is never touched (merging in place and back would round bf16 base weights).
        `changed_only` (LoRA): only the weights training can have changed from the checkpoint the
        model was loaded from (those with an adapter, and any trained in full); without LoRA, all."""
        import torch

        with torch.no_grad():
            if not self.lora:
                return [(n, p.detach().clone()) for n, p in self.base.state_dict().items()]
            trained = ({n for n, p in self.base.named_parameters() if p.requires_grad and "lora_" not in n}
                       if changed_only else set())
            from peft.tuners.lora import LoraLayer

            deltas = {}
            for name, module in self.base.named_modules():
                if isinstance(module, LoraLayer) and not module.merged:
                    for adapter in module.active_adapters:
                        if adapter in module.lora_A:
                            key = f"{name}.base_layer.weight"
                            delta = module.get_delta_weight(adapter).float()
                            deltas[key] = deltas[key] + delta if key in deltas else delta
            out = []
            for name, tensor in self.base.state_dict().items():
                if "lora_" in name or (changed_only and name not in deltas and name not in trained):
                    continue
                t = tensor.detach().float() + deltas[name] if name in deltas else tensor.detach().clone()
                out.append((name.replace(".base_layer", ""), t.float() if t.is_floating_point() else t))
            return out

    def save_trainable(self, directory: Path) -> None:
        """What a checkpoint needs to restore the weights: the adapter (LoRA) or the whole model
        (a directory `hf:` can load)."""
        if self.lora:
            self.model.save_pretrained(directory / "adapter")
        else:
            self.model.save_pretrained(directory / "model")
            self.tokenizer.save_pretrained(directory / "model")

    def load_trainable(self, directory: Path) -> None:
        from safetensors.torch import load_file

        if self.lora:
            from peft import set_peft_model_state_dict

            files = sorted((directory / "adapter").glob("*.safetensors"))
            if not files:
                raise ModelSetupError(f"{directory / 'adapter'} holds no adapter weights")
            state: dict[str, Any] = {}
            for f in files:
                state.update(load_file(str(f), device=str(self.device)))
            result = set_peft_model_state_dict(self.model, state)
            unexpected = getattr(result, "unexpected_keys", [])
            if unexpected:
                raise ModelSetupError(f"the adapter in {directory} does not fit this model: {unexpected[:3]}")
            return
        files = sorted((directory / "model").glob("*.safetensors"))
        if not files:
            raise ModelSetupError(f"{directory / 'model'} holds no safetensors weights")
        state = {}
        for f in files:
            state.update(load_file(str(f), device=str(self.device)))
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        tied = {n for n in missing if _is_tied(self.model, n)}
        if unexpected or set(missing) - tied:
            raise ModelSetupError(f"the weights in {directory} do not fit this model: missing {sorted(set(missing) - tied)[:3]}, "
                                  f"unexpected {unexpected[:3]}")

    def export(self, directory: Path) -> Path:
        """A standalone model directory (merged weights, tokenizer) that `hf:DIR` loads; atomic."""
        from transformers import AutoModelForCausalLM

        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_dir(directory.parent, f".{directory.name}.tmp-")  # the umask's mode, not mkdtemp's 0700
        try:
            if self.lora:
                fresh = AutoModelForCausalLM.from_config(self.base.config)
                missing, unexpected = fresh.load_state_dict(dict(self.hf_weights()), strict=False)
                if unexpected or [n for n in missing if not _is_tied(fresh, n)]:
                    raise ModelSetupError(f"merging the adapter gave mismatched weights: {missing[:3]} {unexpected[:3]}")
                fresh.save_pretrained(tmp)
            else:
                self.model.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            (tmp / EXPORT_MARK).write_text(json.dumps({"source": str(self.path), "lora_merged": self.lora,
                                                                    "time": time.time()}) + "\n")
            replace_dir(tmp, directory)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return directory


def _is_tied(model: Any, name: str) -> bool:
    """Whether `name` is a parameter shared with another one (tied embeddings), so that a
    checkpoint may leave it out."""
    params = dict(model.named_parameters(remove_duplicate=False))
    p = params.get(name)
    if p is None:
        return False
    return sum(1 for q in params.values() if q is p) > 1


def load_train_model(model_cfg: ModelConfig, lora_cfg: LoraConfig, seed: int = 0) -> TrainModel:
    """Load the tokenizer and a float32 model on the configured device, wrap it with LoRA when
    asked (initialised from `seed`)."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ModelSetupError(f"training needs torch and transformers ({exc}): pip install 'officegym[train]'") from None
    from officegym.agent.models import ModelResolutionError, resolve_model
    from officegym.machine import default_threads

    # the cores nobody else keeps busy: OpenMP threads sharing a core with another process wait on it
    torch.set_num_threads(model_cfg.threads or default_threads())
    try:
        path = resolve_model(model_cfg.name)
    except ModelResolutionError as exc:
        raise ModelSetupError(str(exc)) from None
    device = resolve_device(model_cfg.device)
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise ModelSetupError(f"could not load {str(path)!r}: {exc} (offline, pass a local model directory or smollm2-135m)") from None
    model.to(device)
    if model_cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False
    is_lora = lora_cfg.enabled
    if is_lora:
        try:
            from peft import LoraConfig as PeftLoraConfig
            from peft import get_peft_model
        except ImportError:
            raise ModelSetupError("lora.enabled needs peft: pip install peft (or 'officegym[train]')") from None
        torch.manual_seed(seed)
        targets, layers = lora_scope(model, lora_cfg)
        peft_cfg = PeftLoraConfig(r=lora_cfg.r, lora_alpha=lora_cfg.alpha, lora_dropout=lora_cfg.dropout,
                                  target_modules=targets, task_type="CAUSAL_LM", layers_to_transform=layers)
        model = get_peft_model(model, peft_cfg)
        if model_cfg.gradient_checkpointing:
            model.enable_input_require_grads()
    amp = autocast_dtype(model_cfg.precision, device)
    if is_lora and amp is not None:
        _store_frozen_linears(model, amp)
    return TrainModel(model=model, tokenizer=tok, device=torch.device(device), amp_dtype=amp, path=path, lora=is_lora)


def lora_scope(model: Any, lora_cfg: LoraConfig) -> tuple[list[str] | str, list[int] | None]:
    """peft's target_modules and layers_to_transform. With last_layers N (fewer than the model has)
    the adapters go on the last N decoder layers, where autograd then stops; peft takes no
    "all-linear" with a layer list, so it is spelt out as the linear layers inside the decoder layers
    (the output head is never adapted)."""
    total = getattr(model.config, "num_hidden_layers", None)
    last = lora_cfg.last_layers
    if last is None or (total and last >= total):
        return lora_cfg.target_modules, None
    if not total:
        raise ModelSetupError("lora.last_layers needs a model whose config names num_hidden_layers")
    targets = lora_cfg.target_modules
    if targets == "all-linear":
        import torch

        targets = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules()
                          if isinstance(module, torch.nn.Linear) and ".layers." in name})
        if not targets:
            raise ModelSetupError("lora.last_layers: no linear layers found under the model's decoder layers")
    return targets, list(range(total - last, total))


def _store_frozen_linears(model: Any, dtype: Any) -> None:
    """Keep the frozen base weights of LoRA-wrapped linear layers in the autocast dtype. Autocast
    casts a float32 weight to that dtype at every call (forward and backward: ~18% of a CPU
    training step went to these copies); a weight already in it is used as is, so the values
    computed are the same. Adapters, norms and embeddings stay float32."""
    from peft.tuners.lora import LoraLayer

    for module in model.modules():
        if isinstance(module, LoraLayer):
            base = module.get_base_layer()
            if getattr(base, "weight", None) is not None and not base.weight.requires_grad:
                base.weight.data = base.weight.data.to(dtype)


def generation_policy(tm: TrainModel, cfg: RunConfig) -> Any:
    """The policy that samples rollouts: the trained module itself (hf) or a vLLM engine (vllm); with
    rollout.backend ray, engine actors of either kind (train/ray_generation.py)."""
    from officegym.agent.hf import HFPolicy

    if cfg.rollout.backend == "ray":
        from officegym.train.ray_generation import ray_generation

        return ray_generation(tm, cfg)
    if cfg.backend == "vllm":
        from officegym.agent.vllm_backend import VLLMPolicy

        options = {"gpu_memory_utilization": cfg.vllm.gpu_memory_utilization, "max_model_len": cfg.vllm.max_model_len,
                   "enable_sleep_mode": cfg.vllm.enable_sleep_mode or None, **cfg.vllm.extra}
        policy = VLLMPolicy(str(tm.path), chat_template=cfg.model.chat_template, **options)
        policy.name = f"vllm:{tm.path}"
        return policy
    amp = None if tm.amp_dtype is None else str(tm.amp_dtype).removeprefix("torch.")
    return HFPolicy.from_module(tm.base, tm.tokenizer, name=f"hf:{cfg.model.name}", threads=cfg.model.threads,
                                batch_size=cfg.rollout.batch_size, chat_template=cfg.model.chat_template,
                                autocast_dtype=amp, cuda_graphs=cfg.model.cuda_graphs)


def release_generation(policy: Any) -> None:
    """Stop what `generation_policy` started outside this process (Ray actors); nothing otherwise."""
    if policy is not None and policy.fleet is not None:  # None: the run failed before it had one
        policy.close()


def push_weights(policy: Any, tm: TrainModel, version: Any) -> bool:
    """After an update: a vLLM engine gets the new weights (merged under LoRA); an HF policy that
    shares the module needs nothing. Returns whether weights were sent. A policy that loaded the
    checkpoint training started from and takes part of a model (`partial_weights`) gets only what
    training can change: with adapters on the last 10 of 30 layers, a third of the tensors."""
    if not policy.takes_weights or policy.synced_version == version:
        return False
    if policy.partial_weights:
        return bool(policy.sync_weights(tm.hf_weights(changed_only=True), version=version, partial=True))
    return bool(policy.sync_weights(tm.hf_weights(), version=version))


def token_renderer(tm: TrainModel, cfg: RunConfig) -> Any:
    """An HFPolicy over the trained module used for rendering and tokenising conversations (SFT),
    with the same template and ledger rules as generation."""
    from officegym.agent.hf import HFPolicy

    return HFPolicy.from_module(tm.base, tm.tokenizer, name=f"hf:{cfg.model.name}", threads=cfg.model.threads,
                                batch_size=cfg.rollout.batch_size, chat_template=cfg.model.chat_template)


def iter_named_trainable(tm: TrainModel) -> Iterator[tuple[str, Any]]:
    for name, p in tm.model.named_parameters():
        if p.requires_grad:
            yield name, p
