"""officegym's environments for TRL's `GRPOTrainer(environment_factory=..., reward_funcs=...)`.

    from officegym.integrations.trl import environment_factory, reward_func
    trainer = GRPOTrainer(model=..., train_dataset=load_from_disk("tasks/hf")["train"],
                          environment_factory=environment_factory("tasks/train.jsonl"),
                          reward_funcs=reward_func(), args=GRPOConfig(...))

TRL makes one environment per rollout with the factory, calls `reset(**example)` with the dataset
row (ours carry `id` and the whole task `row`: `generate tasks --hf`), offers the environment's public
methods as tools, and hands the finished environments to the reward functions. Here each tool method
is one of the environment's tools, with its typed arguments and a Google-style docstring built from
the tool's own schema (what `transformers.utils.get_json_schema` reads), and it returns exactly the
text officegym's own loop gives a model, refusals and errors included: arguments reach the
environment as the model sent them, so a wrong argument name gets the environment's message rather
than Python's. `reward_func(mode)` scores each finished environment with officegym's verifier.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from officegym.core import registry
from officegym.core.task import Task, read_tasks
from officegym.core.types import ToolSpec
from officegym.integrations.task_session import TaskSession

_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict, "array": list}


class OfficegymEnv:
    """One rollout's environment (TRL's contract: `reset`, tool methods). Its state lives in private
    attributes: TRL offers every public method as a tool."""

    _env: ClassVar[Any] = None
    _tasks: ClassVar[dict[str, Task]] = {}
    _mode: ClassVar[str | None] = None

    def __init__(self) -> None:
        self._session: TaskSession | None = None

    def reset(self, **example: Any) -> None:
        """Start the task of a dataset row: looked up by `id` among the factory's tasks, else read
        from the row's `row` column (the NeMo Gym row as JSON)."""
        self._session = TaskSession(self._env, self._task_of(example), self._mode)

    def _task_of(self, example: dict[str, Any]) -> Task:
        key = example.get("id")
        if key is not None and str(key) in self._tasks:
            return self._tasks[str(key)]
        raw = example.get("row")
        if isinstance(raw, str):
            try:
                row = json.loads(raw)
            except ValueError as exc:
                raise ValueError(f"the dataset row's `row` column is not JSON: {exc}") from None
            if isinstance(row, dict):
                return Task.from_row(row)
        raise ValueError(f"task {key!r} is not among the {len(self._tasks)} tasks given to environment_factory, and the "
                         "dataset row has no `row` column to read it from (officegym generate tasks --hf writes one)")

    @property
    def _live(self) -> TaskSession:
        if self._session is None:
            raise RuntimeError("reset() was not called: TRL calls it with the dataset row before the first tool call")
        return self._session

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        return self._live.execute(name, arguments).text

    def _verdict(self, mode: str | None = None):
        session = self._live
        return session.env.verify(session.task, list(session.calls), mode or self._mode)


def _annotation(schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):  # ["string", "null"]: the first non-null type
        kind = next((k for k in kind if k != "null"), None)
    return _JSON_TYPES.get(kind, str)


def _docstring(spec: ToolSpec) -> str:
    props = (spec.parameters or {}).get("properties") or {}
    lines = [spec.description.strip() or spec.name, ""]
    if props:
        lines.append("Args:")
        for name, schema in props.items():
            text = (schema.get("description") if isinstance(schema, dict) else None) or name.replace("_", " ")
            lines.append(f"    {name}: {' '.join(str(text).split())}")
    return "\n".join(lines)


def tool_method(spec: ToolSpec) -> Callable[..., str]:
    """A method that runs the tool `spec` on the rollout's session; its signature and docstring say
    what the tool's schema says (required arguments first, optional ones default to None)."""
    name = spec.name

    def method(self: OfficegymEnv, **arguments: Any) -> str:
        return self._call(name, arguments)

    props = (spec.parameters or {}).get("properties") or {}
    required = set((spec.parameters or {}).get("required") or [])
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for arg in sorted(props, key=lambda a: a not in required):  # stable: the schema's order within each group
        annotation = _annotation(props[arg])
        params.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, annotation=annotation if arg in required
                                        else annotation | None, default=inspect.Parameter.empty if arg in required else None))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = _docstring(spec)
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = {p.name: p.annotation for p in params[1:]} | {"return": str}
    return method


def _task_list(tasks: str | os.PathLike[str] | Iterable[Task]) -> list[Task]:
    if isinstance(tasks, str | os.PathLike):
        return read_tasks(tasks)
    return list(tasks)


def environment_factory(tasks: str | os.PathLike[str] | Iterable[Task], world: Any = None, env: str | None = None,
                        mode: str | None = None) -> Callable[[], OfficegymEnv]:
    """What `GRPOTrainer(environment_factory=...)` takes: a callable that makes a fresh environment
    per rollout. `tasks` (a JSONL file or Tasks) are the tasks the dataset's rows name by `id`; the
    environment (default: the one the tasks name) is built once, in `world` (default: the world the
    tasks were made in, for the workplace), and offers the union of the tasks' tools as methods."""
    task_list = _task_list(tasks)
    if not task_list:
        raise ValueError("environment_factory needs at least one task")
    name = registry.canonical_name(env or task_list[0].environment_name)
    if registry.takes_world(name) and world is None:
        world = _world_of(name, task_list)
    environment = registry.make(name, world=world, mode=mode)
    _check_world(environment, task_list)
    specs: dict[str, ToolSpec] = {}
    for task in task_list:
        for spec in environment.tools(task):
            specs.setdefault(spec.name, spec)
    reserved = [s for s in specs if s == "reset" or s.startswith("_") or not s.isidentifier()]
    if reserved:
        raise ValueError(f"tools {reserved} cannot be TRL tool methods (reserved or not identifiers)")
    attrs: dict[str, Any] = {s.name: tool_method(s) for s in specs.values()}
    attrs.update(_env=environment, _tasks={str(t.id): t for t in task_list}, _mode=mode,
                 __doc__=f"officegym's {name} environment for TRL ({len(specs)} tools).")
    cls = type(_class_name(name), (OfficegymEnv,), attrs)
    return cls


def _class_name(env_name: str) -> str:
    return "".join(p.capitalize() for p in env_name.replace("/", "_").split("_")) + "Env"


def _world_ids(tasks: Sequence[Task]) -> set[str]:
    return {t.metadata["world_id"] for t in tasks if isinstance(t.metadata.get("world_id"), str)}


def _world_of(name: str, tasks: Sequence[Task]) -> Any:
    """The world the tasks were made in (a generated one is built into the cache), else the default."""
    ids = _world_ids(tasks)
    if len(ids) > 1:
        raise ValueError(f"the tasks were made in {len(ids)} worlds ({', '.join(sorted(ids))}): one factory per world")
    if not ids:
        return None
    (world_id,) = ids
    path = registry.world_named(name, world_id)
    if path is None:
        raise ValueError(f"the tasks were made in world {world_id!r}: pass that world's folder as world=")
    return path


def _check_world(environment: Any, tasks: Sequence[Task]) -> None:
    """Tasks verified in another world than theirs get wrong rewards without a word: refuse."""
    ids, have = _world_ids(tasks), environment.world_id
    if ids and have and ids != {have}:
        raise ValueError(f"the tasks were made in world {', '.join(sorted(ids))}, but the world given is {have}")


def reward_func(mode: str | None = None) -> Callable[..., list[float]]:
    """A TRL reward function: officegym's verifier on each finished environment's calls, in `mode`
    (workplace: outcome or nemo_gym; default: the factory's)."""

    def officegym_reward(environments: Sequence[OfficegymEnv] | None = None, **_: Any) -> list[float]:
        if environments is None:
            raise ValueError("officegym's reward_func scores environments: pass environment_factory to GRPOTrainer")
        return [float(e._verdict(mode).reward) for e in environments]

    officegym_reward.__name__ = f"officegym_{mode}" if mode else "officegym"
    return officegym_reward
