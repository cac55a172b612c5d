"""Validation inside the next step's rollouts (validation.overlap): the same curve, rollouts,
checkpoints and updates as validating on its own, and a step that fails before its deferred
validation is back still logs and checkpoints the step before it."""

from __future__ import annotations

import asyncio
import json

import pytest

torch = pytest.importorskip("torch")


class _OneByOne:
    """The trained module's HF policy behind a continuous-batching interface, as the vLLM backend
    has: one request a call, so every turn decodes alone and greedy decoding is the same bits
    whatever runs beside it."""

    continuous = True

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def complete(self, requests, params, max_new_tokens=None):
        return await asyncio.to_thread(self.inner.complete_sync, requests, params, max_new_tokens)


def _run(tmp_path, name, monkeypatch, make_cfg, tiny_model_dir, workplace_tasks, tiny_world_dir, overlap, fail_on=None):
    from officegym.train import grpo, grpo_run, grpo_step, modeling, rollouts

    real_policy = modeling.generation_policy
    monkeypatch.setattr(grpo_run, "generation_policy", lambda tm, cfg: _OneByOne(real_policy(tm, cfg)))
    calls = []
    real_collect = rollouts.collect_with_validation

    def spy(*args, **kwargs):
        calls.append(len(args[2]))
        if fail_on is not None and len(calls) == fail_on:
            raise RuntimeError("engine lost")
        return real_collect(*args, **kwargs)

    monkeypatch.setattr(grpo_step, "collect_with_validation", spy)
    run = tmp_path / name
    # greedy rollouts (comparable bit for bit); the SFT term moves the weights every step
    cfg = make_cfg("grpo", run, f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}",
                   f"data.world={tiny_world_dir}", "data.val_fraction=0.25", "grpo.max_steps=3",
                   "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2", "rollout.temperature=0.0",
                   "rollout.max_new_tokens_per_turn=12", "rollout.max_steps=2", "grpo.sft_mix.coef=1.0",
                   "grpo.sft_mix.examples=2", "optim.lr=0.05", "validation.every=1", "validation.at_start=true",
                   f"validation.overlap={str(overlap).lower()}", "checkpoint.every=1", "checkpoint.keep_top_k=5")
    if fail_on is not None:
        with pytest.raises(RuntimeError, match="engine lost"):
            grpo.train_grpo(cfg)
    else:
        grpo.train_grpo(cfg)
    return run, calls


def _metrics(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _rollouts(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [(r["officegym"]["step"], r["officegym"]["group_id"], json.dumps(r["response"], sort_keys=True)) for r in rows]


def test_overlapped_validation_equals_validation_on_its_own(tmp_path, monkeypatch, make_cfg, tiny_model_dir,
                                                            workplace_tasks, tiny_world_dir):
    args = (monkeypatch, make_cfg, tiny_model_dir, workplace_tasks, tiny_world_dir)
    alone, alone_calls = _run(tmp_path, "alone", *args, overlap=False)
    rides, ride_calls = _run(tmp_path, "rides", *args, overlap=True)
    assert alone_calls == [] and len(ride_calls) == 3  # steps 0, 1, 2 ride with steps 1, 2, 3; step 3 validates alone
    a, b = _metrics(alone), _metrics(rides)
    assert [r["step"] for r in a] == [r["step"] for r in b] == [0, 1, 2, 3]
    val_keys = {k for k in a[1] if k.startswith("val/")}
    assert {"val/accuracy", "val/reward_mean", "val/sampled_tokens_per_rollout"} <= val_keys
    for ra, rb in zip(a, b):
        assert {k: ra[k] for k in val_keys & set(ra)} == {k: rb[k] for k in val_keys & set(rb)}, ra["step"]
        for key in ("train/loss", "train/sft_loss", "train/reward_mean", "train/sampled_tokens"):
            assert (key in ra) == (key in rb) == (ra["step"] > 0), (ra["step"], key)  # step 0: validation only
            if key in ra:
                assert ra[key] == pytest.approx(rb[key], rel=1e-6, abs=1e-9), (ra["step"], key)
    assert all("time/validation_overlapped_s" in r for r in b[:3]) and "time/validation_s" in b[3]
    # the validated weights are each step's: the rollouts of every validation and every step are the same text
    val_a, val_b = _rollouts(alone / "val_rollouts.jsonl"), _rollouts(rides / "val_rollouts.jsonl")
    assert sorted(val_a) == sorted(val_b) and {s for s, _, _ in val_a} == {0, 1, 2, 3}
    assert len({text for s, _, text in val_a if s == 0} ^ {text for s, _, text in val_a if s == 3}) > 0
    assert _rollouts(alone / "rollouts.jsonl") == _rollouts(rides / "rollouts.jsonl")
    # checkpoints: the same steps kept, the same data position, metric and adapter weights
    idx_a = json.loads((alone / "checkpoints.json").read_text())["checkpoints"]
    idx_b = json.loads((rides / "checkpoints.json").read_text())["checkpoints"]
    assert [(c["step"], c["metric"]) for c in idx_a] == [(c["step"], c["metric"]) for c in idx_b]
    assert [c["step"] for c in idx_a] == [1, 2, 3]
    for c in idx_a:
        sa = json.loads((alone / "checkpoints" / c["dir"] / "state.json").read_text())
        sb = json.loads((rides / "checkpoints" / c["dir"] / "state.json").read_text())
        assert sa == sb
        ra = torch.load(alone / "checkpoints" / c["dir"] / "rng.pt", weights_only=True)
        rb = torch.load(rides / "checkpoints" / c["dir"] / "rng.pt", weights_only=True)
        assert torch.equal(ra["torch"], rb["torch"]) and ra["python"] == rb["python"]
    from safetensors.torch import load_file

    wa, wb = load_file(alone / "model" / "model.safetensors"), load_file(rides / "model" / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def test_a_step_that_fails_before_its_deferred_validation_keeps_the_step_before(tmp_path, monkeypatch, make_cfg,
                                                                               tiny_model_dir, workplace_tasks,
                                                                               tiny_world_dir):
    run, calls = _run(tmp_path, "fails", monkeypatch, make_cfg, tiny_model_dir, workplace_tasks, tiny_world_dir,
                      overlap=True, fail_on=2)
    assert len(calls) == 2
    rows = _metrics(run)
    # step 0's validation came back with step 1; step 2 failed before step 1's did: step 1 is logged
    # without it, and its checkpoint (the weights step 1 ended with) is there to resume from
    assert [r["step"] for r in rows] == [0, 1] and "val/accuracy" in rows[0] and "train/loss" in rows[1]
    assert "val/accuracy" not in rows[1]
    index = json.loads((run / "checkpoints.json").read_text())["checkpoints"]
    assert [c["step"] for c in index] == [1] and index[0]["metric"] is None
    state = json.loads((run / "checkpoints" / index[0]["dir"] / "state.json").read_text())
    assert state["step"] == 1 and state["data"] is not None
