"""sft.detours: ground-truth replays with one wrong read, answered by the environment and not
trained on, before a ground-truth call (train/detours.py)."""

from __future__ import annotations

import pytest

from officegym.core import registry
from officegym.core.task import Task
from officegym.train.detours import carried_arguments, is_detour_turn, plan_detour
from officegym.train.sft_data import BuildReport, ground_truth_conversations


@pytest.fixture(scope="module")
def generated(tiny_world_dir):
    from officegym.sdg.dataset import build_dataset

    ds = build_dataset([tiny_world_dir], 60, 3, tools="domain")
    tasks = [Task.from_row(r) for rows in ds.rows.values() for r in rows]
    env = registry.make("workplace_assistant", world=tiny_world_dir)
    return env, [t for t in tasks if t.ground_truth]


def _calls(messages):
    return [(c["function"]["name"], c["function"]["arguments"]) for m in messages for c in m.get("tool_calls") or []]


def test_a_detour_is_another_read_the_task_offers_with_the_calls_arguments(generated):
    env, tasks = generated
    plans = {t.id: plan_detour(t, env.tools(t), env.write_tools, 1.0, seed=0) for t in tasks}
    made = {k: v for k, v in plans.items() if v is not None}
    assert len(made) >= 0.8 * len(tasks)
    by_id = {t.id: t for t in tasks}
    for task_id, (at, call) in made.items():
        task = by_id[task_id]
        offered = {s.name for s in env.tools(task)}
        assert 0 <= at < len(task.ground_truth) and call.name in offered
        assert call.name not in env.write_tools and call.name != task.ground_truth[at].name
    assert len({c.name for _, c in made.values()}) >= 3
    # the draw is the task's, not the order of the list; none at share 0; another seed, other draws
    again = {t.id: plan_detour(t, env.tools(t), env.write_tools, 1.0, seed=0) for t in reversed(tasks)}
    assert again == plans
    assert all(plan_detour(t, env.tools(t), env.write_tools, 0.0) is None for t in tasks)
    assert all(plan_detour(t, env.tools(t), None, 1.0) is None for t in tasks)  # writes unknown: no detour
    some = [plan_detour(t, env.tools(t), env.write_tools, 0.5, seed=1) for t in tasks]
    assert 0.2 * len(tasks) < sum(p is not None for p in some) < 0.8 * len(tasks)


def test_carried_arguments():
    from officegym.core.types import ToolSpec

    spec = ToolSpec("search", "", {"type": "object", "properties": {"query": {"type": "string"}, "owner": {"type": "string"}},
                                  "required": ["query"]})
    assert carried_arguments(spec, {"owner": "ana@x.com", "name": "Ana"}) == ({"owner": "ana@x.com", "query": "ana@x.com"}, True)
    assert carried_arguments(spec, {"n": 3}) == (None, False)
    free = ToolSpec("list", "", {"type": "object", "properties": {"n": {"type": "integer"}, "text": {"type": "string"}}})
    assert carried_arguments(free, {"subject": "Budget"}) == ({"text": "Budget"}, False)


def test_replays_with_detours_are_accepted_and_only_the_detour_turn_is_untrained(generated):
    from officegym.train.sft_data import GroundTruthPolicy

    env, tasks = generated
    clean = ground_truth_conversations(env, tasks, "one", "Done.", None, BuildReport())
    report = BuildReport()
    detoured = ground_truth_conversations(env, tasks, "one", "Done.", None, report, detours=1.0)
    assert report.detours >= 0.8 * len(tasks) and report.dropped == {}
    assert len(detoured) == len(clean) == len(tasks)  # the verifier accepts every replay: detours only read
    changed = 0
    for a, b in zip(clean, detoured):
        marked = [m for m in b.messages if m.get("role") == "assistant" and is_detour_turn(m)]
        assert len(marked) <= 1
        if marked:
            changed += 1
            rest = [m for m in b.messages if m.get("role") == "assistant" and not is_detour_turn(m)]
            assert _calls(rest) == _calls([m for m in a.messages if m.get("role") == "assistant"])
            i = b.messages.index(marked[0])
            assert b.messages[i + 1]["role"] == "tool"  # the environment answered it
    assert changed == report.detours
    with pytest.raises(ValueError, match="calls_per_turn"):
        GroundTruthPolicy("all", detours={"x": (0, tasks[0].ground_truth[0])})


def test_the_detour_turn_has_no_loss(generated, tiny_model_dir, make_cfg, tmp_path):
    pytest.importorskip("torch")
    from officegym.train.modeling import load_train_model, token_renderer
    from officegym.train.sft_data import encode_conversation

    env, tasks = generated
    cfg = make_cfg("sft", tmp_path, f"model.name={tiny_model_dir}")
    renderer = token_renderer(load_train_model(cfg.model, cfg.lora), cfg)
    convs = ground_truth_conversations(env, tasks[:20], "one", "Done.", None, BuildReport(), detours=1.0)
    plain = ground_truth_conversations(env, tasks[:20], "one", "Done.", None, BuildReport())
    seen = 0
    for conv, base in zip(convs, plain):
        ex, ref = encode_conversation(renderer, conv), encode_conversation(renderer, base)
        if not any(is_detour_turn(m) for m in conv.messages):
            assert ex.input_ids == ref.input_ids
            continue
        seen += 1
        # as many trained tokens as the clean replay (the same turns); the detour's own are not trained
        assert sum(ex.loss_mask) == sum(ref.loss_mask) and len(ex.input_ids) > len(ref.input_ids)
    assert seen >= 10


def test_sft_config_builds_detoured_training_examples_only(tmp_path, make_cfg, tiny_model_dir, workplace_tasks,
                                                           tiny_world_dir):
    pytest.importorskip("torch")
    from officegym.train.config_files import ConfigError
    from officegym.train.data import make_environment
    from officegym.train.modeling import load_train_model, token_renderer
    from officegym.train.sft import build_examples

    common = [f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}", f"data.world={tiny_world_dir}",
              "data.val_fraction=0.25", "sft.calls_per_turn=one"]
    cfg = make_cfg("sft", tmp_path / "a", *common, "sft.detours=1.0")
    renderer = token_renderer(load_train_model(cfg.model, cfg.lora), cfg)
    train, val, _, report = build_examples(cfg, renderer, make_environment(cfg.data))
    assert report.detours == len(train) == 3 and len(val) == 1  # validation replays stay clean
    with pytest.raises(ConfigError, match="detours"):
        make_cfg("sft", tmp_path / "b", *common[:-1], "sft.detours=0.5")
