"""Data-parallel training (train/distributed.py): two gloo ranks on CPU take exactly the update one
process takes on the same rows."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

WORKER = Path(__file__).with_name("ddp_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(model_dir: Path, out: Path, world: int) -> dict:
    port = _free_port()
    procs = []
    for rank in range(world):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "WORLD_SIZE": str(world), "RANK": str(rank), "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        if world == 1:
            for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
                env.pop(key)
        procs.append(subprocess.Popen([sys.executable, str(WORKER), str(model_dir), str(out)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    return json.loads(out.read_text())


def test_two_ranks_take_the_single_process_update(tmp_path, tiny_model_dir):
    import torch

    alone = _run(tiny_model_dir, tmp_path / "alone.json", 1)
    pair = _run(tiny_model_dir, tmp_path / "pair.json", 2)
    assert pair["tokens"] == alone["tokens"] and pair["rows"] == alone["rows"] == 8
    assert pair["loss"] == pytest.approx(alone["loss"], rel=1e-5, abs=1e-7)
    assert pair["grad_norm"] == pytest.approx(alone["grad_norm"], rel=1e-5)
    ga, gb = torch.tensor(alone["grads"]), torch.tensor(pair["grads"])
    assert torch.allclose(ga, gb, rtol=1e-4, atol=1e-8), float((ga - gb).abs().max())
    assert float(ga.abs().max()) > 0
    a, b = torch.tensor(alone["params"]), torch.tensor(pair["params"])
    assert torch.allclose(a, b, rtol=1e-5, atol=1e-7), float((a - b).abs().max())
    start = _run_start(tiny_model_dir)
    assert float((a - start).abs().max()) > 1e-4  # the update moved the adapter: the check is not vacuous


def _run_start(model_dir: Path):
    import torch

    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import build_config
    from officegym.train.modeling import load_train_model

    cfg = build_config(GRPORunConfig, {}, [f"model.name={model_dir}", "model.device=cpu", "model.threads=1"])
    torch.manual_seed(0)
    tm = load_train_model(cfg.model, cfg.lora, 0)
    return torch.cat([p.detach().reshape(-1) for p in tm.trainable_parameters()])


@pytest.mark.slow
def test_torchrun_runs_grpo_on_two_ranks_and_rank_0_writes(tmp_path, tiny_model_dir, workplace_tasks, tiny_world_dir):
    """`torchrun --nproc_per_node 2 -m officegym.train grpo ...` end to end: both ranks train, rank 0
    writes every rank's rollouts, the metrics, the checkpoints and the model; a rerun resumes."""
    out = tmp_path / "run"
    args = [f"out_dir={out}", f"model.name={tiny_model_dir}", "model.device=cpu", "model.threads=1",
            f"data.tasks={workplace_tasks}", f"data.world={tiny_world_dir}", "data.val_fraction=0.25",
            "logging.tensorboard=false", "rollout.max_steps=2", "rollout.max_new_tokens_per_turn=16",
            "rollout.max_new_tokens_per_episode=32", "grpo.max_steps=2", "grpo.num_prompts_per_step=2",
            "grpo.num_generations_per_prompt=2", "validation.every=2", "checkpoint.every=1", "rollout.temperature=1.0"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def torchrun(*overrides: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
               "--master_port", str(_free_port()), "-m", "officegym.train", "grpo", *args, *overrides]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)

    proc = torchrun()
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 2 * 2  # both ranks' rollouts, written once
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "train/loss" in m] == [1, 2]
    assert all(m["train/update_rows"] <= 4 for m in metrics if "train/loss" in m)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_000002"]
    assert (out / "model" / "config.json").exists()
    again = torchrun("grpo.max_steps=3")  # a longer run: both ranks resume from rank 0's checkpoint
    assert again.returncode == 0, again.stderr[-4000:]
    assert "resuming from" in again.stderr + again.stdout
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()][-1] == 3


def _sft(tmp_path: Path, name: str, world: int, model_dir: Path, tasks: Path, world_dir: Path) -> tuple[list[dict], dict]:
    out = tmp_path / name
    args = [f"out_dir={out}", f"model.name={model_dir}", "model.device=cpu", "model.threads=1", f"data.tasks={tasks}",
            f"data.world={world_dir}", "data.val_fraction=0", "logging.tensorboard=false", "sft.max_steps=2",
            "sft.batch_size=4", "sft.micro_batch_size=2", "optim.lr=3e-3", "optim.min_lr=3e-3", "validation.every=0",
            "checkpoint.every=2"]
    port = _free_port()
    procs = []
    for rank in range(world):
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        if world > 1:
            env.update(WORLD_SIZE=str(world), RANK=str(rank), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, "-m", "officegym.train", "sft", *args], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    from safetensors.torch import load_file

    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return metrics, load_file(str(out / "model" / "model.safetensors"))


def test_sft_on_two_ranks_takes_the_single_process_steps(tmp_path, tiny_model_dir, workplace_tasks, tiny_world_dir):
    """Each rank trains half of every step's conversations; the summed token count and gradients
    give the single-process loss, gradient norm and weights."""
    import torch

    alone, w1 = _sft(tmp_path, "alone", 1, tiny_model_dir, workplace_tasks, tiny_world_dir)
    pair, w2 = _sft(tmp_path, "pair", 2, tiny_model_dir, workplace_tasks, tiny_world_dir)
    assert [m["step"] for m in pair] == [m["step"] for m in alone] == [1, 2]
    for a, b in zip(alone, pair):
        assert b["train/trained_tokens"] == a["train/trained_tokens"]
        assert b["train/loss"] == pytest.approx(a["train/loss"], rel=1e-5)
        assert b["train/grad_norm"] == pytest.approx(a["train/grad_norm"], rel=1e-4)
    assert w1.keys() == w2.keys()
    assert all(torch.allclose(w1[k], w2[k], rtol=1e-4, atol=1e-6) for k in w1)
