"""SFT and GRPO end to end with tiny models: SFT steps, kill-and-resume, the CLI, configs, plots,
and a learning test on the toy pick environment."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")


def test_config_overrides_and_errors(tmp_path):
    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import ConfigError, load_config

    path = tmp_path / "c.yaml"
    path.write_text("grpo: {num_prompts_per_step: 2}\nlora: {enabled: true}\n")
    cfg = load_config(GRPORunConfig, path, ["grpo.num_generations_per_prompt=8", "grpo.reward={shaped: 0.5, binary: 0.5}"])
    assert cfg.grpo.num_prompts_per_step == 2 and cfg.grpo.num_generations_per_prompt == 8 and cfg.lora.enabled
    assert cfg.grpo.reward == {"shaped": 0.5, "binary": 0.5}
    assert cfg.optim.lr == 5e-6 and cfg.optim.min_lr == 5e-7 and cfg.grpo.baseline == "leave_one_out"
    with pytest.raises(ConfigError, match=r"grpo\.num_generation: unknown key"):
        load_config(GRPORunConfig, path, ["grpo.num_generation=8"])
    with pytest.raises(ConfigError, match="greater than or equal to 2"):
        load_config(GRPORunConfig, path, ["grpo.num_generations_per_prompt=1"])
    with pytest.raises(ConfigError, match=r"dotted\.key=value"):
        load_config(GRPORunConfig, path, ["nonsense"])


def test_sft_two_steps_assistant_only_mask(tmp_path, make_cfg, tiny_model_dir, workplace_tasks, tiny_world_dir):
    from officegym.train.modeling import load_train_model, token_renderer
    from officegym.train.sft import build_examples, train_sft

    cfg = make_cfg("sft", tmp_path / "sft", f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}",
                   f"data.world={tiny_world_dir}", "sft.max_steps=2", "sft.batch_size=2", "sft.micro_batch_size=1",
                   "validation.every=1", "checkpoint.every=1", "data.val_fraction=0.25")
    tm = load_train_model(cfg.model, cfg.lora)
    renderer = token_renderer(tm, cfg)
    from officegym.train.data import make_environment

    train, val, _, report = build_examples(cfg, renderer, make_environment(cfg.data))
    assert len(train) == 3 and len(val) == 1 and not report.dropped
    ex = train[0]
    trained = renderer.tokenizer.decode([i for i, m in zip(ex.input_ids, ex.loss_mask) if m])
    assert "<tool_call>" in trained and "Done." in trained and trained.endswith("<|im_end|>")
    assert "tool_response" not in trained and "Email Bo" not in trained  # tool output and prompt are not trained
    result = train_sft(cfg)
    records = [json.loads(x) for x in (tmp_path / "sft" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2] and all(r["val/loss"] > 0 for r in records)
    assert result.last_step == 2 and (tmp_path / "sft" / "model" / "config.json").exists()


def _weights(path):
    from safetensors.torch import load_file

    return load_file(str(next((path / "model").glob("*.safetensors"))))


def test_sft_with_the_signatures_template_trains_on_it_and_saves_it(tmp_path, make_cfg, tiny_model_dir,
                                                                     workplace_tasks, tiny_world_dir):
    """model.chat_template=officegym-signatures: SFT's conversations show the tools as signatures
    (shorter than the JSON lines) and the saved model carries the template, so later stages and
    evaluations (chat_template auto) see the prompts it was trained on."""
    from transformers import AutoTokenizer

    from officegym.agent.chatml import SIGNATURES_CHAT_TEMPLATE
    from officegym.train.data import make_environment
    from officegym.train.modeling import load_train_model, token_renderer
    from officegym.train.sft import build_examples, train_sft

    common = [f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}", f"data.world={tiny_world_dir}",
              "sft.max_steps=1", "sft.batch_size=2", "sft.micro_batch_size=2", "validation.every=0",
              "checkpoint.every=1", "data.val_fraction=0"]
    lengths = {}
    for template in ("officegym", "officegym-signatures"):
        cfg = make_cfg("sft", tmp_path / template, *common, f"model.chat_template={template}")
        tm = load_train_model(cfg.model, cfg.lora)
        renderer = token_renderer(tm, cfg)
        train, _, _, _ = build_examples(cfg, renderer, make_environment(cfg.data))
        text = renderer.tokenizer.decode(train[0].input_ids)
        assert ("email_send_email(recipient: string" in text) == (template == "officegym-signatures")
        lengths[template] = sum(len(e) for e in train)
    assert lengths["officegym-signatures"] < 0.8 * lengths["officegym"]
    train_sft(cfg)
    saved = AutoTokenizer.from_pretrained(tmp_path / "officegym-signatures" / "model")
    assert saved.chat_template == SIGNATURES_CHAT_TEMPLATE


@pytest.mark.parametrize("extra", [[], ["grpo.sft_mix.coef=0.5", "grpo.sft_mix.examples=3", "grpo.sft_mix.draw=shared_prompt"]],
                         ids=["grpo", "sft_mix"])
def test_kill_and_resume_matches_uninterrupted(tmp_path, make_cfg, tiny_model_dir, toy_tasks, extra):
    from officegym.train.grpo import train_grpo

    common = [f"model.name={tiny_model_dir}", f"data.tasks={toy_tasks}", "data.env=toy_pick", "grpo.max_steps=4",
              "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2", "checkpoint.every=1",
              "rollout.max_new_tokens_per_turn=8", "rollout.max_new_tokens_per_episode=16", "optim.lr=1e-3",
              "validation.every=1", *extra]
    full = train_grpo(make_cfg("grpo", tmp_path / "full", *common))
    assert full.last_step == 4

    class Killed(Exception):
        pass

    def kill_after_2(step, metrics):
        if step == 3:  # dies after step 3's update but before its checkpoint: step 3 must be redone
            raise Killed

    with pytest.raises(Killed):
        train_grpo(make_cfg("grpo", tmp_path / "cut", *common), step_hook=kill_after_2)
    resumed = train_grpo(make_cfg("grpo", tmp_path / "cut", *common))
    assert resumed.start_step == 2 and resumed.last_step == 4
    a, b = _weights(tmp_path / "full"), _weights(tmp_path / "cut")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    ra = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    rb = [json.loads(x) for x in (tmp_path / "cut" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rb] == [1, 2, 3, 4]
    assert [r["train/reward_mean"] for r in ra] == [r["train/reward_mean"] for r in rb]
    assert [r.get("train/sft_loss") for r in ra] == [r.get("train/sft_loss") for r in rb]
    rows = [json.loads(x) for x in (tmp_path / "cut" / "rollouts.jsonl").read_text().splitlines()]
    assert sorted({r["officegym"]["step"] for r in rows}) == [1, 2, 3, 4] and len(rows) == 16

    def val_rows(run):
        return [json.loads(x) for x in (run / "val_rollouts.jsonl").read_text().splitlines()]

    # validation rollouts: step 3's, written before the kill, are dropped on resume and redone once
    full_val, cut_val = val_rows(tmp_path / "full"), val_rows(tmp_path / "cut")
    steps = [r["officegym"]["step"] for r in full_val]
    assert sorted(set(steps)) == [1, 2, 3, 4] and len(steps) == 4 * steps.count(1) > 0
    assert sorted(r["officegym"]["step"] for r in cut_val) == sorted(steps)
    assert [(r["id"], r["reward"]) for r in cut_val] == [(r["id"], r["reward"]) for r in full_val]


def test_lora_grpo_and_cli_and_plot(tmp_path, tiny_model_dir, toy_tasks):
    from typer.testing import CliRunner

    from officegym.train.cli import plot_command, train_app

    pytest.importorskip("peft")
    out = tmp_path / "lora"
    args = ["grpo", f"out_dir={out}", f"model.name={tiny_model_dir}", f"data.tasks={toy_tasks}", "data.env=toy_pick",
            "model.device=cpu", "model.threads=1", "lora.enabled=true", "lora.r=4", "grpo.max_steps=2",
            "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2", "rollout.max_new_tokens_per_turn=8",
            "logging.tensorboard=false", "validation.every=1", "grpo.loss.kl_beta=0.1", "grpo.mu=2"]
    result = CliRunner().invoke(train_app, args)
    assert result.exit_code == 0, result.output
    assert (out / "checkpoints" / "step_000002" / "adapter").is_dir() and (out / "model" / "config.json").exists()
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert "val/accuracy" in records[-1] and records[-1]["train/kl"] >= 0
    kept = [json.loads(x)["officegym"]["step"] for x in (out / "val_rollouts.jsonl").read_text().splitlines()]
    assert records[-1]["val/rollouts"] == kept.count(records[-1]["step"]) > 0  # the n of the report's interval
    assert all(r["mem/peak_rss_gb"] >= r.get("mem/rss_gb", 0) > 0 for r in records if r["step"] > 0)  # memory per step
    bad = CliRunner().invoke(train_app, ["grpo", "grpo.bogus=1"])
    assert bad.exit_code == 2 and "unknown key" in bad.output
    pytest.importorskip("matplotlib")
    import typer

    app = typer.Typer()
    app.command()(plot_command)
    shown = CliRunner().invoke(app, [str(out)])
    assert shown.exit_code == 0 and (out / "plots" / "reward.png").exists()


@pytest.fixture(scope="module")
def toy_sft_model(tmp_path_factory, toy_model_dir):
    """SFT warm start on the pick task (format only: every SFT task picks 0..9 uniformly)."""
    from officegym.core.task import write_jsonl
    from officegym.train import toy
    from officegym.train.config import SFTRunConfig
    from officegym.train.config_files import build_config
    from officegym.train.sft import train_sft

    root = tmp_path_factory.mktemp("toy-sft")
    write_jsonl(root / "sft.jsonl", toy.make_tasks(40, seed=1))
    cfg = build_config(SFTRunConfig, {}, [
        f"out_dir={root / 'run'}", "model.device=cpu", "model.threads=1", "logging.tensorboard=false", "validation.every=0",
        "checkpoint.keep_top_k=1", f"model.name={toy_model_dir}", f"data.tasks={root / 'sft.jsonl'}", "data.env=toy_pick",
        "sft.max_steps=40", "sft.batch_size=8", "optim.lr=3e-3", "optim.min_lr=3e-3", "data.val_fraction=0"])
    train_sft(cfg)
    return root / "run" / "model"


SMALL = ["data.env=toy_pick", "rollout.max_new_tokens_per_turn=16", "rollout.max_new_tokens_per_episode=32"]


def test_reward_rises_on_toy_task(tmp_path, make_cfg, toy_sft_model):
    """After the format-only SFT warm start, GRPO on tasks that all ask for 7: the sampled reward must
    rise by a wide margin within 32 steps. Seeds 0, 1, 2 on the dev machine: first 4 steps 0.10 / 0.09
    / 0.16, last 8 steps 0.49 / 0.33 / 0.41 (lr 1e-3 rises faster but can collapse to 0 for good)."""
    from officegym.core.task import write_jsonl
    from officegym.train import toy
    from officegym.train.grpo import train_grpo

    write_jsonl(tmp_path / "rl.jsonl", toy.make_tasks(16, seed=2, numbers=[7]))
    grpo = make_cfg("grpo", tmp_path / "grpo", f"model.name={toy_sft_model}", f"data.tasks={tmp_path / 'rl.jsonl'}",
                    *SMALL, "grpo.max_steps=32", "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=8",
                    "optim.lr=5e-4", "optim.min_lr=5e-4", "data.val_fraction=0", "checkpoint.every=100",
                    "grpo.micro_batch_size=16")
    hist = train_grpo(grpo).history
    rewards = [h["train/reward_mean"] for h in hist]
    first, last = sum(rewards[:4]) / 4, sum(rewards[-8:]) / 8
    print("reward", [round(r, 2) for r in rewards])
    assert last >= 0.3 and last >= 2 * first and last >= first + 0.15, (first, last)


def test_skipping_zero_advantage_rows_changes_nothing(tmp_path, make_cfg, toy_sft_model):
    """Rows with advantage 0 (groups that all fail or all pass) are not forwarded; the update
    must equal the one that forwards them (same normaliser, zero loss terms, same optimiser step)."""
    from safetensors.torch import load_file

    from officegym.core.task import write_jsonl
    from officegym.train import toy
    from officegym.train.grpo import train_grpo

    write_jsonl(tmp_path / "rl.jsonl", toy.make_tasks(16, seed=2, numbers=[7]))
    common = [f"model.name={toy_sft_model}", f"data.tasks={tmp_path / 'rl.jsonl'}", *SMALL, "grpo.max_steps=3",
              "grpo.num_prompts_per_step=4", "grpo.num_generations_per_prompt=4", "grpo.micro_batch_size=2",
              "optim.lr=1e-3", "data.val_fraction=0", "checkpoint.every=100",
              # Adam turns float noise in a near-zero gradient into a full lr-sized step; a large eps
              # keeps the comparison about the gradient (padding differs between the two runs)
              "optim.eps=1e-2"]
    skip = train_grpo(make_cfg("grpo", tmp_path / "skip", *common))
    full = train_grpo(make_cfg("grpo", tmp_path / "full", *common, "grpo.skip_zero_advantage=false"))
    skipped = [h["train/skipped_zero_advantage"] for h in skip.history]
    assert 0 < sum(skipped) < 3 * 16 and all(h["train/skipped_zero_advantage"] == 0 for h in full.history)
    assert [h["train/reward_mean"] for h in skip.history] == [h["train/reward_mean"] for h in full.history]
    a, b = _weights(tmp_path / "skip"), _weights(tmp_path / "full")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    start = load_file(str(next(toy_sft_model.glob("*.safetensors"))))
    assert any(not torch.equal(a[k], start[k]) for k in a)  # it did train


def test_merging_identical_rollouts_changes_nothing(tmp_path, make_cfg, toy_sft_model):
    """Identical rollouts of a group are forwarded once with their advantages summed; the update must
    equal the one that forwards every copy."""
    from officegym.core.task import write_jsonl
    from officegym.train import toy
    from officegym.train.grpo import train_grpo

    write_jsonl(tmp_path / "rl.jsonl", toy.make_tasks(16, seed=2, numbers=[7, 3]))
    common = [f"model.name={toy_sft_model}", f"data.tasks={tmp_path / 'rl.jsonl'}", *SMALL, "grpo.max_steps=3",
              "grpo.num_prompts_per_step=4", "grpo.num_generations_per_prompt=6", "grpo.micro_batch_size=3",
              "optim.lr=1e-3", "data.val_fraction=0", "checkpoint.every=100", "optim.eps=1e-2",
              "rollout.temperature=0.7"]
    merged = train_grpo(make_cfg("grpo", tmp_path / "merged", *common))
    every = train_grpo(make_cfg("grpo", tmp_path / "every", *common, "grpo.merge_duplicates=false"))
    assert sum(h["train/merged_duplicates"] for h in merged.history) > 0  # the toy model repeats itself
    assert [h["train/reward_mean"] for h in merged.history] == [h["train/reward_mean"] for h in every.history]
    assert all(h["train/update_rows"] <= e["train/update_rows"] for h, e in zip(merged.history, every.history))
    a, b = _weights(tmp_path / "merged"), _weights(tmp_path / "every")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_grpo_with_bf16_autocast_generates(tmp_path, make_cfg, tiny_model_dir, toy_tasks):
    """Autocast leaves keys float32 and values bfloat16; generation into the static cache must work."""
    from officegym.train.grpo import train_grpo

    hist = train_grpo(make_cfg("grpo", tmp_path / "bf16", f"model.name={tiny_model_dir}", f"data.tasks={toy_tasks}",
                               "data.env=toy_pick", "model.precision=bf16", "grpo.max_steps=1",
                               "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2",
                               "data.val_fraction=0", "checkpoint.every=100")).history
    assert hist[0]["train/backend_errors"] == 0 and hist[0]["train/sampled_tokens"] > 0


def test_grpo_stops_when_every_rollout_fails_in_the_backend(tmp_path, make_cfg, tiny_model_dir, toy_tasks, monkeypatch):
    from officegym.agent.hf import HFPolicy
    from officegym.train.grpo import TrainingSetupError, train_grpo

    def broken(self, *args, **kwargs):
        raise RuntimeError("the sampler broke")

    monkeypatch.setattr(HFPolicy, "_complete_locked", broken)
    cfg = make_cfg("grpo", tmp_path / "broken", f"model.name={tiny_model_dir}", f"data.tasks={toy_tasks}",
                   "data.env=toy_pick", "grpo.max_steps=2", "grpo.num_prompts_per_step=2",
                   "grpo.num_generations_per_prompt=2", "data.val_fraction=0")
    with pytest.raises(TrainingSetupError, match=r"all 4 rollouts failed.*the sampler broke"):
        train_grpo(cfg)


def test_tasks_of_another_environment_are_refused(tmp_path, make_cfg, tiny_model_dir, toy_tasks):
    """Toy tasks trained as workplace tasks would all get the verifier's bad-task verdict (reward 0)."""
    from officegym.train.data import DataError
    from officegym.train.grpo import train_grpo

    cfg = make_cfg("grpo", tmp_path / "wrong", f"model.name={tiny_model_dir}", f"data.tasks={toy_tasks}", "data.env=workplace",
                   "grpo.max_steps=1")
    with pytest.raises(DataError, match=r"data.env is 'workplace' but 40 of 40 tasks belong to another environment: toy_pick"):
        train_grpo(cfg)


@pytest.mark.parametrize(("prompt_grad", "share"), [(True, "exact"), (False, "no_grad")])
def test_prompt_grad_chooses_how_the_shared_prompt_runs(tmp_path, make_cfg, tiny_model_dir, toy_tasks, monkeypatch,
                                                         prompt_grad, share):
    from officegym.train import forward
    from officegym.train.grpo import train_grpo

    seen = []
    real = forward.forward_logprobs

    def spy(*args, **kwargs):
        seen.append(kwargs.get("share"))
        return real(*args, **kwargs)

    monkeypatch.setattr(forward, "forward_logprobs", spy)
    cfg = make_cfg("grpo", tmp_path / "run", f"model.name={tiny_model_dir}", f"data.tasks={toy_tasks}", *SMALL,
                   "grpo.max_steps=1", "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2",
                   "grpo.skip_zero_advantage=false", "data.val_fraction=0", f"grpo.prompt_grad={str(prompt_grad).lower()}")
    train_grpo(cfg)
    assert seen and set(seen) == {share}


def test_negative_advantages_are_scaled_by_negative_weight(tmp_path, make_cfg, toy_sft_model, monkeypatch):
    from officegym.core.task import write_jsonl
    from officegym.train import grpo as grpo_module
    from officegym.train import grpo_step, toy

    write_jsonl(tmp_path / "rl.jsonl", toy.make_tasks(16, seed=2, numbers=[7, 3]))
    seen: dict[str, list[float]] = {}
    real = grpo_step.update_policy

    def spy(cfg, tm, rows, advantages, *args):
        seen.setdefault(str(cfg.grpo.negative_weight), []).extend(advantages)
        return real(cfg, tm, rows, advantages, *args)

    monkeypatch.setattr(grpo_step, "update_policy", spy)
    for weight in ("1.0", "0.25"):
        grpo_module.train_grpo(make_cfg(
            "grpo", tmp_path / weight, f"model.name={toy_sft_model}", f"data.tasks={tmp_path / 'rl.jsonl'}", *SMALL,
            "grpo.max_steps=1", "grpo.num_prompts_per_step=4", "grpo.num_generations_per_prompt=4",
            "data.val_fraction=0", f"grpo.negative_weight={weight}", "rollout.temperature=1.0"))
    full, scaled = seen["1.0"], seen["0.25"]
    assert any(a < 0 for a in full) and any(a > 0 for a in full)  # the same rollouts (same seed), both signs
    assert scaled == pytest.approx([a * 0.25 if a < 0 else a for a in full])


@pytest.mark.parametrize("step_anyway", [False, True])
def test_a_step_whose_advantages_are_all_zero_leaves_the_weights_alone(tmp_path, make_cfg, tiny_model_dir, toy_tasks,
                                                                        step_anyway):
    """The tiny random model never solves a toy task: every advantage is 0. AdamW would still apply
    weight decay (and, after a real update, momentum); by default such a step does not run it."""
    from safetensors.torch import load_file

    from officegym.train.grpo import train_grpo

    out = tmp_path / "run"
    result = train_grpo(make_cfg("grpo", out, f"model.name={tiny_model_dir}", f"data.tasks={toy_tasks}", *SMALL,
                                 "grpo.max_steps=2", "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2",
                                 "data.val_fraction=0", "optim.lr=1e-2", "optim.weight_decay=0.5",
                                 f"grpo.step_without_signal={str(step_anyway).lower()}"))
    assert all(h["train/reward_std"] == 0 for h in result.history)
    assert [h["train/skipped_update"] for h in result.history] == ([0.0, 0.0] if step_anyway else [1.0, 1.0])
    start = load_file(str(next(tiny_model_dir.glob("*.safetensors"))))
    end = _weights(out)
    moved = any(not torch.equal(end[k], start[k]) for k in start if k in end)
    assert moved == step_anyway


def test_validation_episodes_take_their_own_limits(make_cfg, tmp_path):
    from officegym.train.rollouts import loop_config

    cfg = make_cfg("grpo", tmp_path, "rollout.max_steps=3", "rollout.max_new_tokens_per_turn=80")
    assert (loop_config(cfg, 0.0, validation=True).max_steps, loop_config(cfg, 0.0, validation=True).params.max_new_tokens) == (3, 80)
    cfg = make_cfg("grpo", tmp_path, "rollout.max_steps=3", "validation.max_steps=4", "validation.max_new_tokens_per_turn=96")
    val, train = loop_config(cfg, 0.0, validation=True), loop_config(cfg, 0.7)
    assert (val.max_steps, val.params.max_new_tokens, train.max_steps) == (4, 96, 3)


def test_a_partial_sft_section_keeps_sfts_own_defaults_for_the_other_keys(tmp_path):
    from officegym.train.config import SFTRunConfig
    from officegym.train.config_files import build_config

    cfg = build_config(SFTRunConfig, {"out_dir": str(tmp_path), "checkpoint": {"every": 12, "keep_top_k": 1},
                                      "validation": {"every": 0}, "optim": {"lr": 5e-4}})
    assert (cfg.checkpoint.every, cfg.checkpoint.metric, cfg.checkpoint.higher_is_better) == (12, "val/loss", False)
    assert (cfg.validation.every, cfg.validation.accuracy) == (0, False)
    assert (cfg.optim.lr, cfg.optim.min_lr) == (5e-4, 2e-6)
    assert build_config(SFTRunConfig, {"out_dir": str(tmp_path)}).checkpoint.metric == "val/loss"


def test_export_best_keeps_the_validated_checkpoint_not_the_last_step(tmp_path, make_cfg, toy_sft_model, monkeypatch):
    """checkpoint.export=best: out_dir/model holds the weights of the checkpoint best by the metric
    (early stopping), not those of the last step; the default keeps the last step."""
    from safetensors.torch import load_file

    from officegym.core.task import write_jsonl
    from officegym.train import toy
    from officegym.train.checkpoint import CheckpointManager
    from officegym.train.grpo import train_grpo

    write_jsonl(tmp_path / "rl.jsonl", toy.make_tasks(16, seed=2, numbers=[7, 3]))
    common = [f"model.name={toy_sft_model}", f"data.tasks={tmp_path / 'rl.jsonl'}", *SMALL, "grpo.max_steps=3",
              "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=6", "optim.lr=1e-3", "optim.min_lr=1e-3",
              "data.val_fraction=0.25", "validation.every=1", "checkpoint.every=1", "checkpoint.keep_top_k=3",
              "rollout.temperature=1.0"]
    last = train_grpo(make_cfg("grpo", tmp_path / "last", *common))
    assert last.exported_step == 3
    # Which step the toy validation favours is up to chance: the test names step 1 the best, as a
    # validation curve that peaked early would.
    first = CheckpointManager.best
    monkeypatch.setattr(CheckpointManager, "best", lambda self: next(c for c in self.list() if c.step == 1))
    best = train_grpo(make_cfg("grpo", tmp_path / "best", *common, "checkpoint.export=best"))
    monkeypatch.setattr(CheckpointManager, "best", first)
    assert best.exported_step == 1
    exported = _weights(tmp_path / "best")
    step1 = load_file(str(next((tmp_path / "best" / "checkpoints" / "step_000001" / "model").glob("*.safetensors"))))
    step3 = _weights(tmp_path / "last")
    assert all(torch.equal(exported[k], step1[k]) for k in exported)
    assert any(not torch.equal(exported[k], step3[k]) for k in exported)  # training moved the weights after step 1


def test_sft_mix_trains_on_ground_truth_every_step(tmp_path, make_cfg, toy_sft_model):
    """grpo.sft_mix adds the SFT loss of a few ground-truth conversations to every step: it is logged,
    it falls, and steps whose groups carry no signal still update (the SFT term is signal)."""
    from officegym.core.task import write_jsonl
    from officegym.train import toy
    from officegym.train.grpo import train_grpo
    from officegym.train.sft_mix import SFTMix

    write_jsonl(tmp_path / "rl.jsonl", toy.make_tasks(16, seed=2, numbers=[7]))
    common = [f"model.name={toy_sft_model}", f"data.tasks={tmp_path / 'rl.jsonl'}", *SMALL, "grpo.max_steps=6",
              "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2", "optim.lr=3e-3", "optim.min_lr=3e-3",
              "data.val_fraction=0", "checkpoint.every=100"]
    hist = train_grpo(make_cfg("grpo", tmp_path / "mix", *common, "grpo.sft_mix.coef=1", "grpo.sft_mix.examples=8")).history
    losses = [h["train/sft_loss"] for h in hist]
    assert all(h["train/sft_tokens"] > 0 and h["train/skipped_update"] == 0 for h in hist)
    assert sum(losses[-2:]) / 2 < 0.7 * sum(losses[:2]) / 2, losses
    plain = train_grpo(make_cfg("grpo", tmp_path / "plain", *common)).history
    assert all("train/sft_loss" not in h for h in plain)
    # a step where no group varied: the plain run skips its optimiser step, the mixed run trains on
    # the SFT term (on the dev machine 3 of the 6 mixed steps and 5 of the 6 plain ones)
    quiet = [h for h in hist if h["train/zero_variance_groups"] == 1]
    assert quiet and all(h["train/skipped_update"] == 0 for h in quiet)
    # the update's two parts: no policy gradient where no group varied, the SFT term's every step
    assert all(h["train/pg_grad_norm"] == 0 and h["train/sft_grad_norm"] > 0 for h in quiet)
    assert any(h["train/pg_grad_norm"] > 0 for h in hist if h["train/zero_variance_groups"] < 1)
    assert all(h["train/skipped_update"] == 1 for h in plain if h["train/zero_variance_groups"] == 1)

    class Cfg:
        seed = 3
        grpo = type("G", (), {"sft_mix": type("M", (), {"examples": 4, "draw": "any"})()})()

    from officegym.train.sft_data import BuildReport, Example

    mix = SFTMix([Example("a", [1, 2], [0, 1]) for _ in range(10)], 0, Cfg(), BuildReport())
    assert mix.indexes(5) == mix.indexes(5) and len(set(mix.indexes(5))) == 4 and mix.indexes(5) != mix.indexes(6)
    from officegym.train.data import DataError

    with pytest.raises(DataError, match="no ground-truth conversation"):
        SFTMix([], 0, Cfg(), BuildReport())


def test_gradient_split_separates_what_came_before_and_after_the_snapshot():
    from officegym.train import runtime
    from officegym.train.runtime import gradient_snapshot, gradient_split

    a, b = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))
    a.grad = torch.tensor([3.0, 0.0, 0.0])  # b has no gradient before the snapshot
    before = gradient_snapshot([a, b])
    a.grad += torch.tensor([0.0, 4.0, 0.0])
    b.grad = torch.tensor([0.0, -3.0])
    out = gradient_split([a, b], before)
    assert out["train/pg_grad_norm"] == pytest.approx(3.0)
    assert out["train/sft_grad_norm"] == pytest.approx(5.0)
    assert out["train/pg_sft_grad_cos"] == pytest.approx(0.0)
    a.grad = torch.tensor([3.0, 0.0, 0.0])
    out = gradient_split([a, b], [torch.tensor([1.0, 0.0, 0.0]), None])  # after - before = (2, 0, 0), (0, -3)
    assert out["train/pg_sft_grad_cos"] == pytest.approx(2.0 / 13 ** 0.5)
    with pytest.MonkeyPatch.context() as mp:  # too many weights to copy: no snapshot, no figures
        mp.setattr(runtime, "SNAPSHOT_MAX_NUMEL", 4)
        assert gradient_snapshot([a, b]) is None


def test_sft_mix_shared_prompt_draws_one_prompt_a_step_with_the_same_odds():
    """grpo.sft_mix.draw=shared_prompt: a step's conversations share one prompt (so the term runs it
    once), each conversation is drawn as often as under `any` (k/N a step), a prompt with fewer than
    k conversations is topped up from the others, and the draw depends on (seed, step) alone."""
    from collections import Counter

    from officegym.train.sft_data import BuildReport, Example
    from officegym.train.sft_mix import SFTMix, prompt_clusters

    # prompts long enough that dropping one from a micro-batch's shared prefix is worth a cut (forward.SPLIT_LOSS)
    prompts = {"a": [5] * 300, "b": [6] * 300, "c": [7] * 270 + [1] * 30}  # c shares 0 tokens with a or b
    sizes = {"a": 12, "b": 8, "c": 3}
    examples, prompt_of = [], []
    for name, n in sizes.items():
        for j in range(n):  # each conversation: its prompt, a user turn of its own, the trained reply
            examples.append(Example(name, prompts[name] + [100 + j, 101 + j] + [9, 9, 9], [0] * 302 + [1] * 3))
            prompt_of.append(name)
    clusters = prompt_clusters(examples)
    assert all({prompt_of[j] for j in clusters[i]} == {prompt_of[i]} for i in range(len(examples)))
    assert [len(clusters[i]) for i in range(len(examples))] == [12] * 12 + [8] * 8 + [3] * 3

    class Cfg:
        seed = 3
        grpo = type("G", (), {"sft_mix": type("M", (), {"examples": 4, "draw": "shared_prompt"})()})()

    mix = SFTMix(examples, 0, Cfg(), BuildReport())
    assert mix.indexes(7) == SFTMix(examples, 0, Cfg(), BuildReport()).indexes(7)
    counts: Counter[int] = Counter()
    steps = 4000
    for step in range(steps):
        picked = mix.indexes(step)
        assert len(picked) == len(set(picked)) == 4
        names = [prompt_of[i] for i in picked]
        if names[0] != "c":  # a and b have >= 4 conversations: one prompt for the whole step
            assert len(set(names)) == 1, names
        else:  # c's 3, then one from the others
            assert names[:3].count("c") == 3 and names[3] != "c"
        counts.update(picked)
    # a and b's conversations: k/N = 4/23 of the steps each (binomial sd ~0.006 at 4000 steps)
    for i in range(20):
        assert abs(counts[i] / steps - 4 / 23) < 0.03, (i, counts[i])


def test_sft_mix_without_prompt_gradient_has_the_same_loss_and_another_gradient(tmp_path, make_cfg, toy_sft_model):
    """grpo.sft_mix.prompt_grad=false runs the conversations' shared prompt without gradient (as SFT's
    prompt_grad: false): the same term's value at step 1, a different update (the path through the
    prompt's keys and values is dropped), and the trained targets still learnt."""
    import torch

    from officegym.core.task import write_jsonl
    from officegym.train import toy
    from officegym.train.grpo import train_grpo

    write_jsonl(tmp_path / "rl.jsonl", toy.make_tasks(16, seed=2, numbers=[7]))
    common = [f"model.name={toy_sft_model}", f"data.tasks={tmp_path / 'rl.jsonl'}", *SMALL, "grpo.max_steps=1",
              "grpo.num_prompts_per_step=2", "grpo.num_generations_per_prompt=2", "optim.lr=3e-3", "optim.min_lr=3e-3",
              "data.val_fraction=0", "checkpoint.every=100", "grpo.sft_mix.coef=1", "grpo.sft_mix.examples=8",
              "grpo.micro_batch_size=8"]
    exact = train_grpo(make_cfg("grpo", tmp_path / "exact", *common)).history
    cheap = train_grpo(make_cfg("grpo", tmp_path / "cheap", *common, "grpo.sft_mix.prompt_grad=false")).history
    assert exact[0]["train/sft_tokens"] == cheap[0]["train/sft_tokens"] > 0
    assert cheap[0]["train/sft_loss"] == pytest.approx(exact[0]["train/sft_loss"], rel=1e-4)
    a, b = _weights(tmp_path / "exact"), _weights(tmp_path / "cheap")
    assert any(not torch.allclose(a[k], b[k], atol=1e-7) for k in a)
