"""Every command given an unusable input ends with one line naming the problem and a non-zero exit,
never a traceback; `generate` does not write over a folder's files unless asked; `call` of an
unknown tool fails; help shows flags without a type."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from officegym.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    from officegym.envs.workplace.generate import generate_world, write_world

    root = tmp_path_factory.mktemp("inputs")
    write_world(generate_world(1, "small"), root / "w", overwrite=True)
    res = runner.invoke(app, ["generate", "tasks", "--world", str(root / "w"), "--n", "6", "--out", str(root / "t")])
    assert res.exit_code == 0, res.output
    (root / "latin.jsonl").write_bytes('{"id": 1, "caf\u00e9": 2}\n'.encode("latin-1"))
    (root / "latin.yaml").write_bytes("out_dir: caf\u00e9\n".encode("latin-1"))
    (root / "folder").mkdir()
    (root / "file").write_text("x\n")
    for name, body in (("latin-run", (root / "latin.jsonl").read_bytes()), ("bad-run", b'{"response": {"output": "x"}}\n')):
        (root / name).mkdir()
        (root / name / "rollouts.jsonl").write_bytes(body)
        (root / name / "metrics.json").write_bytes(body)
    return {k: str(root / v) for k, v in {
        "world": "w", "tasks": "t/train.jsonl", "latin": "latin.jsonl", "latin_yaml": "latin.yaml", "folder": "folder",
        "file": "file", "latin_run": "latin-run", "bad_run": "bad-run", "new": "new-out"}.items()}


NOT_UTF8 = r"is not UTF-8 text \(byte 0xe9 on line 1\)"
CASES = {
    "verify rollouts not UTF-8": (["verify", "--rollouts", "{latin}", "--world", "{world}"], "rollouts file .*" + NOT_UTF8),
    "verify tasks a folder": (["verify", "--rollouts", "{tasks}", "--tasks", "{folder}", "--world", "{world}"],
                              "task file .*folder is a folder, not a file"),
    "verify out a folder": (["verify", "--rollouts", "{tasks}", "--world", "{world}", "--out", "{folder}"],
                            "--out .*folder is a folder, not a file"),
    "eval tasks not UTF-8": (["eval", "--policy", "noop", "--tasks", "{latin}", "--out", "{new}", "--world", "{world}"],
                             "task file .*" + NOT_UTF8),
    "eval tasks a folder": (["eval", "--policy", "noop", "--tasks", "{folder}", "--out", "{new}", "--world", "{world}"],
                            "task file .*folder is a folder, not a file"),
    "eval tasks missing, named with brackets": (
        ["eval", "--policy", "noop", "--tasks", "{folder}/runs[/v2]/t[v2].jsonl", "--out", "{new}", "--world", "{world}"],
        re.escape("no such task file: ") + ".*" + re.escape("folder/runs[/v2]/t[v2].jsonl")),
    "eval unknown chat template": (["eval", "--policy", "hf:{folder}", "--tasks", "{tasks}", "--out", "{new}",
                                    "--world", "{world}", "--chat-template", "signatures"],
                                   "chat_template must be one of .*officegym-signatures"),
    "eval out a file": (["eval", "--policy", "noop", "--tasks", "{tasks}", "--out", "{file}", "--world", "{world}"],
                        "--out .*file exists and is not a folder"),
    "report run a file": (["report", "{file}"], "run folder .*file is a file, not a folder"),
    "report rollouts not UTF-8": (["report", "{latin_run}"], "rollouts file .*" + NOT_UTF8),
    "report output not a list": (["report", "{bad_run}"], "row 1: response.output must be a list of objects"),
    "compare metrics not UTF-8": (["compare", "{latin_run}"], "metrics file .*" + NOT_UTF8),
    "generate tasks out a file": (["generate", "tasks", "--world", "{world}", "--n", "2", "--out", "{file}"],
                                  "--out .*file exists and is not a folder"),
    "generate tasks world a file": (["generate", "tasks", "--world", "{file}", "--n", "2", "--out", "{new}"],
                                    "world folder .*file is a file, not a folder"),
    "council tasks not UTF-8": (["council", "--tasks", "{latin}"], "task file .*" + NOT_UTF8),
    "council tasks a folder": (["council", "--tasks", "{folder}"], "task file .*folder is a folder, not a file"),
    "council out a file": (["council", "--n", "1", "--out", "{file}"], "--out .*file exists and is not a folder"),
    "pipeline config not UTF-8": (["pipeline", "--config", "{latin_yaml}"], "config file .*" + NOT_UTF8),
    "pipeline config a folder": (["pipeline", "--config", "{folder}"], "config file .*folder is a folder, not a file"),
    "train sft config not UTF-8": (["train", "sft", "--config", "{latin_yaml}"], "config file .*" + NOT_UTF8),
    "train grpo config a folder": (["train", "grpo", "--config", "{folder}"], "config file .*is a folder, not a file"),
    "train grpo unknown reward": (["train", "grpo", "out_dir={new}", "data.tasks={tasks}", "grpo.reward=nosuch"],
                                  "grpo.reward: unknown reward 'nosuch'; known: binary"),
    "train grpo tasks not UTF-8": (["train", "grpo", "out_dir={new}", "data.tasks={latin}"],
                                   r"task file \(data.tasks\) .*" + NOT_UTF8),
    "train grpo tasks a folder": (["train", "grpo", "out_dir={new}", "data.tasks={folder}"],
                                  r"task file \(data.tasks\) .*is a folder, not a file"),
    "train grpo out_dir a file": (["train", "grpo", "out_dir={file}", "data.tasks={tasks}"],
                                  "out_dir .*file exists and is not a folder"),
    "train sft world a file": (["train", "sft", "out_dir={new}", "data.tasks={tasks}", "data.world={file}"],
                               r"world folder \(data.world\) .*file is a file, not a folder"),
    "call unknown tool": (["call", "no_such_tool", "{{}}", "--world", "{world}"],
                          "no tool named 'no_such_tool'; `officegym tools --env workplace_assistant` lists its 27 tools"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_input_ends_in_one_line_naming_it(paths, name):
    args, message = CASES[name]
    res = runner.invoke(app, [a.format(**paths) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code not in (0, 1) and "Traceback" not in res.output, res.output
    text = " ".join(res.output.split())  # train's own console wraps at the terminal's width
    assert text.count("error:") == 1 and re.search("error: .*" + message, text), res.output
    assert not Path(paths["new"]).exists()  # nothing was written


def test_report_takes_call_arguments_given_as_objects_as_verify_does(paths, tmp_path):
    rows = []
    for line in Path(paths["tasks"]).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        calls = [{"name": c["name"], "arguments": json.loads(c["arguments"])} for c in row["ground_truth"]]
        row.update(ground_truth=calls, response={"output": [{"type": "function_call", "call_id": f"c{i}", **c}
                                                            for i, c in enumerate(calls)]})
        rows.append(row)
    (tmp_path / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["verify", "--rollouts", str(tmp_path / "rollouts.jsonl"), "--world", paths["world"], "--out", "-"])
    assert res.exit_code == 0 and all(json.loads(x)["reward"] == 1.0 for x in res.stdout.splitlines())
    res = runner.invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 0, res.output
    first = rows[0]["response"]["output"][0]
    page = html.unescape((tmp_path / "report.html").read_text())
    assert f"<code>{first['name']}</code>" in page and json.dumps(first["arguments"], indent=1, ensure_ascii=False) in page


@pytest.mark.parametrize("env", ["workplace", "roles/cost"])
def test_generate_tasks_does_not_write_over_a_folder_unless_asked(paths, tmp_path, env):
    out = tmp_path / "tasks"
    out.mkdir()
    (out / "README.md").write_text("my notes\n")
    args = ["generate", "tasks", "--env", env, "--n", "3", "--out", str(out)] + (
        ["--world", paths["world"]] if env == "workplace" else [])
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "is not empty (holds README.md)" in res.output and "--overwrite" in res.output
    assert (out / "README.md").read_text() == "my notes\n" and not (out / "train.jsonl").exists()
    res = runner.invoke(app, [*args, "--overwrite"])
    assert res.exit_code == 0, res.output
    assert (out / "train.jsonl").exists()


def test_call_that_does_not_run_exits_non_zero(paths):
    res = runner.invoke(app, ["call", "email_delete_email", '{"no_such_argument": 1}', "--world", paths["world"]])
    assert res.exit_code == 2 and "Error executing tool 'email_delete_email'" in res.stdout
    res = runner.invoke(app, ["call", "email_delete_email", "{}", "--world", paths["world"]])  # the tool's own refusal
    assert res.exit_code == 0 and json.loads(res.stdout) == {"output": "Email ID not provided."}


@pytest.mark.parametrize("command", [[], ["generate", "tasks"], ["call"], ["eval"], ["train", "grpo"], ["review"]])
def test_help_shows_flags_without_a_type(command):
    res = runner.invoke(app, [*command, "--help"])
    assert res.exit_code == 0 and "--help" in res.output
    assert "<bool>" not in res.output, res.output


def test_verify_prints_a_row_error_holding_brackets_as_text(paths, tmp_path):
    rollouts = tmp_path / "r.jsonl"
    row = {"id": "[/x]", "responses_create_params": {"input": 5}, "ground_truth": [], "response": {"output": []}}
    rollouts.write_text(json.dumps(row) + "\n")
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", paths["world"]])
    assert res.exception is None and res.exit_code == 0, repr(res.exception)
    assert "line 1: task '[/x]': responses_create_params.input must be" in res.output


def test_verify_of_a_file_with_a_broken_line_names_it_and_writes_nothing(paths, tmp_path):
    # rows are verified as they are read: one that is not JSON after good ones still ends the command
    # before any verdict is written
    rollouts, out = tmp_path / "r.jsonl", tmp_path / "v.jsonl"
    good = {**json.loads(Path(paths["tasks"]).read_text().split("\n")[0]), "response": {"output": []}}
    rollouts.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n{broken\n")
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", paths["world"], "--out", str(out)])
    assert res.exit_code == 2 and re.search(r"r\.jsonl:3: not valid JSON", res.output) and not out.exists()
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", paths["world"], "--out", "-"])
    assert res.exit_code == 2 and '"reward"' not in res.stdout


def test_verify_names_the_line_where_the_rollouts_stop_being_utf8(paths, tmp_path):
    # the rollouts file is read once; its text is checked when the reader fails on it
    rollouts, out = tmp_path / "r.jsonl", tmp_path / "v.jsonl"
    good = {**json.loads(Path(paths["tasks"]).read_text().split("\n")[0]), "response": {"output": []}}
    rollouts.write_bytes((json.dumps(good) + "\n").encode() * 2 + '{"id": "caf\u00e9"}\n'.encode("latin-1"))
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", paths["world"], "--out", str(out)])
    assert res.exit_code == 2 and re.search(r"is not UTF-8 text \(byte 0xe9 on line 3\)", res.output) and not out.exists()


def test_verify_prints_a_summary_and_the_verdict_rows_only_when_asked(paths, tmp_path):
    rollouts = tmp_path / "r.jsonl"
    good = {**json.loads(Path(paths["tasks"]).read_text().split("\n")[0]), "response": {"output": []}}
    no_truth = {"id": "x", "responses_create_params": {"input": []}, "response": {"output": []}}
    rollouts.write_text(json.dumps(good) + "\n" + (json.dumps(no_truth) + "\n") * 30)
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", paths["world"]])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and res.stdout == "" and "verify (outcome)" in said
    assert "--out - prints them" in said and said.count("no ground truth") == 20 and "... and 10 more rows" in said
    res = runner.invoke(app, ["verify", "--rollouts", str(rollouts), "--world", paths["world"], "--out", "-"])
    assert res.exit_code == 0 and len(res.stdout.splitlines()) == 31
    assert json.loads(res.stdout.splitlines()[0])["reward"] is not None
