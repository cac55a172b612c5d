"""benchmarks/template_eval.py: every task of a template in a split, each model paired with the first."""

from __future__ import annotations

import json

import pytest

from officegym.pipeline import Pipeline, PipelineConfig
from officegym.train.config_files import build_config


def _run(tmp_path):
    out = tmp_path / "run"
    cfg = build_config(PipelineConfig, {
        "out_dir": str(out), "model": "oracle", "stages": ["world", "tasks"],
        "world": {"seed": 3, "size": "small"},
        "tasks": {"n": 80, "seed": 0, "wordings": "base", "templates": ["email.send_to_address", "email.send_to_person"]},
        "eval": {"max_tasks": 2, "max_steps": 3}}, [])
    Pipeline(cfg).run()
    return out


def test_every_task_of_the_template_is_evaluated_and_paired(tmp_path, benchmark_script):
    mod = benchmark_script("template_eval")
    run = _run(tmp_path)
    test_rows = [json.loads(line) for line in (run / "tasks" / "test.jsonl").read_text().splitlines()]
    wanted = [r["id"] for r in test_rows if r["template"] == "email.send_to_person"]
    assert len(wanted) > 2  # more than the pipeline's eval.max_tasks: the split's every task of it
    out = tmp_path / "te"
    table = mod.evaluate(run, ["email.send_to_person"], [("noop", "noop"), ("oracle", "oracle")], "test", out)
    ids = [json.loads(line)["id"] for line in (out / "oracle" / "rollouts.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(wanted)
    n = len(wanted)
    assert table[0][:3] == ["noop", str(n), table[0][2]] and table[0][2].startswith("0.0% [0.0, ")
    assert table[0][3:] == ["", ""]
    assert table[1][2].startswith("100.0% [") and table[1][3] == f"{n} / 0"
    assert float(table[1][4]) == pytest.approx(2 * 0.5 ** n, rel=0.05)
    # a rerun keeps the evaluations already done
    stamp = (out / "oracle" / "metrics.json").stat().st_mtime_ns
    assert mod.evaluate(run, ["email.send_to_person"], [("noop", "noop"), ("oracle", "oracle")], "test", out) == table
    assert (out / "oracle" / "metrics.json").stat().st_mtime_ns == stamp


def test_a_template_without_tasks_in_the_split_is_named(tmp_path, benchmark_script):
    mod = benchmark_script("template_eval")
    run = _run(tmp_path)
    with pytest.raises(SystemExit, match=r"no task of calendar\.create_with_person"):
        mod.evaluate(run, ["calendar.create_with_person"], [("oracle", "oracle")], "test", tmp_path / "te")


def test_sampled_episodes_give_pass_rates_paired_by_task(tmp_path, benchmark_script):
    mod = benchmark_script("template_eval")
    run = _run(tmp_path)
    out = tmp_path / "te"
    table = mod.evaluate(run, ["email.send_to_person"], [("noop", "noop"), ("oracle", "oracle")], "test", out, sample=2)
    runs = json.loads((out / "oracle_T1_k2" / "run.json").read_text())
    assert runs["k"] == 2 and runs["temperature"] == 1.0
    rollouts = (out / "oracle_T1_k2" / "rollouts.jsonl").read_text().splitlines()
    n = len(rollouts) // 2
    assert n > 2 and table[0][1] == f"{n} x 2" and table[0][2].startswith("0.0% [0.0, ")
    assert table[1][2].startswith("100.0% [") and table[1][3] == f"{n} / 0, +100.0 [+100.0, +100.0]"
    assert float(table[1][4]) == pytest.approx(2 * 0.5 ** n, rel=0.05)  # every sign flip: 2 of 2^n as large
    assert not (out / "oracle").exists()  # greedy evaluations stay apart
