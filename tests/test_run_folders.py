"""A run folder holds one command's run (issue 47 N3): `officegym eval` and `officegym bench bfcl`
refuse each other's folders, and a non-empty folder that is no run, with one line and nothing written."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from officegym.cli import app
from officegym.core.run_folder import foreign_folder, run_kind

runner = CliRunner()


def _eval(tasks, world, out, *extra):
    return runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(tasks), "--world", world, "--out", str(out), *extra])


@pytest.fixture
def tasks(reference_dir, tmp_path):
    rows = (reference_dir / "example.jsonl").read_text().splitlines()[:2]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_eval_refuses_a_folder_of_other_files_and_writes_nothing(tasks, reference_dir, tmp_path):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "thesis.tex").write_text("mine")
    for extra in ((), ("--fresh",)):
        res = _eval(tasks, str(reference_dir / "csv_data"), out, *extra)
        assert res.exit_code == 2 and "is not empty and is not an `officegym eval` run" in res.output
        assert "thesis.tex" in res.output and "Traceback" not in res.output
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]


def test_eval_refuses_a_bfcl_run_and_keeps_it_whole(tasks, reference_dir, tmp_path):
    out = tmp_path / "bfcl"
    out.mkdir()
    bfcl_info = {"kind": "bfcl", "policy": "oracle", "bfcl_eval_version": "2026.3.23"}
    (out / "run.json").write_text(json.dumps(bfcl_info))
    (out / "results.jsonl").write_text("{}\n")
    (out / "report.html").write_text("<html>bfcl</html>")
    for extra in ((), ("--fresh",)):
        res = _eval(tasks, str(reference_dir / "csv_data"), out, *extra)
        assert res.exit_code == 2 and "holds an `officegym bench bfcl` run" in res.output, res.output
    assert json.loads((out / "run.json").read_text()) == bfcl_info
    assert (out / "report.html").read_text() == "<html>bfcl</html>" and not (out / "rollouts.jsonl").exists()


def test_eval_resumes_its_own_run_and_takes_an_empty_folder(tasks, reference_dir, tmp_path):
    world = str(reference_dir / "csv_data")
    out = tmp_path / "run"
    out.mkdir()
    (out / ".hidden.tmp").write_text("")  # an interrupted atomic write's leftover does not count
    assert _eval(tasks, world, out).exit_code == 0
    assert json.loads((out / "run.json").read_text())["kind"] == "eval"
    res = _eval(tasks, world, out)
    assert res.exit_code == 0, res.output


def test_bench_bfcl_refuses_an_eval_run(tasks, reference_dir, tmp_path):
    out = tmp_path / "run"
    assert _eval(tasks, str(reference_dir / "csv_data"), out).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    res = runner.invoke(app, ["bench", "bfcl", "--policy", "oracle", "--out", str(out), "--limit", "1",
                              "--categories", "simple"])
    assert res.exit_code == 2 and "holds an `officegym eval` run" in res.output, res.output
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_run_kinds_of_folders_written_before_the_kind_key():
    assert run_kind({"policy": "oracle", "env": "workplace_assistant"}) == "eval"
    assert run_kind({"policy": "oracle", "bfcl_eval_version": "x"}) == "bfcl"
    assert run_kind({"specs": {}, "max_rounds": 4}) == "council"
    assert run_kind({"kind": "eval"}) == "eval" and run_kind({}) is None


def test_foreign_folder_on_missing_files_and_unknown_run_json(tmp_path):
    assert foreign_folder(tmp_path / "missing", "eval", ()) is None
    (tmp_path / "run.json").write_text("{}")
    assert "another command's run" in foreign_folder(tmp_path, "eval", ("run.json",))
