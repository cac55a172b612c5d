"""`officegym pipeline` on a role environment (env: roles/<role>): the world stage is not needed,
tasks come from the role's generator, SFT imitates the oracle's rollouts, GRPO trains on the graded
verifier's score, and the report puts the baselines beside the models with reward intervals and
paired tests. A tiny random model stands in for SmolLM2 (tests/train/conftest.py)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from officegym.pipeline import (
    STAGES,
    Pipeline,
    PipelineConfig,
    PipelineError,
    load_pipeline_config,
)
from officegym.pipeline.training import train_data
from officegym.train.config_files import build_config, merge_sections

ROOT = Path(__file__).resolve().parents[2]
ROLES = ("cto", "coo", "reconcile", "risk", "cost")


@functools.cache
def _smollm2_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _cfg(out, model, *extra, env="roles/cost"):
    train = {"model": {"device": "cpu", "threads": 1}, "logging": {"tensorboard": False},
             "validation": {"every": 0, "accuracy": False}, "checkpoint": {"every": 1, "keep_top_k": 1}}
    data = {
        "out_dir": str(out), "model": str(model), "env": env,
        "tasks": {"n": 24, "seed": 0, "difficulty": [1, 2], "fractions": [0.5, 0.2, 0.3]},
        # three turns: Cost's oracle reads its documents, calls the solver, then answers
        "eval": {"split": "test", "max_tasks": 3, "max_steps": 3, "max_new_tokens": 12, "batch_size": 4, "threads": 1},
        "sft": {**train, "sft": {"max_steps": 2, "batch_size": 2, "micro_batch_size": 1, "max_length": 8000}},
        "grpo": {**train, "rollout": {"max_steps": 3, "max_new_tokens_per_turn": 12, "max_new_tokens_per_episode": 24},
                 "grpo": {"max_steps": 1, "num_prompts_per_step": 2, "num_generations_per_prompt": 2,
                          "micro_batch_size": 2, "reward": "outcome"}},
    }
    return build_config(PipelineConfig, data, list(extra))


class _Console:
    def __init__(self):
        self.said: list[str] = []

    def print(self, text, **_):
        self.said.append(str(text))


def test_a_role_pipeline_trains_evaluates_beside_the_baselines_and_resumes(tmp_path, tiny_model_dir):
    from officegym.eval.stats import wilson_interval

    out = tmp_path / "run"
    console = _Console()
    first = Pipeline(_cfg(out, tiny_model_dir, "stages=[world, tasks, baselines, eval_base, sft]"), console)
    assert first.run() == ["tasks", "baselines", "eval_base", "sft"]
    # the world stage is recorded as not needed, and no world is made
    assert first.not_needed == ["world"] and not (out / "world").exists()
    assert "world" in json.loads((out / "stages.json").read_text())["not_needed"]
    assert any("world: not needed" in s for s in console.said)

    # tasks: the role's generator, the configured levels and shares, the workplace's file layout
    generation = json.loads((out / "tasks" / "generation.json").read_text())
    assert generation["env"] == "roles/cost" and generation["difficulty"] == [1, 2] and generation["n"] == 24
    assert generation["fractions"] == [0.5, 0.2, 0.3]
    splits = {s: _rows(out / "tasks" / f"{s}.jsonl") for s in ("train", "validation", "test")}
    assert sum(map(len, splits.values())) == 24 and all(splits.values())
    assert {r["environment_name"] for rows in splits.values() for r in rows} == {"roles/cost"}
    assert {r["difficulty"] for rows in splits.values() for r in rows} <= {1, 2}

    # SFT imitated the oracle's rollouts on every train task, all fully rewarded, in the role's env
    oracle = _rows(out / "sft_data" / "rollouts.jsonl")
    assert sorted(r["id"] for r in oracle) == sorted(r["id"] for r in splits["train"])
    assert all(r["reward"] == 1.0 and r["officegym"]["stop_reason"] == "answered" for r in oracle)
    sft_steps = _rows(out / "sft" / "metrics.jsonl")
    assert len(sft_steps) == 2 and all(m["train/trained_tokens"] > 0 for m in sft_steps)
    sft_cfg = (out / "sft" / "config.yaml").read_text()
    assert "source: rollouts" in sft_cfg and str(out / "sft_data" / "rollouts.jsonl") in sft_cfg
    assert "env: roles/cost" in sft_cfg and "world: null" in sft_cfg

    second = Pipeline(_cfg(out, tiny_model_dir))
    assert second.run() == ["eval_sft", "grpo", "eval_grpo", "report"]
    assert second.skipped == ["tasks", "baselines", "eval_base", "sft"] and second.not_needed == ["world"]
    grpo_cfg = (out / "grpo" / "config.yaml").read_text()
    assert "env: roles/cost" in grpo_cfg and "reward: outcome" in grpo_cfg and (out / "grpo" / "model").exists()

    test_ids = [r["id"] for r in splits["test"][:3]]
    for folder in ("eval_base", "eval_sft", "eval_grpo", "baselines/greedy", "baselines/oracle"):
        metrics = json.loads((out / folder / "metrics.json").read_text())
        assert metrics["tasks"] == 3 and len(metrics["mean_reward_ci95"]) == 2
        got = [r["id"] for r in _rows(out / folder / "rollouts.jsonl")]
        assert sorted(got) == sorted(test_ids), (folder, got)  # the same tasks for all (rows in the order they finish)
        assert json.loads((out / folder / "run.json").read_text())["env"] == "roles/cost"
    assert json.loads((out / "baselines" / "oracle" / "metrics.json").read_text())["mean_reward"] == 1.0

    report = (out / "report.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("|  |"))
    assert header == "|  | untrained | after SFT | after GRPO | greedy (baseline) | oracle (baseline) |"
    assert "| mean reward [95% interval] |" in report and "| fully right [95% interval] |" in report
    low, high = wilson_interval(3, 3)  # the oracle: 3 of 3, and 0/1 rewards get Wilson's interval
    assert f"1.000 [{low:.3f}, {high:.3f}] (n=3)" in report
    assert "mean reward, level" in report and "| verdict: correct |" in report
    assert "## Did each stage change the reward? (paired, same tasks)" in report
    for pair in ("after SFT vs untrained:", "after GRPO vs after SFT:", "after GRPO vs untrained:",
                 "after GRPO vs greedy (baseline):", "after GRPO vs oracle (baseline):"):
        assert report.count(pair) == 2, pair  # the reward's sign-flip test and the share fully right's McNemar
    assert "paired sign-flip (exact) p =" in report and "exact McNemar p =" in report
    assert "| world | not needed: roles/cost takes no world" in report
    assert "[oracle (baseline)](baselines/oracle/report.html)" in (out / "report.md").read_text()
    assert "greedy (baseline)" in (out / "report.html").read_text()

    # everything is done: a third run only rewrites the report
    third = Pipeline(_cfg(out, tiny_model_dir))
    assert third.run() == ["report"] and third.skipped == [s for s in STAGES if s not in ("world", "review", "report")]


def test_role_baselines_and_an_untrained_policy_without_training(tmp_path):
    """The default baselines for a role (greedy and oracle), a scripted 'model', and the report's
    rows, with no model to train: fast, and checks the numbers against a direct evaluation."""
    out = tmp_path / "run"
    cfg = build_config(PipelineConfig, {
        "out_dir": str(out), "env": "roles/risk", "model": "role-random:0",
        "stages": ["world", "tasks", "baselines", "eval_base", "report"],
        "tasks": {"n": 30, "seed": 1, "difficulty": [1, 3], "fractions": [0.4, 0.0, 0.6]},
        "eval": {"split": "test", "max_tasks": 12, "max_steps": 2}}, [])
    pipe = Pipeline(cfg)
    assert pipe.baseline_specs() == ["greedy", "oracle"]
    assert pipe.run() == ["tasks", "baselines", "eval_base", "report"]
    greedy = json.loads((out / "baselines" / "greedy" / "metrics.json").read_text())
    rows = _rows(out / "baselines" / "greedy" / "rollouts.jsonl")
    rewards = [r["reward"] for r in rows]
    assert len(rows) == 12 and greedy["mean_reward"] == pytest.approx(sum(rewards) / 12)
    assert 0 < greedy["mean_reward"] < 1 and any(0 < x < 1 for x in rewards)  # graded: the bootstrap interval
    low, high = greedy["mean_reward_ci95"]
    assert low < greedy["mean_reward"] < high and low >= 0 and high <= 1
    report = (out / "report.md").read_text()
    assert "|  | untrained | greedy (baseline) | oracle (baseline) |" in report
    assert f"{greedy['mean_reward']:.3f} [{low:.3f}, {high:.3f}] (n=12)" in report
    # one model stage: nothing to pair
    assert "Did each stage change" not in report
    # a baseline added later is evaluated alone; those done stay as they are
    before = (out / "baselines" / "greedy" / "rollouts.jsonl").read_text()
    again = Pipeline(build_config(PipelineConfig, {**cfg.model_dump(mode="json"),
                                                   "eval": {**cfg.eval.model_dump(), "baselines": ["greedy", "oracle",
                                                                                                   "role-random:3"]}}))
    assert again.run() == ["baselines", "report"] and again.skipped == ["tasks", "eval_base"]
    assert (out / "baselines" / "greedy" / "rollouts.jsonl").read_text() == before
    assert json.loads((out / "baselines" / "role-random_3" / "run.json").read_text())["policy"] == "role-random:3"
    assert "|  | untrained | greedy (baseline) | oracle (baseline) | role-random:3 (baseline) |" in (
        out / "report.md").read_text()


def test_the_command_runs_a_role_config_and_prints_rewards_with_intervals(tmp_path):
    from typer.testing import CliRunner

    from officegym.cli import app

    out = tmp_path / "run"
    args = ["pipeline", "--config", str(ROOT / "configs" / "roles_coo.yaml"), f"out_dir={out}", "model=role-random:2",
            "stages=[world, tasks, baselines, eval_base, report]", "tasks.n=40", "eval.max_tasks=5",
            "eval.base_max_tasks=5", "eval.baselines=[greedy]"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "untrained: mean reward" in res.output and "greedy (baseline): mean reward" in res.output
    assert "(n=5)" in res.output and str(out / "report.html") in res.output
    assert not (out / "baselines" / "oracle").exists()  # the config's list, as overridden
    res = CliRunner().invoke(app, [*args[:4], "env=roles/council"])
    assert res.exit_code != 0 and "multi-agent environment" in res.output


def test_the_workplace_keeps_its_stages_and_the_world(tmp_path):
    pipe = Pipeline(build_config(PipelineConfig, {"out_dir": str(tmp_path)}, []))
    assert pipe.env_name == "workplace_assistant" and pipe.takes_world
    assert pipe.baseline_specs() == [] and pipe.sft_source() == "ground_truth"
    assert train_data(pipe)["world"] == str(tmp_path / "world")
    role = Pipeline(_cfg(tmp_path, "unused"))
    assert not role.takes_world and role.sft_source() == "oracle" and train_data(role)["world"] is None
    assert Pipeline(_cfg(tmp_path, "unused", "sft_data=ground_truth")).sft_source() == "ground_truth"


@pytest.mark.parametrize(("overrides", "message"), [
    (["env=roles/council"], "multi-agent environment"),
    (["env=roles/nope"], "unknown environment"),
    (["tasks.templates=[cost/inline]"], "generates its own tasks"),
    (["world.path=/tmp"], "takes no world"),
    (["env=workplace", "tasks.difficulty=[1, 3]"], "difficulty levels are for environments"),
])
def test_settings_the_environment_cannot_follow_are_refused_before_any_stage(tmp_path, overrides, message):
    out = tmp_path / "run"
    with pytest.raises(PipelineError, match=message):
        Pipeline(_cfg(out, "unused", *overrides)).run()
    assert not out.exists()


def test_a_run_folder_of_one_environment_is_not_resumed_for_another(tmp_path):
    out = tmp_path / "run"
    Pipeline(_cfg(out, "unused", "stages=[world, tasks]")).run()
    with pytest.raises(PipelineError, match="holds a pipeline run of roles/cost, not roles/risk"):
        Pipeline(_cfg(out, "unused", "stages=[world, tasks]", env="roles/risk")).run()
    Pipeline(_cfg(out, "unused", "stages=[world, tasks, report]")).run()  # the same environment resumes


def test_bad_task_settings_name_the_key():
    from officegym.train.config_files import ConfigError

    with pytest.raises(ConfigError, match=r"tasks\.difficulty"):
        build_config(PipelineConfig, {}, ["tasks.difficulty=[3, 1]"])
    with pytest.raises(ConfigError, match=r"tasks\.fractions"):
        build_config(PipelineConfig, {}, ["tasks.fractions=[0.5, 0.5, 0.5]"])


PROSE_ROLES = ("cto", "coo", "cost", "risk", "reconcile")


@pytest.mark.parametrize("role", ROLES)
def test_the_role_configs_load_and_their_sections_build(tmp_path, role):
    from officegym.core import registry
    from officegym.train.config import GRPORunConfig, SFTRunConfig

    cfg = load_pipeline_config(str(ROOT / "configs" / f"roles_{role}.yaml"), [])
    pipe = Pipeline(cfg)
    pipe.check_setup()
    assert cfg.env == f"roles/{role}" and not registry.takes_world(cfg.env) and pipe.sft_source() == "oracle"
    # a brief in prose (every role): the strongest fixed rule parses it; the others' greedy
    expected = {"rule", "oracle"} if role in PROSE_ROLES else {"greedy", "oracle"}
    assert expected <= set(pipe.baseline_specs()) and cfg.eval.backend == "vllm"
    sft = build_config(SFTRunConfig, merge_sections(cfg.sft, {"out_dir": str(tmp_path), "data": train_data(pipe)}))
    grpo = build_config(GRPORunConfig, merge_sections(cfg.grpo, {"out_dir": str(tmp_path), "data": train_data(pipe)}))
    assert sft.lora.enabled and grpo.lora.enabled and grpo.backend == "vllm" and grpo.grpo.reward == "outcome"
    # episodes as long as the evaluation's: a brief in prose takes three turns (the documents, the
    # solver, the answer that copies its result); the others the calculator, then the answer
    assert grpo.rollout.max_steps == cfg.eval.max_steps == (3 if role in PROSE_ROLES else 2)
    assert grpo.rollout.max_new_tokens_per_turn == cfg.eval.max_new_tokens


@pytest.mark.parametrize("role", ROLES)
def test_the_role_configs_leave_room_for_the_oracle_s_answers(role):
    """The oracle, played within the evaluation's turns, gets full credit on every scenario; each of
    its turns (the calculator call, the answer) fits the evaluation's and GRPO's tokens per turn with
    room to spare and all of them GRPO's tokens per episode (else the trained model could never give
    them), and its conversation fits sft.max_length, in SmolLM2's own tokens (needs the converted
    model in the cache)."""
    import asyncio

    from officegym.agent.chatml import IM_END, assistant_text, render_chatml
    from officegym.agent.loop import LoopConfig, run_rollouts
    from officegym.agent.scripted import OraclePolicy
    from officegym.core import registry
    from officegym.core.cache import cache_root

    tokenizer_dir = cache_root() / "models" / "smollm2-135m"
    if not (tokenizer_dir / "tokenizer.json").exists():
        pytest.skip("SmolLM2's tokenizer is not in the cache (it is converted by the first run that uses smollm2-135m)")
    tok = _smollm2_tokenizer(str(tokenizer_dir))
    cfg = load_pipeline_config(str(ROOT / "configs" / f"roles_{role}.yaml"), [])
    env = registry.make(cfg.env)
    tasks = env.generate_tasks(60, cfg.tasks.seed, difficulty=cfg.tasks.difficulty)
    loop = LoopConfig(max_steps=cfg.eval.max_steps, max_tool_output_chars=cfg.eval.max_tool_output_chars)
    trajs = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], OraclePolicy(), loop))
    longest_turn = longest_episode = longest_conversation = 0
    for t, traj in zip(tasks, trajs):
        assert traj.verdict["reward"] == 1.0, (t.id, traj.verdict)
        turns = [len(tok(assistant_text(m) + IM_END).input_ids) for m in traj.messages
                 if m["role"] == "assistant" and m.get("tool_calls")]
        longest_turn = max(longest_turn, *turns)
        longest_episode = max(longest_episode, sum(turns))
        text = render_chatml(traj.messages, env.tools(t), add_generation_prompt=False)
        longest_conversation = max(longest_conversation, len(tok(text).input_ids))
    assert longest_turn + 8 <= cfg.eval.max_new_tokens, longest_turn
    assert longest_turn + 8 <= cfg.grpo["rollout"]["max_new_tokens_per_turn"], longest_turn
    assert longest_episode + 8 <= cfg.grpo["rollout"]["max_new_tokens_per_episode"], longest_episode
    assert longest_conversation < cfg.sft["sft"]["max_length"], longest_conversation


@pytest.mark.slow
@pytest.mark.parametrize("role", ["cost", "risk"])
def test_a_role_config_finishes_in_twenty_minutes_and_the_trained_model_beats_the_untrained(tmp_path, role):
    """The issue's CPU recipe, for real (SmolLM2-135M, vLLM; run alone on an idle 2-core box)."""
    import time

    pytest.importorskip("vllm")
    out = tmp_path / f"roles_{role}"
    cfg = load_pipeline_config(str(ROOT / "configs" / f"roles_{role}.yaml"), [f"out_dir={out}"])
    t0 = time.perf_counter()
    Pipeline(cfg).run()
    minutes = (time.perf_counter() - t0) / 60
    base = json.loads((out / "eval_base" / "metrics.json").read_text())
    trained = json.loads((out / "eval_grpo" / "metrics.json").read_text())
    print(f"roles/{role}: {minutes:.1f} min; untrained {base['mean_reward']:.3f} {base['mean_reward_ci95']}, "
          f"after GRPO {trained['mean_reward']:.3f} {trained['mean_reward_ci95']}")
    assert minutes <= 20, f"{minutes:.1f} min"
    assert trained["mean_reward"] > base["mean_reward"]


def test_the_task_stage_also_writes_a_hugging_face_dataset_when_asked(tmp_path):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "run"
    Pipeline(_cfg(out, "unused", "stages=[world, tasks]", "tasks.hf=true")).run()
    dd = datasets.load_from_disk(str(out / "tasks" / "hf"))
    assert sum(len(d) for d in dd.values()) == 24
    assert sorted(dd) == ["test", "train", "validation"]
