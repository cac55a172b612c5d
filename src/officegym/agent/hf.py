"""`hf:` policy: a Hugging Face transformers causal LM, sampled by a small decoding loop of our own.

Why our own loop rather than `generate`: every sampled id and its log-probability come straight
from the tensors the sampler used, so the token ledger (prompt ids, completion ids, log-probs) that
GRPO trains on is exact by construction: ids are never decoded and re-encoded.

Per batch of requests (sorted by prompt length, `batch_size` at a time), the batch is prefilled,
reusing the keys and values of shared prefixes and of each conversation's earlier turns, then
decoded one token per step for every row still running (replayed from a CUDA graph on a GPU). The
loop, and which log-probabilities it reports: agent/hf_decoding.py.

Seeding: with `params.seed` set, one torch.Generator seeded with it drives the whole call, so the
same requests in the same call give the same completions.

The token ledger (a later turn's prompt ids) and the chat template: agent/hf_chat.py. Loading the
model, or adopting a trainer's: agent/hf_loading.py. This module is the policy itself: its options,
the requests batched into chunks, and sampled rows turned into Completions.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from officegym.agent.chatml import IM_END
from officegym.agent.hf_chat import TEMPLATES, HFChat
from officegym.agent.hf_conversations import DEFAULT_BUDGET_MB, ConversationCache
from officegym.agent.hf_decoding import HFDecoding, Row, common_prefix_length
from officegym.agent.hf_loading import CPU_BATCH, DEVICES, DTYPES, HFLoading
from officegym.agent.tool_call_parser import parse_text_tool_calls
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams

SPLIT_SHARED_LOSS = 128  # start a new chunk rather than shorten the chunk's shared prefix by more


def _default_threads() -> int:
    from officegym.machine import default_threads

    return default_threads()


class HFPolicy(HFLoading, HFChat, HFDecoding, Policy):
    """A local transformers model as a Policy (see the module docstring for the sampling loop).

    `model`: `smollm2-135m`, a local directory, or a hub id (needs the network).
    `device`: auto (cuda when available) | cpu | cuda. `dtype`: auto (float32 on CPU, bfloat16 on a
    GPU that supports it) | float32 | bfloat16 | float16. `threads`: torch's CPU threads, set
    explicitly before every call (default: the cores this process may run on). `batch_size`: rows
    decoded together (default: 8 on a CPU, 64 on a GPU). `max_prompt_tokens`: longer prompts get an
    error Completion instead of a generation (default: the model's context length). `chat_template`: auto (the model's own when
    it renders tools, else officegym's TOOL_CHAT_TEMPLATE) | officegym | officegym-signatures (tools as compact
    signatures, prompts ~1/3 shorter; a model trained with it carries it, so auto keeps it) | model. `autocast_dtype`:
    run the forward passes under torch.autocast in that dtype (fp32 weights, e.g. a trainer's).
    `conversation_cache_mb`: memory for the conversations' keys and values kept between turns
    (0 turns it off; SmolLM2-135M in float32 takes ~46 KB a token). `cuda_graphs`: on a GPU, replay
    each batch's decoding step from a CUDA graph (off: eager steps, as on a CPU). `split_prefixes`:
    batch only requests that share most of their prompt (default: on a CPU, off on a GPU; `_chunks`).
    `HFPolicy.from_module` wraps a module a trainer owns instead of loading one (`trains_in_process`).
    Nothing heavy happens until the first `complete` (or `load()`).

    After calls, `stats` counts tokens (prompt, actually prefilled, reused from the kept prefix or
    from the conversation's earlier turns, completion) and seconds, and `warnings` lists
    chat-template problems met while building the token ledger. The kept prefix costs memory (about 200 MB for SmolLM2's 4.5k-token workplace prefix in
    float32); `close()` frees it with the model.
    """

    supports_logprobs = True

    def __init__(
        self,
        model: str,
        device: str = "auto",
        dtype: str = "auto",
        threads: int | None = None,
        batch_size: int | None = None,
        max_prompt_tokens: int | None = None,
        chat_template: str = "auto",
        autocast_dtype: str | None = None,
        conversation_cache_mb: float = DEFAULT_BUDGET_MB,
        cuda_graphs: bool = True,
        split_prefixes: bool | None = None,
    ):
        if device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        if chat_template not in TEMPLATES:
            raise ValueError(f"chat_template must be one of {TEMPLATES}, got {chat_template!r}")
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if threads is not None and threads < 1:
            raise ValueError("threads must be at least 1")
        if autocast_dtype not in (None, "bfloat16", "float16"):
            raise ValueError(f"autocast_dtype must be None, 'bfloat16' or 'float16', got {autocast_dtype!r}")
        self.model_spec = str(model)
        self.name = f"hf:{model}"
        self.device_option = device
        self.dtype_option = dtype
        self.threads = threads or _default_threads()
        self.batch_size_option = batch_size
        self.batch_size = batch_size or CPU_BATCH  # the device's default once the model is placed (_adopt)
        self.max_prompt_tokens = max_prompt_tokens
        self.chat_template_option = chat_template
        self.autocast_dtype = autocast_dtype
        self.cuda_graphs = bool(cuda_graphs)
        self.split_prefixes = split_prefixes
        self._split = split_prefixes is not False  # resolved for the device in _adopt
        self.graph_failure: str | None = None  # why recording a decoding graph failed (then eager steps)
        self.template_name = ""
        self.warnings: list[str] = []  # chat-template problems found while building the ledger
        self.phase: tuple[str, float] | None = None  # what it is doing now and since when, for a heartbeat
        self.stats: dict[str, float] = {
            "calls": 0,
            "prompt_tokens": 0,
            "prefill_tokens": 0,  # prompt tokens actually run (shared prefixes count once)
            "prefix_reused_tokens": 0,  # prompt tokens whose keys/values came from the previous call
            "conversation_reused_tokens": 0,  # a conversation's earlier turns, kept from its last call
            "completion_tokens": 0,
            "seconds": 0.0,
            "load_seconds": 0.0,
            "ledger_checks": 0,
            "ledger_template_mismatches": 0,
            "ledger_completion_retokenised": 0,  # the model's ids differ from re-rendered text: expected
            "graph_steps": 0,  # decoding steps replayed from a CUDA graph
        }
        self.model_path: Path | str | None = None
        self._lock = threading.Lock()
        self._torch: Any = None
        self._model: Any = None
        self._tok: Any = None
        self._device: Any = None
        self._use_formats_renderer = False
        self._tool_format = "json"
        self._stop_ids: set[int] = set()
        self._eot_text = IM_END
        self._eot_id: int | None = None
        self._pad_id = 0
        self._context = None
        self._logits_to_keep = False
        # Recent shared prefixes, newest last: (weights version, ids, kv). A few are kept because a
        # batch of mixed tasks has one prefix per tool set, and every turn needs them again.
        self._prefixes: list[tuple[Any, list[int], list[tuple[Any, Any]]]] = []
        self._conversations = ConversationCache(conversation_cache_mb)

    @classmethod
    def from_module(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "hf:trained",
        threads: int | None = None,
        batch_size: int | None = None,
        max_prompt_tokens: int | None = None,
        chat_template: str = "auto",
        autocast_dtype: str | None = None,
        conversation_cache_mb: float = DEFAULT_BUDGET_MB,
        cuda_graphs: bool = True,
    ) -> HFPolicy:
        """A policy that samples from a module someone else owns (a trainer's model): no copy and no
        weight sync, since generation reads the very parameters the optimiser updates. The prefix
        kept between calls is dropped whenever the weights change (see `_weights_version`)."""
        policy = cls(name, threads=threads, batch_size=batch_size, max_prompt_tokens=max_prompt_tokens,
                     chat_template=chat_template, autocast_dtype=autocast_dtype,
                     conversation_cache_mb=conversation_cache_mb, cuda_graphs=cuda_graphs)
        policy.name = name
        policy.trains_in_process = True
        device = next(model.parameters()).device
        with policy._lock:
            policy._adopt(model, tokenizer, device, getattr(getattr(model, "config", None), "_name_or_path", None))
        return policy

    # -----------------------------------------------------------------------------------------------
    # Policy protocol

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return await asyncio.to_thread(self.complete_sync, requests, params)

    def complete_sync(
        self,
        requests: Sequence[PolicyRequest],
        params: SamplingParams,
        max_new_tokens: Sequence[int | None] | None = None,
    ) -> list[Completion]:
        """`max_new_tokens`, when given, caps each request's sampled tokens below params.max_new_tokens
        (a trainer's per-episode budget); 0 gives an empty completion with finish_reason "length".
        Without it, each request's own `max_new_tokens` is its cap."""
        if not requests:
            return []
        if max_new_tokens is None and any(r.max_new_tokens is not None for r in requests):
            max_new_tokens = [r.max_new_tokens for r in requests]
        if max_new_tokens is not None and len(max_new_tokens) != len(requests):
            raise ValueError(f"{len(max_new_tokens)} token limits for {len(requests)} requests")
        self.load()
        with self._lock:  # one generation at a time: torch's threads are shared anyway
            self._before_call()
            try:
                return self._complete_locked(requests, params, max_new_tokens)
            finally:
                self.phase = None

    def _before_call(self) -> None:
        self._torch.set_num_threads(self.threads)

    def set_threads(self, n: int) -> None:
        """Threads for the next calls (a trainer re-chooses them at every step: machine.ThreadGovernor)."""
        self.threads = max(1, int(n))

    def _make_generator(self, seed: int | None) -> Any:
        """What `_generate` draws from: one seeded torch.Generator per call, or None."""
        if seed is None:
            return None
        return self._torch.Generator(device=self._device).manual_seed(int(seed))

    def _complete_locked(
        self, requests: Sequence[PolicyRequest], params: SamplingParams, token_caps: Sequence[int | None] | None = None
    ) -> list[Completion]:
        started = time.perf_counter()
        results: list[Completion | None] = [None] * len(requests)
        prompts: dict[int, list[int]] = {}
        for i, request in enumerate(requests):
            ids, error = self._prompt_or_error(request)
            if error is not None:
                results[i] = error
                continue
            prompts[i] = ids
        # Prompts in token order: those sharing a system prompt and tool list land in the same chunk, so
        # each chunk prefills that prefix once (and the next chunk often reuses it); their lengths are
        # close too, so padding stays small.
        order = sorted(prompts, key=lambda i: prompts[i])
        generator = self._make_generator(params.seed)
        for chunk in self._chunks(order, prompts):
            t0 = time.perf_counter()
            caps = None if token_caps is None else [token_caps[i] for i in chunk]
            rows = self._generate([prompts[i] for i in chunk], params, generator, caps)
            seconds = time.perf_counter() - t0
            for i, row in zip(chunk, rows):
                results[i] = self._completion(row, params, seconds)
        self.stats["calls"] += 1
        self.stats["seconds"] += time.perf_counter() - started
        return [r if r is not None else Completion(finish_reason="error", error="no result") for r in results]

    def _prompt_or_error(self, request: PolicyRequest) -> tuple[list[int], Completion | None]:
        """The request's prompt ids, or the error Completion its turn gets instead (a broken
        conversation fails its own turn, never the batch)."""
        try:
            ids = self.prompt_ids(request)
        except Exception as exc:
            return [], Completion(finish_reason="error", error=f"rendering the prompt failed: {type(exc).__name__}: {exc}")
        if not ids:
            return [], Completion(finish_reason="error", error="the chat template rendered an empty prompt")
        limits = [n for n in (self.max_prompt_tokens, self._context) if n]
        limit = min(limits) if limits else None
        if limit is not None and len(ids) > limit:
            which = "max_prompt_tokens" if limit == self.max_prompt_tokens else "the model's context length"
            return ids, Completion(finish_reason="error", prompt_ids=ids, prompt_tokens=len(ids),
                                   error=f"the prompt has {len(ids)} tokens, more than {which} ({limit})")
        return ids, None

    def _chunks(self, order: list[int], prompts: dict[int, list[int]]) -> list[list[int]]:
        """Split the sorted requests into batches of at most batch_size, starting a new one where
        adding a prompt would shorten the batch's shared prefix by more than SPLIT_SHARED_LOSS
        tokens (every row would then prefill those tokens itself). With `split_prefixes` off (the
        default on a GPU) only batch_size splits: there a decoding step costs about the same for 8
        rows as for 128, so each extra batch adds its whole decoding time, while the prefill the
        split would save is a single cheap forward."""
        if not self._split:
            return [order[k : k + self.batch_size] for k in range(0, len(order), self.batch_size)]
        chunks: list[list[int]] = []
        shared = 0
        for i in order:
            chunk = chunks[-1] if chunks else None
            if chunk is not None and len(chunk) < self.batch_size:
                common = common_prefix_length([prompts[chunk[0]], prompts[i]])
                if len(chunk) == 1:  # a pair belongs together when it shares at least half its prompt
                    fits = 2 * common >= min(len(prompts[chunk[0]]), len(prompts[i]))
                else:
                    fits = shared - common <= SPLIT_SHARED_LOSS
                if fits:
                    shared = common if len(chunk) == 1 else min(shared, common)
                    chunk.append(i)
                    continue
            chunks.append([i])
        return chunks

    def _completion(self, row: Row, params: SamplingParams, seconds: float) -> Completion:
        ids = row.ids
        body = ids[:-1] if row.finish == "stop" and ids and ids[-1] in self._stop_ids else ids
        raw = self._tok.decode(body, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if params.stop:
            cuts = [raw.find(s) for s in params.stop if s and s in raw]
            if cuts:
                raw = raw[: min(cuts)]
        parsed = parse_text_tool_calls(raw)
        return Completion(
            text=parsed.content,
            tool_calls=parsed.calls,
            invalid=parsed.invalid,
            finish_reason=row.finish,
            prompt_ids=row.prompt,
            completion_ids=list(ids),
            logprobs=list(row.logprobs),
            prompt_tokens=len(row.prompt),
            completion_tokens=len(ids),
            seconds=seconds,
        )
