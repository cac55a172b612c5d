"""A World pickles as its base rows and is rebuilt (how a Ray worker receives one): the copy answers
every tool call and every verify as the original does."""

from __future__ import annotations

import json
import pickle

from officegym.agent.loop import LoopConfig
from officegym.agent.policies import make_policy
from officegym.core import registry
from officegym.core.task import Task
from officegym.envs.workplace.generate import generate_world
from officegym.envs.workplace.world import NAN
from officegym.eval.run import run_eval
from officegym.sdg.dataset import build_dataset
from officegym.sdg.workplace import WorkplaceSource


def test_a_pickled_world_plays_every_episode_as_the_original(tmp_path):
    world = generate_world(2, "small").to_world()
    copy = pickle.loads(pickle.dumps(world))
    assert copy is not world and copy.path == world.path and copy.now == world.now
    cells = [c for rows in copy.tables.values() for r in rows for c in r]
    assert any(c is NAN for c in cells)  # missing cells are the module's NAN again, as loaders make them
    assert not any(isinstance(c, float) and c != c and c is not NAN for c in cells)
    assert all(id(e[2]) in copy.email_index for e in copy.email_entries)

    ds = build_dataset([WorkplaceSource(world, "w")], 20, seed=1)
    tasks = [Task.from_row(r) for split in ds.rows.values() for r in split]
    rows = []
    for name, w in (("original", world), ("copy", copy)):
        env = registry.make("workplace", world=w)
        for spec in ("oracle", "random:5"):
            out = run_eval(env, tasks, make_policy(spec), tmp_path / name / spec.replace(":", "-"),
                           config=LoopConfig(max_steps=3))
            rows.append(sorted(json.dumps({**r, "officegym": {k: v for k, v in r["officegym"].items()
                                                              if k not in ("seconds", "env_seconds")}}, sort_keys=True)
                               for r in out.rows))
    assert rows[0] == rows[2] and rows[1] == rows[3]
    assert any('"reward": 1.0' in r for r in rows[0])
