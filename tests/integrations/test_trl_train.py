"""examples/trl_grpo.py as written: two real GRPOTrainer steps of TRL on officegym's tasks with the
bundled SmolLM2 on the CPU (tiny completions). Slow; skips without trl, datasets or the model."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from officegym.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo.py"


@pytest.mark.slow
def test_two_real_trl_grpo_steps_on_officegym_tasks(tmp_path):
    missing = [m for m in ("trl", "datasets") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (pip install -e '.[trl]')")
    from officegym.agent.models import ModelResolutionError, ensure_bundled

    try:
        ensure_bundled("smollm2-135m")
    except ModelResolutionError as exc:
        pytest.skip(f"the bundled SmolLM2 is not available: {exc}")
    tasks = tmp_path / "tasks"
    res = CliRunner().invoke(app, ["generate", "tasks", "--n", "8", "--tools", "domain", "--out", str(tasks), "--hf", str(tasks / "hf")])
    assert res.exit_code == 0, res.output
    run = subprocess.run([sys.executable, str(EXAMPLE), "--tasks", str(tasks), "--steps", "2", "--generations", "2",
                          "--max-completion-length", "12", "--max-tool-calls", "1", "--out", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-3000:]
    steps = re.findall(r"^step (\d+): reward ([0-9.]+)", run.stdout, flags=re.M)
    assert [int(s) for s, _ in steps] == [1, 2], run.stdout[-2000:]
    assert all(0.0 <= float(r) <= 1.0 for _, r in steps)  # officegym's verifier scored each step's rollouts
