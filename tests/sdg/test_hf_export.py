"""Task folders as Hugging Face datasets: `generate tasks --hf`, the pipeline's `tasks.hf`, and what
`datasets.load_from_disk` gives back."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

datasets = pytest.importorskip("datasets")

from officegym.cli import app  # noqa: E402
from officegym.sdg.hf_export import HFExportError, write_hf_dataset  # noqa: E402

runner = CliRunner()


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def workplace(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    world, tasks, hf = root / "world", root / "tasks", root / "hf"
    assert runner.invoke(app, ["generate", "world", "--seed", "2", "--size", "small", "--out", str(world)]).exit_code == 0
    res = runner.invoke(app, ["generate", "tasks", "--world", str(world), "--n", "40", "--tools", "mixed",
                              "--out", str(tasks), "--hf", str(hf)])
    assert res.exit_code == 0, res.output
    return tasks, hf


def test_generate_tasks_hf_writes_a_datasetdict_that_gives_every_row_back(workplace):
    tasks, hf = workplace
    dd = datasets.load_from_disk(str(hf))
    assert (hf / "README.md").read_text() == (tasks / "README.md").read_text()  # the card travels with it
    for split in dd:
        rows = _rows(tasks / f"{split}.jsonl")
        ds = dd[split]
        assert len(ds) == len(rows)
        back = [json.loads(r) for r in ds["row"]]
        assert back == rows and [list(r) for r in back] == [list(r) for r in rows]  # values and key order
        first, row = ds[0], rows[0]
        assert first["id"] == row["id"] and first["template"] == row["template"]
        assert first["prompt"] == [{"role": m["role"], "content": m["content"]} for m in row["responses_create_params"]["input"]]
        assert json.loads(first["tools"]) == row["responses_create_params"]["tools"]
        assert first["ground_truth"] == row["ground_truth"]
        assert isinstance(first["difficulty"], int) and isinstance(first["domains"], list)
    assert "calls" not in dd["train"].column_names  # a dict-valued key stays in `row` only


def test_role_tasks_export_too(tmp_path):
    tasks, hf = tmp_path / "tasks", tmp_path / "hf"
    res = runner.invoke(app, ["generate", "tasks", "--env", "roles/cost", "--n", "12", "--out", str(tasks), "--hf", str(hf)])
    assert res.exit_code == 0, res.output
    dd = datasets.load_from_disk(str(hf))
    assert sum(len(d) for d in dd.values()) == 12
    assert {json.loads(r)["environment_name"] for d in dd.values() for r in d["row"]} == {"roles/cost"}


def test_the_export_never_replaces_a_folder_it_did_not_write(workplace, tmp_path):
    tasks, _ = workplace
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(HFExportError, match="not an officegym Hugging Face export"):
        write_hf_dataset(tasks, theirs)
    assert (theirs / "notes.txt").read_text() == "mine"
    res = runner.invoke(app, ["generate", "tasks", "--env", "roles/cost", "--n", "4", "--out", str(tmp_path / "t"),
                              "--hf", str(theirs)])
    assert res.exit_code == 2 and "not an officegym Hugging Face export" in res.output
    # an earlier export is replaced whole
    again = tmp_path / "again"
    write_hf_dataset(tasks, again)
    write_hf_dataset(tasks, again)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".again")) == []
    assert len(datasets.load_from_disk(str(again))["train"]) == len(_rows(tasks / "train.jsonl"))


def test_an_empty_folder_is_refused_with_its_reason(tmp_path):
    with pytest.raises(HFExportError, match="holds no tasks"):
        write_hf_dataset(tmp_path, tmp_path / "hf")
