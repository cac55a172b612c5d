"""The validation subset: the first max_val_tasks of the held-out tasks, or the same number taken in
turn from each template, so a small validation set holds every template about equally."""

from __future__ import annotations

import json
from collections import Counter

from officegym.core.task import Task
from officegym.train.config import DataConfig
from officegym.train.data import per_template, split_tasks, template_of


def _task(i: int, template: str) -> Task:
    return Task(id=i, input=[{"role": "user", "content": f"task {i}"}], metadata={"template": template})


def _tasks() -> list[Task]:
    # file order front-loads 'a': the first 6 tasks are all of it
    names = ["a"] * 6 + ["b", "a", "c", "b", "a", "b"]
    return [_task(i, t) for i, t in enumerate(names)]


def test_per_template_takes_every_template_in_turn_in_file_order():
    picked = per_template(_tasks(), 6)
    assert [t.id for t in picked] == [0, 6, 8, 1, 9, 2]  # a, b, c, then a, b, and c has run out
    assert Counter(template_of(t) for t in picked) == {"a": 3, "b": 2, "c": 1}


def test_per_template_fills_from_the_templates_left_and_never_repeats():
    tasks = _tasks()
    assert [t.id for t in per_template(tasks, 9)] == [0, 6, 8, 1, 9, 2, 11, 3, 4]
    everything = per_template(tasks, 100)
    assert sorted(t.id for t in everything) == list(range(len(tasks)))
    assert per_template(tasks, 1)[0].id == 0 and per_template([], 5) == []


def test_split_tasks_val_sample(tmp_path):
    val = _tasks()
    first = split_tasks(val, DataConfig(val_fraction=0.0, max_val_tasks=4), seed=0)
    assert first == (val, [])  # nothing held out: max_val_tasks has nothing to cut
    held = DataConfig(val_fraction=0.5, max_val_tasks=4)
    train, val_first = split_tasks(val, held, seed=0)
    _, val_balanced = split_tasks(val, held.model_copy(update={"val_sample": "per_template"}), seed=0)
    assert len(val_first) == len(val_balanced) == 4 and train  # same held-out pool, another subset
    pool = split_tasks(val, DataConfig(val_fraction=0.5), seed=0)[1]
    assert [t.id for t in val_first] == [t.id for t in pool[:4]]
    assert [t.id for t in val_balanced] == [t.id for t in per_template(pool, 4)]
    assert len({template_of(t) for t in val_balanced}) == len({template_of(t) for t in pool})
    # a val_tasks file is sampled the same way
    path = tmp_path / "val.jsonl"
    path.write_text("".join(json.dumps(t.to_row()) + "\n" for t in val))
    from_file = DataConfig(val_tasks=str(path), max_val_tasks=3, val_sample="per_template")
    assert [t.id for t in split_tasks(val, from_file, seed=0)[1]] == [0, 6, 8]
