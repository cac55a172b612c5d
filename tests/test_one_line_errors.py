"""Inputs that used to end in a traceback end in one line naming the problem (issue 47 N6)."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from typer.testing import CliRunner

from officegym.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def files(reference_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("n6")
    row = json.loads((reference_dir / "example.jsonl").read_text().splitlines()[0])
    head = json.dumps({**row, "response": {"output": []}})[:-1]
    (root / "deep.jsonl").write_text(head + ', "extra": ' + "[" * 5000 + "]" * 5000 + "}\n")
    (root / "bigint.jsonl").write_text(head + ', "big": ' + "9" * 5000 + "}\n")
    (root / "tasks.jsonl").write_text((reference_dir / "example.jsonl").read_text().splitlines()[0] + "\n")
    return {"root": root, "world": str(reference_dir / "csv_data")}


def one_line_error(res, *needles: str) -> None:
    assert res.exit_code == 2, (res.output, res.exception)
    said = " ".join(res.output.split())  # some consoles wrap the line at their width
    assert "error: " in said and "Traceback" not in said, res.output
    error = said[said.index("error: "):]
    for needle in needles:
        assert needle in error, res.output


@pytest.mark.parametrize(("name", "why"), [("deep", "nested too deeply"), ("bigint", "integer longer than Python reads")])
def test_verify_and_eval_name_rows_they_cannot_read(files, name, why):
    path = str(files["root"] / f"{name}.jsonl")
    one_line_error(runner.invoke(app, ["verify", "--rollouts", path, "--world", files["world"]]), f"{name}.jsonl:1", why)
    out = str(files["root"] / f"out_{name}")
    one_line_error(runner.invoke(app, ["eval", "--policy", "noop", "--tasks", path, "--world", files["world"], "--out", out]),
                   f"{name}.jsonl:1", why)


def test_eval_with_vllm_missing(files, monkeypatch):
    find = importlib.util.find_spec
    monkeypatch.delitem(sys.modules, "vllm", raising=False)  # as if never imported
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else find(name, *a))
    res = runner.invoke(app, ["eval", "--policy", "vllm:x", "--tasks", str(files["root"] / "tasks.jsonl"),
                              "--world", files["world"], "--out", str(files["root"] / "out_vllm")])
    one_line_error(res, "needs vLLM", "pip install")


@pytest.mark.parametrize("url", ["::::", "http://[::", "ftp://host/v1", "http://host:port/v1"])
def test_eval_with_a_base_url_that_is_no_url(files, url):
    res = runner.invoke(app, ["eval", "--policy", "openai:m", "--base-url", url, "--tasks", str(files["root"] / "tasks.jsonl"),
                              "--world", files["world"], "--out", str(files["root"] / "out_url")])
    one_line_error(res, "base URL", repr(url))


@pytest.mark.parametrize("option", [["--limit", "0"], ["--limit", "-1"], ["--seed", str(2**70)]])
def test_eval_refuses_limits_and_seeds_out_of_range(files, option):
    res = runner.invoke(app, ["eval", "--policy", "noop", "--tasks", str(files["root"] / "tasks.jsonl"),
                              "--world", files["world"], "--out", str(files["root"] / "out_limit"), *option])
    assert res.exit_code == 2 and "Traceback" not in res.output and option[0] in res.output
    assert not (files["root"] / "out_limit").exists()


def test_plot_of_a_binary_metrics_file(tmp_path):
    (tmp_path / "metrics.jsonl").write_bytes(bytes(range(256)) * 8)
    one_line_error(runner.invoke(app, ["plot", str(tmp_path)]), "metrics file", "not UTF-8 text")


def test_train_with_a_seed_no_generator_takes(tmp_path):
    from officegym.train.config import GRPORunConfig
    from officegym.train.config_files import ConfigError, load_config

    with pytest.raises(ConfigError, match="seed"):  # refused while reading the config: no training starts
        load_config(GRPORunConfig, None, [f"seed={10**30}"])
    res = runner.invoke(app, ["train", "grpo", f"seed={10**30}", f"out_dir={tmp_path / 'run'}"])
    one_line_error(res, "seed")
    assert not (tmp_path / "run").exists()


def test_serve_with_an_unknown_log_level():
    one_line_error(runner.invoke(app, ["serve", "--log-level", "bogus", "--port", "0"]), "log level 'bogus'")
