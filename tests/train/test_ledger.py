"""Training rows from the token ledger: property tests over generated multi-turn episodes on a toy
word-level tokenizer, the mismatch error, collation, the audit, and the real `hf:` policy path on a
tiny random Llama (built here, no download)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from officegym.core.trajectory import TemplateMismatchError, Trajectory, Turn  # noqa: E402
from officegym.train.ledger import LedgerRow, audit_row, collate, ledger_row, ledger_rows, mask_spans  # noqa: E402
from officegym.train.losses import policy_loss, token_logprobs  # noqa: E402

torch.set_num_threads(1)

# ---------------------------------------------------------------------------------------------------
# A toy word-level tokenizer and a ChatML-like template, token-in/token-out like the hf: backend

SCAFFOLD = ["<|im_start|>", "<|im_end|>", "\n", "system", "user", "assistant", "tool"]
SAMPLED = [f"w{i}" for i in range(10)]  # words only the model writes
TOOL = [f"t{i}" for i in range(10)]  # words only tool outputs hold
USER = [f"u{i}" for i in range(5)]
VOCAB = {w: i for i, w in enumerate(SCAFFOLD + SAMPLED + TOOL + USER)}
WORDS = {i: w for w, i in VOCAB.items()}
EOT = VOCAB["<|im_end|>"]
TOOL_IDS = {VOCAB[w] for w in TOOL}
TEMPLATE = "toy ChatML tool template"


def encode(words: list[str]) -> list[int]:
    return [VOCAB[w] for w in words]


def decode(ids: list[int]) -> str:
    return " ".join(WORDS[i] for i in ids)


def first_prompt(user_words: list[str]) -> list[int]:
    return encode(["<|im_start|>", "system", "\n", "<|im_end|>", "\n", "<|im_start|>", "user", "\n", *user_words,
                   "<|im_end|>", "\n", "<|im_start|>", "assistant", "\n"])


def scaffold_after(ended: bool, tool_words: list[str]) -> list[int]:
    """What the template adds after a model turn: the end-of-turn it did not sample (when cut short),
    the tool turn, the next generation prompt."""
    closing = [] if ended else ["<|im_end|>"]
    return encode([*closing, "\n", "<|im_start|>", "tool", "\n", *tool_words, "<|im_end|>", "\n",
                   "<|im_start|>", "assistant", "\n"])


def build_episode(user_words, turns, trailing_error=False) -> Trajectory:
    """`turns`: (sampled words, ended with end-of-turn?, tool output words, log-probs)."""
    out, prompt = [], first_prompt(user_words)
    for k, (words, ended, tool_words, logps) in enumerate(turns):
        completion = encode(words) + ([EOT] if ended else [])
        out.append(Turn(prompt_ids=list(prompt), completion_ids=completion, logprobs=logps[: len(completion)],
                        finish_reason="stop" if ended else "length"))
        if k < len(turns) - 1 or trailing_error:
            prompt = prompt + completion + scaffold_after(ended, tool_words)
    if trailing_error:  # e.g. the prompt grew past the context: the turn failed before sampling
        out.append(Turn(prompt_ids=list(prompt), completion_ids=None, finish_reason="error"))
    return Trajectory(task_id="t", turns=out)


turn_strategy = st.tuples(
    st.lists(st.sampled_from(SAMPLED), max_size=6),
    st.booleans(),
    st.lists(st.sampled_from(TOOL), max_size=6),
    st.lists(st.floats(-20, 0, allow_nan=False), min_size=7, max_size=7),
)
episode_strategy = st.tuples(
    st.lists(st.sampled_from(USER), min_size=1, max_size=4),
    st.lists(turn_strategy, min_size=1, max_size=5),
    st.booleans(),
)


@settings(max_examples=80, deadline=None)
@given(episode=episode_strategy)
def test_ledger_properties(episode):
    user_words, turns, trailing_error = episode
    traj = build_episode(user_words, turns, trailing_error)
    row = ledger_row(traj, template=TEMPLATE)
    ids, mask = row.input_ids.tolist(), row.loss_mask.tolist()
    sampled_turns = [t for t in traj.turns if t.completion_ids is not None]
    completions = [t.completion_ids for t in sampled_turns]
    # The mask counts every sampled token once, and masked ids are the sampled ids in order.
    assert sum(mask) == sum(len(c) for c in completions) == row.sampled_tokens
    assert [i for i, m in zip(ids, mask) if m] == [i for c in completions for i in c]
    assert [lp for lp, m in zip(row.sampler_logprobs.tolist(), mask) if m] == pytest.approx(
        [lp for t in sampled_turns for lp in t.logprobs]
    )
    # No decoding needed: the row is the last prompt followed by the last completion, id for id.
    last = sampled_turns[-1]
    assert ids == last.prompt_ids + last.completion_ids
    for k, turn in enumerate(sampled_turns):
        start, end = len(turn.prompt_ids), len(turn.prompt_ids) + len(turn.completion_ids)
        assert ids[start:end] == turn.completion_ids and all(mask[start:end])  # at the right positions
        if turn.finish_reason == "stop":  # the end-of-turn token the model sampled is trained
            assert ids[end - 1] == EOT and mask[end - 1] == 1
        assert set(row.turn_of_token[start:end].tolist()) <= {k}
    # Tool output and template scaffolding are never trained.
    assert not any(m for i, m in zip(ids, mask) if i in TOOL_IDS)
    assert all(m == 0 for m in mask[: len(sampled_turns[0].prompt_ids)])
    for trained, text in mask_spans(row, decode):
        assert not (trained and any(w in TOOL for w in text.split()))
    assert audit_row(traj, row) == []
    assert row.turn_of_token.tolist() == sorted(row.turn_of_token.tolist())


@settings(max_examples=40, deadline=None)
@given(episode=episode_strategy, data=st.data())
def test_a_prompt_that_does_not_extend_the_previous_turns_names_template_turn_position_and_ids(episode, data):
    user_words, turns, _ = episode
    turns = [*turns, (["w1"], True, ["t1"], [-1.0] * 7)]  # at least two turns
    traj = build_episode(user_words, turns)
    k = data.draw(st.integers(1, len(traj.turns) - 1), label="turn")
    prompt = traj.turns[k].prompt_ids
    before = len(traj.turns[k - 1].prompt_ids) + len(traj.turns[k - 1].completion_ids)
    position = data.draw(st.integers(0, before - 1), label="position")
    expected = prompt[position]
    found = VOCAB["u0"] if expected != VOCAB["u0"] else VOCAB["u1"]  # a re-tokenised earlier token
    traj.turns[k].prompt_ids = [*prompt[:position], found, *prompt[position + 1 :]]
    with pytest.raises(TemplateMismatchError) as caught:
        ledger_row(traj, template=TEMPLATE)
    err = caught.value
    assert (err.turn, err.position, err.expected, err.found, err.template) == (k, position, expected, found, TEMPLATE)
    message = str(err)
    for part in (TEMPLATE, f"turn {k}", f"position {position}", f"id {expected}", f"id {found}"):
        assert part in message


def test_a_prompt_that_drops_earlier_tokens_is_a_mismatch_too():
    traj = build_episode(["u1"], [(["w1", "w2"], True, ["t0"], [-1.0] * 7), (["w3"], True, [], [-1.0] * 7)])
    cut = len(traj.turns[0].prompt_ids) + 1  # the second prompt ends inside turn 0's completion
    traj.turns[1].prompt_ids = traj.turns[1].prompt_ids[:cut]
    with pytest.raises(TemplateMismatchError, match=rf"unknown.*turn 1.*position {cut} the episode so far has id \d+ but the prompt ends") as caught:
        traj.token_ledger()
    assert caught.value.found is None and caught.value.template is None


def test_missing_ids_or_logprobs_are_clear_errors():
    good = build_episode(["u1"], [(["w1"], True, ["t0"], [-1.0] * 7), (["w2"], True, [], [-0.5] * 7)])
    no_ids = Trajectory(task_id="x", turns=[Turn(text="hi")])
    with pytest.raises(ValueError, match="turn 0 has no token ids"):
        ledger_row(no_ids)
    good.turns[1].logprobs = None
    with pytest.raises(ValueError, match="turn 1: no sampler log-probs"):
        ledger_row(good)
    good.turns[1].logprobs = [-1.0, -2.0, -3.0]
    with pytest.raises(ValueError, match="2 completion ids but 3 log-probs"):
        good.token_ledger()


def test_audit_catches_corrupted_rows():
    traj = build_episode(["u1"], [(["w1", "w2"], True, ["t0", "t1"], [-1.0] * 7), (["w3"], True, [], [-0.5] * 7)])
    row = ledger_row(traj)
    assert audit_row(traj, row) == []
    tool_position = row.input_ids.tolist().index(VOCAB["t0"])
    leaked = LedgerRow(row.input_ids, row.loss_mask.clone(), row.sampler_logprobs, row.turn_of_token)
    leaked.loss_mask[tool_position] = 1
    assert any("tool output or scaffolding" in p for p in audit_row(traj, leaked))
    dropped = LedgerRow(row.input_ids, row.loss_mask.clone(), row.sampler_logprobs, row.turn_of_token)
    dropped.loss_mask[-1] = 0  # the last end-of-turn token
    assert any("end-of-turn" in p for p in audit_row(traj, dropped))
    wrong_lp = LedgerRow(row.input_ids, row.loss_mask, row.sampler_logprobs + 0.5, row.turn_of_token)
    assert any("log-probs" in p for p in audit_row(traj, wrong_lp))
    retokenised = LedgerRow(row.input_ids.clone(), row.loss_mask, row.sampler_logprobs, row.turn_of_token)
    retokenised.input_ids[-2] = VOCAB["w9"]
    assert any("not the turn's prompt followed by its sampled ids" in p for p in audit_row(traj, retokenised))


def test_collate_pads_on_the_right():
    short = build_episode(["u1"], [(["w1"], True, [], [-1.0] * 7)])
    long = build_episode(["u2", "u3"], [(["w1", "w2"], False, ["t0"], [-1.0] * 7), (["w3"], True, [], [-2.0] * 7)])
    rows = ledger_rows([short, long])
    batch = collate(rows, pad_id=99)
    n0, n1 = len(rows[0]), len(rows[1])
    assert batch["input_ids"].shape == (2, n1) and n0 < n1
    assert batch["lengths"].tolist() == [n0, n1]
    assert batch["input_ids"].dtype == batch["attention_mask"].dtype == batch["turn_of_token"].dtype == torch.long
    assert batch["loss_mask"].dtype == batch["sampler_logprobs"].dtype == torch.float32
    for i, r in enumerate(rows):
        n = len(r)
        assert batch["input_ids"][i, :n].equal(r.input_ids) and (batch["input_ids"][i, n:] == 99).all()
        assert batch["attention_mask"][i].tolist() == [1] * n + [0] * (n1 - n)
        assert batch["loss_mask"][i, :n].equal(r.loss_mask.float()) and (batch["loss_mask"][i, n:] == 0).all()
        assert batch["sampler_logprobs"][i, :n].equal(r.sampler_logprobs) and (batch["sampler_logprobs"][i, n:] == 0).all()
        assert (batch["turn_of_token"][i, n:] == -1).all()
    with pytest.raises(ValueError, match="at least one row"):
        collate([], pad_id=0)


# ---------------------------------------------------------------------------------------------------
# The real hf: policy on a tiny random Llama

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = [
    '<tool_call>\n{"name": "email_send_email", "arguments": {"recipient": "ana.lee@acme.com"}}\n</tool_call>',
    "You are a helpful office assistant. Send the email to Ana about the budget.",
    "<tool_response>\nEmail sent successfully.\n</tool_response>",
    "system user assistant tool # Tools functions JSON signature",
]


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    """A byte-level BPE tokenizer and a 1-layer Llama saved like a hub model, loaded by HFPolicy."""
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, decoders, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from officegym.agent.hf import HFPolicy

    directory: Path = tmp_path_factory.mktemp("tiny-llama-ledger")
    raw = Tokenizer(BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(CORPUS * 10, trainers.BpeTrainer(
        vocab_size=320, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    ))
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<|endoftext|>")
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=2048, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        bos_token_id=None, tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    tok.save_pretrained(directory)
    return HFPolicy(str(directory), device="cpu", threads=1, batch_size=4).load()


def test_two_turn_hf_rollout_rows_pass_the_audit_and_match_a_forward_pass(tiny_policy):
    from officegym.agent.messages import assistant_message
    from officegym.core.policy import PolicyRequest, SamplingParams
    from officegym.core.types import ToolSpec

    policy = tiny_policy
    tools = [ToolSpec("email_send_email", "Sends an email.", {"type": "object", "properties": {"recipient": {"type": "string"}}})]
    system = {"role": "system", "content": "You are a helpful office assistant."}
    params = SamplingParams(temperature=1.0, max_new_tokens=8, seed=3)
    first = [PolicyRequest(messages=[system, {"role": "user", "content": u}], tools=tools) for u in ("Send the email to Ana.", "Hi")]
    turn0 = policy.complete_sync(first, params)
    second = []
    for request, c in zip(first, turn0):
        messages = [*request.messages, assistant_message(c.text, c.tool_calls),
                    {"role": "tool", "tool_call_id": "call_0", "content": "Email sent successfully."}]
        second.append(PolicyRequest(messages=messages, tools=tools, turn=1, previous=c))
    turn1 = policy.complete_sync(second, params)
    trajectories = [
        Trajectory(task_id=i, turns=[Turn.from_completion(c0), Turn.from_completion(c1)])
        for i, (c0, c1) in enumerate(zip(turn0, turn1))
    ]
    rows = ledger_rows(trajectories, template=policy.template_name)
    for traj, row in zip(trajectories, rows):
        assert audit_row(traj, row) == []
        spans = mask_spans(row, lambda ids: policy._tok.decode(ids))
        assert any("Email sent successfully." in text for trained, text in spans if not trained)
        assert not any("Email sent" in text or "<tool_response>" in text for trained, text in spans if trained)
    # The ledger's sampler log-probs are what a training forward pass computes at the same positions.
    batch = collate(rows, pad_id=policy._pad_id)
    with torch.no_grad():
        logits = policy._model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    logprobs = token_logprobs(logits, batch["input_ids"], temperature=params.temperature)
    mask = batch["loss_mask"].bool()
    assert torch.allclose(logprobs[mask], batch["sampler_logprobs"][mask], atol=1e-4)
    out = policy_loss(logprobs, batch["sampler_logprobs"], torch.tensor([1.0, -1.0]), batch["loss_mask"])
    assert out.tokens == int(mask.sum()) and out.ratio_max == pytest.approx(1.0, abs=1e-3) and out.clip_fraction == 0.0


def test_a_template_mismatch_in_a_real_episode_names_the_template(tiny_policy):
    from officegym.core.policy import PolicyRequest, SamplingParams

    policy = tiny_policy
    request = PolicyRequest(messages=[{"role": "user", "content": "Hi"}], tools=[])
    (c0,) = policy.complete_sync([request], SamplingParams(temperature=0.0, max_new_tokens=3))
    # A backend that re-tokenised the conversation from text could spell the sampled turn differently.
    changed = (c0.completion_ids[0] + 1) % len(policy._tok)
    prompt = [*c0.prompt_ids, changed, *c0.completion_ids[1:], *policy.encode("\n")]
    bad = Turn(prompt_ids=prompt, completion_ids=[changed], logprobs=[-1.0])
    traj = Trajectory(task_id=0, turns=[Turn.from_completion(c0), bad])
    with pytest.raises(TemplateMismatchError) as caught:
        ledger_row(traj, template=policy.template_name)
    assert policy.template_name in str(caught.value)
    assert (caught.value.turn, caught.value.position) == (1, len(c0.prompt_ids))
    assert (caught.value.expected, caught.value.found) == (c0.completion_ids[0], changed)
