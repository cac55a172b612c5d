"""Run by test_vllm_engine.py in a fresh process (vLLM binds threads and initialises a process group):
a real vLLM engine behind the vllm: policy, checked against a transformers forward of the same
weights. Prints one JSON line of findings."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def hf_logprobs(model_dir: Path, state: dict | None, prompt: list[int], ids: list[int]) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if state is not None:
        model.load_state_dict(state, strict=False)
    with torch.no_grad():
        logits = model(torch.tensor([prompt + ids])).logits[0].float()
    lp = torch.log_softmax(logits, dim=-1)
    return [float(lp[len(prompt) - 1 + k, t]) for k, t in enumerate(ids)]


def main() -> None:
    import os

    import torch

    if os.environ.get("CHECK_TORCH_THREADS"):  # a trainer that chose its own thread count before the engine
        torch.set_num_threads(int(os.environ["CHECK_TORCH_THREADS"]))

    from officegym.agent import vllm_engine
    from officegym.agent.policies import make_policy
    from officegym.core.policy import PolicyRequest, SamplingParams
    from officegym.core.types import ToolSpec

    model_dir, other_dir = Path(sys.argv[1]), Path(sys.argv[2])
    out: dict = {}
    policy = make_policy(f"vllm:{model_dir}", dtype="float32", max_model_len=1024)
    tools = [ToolSpec("email_send_email", "Send an e-mail.", {"type": "object", "properties": {"recipient": {"type": "string"}}})]
    req = PolicyRequest(messages=[{"role": "system", "content": "You are an office assistant."},
                                  {"role": "user", "content": "Send the budget to Ana."}], tools=tools)
    greedy = SamplingParams(temperature=0.0, max_new_tokens=12, seed=0)
    (c,) = policy.complete_sync([req], greedy)
    out["sampled"] = len(c.completion_ids)
    ref = hf_logprobs(model_dir, None, c.prompt_ids, c.completion_ids)
    out["logprob_err"] = max(abs(a - b) for a, b in zip(c.logprobs, ref))
    # Sampling at temperature 0.7: the reported log-probs are the tempered distribution's.
    hot = SamplingParams(temperature=0.7, max_new_tokens=12, seed=1)
    (h,) = policy.complete_sync([req], hot)
    tempered = hf_logprobs_tempered(model_dir, h.prompt_ids, h.completion_ids, 0.7)
    out["tempered_err"] = max(abs(a - b) for a, b in zip(h.logprobs, tempered))
    # A batch of 8 identical requests sampled at T=1 with one seed: rows differ, the engine is reused.
    batch = policy.complete_sync([req] * 8, SamplingParams(temperature=1.0, max_new_tokens=12, seed=3))
    out["distinct_rows"] = len({tuple(b.completion_ids) for b in batch})
    # Continuous batching (the async path the agent loop uses): requests finish independently, and
    # the sampled ids and log-probs are the same kind of exact ledger as the batched call's.
    import asyncio

    async def streamed():
        return await asyncio.gather(*(policy.complete([req], SamplingParams(temperature=1.0, max_new_tokens=4 + 4 * k, seed=9))
                                      for k in range(4)))
    streams = [c for (c,) in asyncio.run(streamed())]
    out["stream_lengths"] = [len(c.completion_ids) for c in streams]
    out["stream_err"] = max(max(abs(a - b) for a, b in zip(c.logprobs, hf_logprobs(model_dir, None, c.prompt_ids, c.completion_ids)))
                            for c in streams if c.completion_ids)
    # A trainer re-chooses threads every step (machine.ThreadGovernor): the driver steps with the new
    # count from then on and the log-probs stay exact.
    rethread = []
    for n in (1, min(2, os.cpu_count() or 1), 1):
        policy.set_threads(n)
        (r,) = asyncio.run(policy.complete([req], SamplingParams(temperature=1.0, max_new_tokens=6, seed=11)))
        rethread.append(max(abs(a - b) for a, b in zip(r.logprobs, hf_logprobs(model_dir, None, r.prompt_ids, r.completion_ids))))
    out["rethread_err"] = max(rethread)
    out["driver_threads"] = vllm_engine.driver(policy._llm).threads
    # Push perturbed weights (a trainer's step): generation follows them.
    from safetensors.torch import load_file

    state = load_file(str(model_dir / "model.safetensors"))
    g = torch.Generator().manual_seed(0)
    moved = {k: v + 0.3 * torch.randn(v.shape, generator=g) if "mlp" in k else v for k, v in state.items()}
    synced = policy.sync_weights(moved.items(), version=1)
    out["synced"] = synced and not policy.sync_weights(moved.items(), version=1)
    (c2,) = policy.complete_sync([req], greedy)
    ref2 = hf_logprobs(model_dir, moved, c2.prompt_ids, c2.completion_ids)
    out["after_sync_err"] = max(abs(a - b) for a, b in zip(c2.logprobs, ref2))
    out["changed"] = c2.completion_ids != c.completion_ids or c2.logprobs != c.logprobs
    # Another checkpoint of the same architecture reuses the engine with its weights from disk.
    engine = policy._llm
    other = make_policy(f"vllm:{other_dir}", dtype="float32", max_model_len=1024)
    (c3,) = other.complete_sync([req], greedy)
    out["same_engine"] = other._llm is engine
    ref3 = hf_logprobs(other_dir, None, c3.prompt_ids, c3.completion_ids)
    out["other_err"] = max(abs(a - b) for a, b in zip(c3.logprobs, ref3))
    vllm_engine.shutdown()
    print(json.dumps(out))


def hf_logprobs_tempered(model_dir: Path, prompt: list[int], ids: list[int], temperature: float) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    with torch.no_grad():
        logits = model(torch.tensor([prompt + ids])).logits[0].float() / temperature
    lp = torch.log_softmax(logits, dim=-1)
    return [float(lp[len(prompt) - 1 + k, t]) for k, t in enumerate(ids)]


if __name__ == "__main__":
    main()
