"""Fixtures for the trainer tests: tiny randomly initialised Llama models with small local tokenizers
(no download), task files for the workplace and toy environments, and a config builder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

torch.set_num_threads(1)

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def _build(directory: Path, corpus: list[str], vocab_size: int, use_regex: bool, hidden: int, layers: int,
           init_range: float) -> Path:
    from tokenizers import Tokenizer, decoders, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    raw = Tokenizer(BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=use_regex)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    raw.train_from_iterator(corpus, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  unk_token="<|endoftext|>")
    config = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None,
                         tie_word_embeddings=False, initializer_range=init_range)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory


WORKPLACE_CORPUS = [
    '<tool_call>\n{"name": "email_send_email", "arguments": {"recipient": "ana.lee@acme.com"}}\n</tool_call>',
    "You are a helpful office assistant. Reply to the email about the budget.",
    "<tool_response>\nEmail sent successfully.\n</tool_response>",
    "system user assistant tool # Tools functions JSON signature customer_relationship_manager calendar",
]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A byte-level BPE tokenizer (any text encodes) and a 2-layer Llama, saved like a hub model."""
    return _build(tmp_path_factory.mktemp("tiny-train"), WORKPLACE_CORPUS * 20, 400, True, 32, 2, 0.3)


@pytest.fixture(scope="session")
def tiny_deep_model_dir(tmp_path_factory) -> Path:
    """The tiny model's tokenizer with 4 layers: room for a frozen trunk under lora.last_layers."""
    return _build(tmp_path_factory.mktemp("tiny-deep"), WORKPLACE_CORPUS * 20, 400, True, 32, 4, 0.3)


@pytest.fixture(scope="session")
def toy_model_dir(tmp_path_factory) -> Path:
    """A model for the pick task: BPE merged across spaces, so that the call a correct answer needs
    is a handful of tokens, and a slightly larger 2-layer Llama."""
    from officegym.agent.chatml import render_chatml
    from officegym.train import toy

    corpus = []
    for k in range(10):
        task = toy.make_tasks(1, seed=k, numbers=[k])[0]
        corpus.append(render_chatml(task.input, [toy.PICK]) + toy.answer_text(k) + "<|im_end|>\n")
        corpus.append(f'<|im_start|>tool\n<tool_response>\npicked {k}\n</tool_response><|im_end|>\n')
    return _build(tmp_path_factory.mktemp("tiny-toy"), corpus * 30, 600, False, 64, 2, 0.02)


@pytest.fixture(scope="session")
def workplace_tasks(tmp_path_factory, tiny_world_dir) -> Path:
    from officegym.core.task import Task, write_jsonl
    from officegym.envs.workplace.specs import TOOL_SPECS

    tools = [s.to_schema() for s in TOOL_SPECS if s.name.startswith(("email_", "company_directory_"))]
    rows = []
    for i, (subject, body) in enumerate([("Budget", "Budget is done."), ("Offsite", "Booked."), ("Login", "Shipped."),
                                         ("Logo", "Drafted.")]):
        gt = [{"name": "email_send_email",
               "arguments": json.dumps({"recipient": "bo.kim@acme.com", "subject": subject, "body": body})}]
        rows.append(Task.from_row({
            "id": f"mail-{i}",
            "responses_create_params": {"input": [{"role": "system", "content": "You are an office assistant."},
                                                  {"role": "user", "content": f"Email Bo about {subject}: {body}"}],
                                        "tools": tools},
            "ground_truth": gt, "category": "workplace_assistant_email", "environment_name": "workplace_assistant",
        }))
    path = tmp_path_factory.mktemp("tasks") / "workplace.jsonl"
    write_jsonl(path, rows)
    return path


@pytest.fixture(scope="session")
def toy_tasks(tmp_path_factory) -> Path:
    from officegym.core.task import write_jsonl
    from officegym.train import toy

    path = tmp_path_factory.mktemp("toy") / "pick.jsonl"
    write_jsonl(path, toy.make_tasks(40, seed=3))
    return path


@pytest.fixture
def make_cfg():
    """Build a run config from defaults suited to the tiny models plus dotted overrides."""
    from officegym.train.config import GRPORunConfig, SFTRunConfig
    from officegym.train.config_files import build_config

    def build(kind: str, out_dir: Path, *overrides: str):
        model = GRPORunConfig if kind == "grpo" else SFTRunConfig
        base = [f"out_dir={out_dir}", "model.device=cpu", "model.threads=1", "logging.tensorboard=false",
                "rollout.concurrency=64", "rollout.max_new_tokens_per_turn=24", "rollout.max_new_tokens_per_episode=48",
                "rollout.max_steps=2", "validation.every=0", "checkpoint.keep_top_k=1"]
        return build_config(model, {}, [*base, *overrides])

    return build
