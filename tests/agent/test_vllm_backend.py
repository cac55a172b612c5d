"""The vllm: backend's own logic against a fake engine with vLLM's documented interface
(`LLM.generate(TokensPrompt list, SamplingParams list)` -> outputs with token_ids, logprobs,
finish_reason): the prompts it sends are the token ledger's ids, sampled ids and log-probs come back
unchanged, calls are parsed. tests/agent/test_vllm_engine.py runs the real engine."""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from officegym.agent.policies import make_policy
from officegym.core.policy import PolicyRequest, SamplingParams
from officegym.core.trajectory import Trajectory, Turn

_spec = importlib.util.spec_from_file_location("hf_test_helpers", Path(__file__).with_name("test_hf_policy.py"))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)


@dataclass
class Logprob:
    logprob: float


class FakeLLM:
    instances: ClassVar[list[FakeLLM]] = []

    def __init__(self, model: str, tokenizer: str, **options):
        from transformers import AutoTokenizer

        self.options = options
        self.tok = AutoTokenizer.from_pretrained(tokenizer)
        self.calls: list[tuple[list, list]] = []
        self.llm_engine = types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=4096))
        self.rpcs: list[tuple[str, dict]] = []
        FakeLLM.instances.append(self)

    def collective_rpc(self, name, kwargs=None):
        kwargs = dict(kwargs or {})
        if "weights_iterator" in kwargs:
            kwargs["weights_iterator"] = [n for n, _ in kwargs["weights_iterator"]]
            # what vLLM's layerwise reload says about layers a push left out, and what else it says
            logging.getLogger("vllm.model_executor.model_loader.reload.layerwise").warning(
                "RMSNorm: Failed to load weights")
            logging.getLogger("vllm.model_executor.model_loader.reload.inplace").warning(
                "Following weights were not loaded from checkpoint: %s", {"model.norm.weight"})
            logging.getLogger("vllm.model_executor.model_loader.reload.inplace").warning("out of memory")
        self.rpcs.append((name, kwargs))

    def reset_prefix_cache(self):
        self.rpcs.append(("reset_prefix_cache", {}))

    def generate(self, prompts, sampling, use_tqdm=True):
        self.calls.append((prompts, sampling))
        out = []
        for p, sp in zip(prompts, sampling):
            turn = sum(1 for t in p["prompt_token_ids"] if t == self.tok.convert_tokens_to_ids("<|im_start|>"))
            text = '<tool_call>\n{"name": "email_send_email", "arguments": {"recipient": "ana.lee@acme.com"}}\n</tool_call>'
            if turn > 3:
                text = "Email sent."
            ids = self.tok.encode(text, add_special_tokens=False)[: sp.max_tokens]
            finish = "length" if len(ids) == sp.max_tokens else "stop"
            if finish == "stop":
                ids.append(self.tok.convert_tokens_to_ids("<|im_end|>"))
            logprobs = [{i: Logprob(-0.25 - 0.01 * n), 7: Logprob(-3.0)} for n, i in enumerate(ids)]
            out.append(types.SimpleNamespace(outputs=[types.SimpleNamespace(token_ids=tuple(ids), logprobs=logprobs, finish_reason=finish)]))
        return out


@pytest.fixture
def fake_vllm(monkeypatch):
    mod = types.ModuleType("vllm")
    mod.LLM = FakeLLM
    mod.SamplingParams = lambda **kw: types.SimpleNamespace(**kw)
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = lambda prompt_token_ids: {"prompt_token_ids": list(prompt_token_ids)}
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)
    from officegym.agent import vllm_engine

    vllm_engine.shutdown()
    FakeLLM.instances.clear()
    yield mod
    vllm_engine.shutdown()


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return helpers._build_tiny(tmp_path_factory.mktemp("tiny-vllm"))


def test_vllm_policy_sends_ledger_ids_and_keeps_sampled_ids(fake_vllm, tiny_dir):
    policy = make_policy(f"vllm:{tiny_dir}", gpu_memory_utilization=0.5, seed=3)
    first = PolicyRequest(messages=[helpers.SYSTEM, {"role": "user", "content": "Send the email to Ana."}], tools=helpers.TOOLS)
    (c1,) = policy.complete_sync([first], SamplingParams(temperature=0.7, max_new_tokens=64, seed=5))
    engine = FakeLLM.instances[0]
    import torch

    expected = {"enable_prefix_caching": True, "logprobs_mode": "processed_logprobs"}
    # on a CPU: eager, the dtype the CPU has in hardware (conftest pins float32), 32-token KV blocks
    expected.update({"gpu_memory_utilization": 0.5} if torch.cuda.is_available() else {"enforce_eager": True, "dtype": "float32", "block_size": 32})
    assert engine.options == expected
    prompts, sampling = engine.calls[0]
    assert prompts[0]["prompt_token_ids"] == c1.prompt_ids
    assert sampling[0].seed == 5 and sampling[0].logprobs == 0 and sampling[0].temperature == 0.7
    assert [c.name for c in c1.tool_calls] == ["email_send_email"]
    assert c1.logprobs == pytest.approx([-0.25 - 0.01 * n for n in range(len(c1.completion_ids))])
    assert c1.finish_reason == "stop"

    # the next turn extends the exact ids: the ledger masks exactly the sampled tokens
    second = helpers._next_request(first, c1)
    (c2,) = policy.complete_sync([second], SamplingParams(max_new_tokens=64))
    assert c2.prompt_ids[: len(c1.prompt_ids) + len(c1.completion_ids)] == c1.prompt_ids + c1.completion_ids
    traj = Trajectory(task_id=1, turns=[
        Turn(prompt_ids=c.prompt_ids, completion_ids=c.completion_ids, logprobs=c.logprobs) for c in (c1, c2)
    ])
    ids, mask, logps = traj.token_ledger()
    sampled = [i for i, m in zip(ids, mask) if m]
    assert sampled == c1.completion_ids + c2.completion_ids
    assert [lp for lp, m in zip(logps, mask) if m] == c1.logprobs + c2.logprobs


def test_a_partial_push_drops_vllms_notices_about_what_it_left_out(fake_vllm, tiny_dir, caplog):
    import torch

    policy = make_policy(f"vllm:{tiny_dir}")
    part = [("model.layers.1.mlp.up_proj.weight", torch.zeros(2, 2))]
    with caplog.at_level(logging.WARNING):
        policy.sync_weights(part, version=1, partial=True)
    assert [r.getMessage() for r in caplog.records] == ["out of memory"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        policy.sync_weights(part, version=2)  # a whole-model push that misses weights: said
    assert len(caplog.records) == 3


def test_a_partial_push_builds_on_the_policys_own_checkpoint(fake_vllm, tiny_dir, tmp_path):
    """A trainer sends only what it changed; when another policy's weights went into the shared engine
    in between, the policy's checkpoint is loaded again first, so the rest is never another model's."""
    import shutil

    import torch

    other = tmp_path / "other"
    shutil.copytree(tiny_dir, other)  # the same architecture: the same engine, its weights swapped in place
    a, b = make_policy(f"vllm:{tiny_dir}"), make_policy(f"vllm:{other}")
    assert a.partial_weights
    a.load()
    engine = FakeLLM.instances[0]
    part = [("model.layers.1.mlp.up_proj.weight", torch.zeros(2, 2))]
    assert a.sync_weights(part, version=1) and not a.sync_weights(part, version=1)
    assert engine.rpcs == [("reload_weights", {"weights_iterator": ["model.layers.1.mlp.up_proj.weight"]}),
                           ("reset_prefix_cache", {})]
    a.sync_weights(part, version=2)  # on top of its own push: nothing reloaded
    assert [r for r, _ in engine.rpcs].count("reload_weights") == 2
    engine.rpcs.clear()
    b.load()  # another checkpoint into the same engine
    assert len(FakeLLM.instances) == 1 and engine.rpcs[0] == ("reload_weights", {"weights_path": str(other)})
    engine.rpcs.clear()
    a.sync_weights(part, version=3)
    assert engine.rpcs[0] == ("reload_weights", {"weights_path": str(tiny_dir)})
    assert engine.rpcs[2] == ("reload_weights", {"weights_iterator": ["model.layers.1.mlp.up_proj.weight"]})


def test_vllm_length_and_missing_engine(fake_vllm, tiny_dir, monkeypatch):
    policy = make_policy(f"vllm:{tiny_dir}")
    req = PolicyRequest(messages=[helpers.SYSTEM, {"role": "user", "content": "Hi"}], tools=helpers.TOOLS)
    (c,) = policy.complete_sync([req], SamplingParams(max_new_tokens=3))
    assert c.finish_reason == "length" and len(c.completion_ids) == 3
    monkeypatch.setitem(sys.modules, "vllm", None)
    from officegym.agent import vllm_engine
    from officegym.agent.hf_loading import ModelLoadError

    vllm_engine.shutdown()
    with pytest.raises(ModelLoadError, match="needs vLLM"):
        make_policy(f"vllm:{tiny_dir}").load()


def test_vllm_load_notices_are_filtered_once_and_nothing_else():
    import logging

    from officegym.agent.vllm_engine import _quiet_loading, _QuietReload

    _quiet_loading()
    _quiet_loading()
    logger = logging.getLogger("vllm.model_executor.models.utils")
    assert sum(isinstance(f, _QuietReload) for f in logger.filters) == 1

    def record(message, *args):
        return logging.LogRecord("vllm", logging.WARNING, "", 0, message, args, None)

    narrowed = record("Attempted to load weight %s with dtype %s into parameter with dtype %s",
                      "layers.0.mlp.down_proj.weight", "torch.float32", "torch.bfloat16")
    assert not _QuietReload().filter(narrowed)
    assert not _QuietReload().filter(record("RotaryEmbedding: Failed to load weights"))
    assert _QuietReload().filter(record("Attempted to load weight %s with dtype %s into parameter with dtype %s",
                                        "w", "torch.float32", "torch.float16"))
    skipped = "CPU backend doesn't allow to use `torch.set_num_threads` after the thread binding, skip it."
    assert not _QuietReload().filter(record(skipped))
    assert any(isinstance(f, _QuietReload) for f in logging.getLogger("vllm.v1.worker.cpu_worker").filters)


def test_vllms_import_time_future_warning_is_silenced_and_others_are_not():
    import warnings

    torch = pytest.importorskip("torch")
    from officegym.agent.vllm_engine import _quiet_import

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _quiet_import()
        torch.distributed.reduce_op  # noqa: B018 (the access is what warns)
        warnings.warn("something else", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["something else"]
