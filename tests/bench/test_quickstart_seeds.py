"""benchmarks/quickstart_seeds.py: the per-seed table read from run folders (no training)."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path


def _rollouts(path: Path, right: set[int], n: int = 10) -> None:
    path.mkdir(parents=True, exist_ok=True)
    rows = [{"id": i, "reward": 1.0 if i in right else 0.0, "template": "a" if i < 5 else "b"} for i in range(n)]
    (path / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_table_pairs_each_seed_with_the_shared_sft_evaluation(tmp_path, capsys, benchmark_script):
    done = tmp_path / "seed0"
    _rollouts(done / "eval_sft", {0, 1, 2})
    _rollouts(done / "eval_grpo", {0, 1, 3, 4, 5, 6, 7})  # 5 gained, 1 lost
    (done / "grpo").mkdir()
    (done / "grpo" / "metrics.jsonl").write_text(
        "".join(json.dumps(m) + "\n" for m in [{"step": 0, "val/accuracy": 0.5}, {"step": 1, "train/reward_mean": 0.2},
                                               {"step": 1, "val/accuracy": 0.75}]))
    (done / "pipeline.log").write_text("done: model in /x/grpo/model (step 1, best by val/accuracy); best checkpoint\n")
    (done / "timings.json").write_text(json.dumps({"world": 0.1, "sft": 30.0, "grpo": 90.0, "eval_grpo": 8.0}))
    cut = tmp_path / "seed1"  # stopped by the deadline: no evaluation after GRPO
    _rollouts(cut / "eval_sft", {0, 1, 2})
    (cut / "grpo").mkdir()
    (cut / "grpo" / "metrics.jsonl").write_text(json.dumps({"step": 3, "train/reward_mean": 0.1}) + "\n")
    benchmark_script("quickstart_seeds").report(tmp_path, [0, 1])
    out = capsys.readouterr().out
    seed0 = next(line for line in out.splitlines() if line.startswith("| 0 |"))
    assert "30.0% [" in seed0 and "70.0% [" in seed0 and "| 5 / 1 |" in seed0
    assert "| 0.22 |" in seed0  # exact McNemar on 5 vs 1: 2 * P(X <= 1 | n=6) = 14/64
    assert "step 1" in seed0 and "0: 50, 1: 75" in seed0 and "| 90 | 8 |" in seed0
    assert "(no eval_grpo; 3 GRPO steps)" in out
    assert "shared stages (s): world 0.1, sft 30.0" in out
    # per template: a = tasks 0-4 (SFT 0, 1, 2 right; GRPO 0, 1, 3, 4), b = tasks 5-9 (GRPO 5, 6, 7)
    assert "| template | tasks | after SFT | seed 0 |" in out and "seed 1 |" not in out.split("| template |")[1]
    assert "| a | 5 | 3 | 4 (+2 / -1) |" in out
    assert "| b | 5 | 0 | 3 (+3 / -0) |" in out


def test_each_seed_is_paired_with_its_own_control(tmp_path, capsys, benchmark_script):
    runs = (("seed0", {0, 1, 3, 4, 5, 6, 7}), ("control0", {0, 1, 2, 3, 4, 5, 6, 7, 8}),
            ("seed1", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), ("control1", {0, 1, 2}))
    for name, right in runs:
        _rollouts(tmp_path / name / "eval_sft", {0, 1, 2})
        _rollouts(tmp_path / name / "eval_grpo", right)
    script = benchmark_script("quickstart_seeds")
    assert script.NO_GRADIENT == "grpo.grpo.advantage_clip=1e-9"
    script.report(tmp_path, [0, 1])
    out = capsys.readouterr().out
    assert any(line.startswith("| control0 | 30.0% [") and "| 6 / 0 |" in line for line in out.splitlines())
    # seed 0 against control0: tasks 2 and 8 only the control solved, none only GRPO; p = 2 * 0.25
    assert "| 0 | 70.0% [" in out and "| 0 / 2 | 0.5 |" in out
    # seed 1 against control1 (not control0): 7 only GRPO, none only the control; p = 2 / 2**7
    assert "| 1 | 100.0% [" in out and "| 7 / 0 | 0.016 |" in out
    # per template, the controls beside the seeds: b = tasks 5-9, control1 solved none of them
    assert "| template | tasks | after SFT | seed 0 | seed 1 | control 0 | control 1 |" in out
    assert "| b | 5 | 0 | 3 (+3 / -0) | 5 (+5 / -0) | 4 (+4 / -0) | 0 (+0 / -0) |" in out
    capsys.readouterr()
    for name in ("control0", "control1"):
        (tmp_path / name / "eval_grpo" / "rollouts.jsonl").unlink()
        (tmp_path / name / "eval_grpo").rmdir()
    script.report(tmp_path, [0, 1])
    assert "control" not in capsys.readouterr().out  # no control run: no control rows


def test_jobs_caps_how_many_runs_at_once_and_runs_them_all(tmp_path, benchmark_script):
    stamp = "import sys, time, pathlib; p = pathlib.Path(sys.argv[1]); p.write_text(str(time.time())); time.sleep(0.6)"
    commands = [([sys.executable, "-c", stamp + "; print(time.time())", str(tmp_path / f"start{i}")],
                 tmp_path / f"log{i}") for i in range(3)]
    codes = benchmark_script("quickstart_seeds")._run(commands, None, 2)
    assert codes == [0, 0, 0]
    starts = sorted(float((tmp_path / f"start{i}").read_text()) for i in range(3))
    ends = sorted(float((tmp_path / f"log{i}").read_text()) for i in range(3))
    assert starts[2] >= ends[0]  # the third started only once one of the first two had ended
    assert starts[1] < ends[0]  # the first two ran at once
    commands = [([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "slow.log"),
                ([sys.executable, "-c", "pass"], tmp_path / "never.log")]
    # 3 s: a SIGINT that lands between fork and exec is lost (a loaded box took over 0.5 s to exec).
    # SIGINT ignored here, as in a shell's background job: the children must still get it
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        start = time.monotonic()
        codes = benchmark_script("quickstart_seeds")._run(commands, start + 3, 1)
    finally:
        signal.signal(signal.SIGINT, before)
    assert codes[0] != 0 and codes[1] is None and not (tmp_path / "never.log").exists()
    assert time.monotonic() - start < 30  # interrupted, not slept out


def test_a_control_ships_its_last_step_and_an_unpaired_step_is_flagged(tmp_path, capsys, monkeypatch, benchmark_script):
    script = benchmark_script("quickstart_seeds")
    for stage in script.SHARED:
        (tmp_path / "seed0" / stage).mkdir(parents=True)
    (tmp_path / "seed0" / "eval_sft" / "metrics.json").write_text("{}")
    launched: list[list[str]] = []

    def run(commands, deadline, jobs=0):
        launched.extend(cmd for cmd, _ in commands)
        return [0] * len(commands)

    monkeypatch.setattr(script, "_run", run)
    monkeypatch.setattr(sys, "argv", ["quickstart_seeds.py", "--out", str(tmp_path), "--seeds", "0", "--control",
                                      "--", "grpo.grpo.max_steps=3"])
    script.main()
    seed, control = (next(c for c in launched if f"out_dir={tmp_path / name}" in c) for name in ("seed0", "control0"))
    assert script.LAST in control and script.NO_GRADIENT in control and "grpo.grpo.max_steps=3" in control
    assert script.LAST not in seed and script.NO_GRADIENT not in seed
    capsys.readouterr()
    for name, right, shipped in (("seed0", {0, 1, 2, 3}, "the last step"), ("control0", {0, 1}, "step 10, best"),
                                 ("seed1", {0, 1, 2}, "the last step"), ("control1", {0}, "the last step")):
        _rollouts(tmp_path / name / "eval_sft", {0})
        _rollouts(tmp_path / name / "eval_grpo", right)
        (tmp_path / name / "pipeline.log").write_text(f"done: model in /x/grpo/model ({shipped} by val/accuracy)\n")
    script.report(tmp_path, [0, 1])
    pairs = capsys.readouterr().out.split("against each seed's control")[1]
    assert "| NOT PAIRED: the last step / the control's step 10 |" in pairs.splitlines()[4]
    assert pairs.splitlines()[5].endswith("| both the last step |")


def test_the_plot_draws_seeds_and_controls_and_skips_runs_without_a_curve(tmp_path, benchmark_script):
    import pytest

    pytest.importorskip("matplotlib")
    for name, acc in (("seed0", [0.0, 0.5, 0.75]), ("control0", [0.0, 0.25, 0.25])):
        (tmp_path / name / "grpo").mkdir(parents=True)
        (tmp_path / name / "grpo" / "metrics.jsonl").write_text("".join(
            json.dumps({"step": 5 * i, "val/accuracy": a, "val/rollouts": 4}) + "\n" for i, a in enumerate(acc)))
    script = benchmark_script("quickstart_seeds")
    png = tmp_path / "curves.png"
    assert script.plot_curves(tmp_path, [0, 1], png) == png  # seed 1 has no folder: left out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not list(tmp_path.glob(".*tmp*"))
    assert script.plot_curves(tmp_path / "none", [0], tmp_path / "no.png") is None
    assert not (tmp_path / "no.png").exists()
