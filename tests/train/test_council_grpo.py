"""Multi-agent GRPO in the council with a tiny random model: the trained seat's own turns carry the
loss, its ledger is exact, the update moves the weights, the councils' figures are logged."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def council_tasks(tmp_path_factory):
    from officegym.core.registry import make
    from officegym.core.task import write_jsonl

    path = tmp_path_factory.mktemp("council") / "tasks.jsonl"
    write_jsonl(path, make("roles/council").generate_tasks(4, 3, difficulty=(1, 1)))
    return path


class LengthReward:
    """A reward that varies between rollouts of an untrained model (its first reply's length is even
    or not), so that the update has advantages to follow; the team reward is kept as a component."""

    name = "length_parity"
    max_total = 1.0

    def __call__(self, task, traj, verdict):
        from officegym.rewards.base import RewardResult

        first = (traj.turns[0].completion_ids or []) if traj.turns else []
        return RewardResult(float(len(first) % 2 == 0), {"team": float(verdict.reward)})


def test_grpo_trains_the_mediator_seat_of_the_council(tmp_path, make_cfg, tiny_model_dir, council_tasks, monkeypatch):
    from officegym.train import grpo, grpo_run, grpo_step

    monkeypatch.setattr(grpo_run, "make_reward_fn", lambda *a, **k: LengthReward())
    seen = {}
    real_rows = grpo_step._rows

    def rows(trajs, advantages, policy):
        out = real_rows(trajs, advantages, policy)
        seen["trajs"], seen["rows"] = list(trajs), out[0]
        return out

    monkeypatch.setattr(grpo_step, "_rows", rows)
    cfg = make_cfg("grpo", tmp_path / "run", f"model.name={tiny_model_dir}", "data.env=roles/council",
                   f"data.tasks={council_tasks}", "data.val_fraction=0.25", "grpo.max_steps=1",
                   "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=4", "rollout.temperature=1.0",
                   "rollout.max_new_tokens_per_turn=16", "rollout.max_new_tokens_per_episode=64",
                   "council.train_seats=[reconcile]", "council.seats={cost: greedy}", "council.max_rounds=2",
                   "validation.every=1", "validation.accuracy=true")
    result = grpo.train_grpo(cfg)
    assert result.last_step == 1 and not result.stopped
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    last = records[-1]
    for key in ("train/council/team_reward", "train/council/consensus", "train/council/reconcile/acts",
                "val/council/team_reward", "train/loss", "train/grad_norm"):
        assert key in last, key
    assert last["train/grad_norm"] > 0  # the varying reward gave advantages, and the update followed them
    trajs = seen["trajs"]
    assert trajs and all(t.messages[0]["content"].startswith("You are ReconcileGPT") for t in trajs)
    for traj in trajs:
        # the mediator's own turns, one per round: the ledger holds its sampled tokens alone
        assert 1 <= len(traj.turns) <= 2
        _, mask, _ = traj.token_ledger()
        assert sum(mask) == sum(len(t.completion_ids or []) for t in traj.turns)


def test_council_training_refuses_a_single_agent_environment(tmp_path, make_cfg, tiny_model_dir, toy_tasks):
    from officegym.train.grpo import TrainingSetupError, train_grpo

    cfg = make_cfg("grpo", tmp_path / "run", f"model.name={tiny_model_dir}", "data.env=toy_pick", f"data.tasks={toy_tasks}",
                   "council.train_seats=[reconcile]")
    with pytest.raises(TrainingSetupError, match="multi-agent environment"):
        train_grpo(cfg)


def test_council_training_plays_its_councils_in_this_process(tmp_path, make_cfg):
    with pytest.raises(ValueError, match=r"rollout\.backend must be local"):
        make_cfg("grpo", tmp_path / "run", "data.env=roles/council", "council.train_seats=[cto]", "rollout.backend=ray")
    cfg = make_cfg("grpo", tmp_path / "run", "council.train_seats=[cto, risk]", "council.seats={reconcile: greedy}")
    assert cfg.council.train_seats == ["cto", "risk"] and cfg.council.seats == {"reconcile": "greedy"}


def test_sft_learns_a_seat_from_the_scripted_councils(tmp_path, make_cfg, tiny_model_dir, council_tasks):
    from officegym.core.task import read_tasks
    from officegym.train.sft import build_examples, train_sft
    from officegym.train.sft_data import BuildReport, council_conversations

    tasks = read_tasks(council_tasks)
    convs = council_conversations(tasks, ["reconcile"], {}, 4, 1.0, BuildReport())
    assert convs and all(c.messages[0]["content"].startswith("You are ReconcileGPT") for c in convs)
    # the mediator's turns are calls of its own tools, with the members' news between them
    roles = [m["role"] for m in convs[0].messages]
    assert roles[:2] == ["system", "user"] and "assistant" in roles and roles.count("user") >= 2
    assert {t.name for t in convs[0].tools} == {"propose_plan", "commit_plan", "escalate"}
    cfg = make_cfg("sft", tmp_path / "sft", f"model.name={tiny_model_dir}", "data.env=roles/council",
                   f"data.tasks={council_tasks}", "data.val_fraction=0.25", "sft.source=council", "sft.max_steps=2",
                   "sft.batch_size=2", "sft.micro_batch_size=2", "sft.max_length=16384",
                   "council.train_seats=[reconcile]")
    result = train_sft(cfg)
    assert result.last_step == 2
    with pytest.raises(Exception, match="council section"):
        bad = make_cfg("sft", tmp_path / "sft2", f"model.name={tiny_model_dir}", "data.env=roles/council",
                       f"data.tasks={council_tasks}", "sft.source=council")
        build_examples(bad, None, None)
