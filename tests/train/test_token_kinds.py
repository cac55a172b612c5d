"""train/token_kinds.py (SFT's token weights, benchmarks/token_loss.py): an assistant turn's characters
and tokens sorted by what they are."""

from __future__ import annotations


def test_char_kinds_tell_name_values_structure_and_answer_apart():
    from officegym.train import token_kinds as mod

    text = '<tool_call>\n{"name": "email_send_email", "arguments": {"recipient": "a@x.com", "n": 3, "ok": true}}\n</tool_call><|im_end|>'
    kinds = mod.char_kinds(text)
    assert len(kinds) == len(text)

    def kind_at(fragment: str) -> set[str]:
        start = text.index(fragment)
        return set(kinds[start: start + len(fragment)])

    assert kind_at("email_send_email") == {"tool name"}
    assert kind_at("a@x.com") == {"argument values"}
    assert kind_at("3") == {"argument values"} and kind_at("true") == {"argument values"}
    assert kind_at('"recipient"') == {"call structure"} and kind_at("<tool_call>") == {"call structure"}
    assert kind_at('"name"') == {"call structure"} and kind_at("</tool_call><|im_end|>") == {"call structure"}
    assert set(mod.char_kinds("Done.<|im_end|>")) == {"answer text"}


class _CharTokenizer:
    """One token a character: decode joins them."""

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


def test_token_kinds_follow_the_characters_they_decode_to():
    from officegym.train import token_kinds as mod

    text = '<tool_call>\n{"name": "f", "arguments": {"x": "v"}}\n</tool_call>'
    kinds = mod.token_kinds(_CharTokenizer(), [ord(c) for c in text])
    assert kinds == mod.char_kinds(text)
    assert kinds.count("tool name") == 1 and kinds.count("argument values") == 3  # "v" with its quotes


def test_token_weights_by_kind():
    from officegym.train.token_kinds import token_weights

    text = '<tool_call>\n{"name": "f_g", "arguments": {"x": 1}}\n</tool_call><|im_end|>'
    w = token_weights(_CharTokenizer(), [ord(c) for c in text], {"tool_name": 4.0, "call_structure": 0.5})
    assert "".join(c for c, x in zip(text, w) if x == 4.0) == "f_g"
    assert "".join(c for c, x in zip(text, w) if x == 1.0) == "1"  # argument values: not named, weight 1
    assert set(w) == {4.0, 1.0, 0.5}
    assert token_weights(_CharTokenizer(), [ord(c) for c in "Done."], {"tool_name": 4.0}) == [1.0] * 5
