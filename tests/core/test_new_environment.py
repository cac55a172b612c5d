"""A new world-backed environment is its module plus one registry line: the generic code (the CLI's
task generation and eval, the agent loop, the review queue's replay and fingerprint) runs it through
the environment contract alone.

The example: a world is a folder of notes (notes.json); a task asks to tag one note; the verifier
compares the tags the calls leave with those the ground truth leaves.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from officegym.cli import app
from officegym.core import registry
from officegym.core.cache import cache_root
from officegym.core.environment import BaseEnvironment
from officegym.core.session import BaseSession
from officegym.core.task import Task, read_tasks
from officegym.core.types import ToolCall, ToolResult, ToolSpec, Verdict

NAME = "example/notes"
TOPICS = ("budget", "hiring", "launch", "offsite", "security", "travel")
TAGS = ("urgent", "later", "done")
TAG = ToolSpec("tag_note", "Tag a note.", {"type": "object", "required": ["note_id", "tag"], "properties": {
    "note_id": {"type": "string"}, "tag": {"type": "string", "enum": list(TAGS)}}})
LIST = ToolSpec("list_notes", "Every note's id and topic.", {"type": "object", "properties": {}})


class NotesSession(BaseSession):
    def __init__(self, notes: dict[str, str]):
        self.notes, self.tags = notes, {}

    def execute(self, name: str, arguments: Any = None) -> ToolResult:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments or {}
        if name == "list_notes":
            return ToolResult([{"id": k, "topic": v} for k, v in self.notes.items()])
        if name != "tag_note" or not isinstance(args, dict):
            return ToolResult(f"unknown tool {name!r}", "error")
        if args.get("note_id") not in self.notes or args.get("tag") not in TAGS:
            return ToolResult("no such note or tag", "rejected")
        self.tags[args["note_id"]] = args["tag"]
        return ToolResult("tagged")


class NotesEnvironment(BaseEnvironment):
    name = NAME
    takes_world = True
    write_tools = frozenset({"tag_note"})

    def __init__(self, world: Any = None, mode: str = "outcome"):
        self.world = world if isinstance(world, dict) else self.load_world(world)
        self.mode = mode

    @classmethod
    def load_world(cls, path: str | Path) -> dict[str, Any]:
        try:
            return {**json.loads((Path(path) / "notes.json").read_text()), "path": str(path)}
        except OSError as exc:
            raise ValueError(f"no notes world: {exc}") from None

    @classmethod
    def generate_world(cls, folder: Path | None = None, seed: int = 0, **_: Any) -> Any:
        rng = random.Random(seed)
        world = {"id": f"notes-{seed}", "notes": {f"N{i}": rng.choice(TOPICS) for i in range(8)}}
        if folder is None:
            return world
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "notes.json").write_text(json.dumps(world))
        return folder

    @classmethod
    def world_named(cls, world_id: str, announce: Any = None) -> Path | None:
        seed = world_id.removeprefix("notes-")
        if not seed.isdigit():
            return None
        folder = cache_root() / "notes" / world_id
        return folder if (folder / "notes.json").exists() else cls.generate_world(folder, int(seed))

    @property
    def world_path(self) -> str | None:
        return self.world.get("path")

    @property
    def world_id(self) -> str:
        return self.world["id"]

    def tools(self, task: Task | None = None) -> list[ToolSpec]:
        return [LIST, TAG]

    def session(self, task: Task | None = None) -> NotesSession:
        return NotesSession(self.world["notes"])

    def state_fingerprint(self, session: NotesSession) -> str:
        return json.dumps(session.tags, sort_keys=True)

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        def end(cs: Sequence[ToolCall]) -> str:
            session = self.session(task)
            for c in cs:
                session.execute(c.name, c.arguments)
            return self.state_fingerprint(session)

        matched = end(calls) == end(task.ground_truth)
        return Verdict(reward=float(matched), matched=matched, mode=mode or self.mode)

    def generate_tasks(self, n: int, seed: int, **options: Any) -> list[Task]:
        rng = random.Random(seed)
        tasks = []
        for i in range(n):
            note, tag = rng.choice(sorted(self.world["notes"])), rng.choice(TAGS)
            topic = self.world["notes"][note]
            tasks.append(Task(id=f"notes-{seed}-{i}", input=[{"role": "user", "content": f"Tag the {topic} note {tag}."}],
                              tools=[LIST.to_schema(), TAG.to_schema()], environment_name=NAME,
                              ground_truth=[ToolCall("tag_note", {"note_id": note, "tag": tag})],
                              metadata={"world_id": self.world_id}))
        return tasks


@pytest.fixture
def registered(monkeypatch, tmp_path):
    monkeypatch.setenv("OFFICEGYM_CACHE", str(tmp_path / "cache"))
    registry.register(NAME, NotesEnvironment)  # the one registry line
    yield
    registry._FACTORIES.pop(NAME, None)


def test_a_new_world_backed_environment_runs_through_the_generic_code(registered, tmp_path):
    from officegym.agent.loop import LoopConfig, run_rollouts
    from officegym.agent.scripted import NoopPolicy, OraclePolicy
    from officegym.core.rollout_row import RolloutRow
    from officegym.review.replay import check_correction, state_fingerprint

    runner = CliRunner()
    world, tasks_dir, run = tmp_path / "world", tmp_path / "tasks", tmp_path / "run"
    assert registry.environment_class(NAME).generate_world(world, seed=3) == world
    res = runner.invoke(app, ["generate", "tasks", "--env", NAME, "--world", str(world), "--n", "12", "--out", str(tasks_dir)])
    assert res.exit_code == 0, res.output
    tasks = [t for split in ("train", "validation", "test") for t in read_tasks(tasks_dir / f"{split}.jsonl")]
    assert len(tasks) == 12 and {t.metadata["world_id"] for t in tasks} == {"notes-3"}

    # eval without --world: the world the rows name, made again by the environment into the cache
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(tasks_dir / "train.jsonl"), "--out", str(run)])
    assert res.exit_code == 0, res.output
    assert json.loads((run / "run.json").read_text())["world"] == str(cache_root() / "notes" / "notes-3")
    assert json.loads((run / "metrics.json").read_text())["accuracy"] == 1.0

    # the rows verify again; the review queue replays them and fingerprints their end states
    env = registry.make(NAME, world=world)
    rows = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    by_id = {str(t.id): t for t in tasks}
    for row in rows:
        ref = RolloutRow(row)
        task = by_id[str(ref.task_id)]
        assert env.verify(task, ref.calls()).matched and ref.reward == 1.0
        want = {task.ground_truth[0].arguments["note_id"]: task.ground_truth[0].arguments["tag"]}
        assert json.loads(state_fingerprint(env, task, ref.calls(), env.write_tools)) == want
        assert check_correction(env, task, task.ground_truth, ref.calls()).rescored.matched

    # a session and a verdict through the agent loop; doing nothing earns nothing
    noop = asyncio.run(run_rollouts(env, [(t, 0) for t in tasks], NoopPolicy(), LoopConfig()))
    assert [t.reward for t in noop] == [0.0] * len(tasks)
    oracle = asyncio.run(run_rollouts(env, [(tasks[0], 0)], OraclePolicy(), LoopConfig()))
    assert oracle[0].reward == 1.0 and oracle[0].turns[0].executions[0].output == '{"output":"tagged"}'
