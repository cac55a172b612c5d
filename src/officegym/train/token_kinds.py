"""What each token of an assistant turn is: the tool's name, an argument value, the call's fixed
structure, or answer text; and SFT's per-kind loss weights from that."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

KINDS = ("tool name", "argument values", "call structure", "answer text")
# config keys (sft.token_weights) -> kinds
WEIGHT_KEYS = {"tool_name": "tool name", "argument_values": "argument values", "call_structure": "call structure",
               "answer_text": "answer text"}
_VALUE = re.compile(r'":\s*("(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|true|false|null)')


def char_kinds(text: str) -> list[str]:
    """The kind of each character of an assistant turn's text (officegym's `<tool_call>` blocks)."""
    if "<tool_call>" not in text:
        return ["answer text"] * len(text)
    kinds = ["call structure"] * len(text)
    for m in re.finditer(r'"name":\s*"([^"]*)"', text):
        for i in range(m.start(1), m.end(1)):
            kinds[i] = "tool name"
    for block in re.finditer(r'"arguments":\s*(\{.*?\})\s*\}\s*\n</tool_call>', text, re.S):
        for m in _VALUE.finditer(text, block.start(1), block.end(1)):
            for i in range(m.start(1), m.end(1)):
                kinds[i] = "argument values"
    return kinds


def token_kinds(tokenizer: Any, ids: list[int]) -> list[str]:
    """The kind of each token of one assistant turn, from the characters it decodes to: a token
    touching a name is the name's, one touching a value the value's."""
    text = tokenizer.decode(ids)
    kinds = char_kinds(text)
    out, pos = [], 0
    for j in range(len(ids)):
        end = len(tokenizer.decode(ids[: j + 1]))
        span = kinds[pos:end] or ["call structure"]
        out.append("tool name" if "tool name" in span else ("argument values" if "argument values" in span else span[0]))
        pos = end
    return out


def token_weights(tokenizer: Any, ids: list[int], weights: Mapping[str, float]) -> list[float]:
    """Loss weights of one assistant turn's tokens: `weights` by config key (WEIGHT_KEYS), 1.0 for
    kinds not named."""
    by_kind = {WEIGHT_KEYS[k]: float(v) for k, v in weights.items()}
    return [by_kind.get(kind, 1.0) for kind in token_kinds(tokenizer, ids)]
