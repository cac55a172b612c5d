"""Task rows are evaluated and verified in the world they were made in (`world_id`), never silently
in another: `officegym eval` and `verify` build a generated world the rows name, and refuse a
--world that is not theirs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from officegym.cli import app

runner = CliRunner()


def said(res) -> str:
    return " ".join(res.output.split())


@pytest.fixture
def cache(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("OFFICEGYM_CACHE", str(path))
    return path


@pytest.fixture
def made(tmp_path):
    """Tasks made in the world of seed 1 (small), and that world's folder."""
    world, tasks = tmp_path / "world1", tmp_path / "tasks"
    assert runner.invoke(app, ["generate", "world", "--seed", "1", "--size", "small", "--out", str(world)]).exit_code == 0
    res = runner.invoke(app, ["generate", "tasks", "--world", str(world), "--n", "4", "--out", str(tasks)])
    assert res.exit_code == 0, res.output
    path = tasks / "train.jsonl"
    assert {json.loads(line)["world_id"] for line in path.read_text().splitlines()} == {"seed1-small"}
    return world, path


def test_eval_without_world_builds_the_world_the_rows_were_made_in(made, cache, tmp_path):
    _, tasks = made
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(tasks), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "the tasks were made in world seed1-small" in said(res)
    assert json.loads((out / "run.json").read_text())["world"] == str(cache / "worlds" / "seed1-small")
    assert json.loads((out / "metrics.json").read_text())["accuracy"] == 1.0  # the oracle, in the right world
    assert not (cache / "worlds" / "seed0-reference").exists()


def test_eval_refuses_a_world_the_rows_were_not_made_in(made, tmp_path):
    _, tasks = made
    other = tmp_path / "world2"
    assert runner.invoke(app, ["generate", "world", "--seed", "2", "--size", "small", "--out", str(other)]).exit_code == 0
    base = ["eval", "--policy", "oracle", "--tasks", str(tasks), "--world", str(other), "--out", str(tmp_path / "run")]
    res = runner.invoke(app, base)
    assert res.exit_code == 2 and "the tasks were made in world seed1-small, but the world at" in said(res)
    assert "is seed2-small" in said(res) and "--allow-world-mismatch" in said(res) and "Traceback" not in res.output
    assert not (tmp_path / "run" / "rollouts.jsonl").exists()
    res = runner.invoke(app, [*base, "--allow-world-mismatch"])
    assert res.exit_code == 0, res.output


def test_rows_that_name_a_world_that_cannot_be_built_or_several_are_refused(made, cache, tmp_path):
    _, tasks = made
    rows = [json.loads(line) for line in tasks.read_text().splitlines()]
    named = tmp_path / "named.jsonl"
    named.write_text("".join(json.dumps(dict(r, world_id="acme")) + "\n" for r in rows))
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(named), "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "the tasks were made in world 'acme': pass that world's folder with --world" in said(res)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(dict(r, world_id=f"seed{i % 2}-small")) + "\n" for i, r in enumerate(rows)))
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(mixed), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "the tasks were made in 2 worlds (seed0-small, seed1-small)" in said(res)
    assert not (cache / "worlds").exists()  # nothing generated for a refused run


def test_verify_uses_and_checks_the_world_of_the_rollouts(made, cache, tmp_path):
    world, tasks = made
    run = tmp_path / "run"
    assert runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(tasks), "--world", str(world),
                               "--out", str(run)]).exit_code == 0
    rollouts = run / "rollouts.jsonl"
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--out", "-"])  # no --world: the rows' own world
    assert res.exit_code == 0, res.output
    verdicts = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    n = len(tasks.read_text().splitlines())  # which of the 4 tasks land in train depends on the draw
    assert n >= 1 and len(verdicts) == n and all(v["reward"] == 1.0 for v in verdicts)
    assert (cache / "worlds" / "seed1-small" / "world.json").exists()

    other = tmp_path / "world2"
    assert runner.invoke(app, ["generate", "world", "--seed", "2", "--size", "small", "--out", str(other)]).exit_code == 0
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", str(other)])
    assert res.exit_code == 2 and "line 1: the rollout was made in world seed1-small" in said(res)
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--tasks", str(tasks), "--world", str(other)])
    assert res.exit_code == 2 and "the tasks were made in world seed1-small" in said(res)
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", str(other), "--allow-world-mismatch"])
    assert res.exit_code == 0, res.output


def test_rows_without_a_world_id_keep_the_given_world(reference_dir, tmp_path):
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(reference_dir / "example.jsonl"),
                              "--world", str(reference_dir / "csv_data"), "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
