"""The README's quickstart, exactly as written (slow: 16.7-19.8 minutes from a fresh clone on 2 Sapphire
Rapids vCPUs with bf16 hardware, 37.5 on 2 AVX2 vCPUs in float32; select with `-m slow`). CI runs the fast
variant: tests/train/test_pipeline.py with a tiny model."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_quickstart() -> str:
    """The README's "Two commands" pipeline command (the line that runs `officegym pipeline`),
    continuation lines joined; the install line before it is what CI's own install already did."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines, command = block.splitlines(), []
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("officegym pipeline"))
    for line in lines[start:]:
        code = line.split("  #", 1)[0].rstrip()
        command.append(code.removesuffix("\\").strip())
        if not code.endswith("\\"):
            break
    return " ".join(c for c in command if c)


def test_the_readme_quickstart_command_is_the_pipeline():
    command = readme_quickstart()
    assert command.endswith("officegym pipeline --config configs/quickstart.yaml"), command
    assert (ROOT / "configs" / "quickstart.yaml").exists()


@pytest.mark.slow
def test_readme_quickstart_runs_and_beats_the_untrained_model():
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    out = ROOT / "runs" / "quickstart"
    if out.exists():  # keep a previous run: the test needs a fresh one
        out.rename(out.with_name(f"quickstart.bak-{int(time.time())}"))
    t0 = time.perf_counter()
    done = subprocess.run(["bash", "-c", readme_quickstart()], cwd=ROOT, env={**os.environ},
                          capture_output=True, text=True)
    minutes = (time.perf_counter() - t0) / 60
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    print(f"quickstart: {minutes:.1f} min")
    assert (out / "report.md").exists() and (out / "report.html").exists()
    accuracy, write = {}, {}
    for stage in ("eval_base", "eval_sft", "eval_grpo"):
        metrics = json.loads((out / stage / "metrics.json").read_text())
        accuracy[stage] = metrics["accuracy"]
        write[stage] = metrics["buckets"][">= 1 write"]["accuracy"]
    print("accuracy:", accuracy, "on tasks with >= 1 write:", write)
    assert max(write["eval_sft"], write["eval_grpo"]) >= write["eval_base"] + 0.2, write
    # the bar, >= 10 points over SFT on the same held-out tasks (docs/results.md: +28 to +38);
    # RL's own share needs the control beside it (benchmarks/quickstart_seeds.py --control)
    assert accuracy["eval_grpo"] >= accuracy["eval_sft"] + 0.10, accuracy
    from officegym.machine import cpu_bf16

    # 20 minutes is the target where the CPU has bf16 units; float32 on AVX2 took 37.5
    limit = 20 if cpu_bf16() else 45
    assert minutes < limit, f"the quickstart took {minutes:.1f} min (the target on this CPU is {limit})"
