"""Task generation: determinism, every template on several worlds, rejections with the right
reason, do-nothing tasks, splits and the dataset card."""

from __future__ import annotations

import random
import re

import pytest

from officegym.core.task import Task, read_tasks
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.generate import generate_world
from officegym.envs.workplace.tasks import TEMPLATES, NoTask
from officegym.envs.workplace.tasks.base import Plan, call
from officegym.sdg.card import count_rows
from officegym.sdg.dataset import build_dataset, write_dataset
from officegym.sdg.difficulty import difficulty
from officegym.sdg.engine import generate
from officegym.sdg.validate import validate
from officegym.sdg.workplace import WorkplaceSource, task_row

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def sources():
    return {s: WorkplaceSource(generate_world(s, "reference").to_world(), f"seed{s}-reference") for s in SEEDS}


def first_valid(source: WorkplaceSource, tid: str, draws: int = 60):
    rng = random.Random(f"test/{tid}")
    reasons = []
    for _ in range(draws):
        cand = source.propose(tid, rng)
        if cand is None:
            continue
        problem = validate(cand, source.sandbox)
        if problem is None:
            return cand, reasons
        reasons.append(str(problem))
    return None, reasons


def test_at_least_70_templates_with_three_phrasings_covering_every_family():
    assert len(TEMPLATES) >= 70
    assert all(len(t.phrasings) >= 3 for t in TEMPLATES.values())
    categories = {t.category for t in TEMPLATES.values()}
    assert categories == {"email", "calendar", "analytics", "project_management", "customer_relationship_manager",
                          "multi_domain"}
    multi = {t.domains for t in TEMPLATES.values() if t.category == "multi_domain"}
    # the chains the issue names: CRM -> calendar, analytics -> e-mail, project management -> e-mail
    for pair in (("customer_relationship_manager", "calendar"), ("analytics", "email"), ("project_management", "email")):
        assert pair in multi
    assert sum(t.can_do_nothing for t in TEMPLATES.values()) >= 10


@pytest.mark.parametrize("seed", SEEDS)
def test_every_template_yields_a_valid_task_on_every_world(sources, seed):
    missing = {}
    for tid in TEMPLATES:
        cand, reasons = first_valid(sources[seed], tid)
        if cand is None:
            missing[tid] = reasons[:3]
    assert not missing, missing


def test_generation_is_deterministic_and_seed_dependent(sources):
    a = build_dataset([sources[0]], 150, seed=3)
    b = build_dataset([sources[0]], 150, seed=3)
    c = build_dataset([sources[0]], 150, seed=4)
    assert a.rows == b.rows
    assert a.rows != c.rows
    # asking for more only appends
    more = build_dataset([sources[0]], 200, seed=3)
    ids = [r["id"] for a_ in a.report.accepted for r in [task_row(a_.candidate, now="2024-01-01 23:59:00", tools="all",
                                                                       difficulty=1, reads=0, writes=0, split="")]]
    more_ids = [task_row(x.candidate, now="2024-01-01 23:59:00", tools="all", difficulty=1, reads=0, writes=0,
                         split="")["id"] for x in more.report.accepted]
    assert more_ids[: len(ids)] == ids


def test_generated_tasks_verify_for_the_oracle_in_both_modes_and_not_for_noop(sources):
    ds = build_dataset([sources[1]], 300, seed=0)
    env = WorkplaceEnvironment(sources[1].world)
    rows = [r for split in ds.rows.values() for r in split]
    assert len(rows) == 300
    for row in rows:
        task = Task.from_row(row)
        for mode in ("outcome", "nemo_gym"):
            assert env.verify(task, task.ground_truth, mode=mode).reward == 1.0, (row["id"], mode)
        noop = env.verify(task, [], mode="outcome").reward
        assert noop == (1.0 if row["do_nothing"] else 0.0), row["id"]


def test_do_nothing_tasks_are_right_for_a_policy_that_never_writes_and_wrong_for_one_that_writes(sources):
    report = generate([sources[2]], 400, seed=5)
    env = WorkplaceEnvironment(sources[2].world)
    nothing = [a for a in report.accepted if a.do_nothing]
    assert 0.12 <= len(nothing) / len(report.accepted) <= 0.2
    for a in nothing:
        row = task_row(a.candidate, now=sources[2].world.now, tools="all", difficulty=a.difficulty, reads=a.reads,
                       writes=a.writes, split="train")
        task = Task.from_row(row)
        assert env.verify(task, []).reward == 1.0
        assert env.verify(task, a.candidate.tempting).reward == 0.0
        assert a.candidate.conditions >= 1


class _Planted:
    """A source with one hand-written template, to plant defects."""

    def __init__(self, base: WorkplaceSource, build):
        self.base, self.build = base, build
        self.world_id, self.sandbox, self.world = base.world_id, base.sandbox, base.world

    def template_ids(self):
        return ["planted"]

    def weight(self, _tid):
        return 1

    def can_do_nothing(self, _tid):
        return False

    def propose(self, tid, rng):
        from officegym.sdg.validate import Candidate

        try:
            plan = self.build(self.base.view, rng)
        except NoTask:
            return None
        return Candidate("planted", "email", ("email",), f"planted task {rng.random()}", plan.calls,
                         world_id=self.world_id, conditions=plan.conditions, trigger=plan.trigger,
                         trigger_expected=plan.trigger_expected, tempting=plan.tempting)


def _reject_reason(source, build) -> str:
    report = generate([_Planted(source, build)], 1, seed=0, patience=3)
    assert not report.accepted
    (reason,) = report.rejected
    return reason


def test_planted_broken_templates_are_rejected_with_the_right_reason(sources):
    src = sources[0]
    view = src.view
    some = view.emails[0]
    # a guessed id: no read returned it (it exists, which is exactly the notebook's bug)
    assert _reject_reason(src, lambda w, r: Plan({}, [call("email_delete_email", email_id=some.id)])) == "guessed_id"
    # a failing call: deleting an e-mail twice
    search = call("email_search_emails", query=some.address, page_size=50)
    assert _reject_reason(src, lambda w, r: Plan({}, [
        search, call("email_delete_email", email_id=some.id), call("email_delete_email", email_id=some.id)])) == "tool_error"
    assert _reject_reason(src, lambda w, r: Plan({}, [call("email_shred_email", email_id="1")])) == "unknown_tool"
    assert _reject_reason(src, lambda w, r: Plan({}, [call("email_send_email", recipient="a@b.com", subject="x")])) == "bad_arguments"
    assert _reject_reason(src, lambda w, r: Plan({}, [call("email_search_emails", query="x", page_size="5")])) == "bad_arguments"
    # a "write" that writes what is already there
    task = view.tasks[0]
    assert _reject_reason(src, lambda w, r: Plan({}, [
        call("project_management_search_tasks", task_name=task.name),
        call("project_management_update_task", task_id=task.id, field="list_name", new_value=task.list_name)])) == "no_state_change"
    # a do-nothing task whose condition is in fact true
    assert _reject_reason(src, lambda w, r: Plan({}, [call("email_search_emails", query="x")], conditions=1,
                                                   trigger=lambda probe: True, trigger_expected=False,
                                                   tempting=[call("email_send_email", recipient="a@b.com", subject="s", body="b")])) == "trigger_mismatch"
    # a task with no writes and no condition proves nothing
    assert _reject_reason(src, lambda w, r: Plan({}, [call("email_search_emails", query="x")])) == "unverifiable_do_nothing"


def test_a_template_bug_is_counted_not_raised(sources):
    def broken(w, r):
        raise KeyError("oops")

    assert _reject_reason_from_bug(sources[0], broken) == "template_error"


def _reject_reason_from_bug(source, build):
    from officegym.sdg.engine import TemplateError

    class Buggy(_Planted):
        def propose(self, tid, rng):
            try:
                return super().propose(tid, rng)
            except KeyError as exc:
                raise TemplateError(repr(exc)) from exc

    report = generate([Buggy(source, build)], 1, seed=0, patience=2)
    return next(iter(report.rejected))


def test_difficulty_spans_the_scale():
    assert difficulty(0, 1, 1, 0, 0) == 1
    assert difficulty(1, 1, 1, 0, 0) == 2
    assert difficulty(3, 5, 2, 1, 1) >= 8
    assert difficulty(10, 10, 5, 3, 5) == 10


def test_splits_hold_out_templates_and_worlds(sources):
    ds = build_dataset([sources[0], sources[1]], 400, seed=2, holdout_templates=5, holdout_worlds=1)
    held_t, held_w = ds.plan.held_templates, ds.plan.held_worlds
    assert len(held_t) == 5 and len(held_w) == 1
    for split in ("train", "validation"):
        for row in ds.rows[split]:
            assert row["template"] not in held_t and row["world_id"] not in held_w
    assert any(r["world_id"] in held_w for r in ds.rows["test"])
    assert all(r["split"] == s for s, rows in ds.rows.items() for r in rows)


def test_card_counts_match_the_files(sources, tmp_path):
    ds = build_dataset([sources[0]], 250, seed=9, tools="domain")
    paths = write_dataset(ds, tmp_path / "ds")
    rows = {s: [t.to_row() for t in read_tasks(paths[s])] for s in ("train", "validation", "test")}
    counts = count_rows(rows)
    card = paths["card"].read_text()
    assert f"{sum(counts['split'].values())} tasks;" in card
    for key in ("split", "category", "difficulty", "template", "calls"):
        for value, n in counts[key].items():
            assert re.search(rf"^\| {re.escape(str(value))} \| {n} \|", card, re.M), (key, value, n)
    # domain tools: the directory plus the task's domains only
    for row in rows["train"][:50]:
        names = {t["name"] for t in row["responses_create_params"]["tools"]}
        assert "company_directory_find_email_address" in names
        assert all(n.startswith("company_directory") or any(n.startswith(d) for d in row["domains"]) for n in names)
    for category in counts["category"]:
        assert f"### {category}" in card


def test_templates_on_the_reference_world(ref_world):
    """The reference world has no outbox and repeats task names, so a few templates have nothing to ask
    there; every other template yields valid tasks, and the oracle passes them in both modes."""
    src = WorkplaceSource(ref_world, "reference")
    no_task_expected = {"email.delete_last_sent_to", "project_management.reassign_task", "project_management.push_due",
                        "project_management.delete_task", "multi.email_task_assignee", "multi.task_review_meeting",
                        "multi.reply_and_complete"}
    missing = {tid for tid in TEMPLATES if first_valid(src, tid, draws=40)[0] is None}
    assert missing <= no_task_expected
    ds = build_dataset([src], 120, seed=1)
    env = WorkplaceEnvironment(ref_world)
    for row in (r for rows in ds.rows.values() for r in rows):
        task = Task.from_row(row)
        assert row["responses_create_params"]["input"][0]["content"].startswith("Today's date is Thursday, 2023-11-30")
        for mode in ("outcome", "nemo_gym"):
            assert env.verify(task, task.ground_truth, mode=mode).reward == 1.0
