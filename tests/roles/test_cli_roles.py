"""The command line on the role environments: generate tasks --difficulty, eval with the baselines,
report and compare, and the council command."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from officegym.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """roles/cost and roles/council tasks at levels 2-4, through the command line."""
    out = {}
    for name in ("roles/cost", "roles/council"):
        folder = tmp_path_factory.mktemp(name.replace("/", "-"))
        res = invoke("generate", "tasks", "--env", name, "--n", 40, "--seed", 3, "--difficulty", "2-4", "--out", folder)
        assert res.exit_code == 0, res.output
        out[name] = folder
    return out


def test_generate_tasks_with_a_difficulty_range(generated):
    folder = generated["roles/cost"]
    tasks = [r for split in ("train", "validation", "test") for r in rows(folder / f"{split}.jsonl")]
    assert len(tasks) == 40 and {r["difficulty"] for r in tasks} <= {2, 3, 4}
    assert len({r["difficulty"] for r in tasks}) == 3
    info = json.loads((folder / "generation.json").read_text())
    assert info["env"] == "roles/cost" and info["difficulty"] == [2, 4] and info["n"] == 40


def test_generate_tasks_single_level_and_bad_ranges(tmp_path):
    res = invoke("generate", "tasks", "--env", "roles/risk", "--n", 5, "--difficulty", "7", "--out", tmp_path / "one")
    assert res.exit_code == 0, res.output
    assert {r["difficulty"] for r in rows(tmp_path / "one" / "train.jsonl")} == {7}
    for bad in ("0-3", "5-11", "6-2", "1.5-3", "low-high", "", "3-"):
        res = invoke("generate", "tasks", "--env", "roles/cost", "--n", 5, "--difficulty", bad, "--out", tmp_path / "x")
        assert res.exit_code == 2 and "--difficulty must be LO-HI" in res.output, (bad, res.output)
    assert not (tmp_path / "x").exists()
    res = invoke("generate", "tasks", "--n", 5, "--difficulty", "1-3", "--out", tmp_path / "w")
    assert res.exit_code == 2 and "applies to the role environments" in res.output


def test_eval_reports_the_baselines_of_a_role(generated, tmp_path):
    tasks = generated["roles/cost"] / "train.jsonl"
    means = {}
    for policy in ("oracle", "greedy", "role-random", "random"):
        run = tmp_path / policy
        res = invoke("eval", "--env", "roles/cost", "--tasks", tasks, "--policy", policy, "--out", run)
        assert res.exit_code == 0, res.output
        metrics = json.loads((run / "metrics.json").read_text())
        means[policy] = metrics["mean_reward"]
        info = json.loads((run / "run.json").read_text())
        assert info["env"] == "roles/cost" and info["world"] is None
        assert "on roles/cost" in (run / "report.md").read_text()
    assert means["oracle"] == 1.0
    assert means["random"] < means["greedy"] < 1.0 and means["role-random"] < means["greedy"]
    md = (tmp_path / "greedy" / "report.md").read_text()
    assert "## By verdict label" in md and "| correct |" in md

    # report rebuilds metrics with the role's answer tools; compare puts the runs side by side
    (tmp_path / "greedy" / "metrics.json").unlink()
    res = invoke("report", tmp_path / "greedy")
    assert res.exit_code == 0, res.output
    rebuilt = json.loads((tmp_path / "greedy" / "metrics.json").read_text())
    assert rebuilt["mean_reward"] == means["greedy"] and rebuilt["buckets"]["1 write"]["n"] == rebuilt["rollouts"]
    res = invoke("compare", *(tmp_path / p for p in ("oracle", "greedy", "random")))
    assert res.exit_code == 0 and "greedy" in res.output and "1.000" in res.output


def test_eval_infers_the_environment_and_refuses_mismatches(generated, tmp_path):
    tasks = generated["roles/council"] / "train.jsonl"
    run = tmp_path / "council"
    res = invoke("eval", "--tasks", tasks, "--policy", "oracle", "--out", run, "--limit", 5, "--reward", "shaped")
    assert res.exit_code == 0, res.output
    assert json.loads((run / "run.json").read_text())["env"] == "roles/council"
    assert json.loads((run / "metrics.json").read_text())["mean_reward"] == pytest.approx(1.4)

    res = invoke("eval", "--env", "roles/cost", "--tasks", tasks, "--policy", "oracle", "--out", tmp_path / "x")
    assert res.exit_code == 2 and "the tasks are for roles/council" in res.output
    cost_tasks = generated["roles/cost"] / "test.jsonl"
    res = invoke("eval", "--tasks", cost_tasks, "--policy", "oracle", "--out", run)  # a council run folder
    assert res.exit_code == 2 and "holds rollouts of roles/council, not roles/cost" in res.output
    res = invoke("eval", "--env", "workplace", "--tasks", tasks, "--policy", "oracle", "--out", tmp_path / "x")
    assert res.exit_code == 2 and "the tasks are for roles/council" in res.output
    res = invoke("eval", "--env", "roles/nope", "--tasks", tasks, "--policy", "oracle", "--out", tmp_path / "x")
    assert res.exit_code == 2 and "unknown environment" in res.output
    res = invoke("eval", "--tasks", tasks, "--policy", "oracle", "--out", tmp_path / "x", "--world", tmp_path)
    assert res.exit_code == 2 and "takes no world" in res.output
    res = invoke("eval", "--tasks", tasks, "--policy", "oracle", "--out", tmp_path / "x", "--mode", "nemo_gym")
    assert res.exit_code == 2 and "unknown verification mode" in res.output


def test_council_command_scores_seats_and_resumes(tmp_path):
    scripted = tmp_path / "scripted"
    res = invoke("council", "--n", 6, "--seed", 2, "--difficulty", "1-4", "--out", scripted)
    assert res.exit_code == 0, res.output
    summary = json.loads((scripted / "summary.json").read_text())
    assert summary["councils"] == 6 and summary["mean_reward"] == 1.0 and summary["unresolved_objections"] == 0
    assert summary["seats"] == {"cto": "scripted-cto", "cost": "scripted-cost", "risk": "scripted-risk",
                                "reconcile": "scripted-mediator"}
    assert "mean team reward" in res.output and "consensus rate" in res.output

    mixed = tmp_path / "mixed"
    seats = "cto=greedy,cost=oracle,risk=greedy,reconcile=greedy"
    res = invoke("council", "--seats", seats, "--n", 6, "--seed", 2, "--difficulty", "1-4", "--out", mixed)
    assert res.exit_code == 0, res.output
    worse = json.loads((mixed / "summary.json").read_text())
    assert worse["seats"]["reconcile"] == "greedy-mediator" and worse["seats"]["cto"] == "greedy-cto"
    assert worse["mean_reward"] < summary["mean_reward"]

    # a rerun resumes (nothing new); other settings in the same folder are refused
    lines = (mixed / "councils.jsonl").read_text()
    res = invoke("council", "--seats", seats, "--n", 6, "--seed", 2, "--difficulty", "1-4", "--out", mixed)
    assert res.exit_code == 0 and (mixed / "councils.jsonl").read_text() == lines
    res = invoke("council", "--n", 6, "--seed", 2, "--difficulty", "1-4", "--out", mixed)
    assert res.exit_code == 2 and "other specs" in res.output


def test_council_command_rejects_bad_seats(tmp_path):
    for seats, message in (("ceo=oracle", "unknown seat"), ("cto", "write SEAT=POLICY"), ("cto=a,cto=b", "twice"),
                           ("reconcile=silent", "member policy"), ("cto=role-random", "cannot sit at cto"),
                           ("cost=nope", "unknown policy")):
        res = invoke("council", "--seats", seats, "--n", 2)
        assert res.exit_code == 2 and message in res.output, (seats, res.output)
    res = invoke("council", "--n", 2, "--difficulty", "9-3")
    assert res.exit_code == 2 and "--difficulty" in res.output


def _fake_openai():
    from importlib import util
    from pathlib import Path

    spec = util.spec_from_file_location("fake_openai", Path(__file__).parents[1] / "agent" / "fake_openai.py")
    mod = util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_council_with_a_model_seat_over_an_openai_compatible_server(tmp_path):
    pytest.importorskip("uvicorn")
    fake = _fake_openai()

    def cost_seat(body, n):
        """A model at the Cost seat: shares its facts first, then accepts every proposal it is shown."""
        messages = body["messages"]
        if not any(m["role"] == "assistant" for m in messages):
            return {"tool_calls": [fake.tool_call("share_facts", {"fact_ids": ["all"]}, f"c{n}")]}
        plans = [json.loads(line)["plan_id"] for line in messages[-1]["content"].splitlines()
                 if line.startswith("{") and json.loads(line).get("act") == "propose"]
        if not plans:
            return {"content": "Nothing to add."}
        return {"tool_calls": [fake.tool_call("accept_plan", {"plan_id": p}, f"c{n}_{i}") for i, p in enumerate(plans)]}

    with fake.FakeOpenAI(cost_seat) as server:
        res = invoke("council", "--seats", "cost=openai:fake-model", "--base-url", server.base_url, "--n", 4,
                     "--seed", 5, "--difficulty", "1-3", "--out", tmp_path / "c")
        assert res.exit_code == 0, res.output
        assert server.calls and all(c["model"] == "fake-model" for c in server.calls)
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["seats"]["cost"] == "openai:fake-model" and summary["mean_reward"] == 1.0
    councils = rows(tmp_path / "c" / "councils.jsonl")
    assert all(any(a["seat"] == "cost" and a["act"] == "share" for a in c["acts"]) for c in councils)


def test_verify_tools_and_call_go_through_the_environment(generated, tmp_path):
    """`officegym verify` re-scores a role's rollouts from their rows (the environment the rows name,
    no world); `tools --env` lists its tools; `call` says its sessions need a task row."""
    tasks = generated["roles/cost"] / "train.jsonl"
    run = tmp_path / "greedy"
    assert invoke("eval", "--env", "roles/cost", "--tasks", tasks, "--policy", "greedy", "--out", run).exit_code == 0
    played = rows(run / "rollouts.jsonl")
    res = invoke("verify", "--rollouts", run / "rollouts.jsonl", "--out", "-")
    assert res.exit_code == 0, res.output
    verdicts = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert [v["reward"] for v in verdicts] == [r["reward"] for r in played]
    assert {v["mode"] for v in verdicts} == {"exact"} and 0 < sum(v["reward"] == 1.0 for v in verdicts) < len(played)
    # the rows without their task part, matched to the task rows by id
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({"id": r["id"], "response": r["response"]}) + "\n" for r in played))
    res = invoke("verify", "--rollouts", bare, "--tasks", tasks, "--env", "roles/cost", "--out", "-")
    assert res.exit_code == 0, res.output
    assert [json.loads(x)["reward"] for x in res.stdout.splitlines() if x.startswith("{")] == [r["reward"] for r in played]
    res = invoke("verify", "--rollouts", run / "rollouts.jsonl", "--world", tmp_path)
    assert res.exit_code == 2 and "takes no world" in res.output
    res = invoke("verify", "--rollouts", run / "rollouts.jsonl", "--env", "roles/cost", "--mode", "nemo_gym")
    assert res.exit_code == 2 and "--mode must be one of exact" in res.output

    res = invoke("tools", "--env", "roles/cost", "--json")
    assert res.exit_code == 0 and "submit_plan" in {s["name"] for s in json.loads(res.stdout)}
    res = invoke("call", "read_document", "{}", "--env", "roles/cost")
    assert res.exit_code == 2 and "start from a task row" in res.output
