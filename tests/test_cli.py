"""The command line: tools, call, verify (on the reference example rollouts)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from officegym.cli import app

runner = CliRunner()


def test_tools_json_lists_27_in_reference_order():
    res = runner.invoke(app, ["tools", "--json"])
    assert res.exit_code == 0
    names = [t["name"] for t in json.loads(res.stdout)]
    assert len(names) == 27 and names[0] == "company_directory_find_email_address"
    assert names[-1] == "customer_relationship_manager_delete_customer"


def test_tool_specs_match_the_reference_rows(reference_dir):
    from officegym.envs.workplace.specs import TOOL_SPECS

    row = json.loads((reference_dir / "example.jsonl").read_text().splitlines()[0])
    ref = row["responses_create_params"]["tools"]
    assert [t["name"] for t in ref] == [s.name for s in TOOL_SPECS]
    for r, s in zip(ref, TOOL_SPECS):
        assert list(r["parameters"]["properties"]) == list(s.parameters["properties"])
        assert {k: v["type"] for k, v in r["parameters"]["properties"].items()} == {
            k: v["type"] for k, v in s.parameters["properties"].items()
        }
        assert r["parameters"]["required"] == s.parameters["required"]
        assert r["parameters"]["additionalProperties"] is False and r["strict"] is False


def test_call_without_world_uses_the_generated_default(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFICEGYM_CACHE", str(tmp_path))
    res = runner.invoke(app, ["call", "email_delete_email", "{}"])
    assert res.exit_code == 0 and json.loads(res.stdout) == {"output": "Email ID not provided."}
    assert (tmp_path / "worlds" / "seed0-reference" / "world.json").exists()
    res = runner.invoke(app, ["call", "analytics_total_visits_count", "{}"])
    assert res.exit_code == 0 and len(json.loads(res.stdout)["output"]) > 30


def test_generate_world_writes_a_loadable_world(tmp_path):
    from officegym.envs.workplace.world import load_world

    res = runner.invoke(app, ["generate", "world", "--seed", "3", "--size", "small", "--out", str(tmp_path / "w")])
    assert res.exit_code == 0, res.output
    assert len(load_world(tmp_path / "w").tables["emails"]) == 50
    assert runner.invoke(app, ["generate", "world", "--seed", "3", "--out", str(tmp_path / "w")]).exit_code == 2
    assert runner.invoke(app, ["generate", "world", "--seed", "3", "--size", "huge", "--out", str(tmp_path / "x")]).exit_code == 2


def test_call(reference_dir):
    res = runner.invoke(app, ["call", "company_directory_find_email_address", '{"name": "kofi"}', "--world", str(reference_dir / "csv_data")])
    assert res.exit_code == 0 and json.loads(res.stdout) == {"output": ["kofi.mensah@atlas.com"]}


def test_verify_rollouts_with_and_without_tasks(reference_dir, tmp_path):
    rollouts = reference_dir / "example_rollouts.jsonl"
    world = str(reference_dir / "csv_data")
    # without ground truth every row is reported, none crashes the run
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", world, "--out", "-"])
    assert res.exit_code == 0
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert len(lines) == 5 and all(x["reward"] is None and "no ground truth" in x["error"] for x in lines)
    # rollout rows that carry their task fields (as `gym eval run` writes them) verify on their own
    rows = []
    kofi = {"name": "email_delete_email", "arguments": json.dumps({"email_id": "00000259"})}
    for line in rollouts.read_text().splitlines():
        row = json.loads(line)
        prompt = row["responses_create_params"]["input"][-1]["content"]
        if "kofi" in prompt:
            row.update(id=4, ground_truth=[kofi], category="workplace_assistant_email", environment_name="workplace_assistant")
            rows.append(row)
    bad = tmp_path / "r.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + "[1]\n")
    out = tmp_path / "v.jsonl"
    res = runner.invoke(app, ["verify", "--rollouts", str(bad), "--world", world, "--mode", "nemo_gym", "--out", str(out)])
    assert res.exit_code == 0
    v = [json.loads(x) for x in out.read_text().splitlines()]
    assert v[0]["id"] == 4 and v[0]["reward"] == 1.0 and v[0]["mode"] == "nemo_gym"
    assert v[1]["reward"] is None and "JSON object" in v[1]["error"]
    # with a tasks file, rollouts are matched to tasks by prompt
    tasks = tmp_path / "t.jsonl"
    task_row = {"id": 4, "responses_create_params": {"input": [{"role": "user", "content": "Delete my last email from kofi"}]},
                "ground_truth": [kofi]}
    tasks.write_text(json.dumps(task_row) + "\n")
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--tasks", str(tasks), "--world", world, "--out", "-"])
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert [x["reward"] for x in lines].count(1.0) == 1 and sum(x["reward"] is None for x in lines) == 4


def test_verify_bad_mode(reference_dir):
    res = runner.invoke(app, ["verify", "--rollouts", "x", "--world", str(reference_dir / "csv_data"), "--mode", "strict"])
    assert res.exit_code == 2


def test_doctor_lists_every_check_and_says_how_to_fix():
    from typer.testing import CliRunner

    from officegym.cli import app
    from officegym.doctor import run_checks

    checks = run_checks()
    names = {c.name for c in checks}
    assert {"Python", "officegym", "torch", "transformers", "peft", "SmolLM2-135M cache", "vLLM", "server"} <= names
    assert all(c.fix for c in checks if c.status == "missing")
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "officegym doctor" in result.output and "Python" in result.output


def test_verify_out_dev_null_leaves_the_device_alone(tmp_path, monkeypatch):
    import os
    import stat

    monkeypatch.setenv("OFFICEGYM_CACHE", str(tmp_path))
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"response": {"output": []}}) + "\n")
    before = os.stat("/dev/null")
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--out", "/dev/null"])
    assert res.exit_code == 0, res.output
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_every_option_of_every_command_says_what_it_does():
    import typer

    def options(command, path):
        for param in command.params:
            if type(param).__name__.endswith("Option"):
                yield " ".join(path), param.opts[0], param.help
        for name, sub in getattr(command, "commands", {}).items():
            yield from options(sub, [*path, name])

    silent = [(cmd, opt) for cmd, opt, text in options(typer.main.get_command(app), ["officegym"]) if not text]
    assert silent == []


def test_envs_lists_each_environment_with_the_short_names_serve_and_generate_accept(monkeypatch, tmp_path):
    pytest.importorskip("fastapi")
    import officegym.server.serve as serve_module

    res = runner.invoke(app, ["envs"])
    assert res.exit_code == 0 and "workplace_assistant  (also: workplace)" in res.stdout.splitlines()
    served = []
    monkeypatch.setattr(serve_module, "run_server", lambda env, config: served.append((env.name, env.world_path is not None)))
    world = tmp_path / "w"
    assert runner.invoke(app, ["generate", "world", "--seed", "1", "--size", "small", "--out", str(world)]).exit_code == 0
    for name in ("workplace", "workplace_assistant"):
        res = runner.invoke(app, ["serve", "--env", name, "--world", str(world)])
        assert res.exit_code == 0, res.output
    assert served == [("workplace_assistant", True), ("workplace_assistant", True)]
    res = runner.invoke(app, ["serve", "--env", "office"])
    assert res.exit_code == 2 and "unknown environment 'office'" in res.output


def test_generate_says_how_to_replace_a_world_and_why_a_split_is_empty(tmp_path):
    world = tmp_path / "w"
    assert runner.invoke(app, ["generate", "world", "--seed", "1", "--size", "small", "--out", str(world)]).exit_code == 0
    res = runner.invoke(app, ["generate", "world", "--seed", "2", "--size", "small", "--out", str(world)])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "is not empty: pass --overwrite to replace it" in said and "overwrite=True" not in said
    assert runner.invoke(app, ["generate", "world", "--seed", "2", "--size", "small", "--out", str(world),
                               "--overwrite"]).exit_code == 0
    res = runner.invoke(app, ["generate", "tasks", "--world", str(world), "--n", "3", "--out", str(tmp_path / "t")])
    said = " ".join(res.output.split())
    # 3 tasks: test drew none here (validation too, depending on the generator's draws)
    assert res.exit_code == 0 and re.search(r"(validation and )?test (is|are) empty: about one task in ten goes to each", said)
    assert "--n 100" in said and "--holdout-templates" in said and (tmp_path / "t" / "test.jsonl").read_text() == ""
