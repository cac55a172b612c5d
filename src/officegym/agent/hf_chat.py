"""The `hf:` policy's chat template, end-of-turn tokens and token ledger.

The token ledger. Turn 0 of a conversation is the tokenised rendering of its messages with the
generation prompt. A later turn (`request.previous` carries the last Completion) is built as
previous.prompt_ids + previous.completion_ids + the ids of the new scaffolding alone: the text the
chat template adds after the model's turn (the end-of-turn's newline, the tool turns, the next
generation prompt), tokenised on its own. Earlier text is never re-tokenised, so the episode is
one token sequence in which the model's own samples carry mask 1. On a conversation's first
follow-up turn the result is compared with a tokenisation of the full re-rendered conversation;
when the template part differs, `warnings` records it, naming the template (the appended ids are
used anyway: they are what the model saw and what it will be trained on).

Mixed into `HFPolicy` (agent/hf.py); the vllm: backend inherits it unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from officegym.agent.chatml import END_OF_TURN_MARKERS, IM_END, chat_tools, render_chatml, tool_format_of
from officegym.agent.hf_decoding import common_prefix_length
from officegym.agent.hf_loading import ModelLoadError
from officegym.agent.models import ensure_tool_template, template_name
from officegym.core.policy import Completion, PolicyRequest
from officegym.core.types import ToolSpec

log = logging.getLogger(__name__)

TEMPLATES = ("auto", "officegym", "officegym-signatures", "model")
FORCED_FORMATS = {"officegym": "json", "officegym-signatures": "signatures"}  # option -> tool format


class HFChat:
    """Template set-up, rendering and the token ledger (a part of `HFPolicy`)."""

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
                rest = full[common_prefix_length([upto, full]) :]
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
