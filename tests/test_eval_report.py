"""The eval report reads like the review UI: each failure once, its prompt beside its id, expected and
actual calls with indented arguments, the verifier's evidence as tables (the browser test opens it too)."""

from __future__ import annotations

import html
import json
import re

import pytest
from typer.testing import CliRunner

from officegym.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def random_run(tmp_path_factory):
    """A random policy's evaluation on a small generated world: mostly failures, of every kind."""
    root = tmp_path_factory.mktemp("report")
    for args in (["generate", "world", "--seed", "3", "--size", "small", "--out", str(root / "world")],
                 ["generate", "tasks", "--world", str(root / "world"), "--n", "40", "--seed", "3", "--out", str(root / "tasks")],
                 ["eval", "--policy", "random:1", "--tasks", str(root / "tasks" / "train.jsonl"), "--world",
                  str(root / "world"), "--out", str(root / "run")]):
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
    return root / "run"


def test_each_failure_is_shown_once_with_its_prompt_calls_and_evidence_tables(random_run):
    page = (random_run / "report.html").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in (random_run / "rollouts.jsonl").read_text().splitlines()]
    failed = [r for r in rows if not r["officegym"]["verdict"]["matched"]]
    assert failed and page.count("<details class='failure'") == len(failed)
    for r in failed:
        task_id = html.escape(r["officegym"]["task_id"])
        assert page.count(f"task {task_id}</span>") == 1  # once: no index list repeating the ids
    first = failed[0]
    prompt = first["responses_create_params"]["input"][-1]["content"]
    summary = re.search(r"<summary>(.*?)</summary>", page, re.S).group(1)
    assert html.escape(prompt[:60]) in summary  # the request next to the id
    # arguments as indented JSON objects, never JSON text quoted inside JSON
    assert "\\&quot;" not in page
    call = first["ground_truth"][0]
    pretty = json.dumps(json.loads(call["arguments"]), indent=1, ensure_ascii=False)
    assert html.escape(f"{call['name']}({pretty})") in page
    # the verifier's evidence: a table of the verdict and one per table that differs, rows labelled
    assert "<th>verdict</th>" in page and "<th>row</th>" in page
    assert "<td>expected, missing</td>" in page or "<td>unexpected</td>" in page


def test_the_markdown_report_lists_each_failure_once_with_its_prompt(random_run):
    text = (random_run / "report.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("- task ")]
    rows = [json.loads(line) for line in (random_run / "rollouts.jsonl").read_text().splitlines()]
    failed = [r for r in rows if not r["officegym"]["verdict"]["matched"]]
    assert len(lines) == min(50, len(failed))
    assert all('"' in line for line in lines)  # each quotes its request
