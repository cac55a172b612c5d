"""GRPO end to end on the workplace environment with a tiny random model: two steps, metrics,
rollouts in the eval row format, checkpoints, the exported model."""

from __future__ import annotations

import json

import pytest

from officegym.core.policy import Policy

pytest.importorskip("torch")


def test_two_grpo_steps_on_workplace(tmp_path, make_cfg, tiny_model_dir, workplace_tasks, tiny_world_dir):
    from officegym.train.grpo import train_grpo

    cfg = make_cfg("grpo", tmp_path / "run", f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}",
                   f"data.world={tiny_world_dir}", "data.val_fraction=0.25", "grpo.max_steps=2",
                   "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2", "validation.every=1",
                   "validation.at_start=true", "checkpoint.every=1", "rollout.temperature=1.0")
    result = train_grpo(cfg)
    assert result.last_step == 2 and not result.stopped
    run = tmp_path / "run"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1, 2]  # step 0: the starting model's validation accuracy
    assert set(records[0]) >= {"step", "val/accuracy"} and "train/loss" not in records[0]
    records = records[1:]
    for key in ("train/reward_mean", "train/zero_variance_groups", "train/loss", "train/grad_norm", "time/generation_s",
                "time/env_s", "time/scoring_s", "time/training_s", "train/invalid_call_rate", "train/turns_per_rollout",
                "val/accuracy", "train/generation_tokens_per_s", "machine/threads"):
        assert key in records[-1], key
    rows = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 2 * 2
    assert {r["officegym"]["group_id"].split("@")[1].split("#")[0] for r in rows} == {"1", "2"}
    assert len({r["officegym"]["group_id"] for r in rows}) == 4  # a task drawn twice in a step gets its own group
    assert all("response" in r and "reward" in r for r in rows)
    assert (run / "config.yaml").exists() and (run / "model" / "config.json").exists()
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000002"]



class _SendThenForward(Policy):
    """Solves the task, then appends a call the tool refuses (forwarding an e-mail id it made up):
    the junk call GRPO on the quickstart learned to add to successful sends."""

    name = "send_then_forward"

    async def complete(self, requests, params):
        from officegym.core.policy import Completion
        from officegym.core.types import ToolCall

        out = []
        for r in requests:
            if r.turn == 0:
                gt = r.task.ground_truth[0]
                calls = [ToolCall(gt.name, gt.arguments, call_id="c0"),
                         ToolCall("email_forward_email", {"email_id": "99999999", "recipient": "bo.kim@acme.com"}, call_id="c1")]
                out.append(Completion(text="", tool_calls=calls))
            else:
                out.append(Completion(text="Done."))
        return out


def test_the_trained_reward_carries_the_penalty_and_is_what_is_logged(tmp_path, make_cfg, workplace_tasks, tiny_world_dir):
    """The invalid-call penalty is part of the reward function: the rollout's reward, the logged
    reward_mean and the advantages' input are one number (the penalty used to be applied only for
    the advantages, and the logs showed the unpenalised reward)."""
    from officegym.train.data import load_tasks, make_environment
    from officegym.train.grpo_step import _reward
    from officegym.train.rollouts import collect, make_reward_fn, rollout_metrics

    cfg = make_cfg("grpo", tmp_path / "run", f"data.tasks={workplace_tasks}", f"data.world={tiny_world_dir}",
                   "grpo.invalid_call_penalty=0.5")
    env = make_environment(cfg.data)
    tasks = load_tasks(workplace_tasks)[:2]
    reward_fn = make_reward_fn(cfg.grpo.reward, env, cfg.grpo.invalid_call_penalty)
    batch = collect(env, [(t, 0) for t in tasks], _SendThenForward(), cfg, 1.0, reward_fn)
    for traj in batch.trajectories:
        assert traj.verdict["matched"] and [e.status for t in traj.turns for e in t.executions] == ["ok", "rejected"]
        assert traj.reward == _reward(traj) == 0.5
        assert traj.reward_components == {"outcome": 1.0, "invalid_call_penalty": -0.5}
    m = rollout_metrics(batch.trajectories, "train")
    assert (m["train/reward_mean"], m["train/accuracy"]) == (0.5, 1.0)
    assert (m["train/invalid_call_rate"], m["train/rollouts_with_invalid_call"]) == (0.5, 1.0)
