from __future__ import annotations

import pytest

from officegym.core import registry
from officegym.core.protocols import Environment, Session


def test_workplace_is_registered_and_resolves_lazily(ref_world):
    assert "workplace_assistant" in registry.names()
    env = registry.make("workplace", world=ref_world)
    assert env.name == "workplace_assistant"
    assert isinstance(env, Environment)
    assert isinstance(env.session(), Session)
    assert len(env.tools()) == 27


def test_unknown_environment_message():
    with pytest.raises(KeyError, match="unknown environment 'nope'"):
        registry.make("nope")


def test_register_custom_factory():
    class Dummy:
        name = "dummy"

    registry.register("dummy_test_env", lambda **kw: Dummy())
    assert registry.make("dummy_test_env").name == "dummy"
