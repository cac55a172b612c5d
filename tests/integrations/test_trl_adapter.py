"""officegym's environments as TRL's environment_factory: the tool methods TRL finds (as TRL 1.16
lists them), their schemas (as transformers reads them), answers byte-identical to officegym's own
sessions, and reward_func on finished environments in both workplace modes. No training here
(tests/integrations/test_trl_train.py runs two real TRL steps, marked slow)."""

from __future__ import annotations

import inspect
import json

import pytest
from typer.testing import CliRunner

from officegym.cli import app
from officegym.core import registry
from officegym.core.task import read_tasks
from officegym.integrations.trl import environment_factory, reward_func

runner = CliRunner()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("trl")
    world, out = root / "world", root / "tasks"
    assert runner.invoke(app, ["generate", "world", "--seed", "4", "--size", "small", "--out", str(world)]).exit_code == 0
    res = runner.invoke(app, ["generate", "tasks", "--world", str(world), "--n", "40", "--tools", "mixed", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return world, out / "train.jsonl"


def _trl_tools(instance) -> dict:
    """The methods TRL 1.16's GRPOTrainer offers as tools (its own rule: public functions of the class)."""
    return {n: getattr(instance, n) for n, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
            if n not in ("reset", "get_reward") and not n.startswith("_")}


def test_trl_finds_every_tool_of_the_tasks_with_the_schemas_they_declare(made):
    world, path = made
    tasks = read_tasks(path)
    env = registry.make("workplace", world=world)
    specs = {s.name: s for t in tasks for s in env.tools(t)}
    instance = environment_factory(path, world=world)()
    tools = _trl_tools(instance)
    assert set(tools) == set(specs) and len(tools) == 27  # mixed prompts: some tasks offer all 27
    get_json_schema = pytest.importorskip("transformers.utils").get_json_schema
    for name, method in tools.items():
        fn = get_json_schema(method)["function"]
        spec = specs[name]
        assert fn["name"] == name and fn["description"] == spec.description
        props = spec.parameters.get("properties", {})
        assert set(fn["parameters"].get("properties", {})) == set(props)
        assert set(fn["parameters"].get("required", [])) == set(spec.parameters.get("required", []))
        for arg, schema in props.items():
            assert fn["parameters"]["properties"][arg]["description"] == schema["description"]


def test_tool_answers_are_officegyms_own_and_the_reward_is_its_verifier(made):
    world, path = made
    tasks = [t for t in read_tasks(path) if t.ground_truth]
    factory = environment_factory(path, world=world)
    env = registry.make("workplace", world=world)
    for task in tasks[:10]:
        instance, session = factory(), env.session(task)
        instance.reset(id=task.id, prompt=task.input)
        for call in task.ground_truth:
            assert getattr(instance, call.name)(**call.arguments) == session.execute(call.name, call.arguments).text
        assert reward_func()([instance]) == reward_func("nemo_gym")([instance]) == [1.0]
    wrong = factory()
    wrong.reset(id=tasks[0].id)
    said = wrong.email_send_email(recipient="nobody@example.com", subject="x", body="y", cc="z")
    assert said == env.session(tasks[0]).execute("email_send_email", {"recipient": "nobody@example.com", "subject": "x",
                                                                     "body": "y", "cc": "z"}).text
    wrong.email_send_email(recipient="nobody@example.com", subject="x", body="y")
    assert reward_func()([wrong]) == [0.0]


def test_a_row_carries_its_task_when_the_factory_was_not_given_it(made):
    world, path = made
    tasks = read_tasks(path)
    factory = environment_factory(tasks[:1], world=world)
    instance = factory()

    instance.reset(id=tasks[5].id, row=json.dumps(tasks[5].to_row()))
    assert instance._live.task.id == tasks[5].id
    with pytest.raises(ValueError, match="not among the 1 tasks"):
        instance.reset(id="nope")
    with pytest.raises(RuntimeError, match="reset"):
        next(iter(_trl_tools(factory()).values()))()


def test_the_factory_refuses_another_world_than_the_tasks(made, tmp_path):
    _, path = made
    other = tmp_path / "other"
    assert runner.invoke(app, ["generate", "world", "--seed", "9", "--size", "small", "--out", str(other)]).exit_code == 0
    with pytest.raises(ValueError, match="made in world seed4-small"):
        environment_factory(path, world=other)


def test_role_environments_work_the_same_way():
    tasks = registry.make("roles/cto").generate_tasks(3, seed=2)
    factory = environment_factory(tasks)
    instance = factory()
    tools = _trl_tools(instance)
    assert {"read_document", "find_architecture", "calculate", "submit_architecture", "escalate"} <= set(tools)
    instance.reset(id=tasks[0].id)
    for call in tasks[0].ground_truth:
        tools = _trl_tools(instance)
        tools[call.name](**call.arguments)
    assert reward_func()([instance]) == [1.0]


def test_the_world_hooks_name_and_rebuild_a_generated_world(made):
    world, path = made
    env = registry.make("workplace", world=world)
    assert env.world_id == "seed4-small" == read_tasks(path)[0].metadata["world_id"]
    assert registry.world_named("workplace", "not-a-generated-id") is None
    assert registry.world_named("roles/cto", "seed4-small") is None  # no world to make
    assert registry.make("roles/cto").world_id is None
