"""`officegym eval`, `report` and `compare` end to end with scripted policies (fast)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from officegym.cli import app

runner = CliRunner()


def _tasks_file(reference_dir, tmp_path):
    rows = [json.loads(x) for x in (reference_dir / "example.jsonl").read_text().splitlines()]
    rows.append(dict(rows[0], id=99, ground_truth=[]))
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def test_eval_oracle_noop_resume_report_compare(reference_dir, tmp_path):
    tasks, _ = _tasks_file(reference_dir, tmp_path)
    world = str(reference_dir / "csv_data")
    oracle = tmp_path / "oracle"
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(tasks), "--world", world, "--k", "2", "--out", str(oracle)])
    assert res.exit_code == 0, res.output
    metrics = json.loads((oracle / "metrics.json").read_text())
    assert metrics["accuracy"] == 1.0 and metrics["rollouts"] == 12 and metrics["pass_at_k"]["2"] == 1.0
    assert (oracle / "report.html").exists() and (oracle / "report.md").exists()
    info = json.loads((oracle / "run.json").read_text())
    assert info["env"] == "workplace_assistant" and info["mode"] == "outcome" and info["world"] == world
    lines = (oracle / "rollouts.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    assert {"responses_create_params", "ground_truth", "response", "reward", "officegym"} <= set(row)
    assert any(i["type"] == "function_call" for i in row["response"]["output"]) or row["officegym"]["task_id"] == 99

    # resume: a torn last line is dropped, only the missing rollout is redone
    (oracle / "rollouts.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(tasks), "--world", world, "--k", "2", "--out", str(oracle)])
    assert res.exit_code == 0 and "1 new rollouts, 11 already done" in res.output.replace("\n", " ")
    assert len((oracle / "rollouts.jsonl").read_text().splitlines()) == 12

    noop = tmp_path / "noop"
    res = runner.invoke(app, ["eval", "--policy", "noop", "--tasks", str(tasks), "--world", world, "--out", str(noop)])
    assert res.exit_code == 0
    m = json.loads((noop / "metrics.json").read_text())
    assert m["accuracy"] == m["empty_ground_truth_share"] == 1 / 6
    assert m["buckets"][">= 1 write"]["accuracy"] == 0.0
    assert m["errors"]["missing write"] == 5
    html = (noop / "report.html").read_text()
    assert "never writes scores that share for free" in html and "id='f0'" in html and "Expected calls" in html

    (noop / "metrics.json").unlink()
    res = runner.invoke(app, ["report", str(noop)])
    assert res.exit_code == 0 and json.loads((noop / "metrics.json").read_text())["accuracy"] == 1 / 6

    res = runner.invoke(app, ["compare", str(oracle), str(noop)])
    assert res.exit_code == 0 and "oracle" in res.output and "noop" in res.output
    # paired on the same tasks: a task counts for the oracle run when both its rollouts were right
    assert ("noop vs oracle: no significant change in accuracy, 100.0% -> 16.7% (-83.3 points); 0 tasks gained, "
            "5 lost, 6 tasks, exact McNemar p = 0.0625.") in " ".join(res.output.split())


def test_eval_clear_errors(reference_dir, tmp_path):
    world = str(reference_dir / "csv_data")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "responses_create_params": {"input": []}}\n{oops\n')
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(bad), "--world", world, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "bad.jsonl:2" in res.output
    tasks, _ = _tasks_file(reference_dir, tmp_path)
    res = runner.invoke(app, ["eval", "--policy", "nope", "--tasks", str(tasks), "--world", world, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "unknown policy" in res.output
    res = runner.invoke(app, ["eval", "--policy", "greedy", "--tasks", str(tasks), "--world", world, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "baseline of the role environments" in res.output
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(tasks), "--world", world, "--mode", "exact",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "unknown verification mode 'exact'" in res.output
    res = runner.invoke(app, ["eval", "--policy", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--tasks", str(tasks),
                              "--world", world, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "cannot reach the model server" in res.output


def _small_run(tmp_path):
    world, tasks = tmp_path / "world", tmp_path / "tasks"
    assert runner.invoke(app, ["generate", "world", "--seed", "1", "--size", "small", "--out", str(world)]).exit_code == 0
    res = runner.invoke(app, ["generate", "tasks", "--world", str(world), "--n", "4", "--seed", "0", "--out", str(tasks)])
    assert res.exit_code == 0, res.output
    return world, tasks / "train.jsonl"


def test_a_policy_that_cannot_load_stops_the_run_with_its_reason(tmp_path):
    world, tasks = _small_run(tmp_path)
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "--policy", f"hf:{tmp_path / 'no-such-model'}", "--tasks", str(tasks),
                              "--world", str(world), "--out", str(out)])
    assert res.exit_code != 0 and "no model directory" in " ".join(res.output.split())
    assert not (out / "rollouts.jsonl").exists()


def test_a_folder_of_another_policy_is_refused_unless_fresh(tmp_path):
    world, tasks = _small_run(tmp_path)
    out = tmp_path / "run"
    base = ["--tasks", str(tasks), "--world", str(world), "--out", str(out)]
    assert runner.invoke(app, ["eval", "--policy", "oracle", *base]).exit_code == 0
    res = runner.invoke(app, ["eval", "--policy", "noop", *base])
    assert res.exit_code != 0 and "holds rollouts of policy 'oracle'" in " ".join(res.output.split())
    assert json.loads((out / "metrics.json").read_text())["accuracy"] == 1.0  # nothing relabelled
    res = runner.invoke(app, ["eval", "--policy", "noop", "--fresh", *base])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "run.json").read_text())["policy"] == "noop"
    assert json.loads((out / "metrics.json").read_text())["accuracy"] < 1.0


def test_backend_failures_are_not_done_and_fail_the_command(tmp_path):
    world, tasks = _small_run(tmp_path)
    out = tmp_path / "run"
    base = ["--policy", "oracle", "--tasks", str(tasks), "--world", str(world), "--out", str(out)]
    assert runner.invoke(app, ["eval", *base]).exit_code == 0
    rows = [json.loads(x) for x in (out / "rollouts.jsonl").read_text().splitlines()]
    rows[0]["officegym"].update(stop_reason="error", error="RuntimeError: the server went away")
    (out / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["eval", *base])  # the failed rollout runs again
    assert res.exit_code == 0, res.output
    again = [json.loads(x) for x in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(again) == len(rows) and not any(r["officegym"].get("error") for r in again)


def test_a_run_whose_rollouts_fail_in_the_backend_exits_non_zero(tmp_path, monkeypatch):
    from officegym.agent import scripted

    async def broken(self, requests, params):
        raise RuntimeError("the model server went away")

    monkeypatch.setattr(scripted.OraclePolicy, "complete", broken)
    world, tasks = _small_run(tmp_path)
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "--policy", "oracle", "--tasks", str(tasks), "--world", str(world), "--out", str(out)])
    said = " ".join(res.output.split())
    n = len(tasks.read_text().splitlines())  # how many of the 4 generated tasks land in train
    assert res.exit_code != 0 and f"{n} of {n} rollouts failed in the model backend" in said
    assert f"{n} x backend: RuntimeError: the model server went away" in said  # the cause, before the error line
    # written all the same, and scored as nothing: not as the "change nothing" tasks' free points
    assert len((out / "rollouts.jsonl").read_text().splitlines()) == n
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["accuracy"] is None and metrics["errored"] == n and metrics["rollouts"] == 0
    assert "none ran, so there is no score" in (out / "report.md").read_text()


def test_eval_defaults_are_the_pipelines_and_are_said_at_the_start(tmp_path):
    from officegym.pipeline.config import PipelineConfig

    world, tasks = _small_run(tmp_path)
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "--policy", "noop", "--tasks", str(tasks), "--world", str(world), "--out", str(out)])
    assert res.exit_code == 0, res.output
    e = PipelineConfig().eval
    info = json.loads((out / "run.json").read_text())
    assert (info["temperature"], info["max_new_tokens"], info["max_steps"], info["max_tool_output_chars"], info["seed"]) == \
        (e.temperature, e.max_new_tokens, e.max_steps, e.max_tool_output_chars, 0)
    first = res.output.splitlines()[0]
    assert first.startswith(f"settings: temperature {e.temperature:g}, {e.max_new_tokens} new tokens per turn, "
                            f"{e.max_steps} steps, tool outputs cut at {e.max_tool_output_chars} characters")
    res = runner.invoke(app, ["eval", "--policy", "noop", "--tasks", str(tasks), "--world", str(world), "--out", str(out),
                              "--fresh", "--temperature", "0.7", "--max-tool-output-chars", "0"])
    assert res.exit_code == 0 and "temperature 0.7" in res.output and "tool outputs uncut" in res.output
    assert json.loads((out / "run.json").read_text())["max_tool_output_chars"] is None
