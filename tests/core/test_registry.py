from __future__ import annotations

import pytest

from officegym.core import registry
from officegym.core.environment import BaseEnvironment, EnvironmentSetupError
from officegym.core.protocols import Environment, Session


def test_workplace_is_registered_and_resolves_lazily(ref_world):
    assert "workplace_assistant" in registry.names()
    env = registry.make("workplace", world=ref_world)
    assert env.name == "workplace_assistant"
    assert isinstance(env, Environment) and isinstance(env, BaseEnvironment)
    assert isinstance(env.session(), Session)
    assert len(env.tools()) == 27
    assert env.modes == ("outcome", "nemo_gym") and env.mode == "outcome"


def test_unknown_environment_message():
    with pytest.raises(KeyError, match="unknown environment 'nope'"):
        registry.make("nope")
    with pytest.raises(EnvironmentSetupError, match="unknown environment 'nope'"):
        registry.make("nope")


def test_register_custom_factory():
    class Dummy(BaseEnvironment):
        name = "dummy"

    registry.register("dummy_test_env", lambda **kw: Dummy())
    assert registry.make("dummy_test_env").name == "dummy"
    assert not registry.takes_world("dummy_test_env")


def test_a_factory_that_builds_no_base_environment_is_refused():
    class Bare:
        name = "bare"

    registry.register("bare_test_env", lambda **kw: Bare())
    with pytest.raises(EnvironmentSetupError, match=r"must derive .*BaseEnvironment"):
        registry.make("bare_test_env")


def test_one_error_policy_for_every_way_to_get_it_wrong(tmp_path, ref_world):
    """make(name, world=, mode=) is the one constructor: every mistake is an EnvironmentSetupError
    (a ValueError) that says what is wrong."""
    with pytest.raises(EnvironmentSetupError, match="roles/cost takes no world"):
        registry.make("roles/cost", world=ref_world)
    with pytest.raises(EnvironmentSetupError, match="unknown verification mode 'exact' for workplace_assistant"):
        registry.make("workplace", world=ref_world, mode="exact")
    with pytest.raises(EnvironmentSetupError, match="unknown verification mode"):
        registry.make("roles/cost", mode="nemo_gym")
    with pytest.raises(EnvironmentSetupError, match=f"could not build workplace_assistant from {tmp_path}"):
        registry.make("workplace", world=tmp_path)  # not a csv_data folder
    assert registry.make("workplace", world=ref_world, mode="nemo_gym").mode == "nemo_gym"


def test_what_a_caller_may_ask_without_building(monkeypatch, tmp_path):
    assert registry.takes_world("workplace") and not registry.takes_world("roles/cto")
    assert registry.has_task_generator("roles/cto") and not registry.has_task_generator("workplace")
    assert "email_send_email" in registry.write_tools("workplace")
    assert registry.write_tools("roles/cost") == registry.make("roles/cost").write_tools != frozenset()
    assert registry.make("roles/cost").session_from_row and not registry.takes_world("roles/cost")


def test_the_workplace_gets_the_default_world_without_one(monkeypatch, tmp_path):
    monkeypatch.setenv("OFFICEGYM_CACHE", str(tmp_path))
    env = registry.make("workplace")
    assert env.world_path == str(tmp_path / "worlds" / "seed0-reference")
