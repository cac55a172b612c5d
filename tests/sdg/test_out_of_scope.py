"""Requests no Workplace tool serves: generated with an empty ground truth and a reply, kept apart
from the "change nothing" share, and demonstrated to SFT as a reply without any call."""

from __future__ import annotations

import pytest

from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.generate import generate_world
from officegym.envs.workplace.tasks import TEMPLATES
from officegym.envs.workplace.tasks.base import DOMAINS
from officegym.envs.workplace.tasks.out_of_scope import PHRASINGS, REPLIES
from officegym.sdg.dataset import build_dataset
from officegym.sdg.engine import generate
from officegym.sdg.validate import Candidate, validate
from officegym.sdg.workplace import WorkplaceSource
from officegym.train.sft_data import BuildReport, ground_truth_conversations

OUT_OF_SCOPE = [f"{d}.out_of_scope" for d in DOMAINS]


@pytest.fixture(scope="module")
def source():
    return WorkplaceSource(generate_world(4, "reference").to_world(), "seed4-reference", templates=OUT_OF_SCOPE,
                           wordings="composed")


def test_one_template_per_domain_with_many_phrasings():
    for tid in OUT_OF_SCOPE:
        assert TEMPLATES[tid].domains == (tid.split(".")[0],)
        assert len(TEMPLATES[tid].phrasings) >= 10
    assert len(set(PHRASINGS)) == len(PHRASINGS) and len(REPLIES) >= 3


def test_rows_have_no_calls_a_reply_and_verify_only_if_nothing_changes(source):
    ds = build_dataset([source], 60, seed=1, tools="domain")
    rows = [r for split in ds.rows.values() for r in split]
    assert len(rows) == 60  # one empty ground truth per template is no duplicate: only queries are
    assert {r["template"] for r in rows} == set(OUT_OF_SCOPE)
    env = WorkplaceEnvironment(source.world)
    some_write = ToolCall("email_send_email", {"recipient": "a@b.com", "subject": "s", "body": "b"})
    for row in rows:
        assert row["ground_truth"] == [] and row["reply"] in REPLIES
        assert row["do_nothing"] and row["calls"] == {"reads": 0, "writes": 0}
        task = Task.from_row(row)
        assert env.verify(task, []).reward == 1.0
        assert env.verify(task, [some_write]).reward == 0.0


def test_not_counted_in_the_change_nothing_share(source):
    report = generate([source], 40, seed=2)
    assert len(report.accepted) == 40  # the do-nothing cap (20%) would have stopped them at one
    assert report.do_nothing == 0 and not any(a.do_nothing for a in report.accepted)


def test_a_reply_task_with_calls_is_rejected(source):
    cand = Candidate("x.out_of_scope", "email", ("email",), "Book me a flight.",
                     [ToolCall("company_directory_find_email_address", {"name": "Ana"})], reply="I can't.")
    assert validate(cand, source.sandbox).reason == "template_error"
    blank = Candidate("x.out_of_scope", "email", ("email",), "Book me a flight.", [], reply=" ")
    assert validate(blank, source.sandbox).reason == "template_error"


def test_sft_demonstrates_the_reply_without_a_call(source):
    ds = build_dataset([source], 10, seed=3, tools="domain")
    tasks = [Task.from_row(r) for split in ds.rows.values() for r in split]
    report = BuildReport()
    convs = ground_truth_conversations(WorkplaceEnvironment(source.world), tasks, "one", "Done.", 2000, report)
    assert len(convs) == len(tasks) and not report.dropped
    for conv, task in zip(convs, tasks):
        assistant = [m for m in conv.messages if m["role"] == "assistant"]
        assert len(assistant) == 1 and not assistant[0].get("tool_calls")
        assert assistant[0]["content"] == task.metadata["reply"]


def test_templates_for_a_ready_made_source_are_refused_not_ignored(source):
    with pytest.raises(ValueError, match="templates apply to world folders"):
        build_dataset([source], 5, templates=OUT_OF_SCOPE)
