"""The environment contract: sessions' defaults, the wrapper's forwarding, the registry's answers."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from officegym.core import registry
from officegym.core.environment import BaseEnvironment, EnvironmentSetupError, EnvironmentWrapper
from officegym.core.protocols import Session
from officegym.core.session import BaseSession
from officegym.core.types import ToolResult


class TextOnly(BaseSession):
    def call(self, name, arguments=None):
        return f"{name}:{arguments}"


class WithStatus(BaseSession):
    def execute(self, name, arguments=None):
        return ToolResult("no", "rejected")


def test_a_session_answers_both_ways_from_either_one():
    s = TextOnly()
    assert s.execute("t", {"a": 1}) == ToolResult("t:{'a': 1}", "ok", body="t:{'a': 1}")
    assert WithStatus().call("t") == '{"error":"no"}'
    assert asyncio.run(s.aclose()) is None and s.problem is None
    assert isinstance(s, Session)


def test_a_session_that_answers_neither_way_is_refused():
    with pytest.raises(TypeError, match="must define execute or call"):
        class Mute(BaseSession):
            pass


class Counter(BaseEnvironment):
    name = "counter"
    modes = ("outcome", "strict")
    write_tools = frozenset({"add"})

    def __init__(self, mode="outcome"):
        self.mode = mode
        self.extra = "own"

    def session(self, task=None):
        return TextOnly()

    def generate_tasks(self, n, seed, **options):
        return [n, seed]


class Doubled(EnvironmentWrapper):
    def cookie_name(self):
        return "doubled"


def test_a_wrapper_forwards_what_it_does_not_change():
    inner = Counter("strict")
    env = Doubled(Doubled(inner))
    assert (env.name, env.modes, env.mode, env.write_tools) == ("counter", ("outcome", "strict"), "strict", {"add"})
    assert env.has_task_generator and env.generate_tasks(3, 7) == [3, 7]
    assert env.extra == "own"  # not declared by the contract: still the wrapped environment's
    assert env.unwrapped is inner and isinstance(env.session(), TextOnly)
    assert env.cookie_name() == "doubled" and inner.cookie_name() == "OfficegymResourcesServer___counter"
    assert not env.takes_world and env.state_fingerprint(None) is None
    with pytest.raises(AttributeError):
        _ = env.missing
    with pytest.raises(EnvironmentSetupError, match="counter takes no world"):
        env.load_world("x")
    assert pickle.loads(pickle.dumps(Doubled(Counter()))).name == "counter"


def test_the_registry_answers_from_the_class():
    registry.register("counter_test_env", Counter)
    assert registry.environment_class("counter_test_env") is Counter
    assert registry.write_tools("counter_test_env") == {"add"} and registry.has_task_generator("counter_test_env")
    assert registry.make("counter_test_env", mode="strict").mode == "strict"
    with pytest.raises(EnvironmentSetupError, match="unknown verification mode 'x' for counter_test_env"):
        registry.make("counter_test_env", mode="x")
    registry.register("counter_test_fn", lambda **kw: Counter(**kw))
    assert registry.environment_class("counter_test_fn") is BaseEnvironment  # a plain factory declares nothing
    assert registry.make("counter_test_fn", mode="strict").mode == "strict"
    assert not registry.has_task_generator("counter_test_fn")


def test_the_workplace_cookie_matches_nemo_gym(ref_world):
    assert registry.make("workplace", world=ref_world).cookie_name() == "WorkbenchResourcesServer___workplace_assistant"
    assert registry.make("roles/cost").cookie_name() == "OfficegymResourcesServer___roles_cost"


class Awaited(BaseEnvironment):
    """An environment whose sessions and verdicts come over the network (as server/client.py's)."""

    name = "awaited"

    async def asession(self, task=None):
        return "remote session"

    async def averify(self, task, calls, mode=None):
        return "remote verdict"


class Counted(EnvironmentWrapper):
    def verify(self, task, calls, mode=None):
        return ("counted", self.env.verify(task, calls, mode))


def test_the_awaited_forms_are_the_sync_ones_unless_an_environment_says_otherwise():
    inner = Counter()
    assert isinstance(asyncio.run(inner.asession()), TextOnly)
    assert asyncio.run(TextOnly().aexecute("t", 1)) == TextOnly().execute("t", 1)
    # a wrapper forwards the awaited forms of what it leaves be and awaits its own change
    remote = Doubled(Awaited())
    assert asyncio.run(remote.asession()) == "remote session" and asyncio.run(remote.averify(None, [])) == "remote verdict"
    assert isinstance(asyncio.run(Doubled(inner).asession()), TextOnly)
    inner.verify = lambda task, calls, mode=None: "verdict"
    assert asyncio.run(Counted(inner).averify(None, [])) == ("counted", "verdict")


def test_generic_floors_ask_environments_and_sessions_instead_of_probing():
    """No getattr/hasattr on an environment, a session or a wrapper outside the environments; the
    wrapper's own forwarding (core/environment.py) is the one allowed."""
    import re
    from pathlib import Path

    import officegym

    root = Path(officegym.__file__).parent
    probe = re.compile(r"(getattr|hasattr)\(\s*([a-z_]+\.)*(env|environment|session|remote|wrapper)\b")
    found = [f"{path.relative_to(root)}:{n}" for path in sorted(root.rglob("*.py")) if path.relative_to(root).parts[0] != "envs"
             for n, line in enumerate(path.read_text().splitlines(), 1) if probe.search(line)]
    assert [f.split(":")[0] for f in found] == ["core/environment.py"], found
