"""GRPO with `rollout.backend: ray` on a real (tiny) model: an HF engine actor that got the trainer's
weights samples what the trainer's own module samples, and a run trains end to end with its
rollouts on Ray. Slow: each starts a local Ray cluster (or joins the session's) and loads torch in
an engine actor; tests/on_ray has the quick versions."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install 'officegym[ray]'")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    from officegym.agent.ray_cluster import connect

    c = connect(None, num_cpus=2, object_store_memory=256 * 2**20)
    yield c
    c.close()


RAY = ["rollout.backend=ray", "rollout.ray.workers=1", "rollout.ray.engines=1"]


def test_an_hf_engine_with_pushed_weights_samples_what_the_trainer_samples(cluster, make_cfg, tiny_model_dir, toy_tasks,
                                                                          tmp_path):
    import torch

    from officegym.core import registry
    from officegym.core.task import read_tasks
    from officegym.train.modeling import generation_policy, load_train_model, push_weights
    from officegym.train.rollouts import collect

    cfg = make_cfg("grpo", tmp_path, f"model.name={tiny_model_dir}", "data.env=toy_pick", *RAY)
    tm = load_train_model(cfg.model, cfg.lora, cfg.seed)
    tm.model.eval()
    with torch.no_grad():  # the trainer's weights are no longer the ones on disk
        for p in tm.model.parameters():
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(1)) * 0.05)
    local = generation_policy(tm, cfg.model_copy(update={"rollout": cfg.rollout.model_copy(update={"backend": "local"})}))
    remote = generation_policy(tm, cfg)
    try:
        assert push_weights(remote, tm, 1)
        env = registry.make("toy_pick")
        jobs = [(t, 0) for t in read_tasks(toy_tasks)[:6]]
        here, there = (collect(env, jobs, p, cfg, 0.0) for p in (local, remote))
        for a, b in zip(here.trajectories, there.trajectories):
            assert [(t.prompt_ids, t.completion_ids) for t in a.turns] == [(t.prompt_ids, t.completion_ids) for t in b.turns]
            for x, y in zip(a.turns, b.turns):
                assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)
            assert (a.reward, a.stop_reason) == (b.reward, b.stop_reason)
        assert remote.template_name == local.template_name and remote.pad_id == local.pad_id
        assert there.generation_seconds > 0
    finally:
        remote.close()


def test_grpo_trains_with_its_rollouts_on_ray(cluster, make_cfg, tiny_model_dir, toy_tasks, tmp_path):
    from officegym.train.grpo import train_grpo

    cfg = make_cfg("grpo", tmp_path / "run", f"model.name={tiny_model_dir}", f"data.tasks={toy_tasks}", "data.env=toy_pick",
                   "grpo.max_steps=2", "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2",
                   "rollout.max_new_tokens_per_turn=8", "rollout.max_new_tokens_per_episode=16", "optim.lr=1e-3",
                   "validation.every=1", "data.val_fraction=0.1", "data.max_val_tasks=2", *RAY)
    result = train_grpo(cfg)
    assert result.last_step == 2
    metrics = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    assert all(m["train/broken_rollouts"] == 0 and m["time/generation_s"] > 0 and "val/accuracy" in m for m in metrics)
    rows = [json.loads(x) for x in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["officegym"]["tokens"] > 0 for r in rows)
    deadline = time.monotonic() + 20  # the run stopped its actors; Ray takes their CPUs back asynchronously
    while cluster.free_resources.get("CPU") != 2.0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster.free_resources.get("CPU") == 2.0
