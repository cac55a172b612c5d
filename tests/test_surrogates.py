"""A lone surrogate (valid JSON "\\ud800") in a model's answer or a row's id never stops a command
(issue 47 N4): rows are written with JSON's own escape and read back unchanged."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from officegym.cli import app
from officegym.core.files import atomic_write, jsonl_line, read_jsonl_text, write_jsonl_rows
from officegym.envs.workplace.specs import TOOL_SPECS

runner = CliRunner()
LONE = "\ud800"


def test_rows_with_lone_surrogates_round_trip(tmp_path):
    row = {"id": f"a{LONE}", "text": f"héllo {LONE} \udfff end"}
    assert json.loads(jsonl_line(row)) == row
    write_jsonl_rows(tmp_path / "rows.jsonl", [row, {"plain": "é"}])
    assert [json.loads(x) for x in read_jsonl_text(tmp_path / "rows.jsonl")] == [row, {"plain": "é"}]
    atomic_write(tmp_path / "m.json", json.dumps(row, ensure_ascii=False))
    assert json.loads((tmp_path / "m.json").read_text(encoding="utf-8")) == row
    assert "é" in (tmp_path / "rows.jsonl").read_text(encoding="utf-8")  # readable text stays readable


def test_eval_scores_a_model_answer_with_a_lone_surrogate(fake_openai_module, reference_dir, tmp_path):
    rows = (reference_dir / "example.jsonl").read_text().splitlines()[:2]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(rows) + "\n")
    world = str(reference_dir / "csv_data")

    def script(body, n):
        if n % 2 == 0:
            return {"content": None, "tool_calls": [fake_openai_module.tool_call(
                "email_search_emails", {"query": f"x{LONE}"})]}
        return {"content": f"done {LONE}"}

    out = tmp_path / "run"
    with fake_openai_module.FakeOpenAI(script) as srv:
        args = ["eval", "--policy", "openai:fake-model", "--base-url", srv.base_url, "--tasks", str(tasks),
                "--world", world, "--out", str(out), "--concurrency", "1"]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        lines = read_jsonl_text(out / "rollouts.jsonl")
        assert len(lines) == 2 and LONE in json.dumps(json.loads(lines[0]), ensure_ascii=False)
        res = runner.invoke(app, args)  # a rerun resumes: nothing left to do
        assert res.exit_code == 0 and "0 new rollouts, 2 already done" in " ".join(res.output.split())
    assert (out / "metrics.json").exists() and (out / "report.html").exists()


def test_verify_takes_ids_with_lone_surrogates(reference_dir, tmp_path):
    row = json.loads((reference_dir / "example.jsonl").read_text().splitlines()[0])
    row["id"] = f"t{LONE}"
    row["response"] = {"output": [{"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": f"hi {LONE}"}]}]}
    assert {s.name for s in TOOL_SPECS}  # the environment loads
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps(row) + "\n")
    world = str(reference_dir / "csv_data")
    for out in (str(tmp_path / "v.jsonl"), "-"):
        res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", world, "--out", out])
        assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "v.jsonl").read_text(encoding="utf-8"))["id"] == f"t{LONE}"
