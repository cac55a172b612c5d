"""Composed wordings: slot values survive every surface feature, each family has many surface
forms, held-out wording features never reach training, and "base" wordings are unchanged."""

from __future__ import annotations

import random
import re
from collections import defaultdict

import pytest

from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.generate import generate_world
from officegym.envs.workplace.tasks import TEMPLATES
from officegym.envs.workplace.tasks.surface import FEATURES, FRAMES, Wording, draw, render
from officegym.sdg.dataset import build_dataset
from officegym.sdg.workplace import WorkplaceSource

_SLOT = re.compile(r"\{([a-z0-9_]+)\}")


def _slots(phrasing: str) -> dict[str, str]:
    # values with capitals, digits and a quote-like character, as real fills have
    return {k: f"Val{k.upper()}9" for k in _SLOT.findall(phrasing)} | {"first": "Ana", "second": "Bo"}


def test_every_slot_value_survives_every_feature_of_every_phrasing():
    r = random.Random(0)
    for tid, tpl in TEMPLATES.items():
        for index, phrasing in enumerate(tpl.phrasings):
            slots = _slots(phrasing)
            for _ in range(40):
                wording = draw(phrasing, index, r, plain=0.0)
                query = render(phrasing, slots, wording, r)
                for name in _SLOT.findall(phrasing):
                    value, text = slots[name], query
                    if name in ("first", "second") and wording.names == "lower":
                        # a name that opens the sentence is capitalised as any first word is
                        value, text = value.lower(), query[:1].lower() + query[1:]
                    assert value in text, (tid, wording.key(), query)
                assert "{" not in query and "}" not in query


def test_typos_touch_only_the_templates_own_ordinary_words():
    r = random.Random(1)
    phrasing = "If {first} has any overdue tasks, email them with the subject 'Overdue tasks' and the body '{body}'."
    for _ in range(200):
        query = render(phrasing, {"first": "Ana", "body": "Thanks"}, Wording(0, typo=True), r)
        assert "'Overdue tasks'" in query and "'Thanks'" in query and "Ana" in query
        assert "overdue" in query.split("'")[0]  # a word that carries the condition is kept
        assert query != phrasing.format(first="Ana", body="Thanks")


def test_each_family_has_at_least_ten_surface_forms_and_frames_make_questions():
    r = random.Random(2)
    forms: dict[str, set[str]] = defaultdict(set)
    questions = 0
    for tpl in TEMPLATES.values():
        for _ in range(30):
            index = r.randrange(len(tpl.phrasings))
            wording = draw(tpl.phrasings[index], index, r)
            forms[tpl.category].add(wording.key())
            questions += render(tpl.phrasings[index], _slots(tpl.phrasings[index]), wording, r).endswith("?")
    assert set(forms) == {"email", "calendar", "analytics", "project_management", "customer_relationship_manager",
                          "multi_domain"}
    assert all(len(v) >= 10 for v in forms.values()), {k: len(v) for k, v in forms.items()}
    assert questions > 50
    assert len(FRAMES) >= 10


@pytest.fixture(scope="module")
def world():
    return generate_world(3, "reference").to_world()


def test_composed_tasks_validate_and_the_oracle_solves_them(world):
    source = WorkplaceSource(world, "seed3-reference", wordings="composed")
    env = WorkplaceEnvironment(world)
    ds = build_dataset([source], 300, seed=1, wordings="composed")
    rows = [row for split in ds.rows.values() for row in split]
    assert len(rows) >= 250
    assert sum(row["wording"] != f"p{row['phrasing']}" for row in rows) > len(rows) // 2
    from officegym.core.task import Task
    for row in rows[:60]:
        task = Task.from_row(row)
        assert env.verify(task, task.ground_truth).reward == 1.0


def test_held_out_wording_features_never_reach_training(world):
    source = WorkplaceSource(world, "seed3-reference", wordings="composed")
    ds = build_dataset([source], 600, seed=4, wordings="composed", holdout_wordings=5, holdout_templates=6,
                       tools="mixed", all_tools_share=0.5)
    held = ds.plan.held_wordings
    assert len(held) == 5 and held <= set(FEATURES)
    for split in ("train", "validation"):
        for row in ds.rows[split]:
            assert not held.intersection(row["wording_features"]) and row["subset"] == "trained"
            assert row["template"] not in ds.plan.held_templates
    subsets = {row["subset"] for row in ds.rows["test"]}
    assert subsets == {"trained", "heldout_wording", "heldout_template"}
    for row in ds.rows["test"]:
        if row["subset"] == "heldout_wording":
            assert held.intersection(row["wording_features"]) and row["template"] not in ds.plan.held_templates
    offered = {row["tools_offered"] for split in ds.rows.values() for row in split}
    assert offered == {"all", "domain"}
    for row in ds.rows["train"]:
        n = len(row["responses_create_params"]["tools"])
        assert (n == 27) == (row["tools_offered"] == "all")


def test_named_held_out_features_are_checked(world):
    source = WorkplaceSource(world, "seed3-reference", wordings="composed")
    with pytest.raises(ValueError, match="unknown wording feature"):
        build_dataset([source], 10, wordings="composed", holdout_wordings=["frame:shout"])
    with pytest.raises(ValueError, match="composed"):
        build_dataset([WorkplaceSource(world, "w")], 10, holdout_wordings=2)


def test_base_wordings_are_the_phrasings_as_written(world):
    source = WorkplaceSource(world, "seed3-reference")
    r = random.Random(5)
    for tid in list(TEMPLATES)[:20]:
        cand = None
        for _ in range(30):
            cand = source.propose(tid, r)
            if cand is not None:
                break
        if cand is None:
            continue
        expected = TEMPLATES[tid].phrasings[cand.phrasing].format(**cand.slots)
        assert cand.query == expected[:1].upper() + expected[1:]
        assert "wording" not in cand.meta


def test_per_template_caps_count_writes_and_change_nothing_apart(world):
    source = WorkplaceSource(world, "seed3-reference")
    ds = build_dataset([source], 3000, seed=2, per_template_max=6, do_nothing_per_template_max=9)
    rows = [row for split in ds.rows.values() for row in split]
    kinds: dict[tuple[str, bool], int] = defaultdict(int)
    for row in rows:
        # a request no tool serves (answered in words) changes nothing but is its template's only kind
        kinds[row["template"], row["do_nothing"] and "reply" not in row] += 1
    assert max(n for (_, nothing), n in kinds.items() if not nothing) == 6
    assert max(n for (_, nothing), n in kinds.items() if nothing) == 9
    assert len(rows) < 3000  # every template retired at its caps before n
    nothing_templates = {t for (t, nothing) in kinds if nothing}
    assert all(TEMPLATES[t].can_do_nothing for t in nothing_templates)
    # "nothing matches" branches of the templates that act on every match
    assert {"calendar.cancel_with_person_on_day", "project_management.reassign_list"} <= nothing_templates
