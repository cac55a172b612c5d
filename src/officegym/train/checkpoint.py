"""Checkpoints: atomic step folders, the top K by a validation metric plus the latest, and resume.

A checkpoint is `run_dir/checkpoints/step_000010/` holding the weights (`model/` or `adapter/`),
`optimizer.pt` (optimiser and scheduler state), `rng.pt` (Python, torch and CUDA generators) and
`state.json` (step, data position, metric, anything the trainer adds), written last. It is written
into a temporary folder beside the others and renamed into place, so a folder named step_* is
complete; a run killed mid-write leaves only a `.tmp-*` folder, which the next run deletes.

Retention: after each save, every checkpoint is deleted except the latest and the `keep_top_k`
best by `metric` (ties go to the later step); checkpoints without the metric are kept only while
they are the latest.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_STEP_DIR = re.compile(r"^step_(\d+)$")


@dataclass
class CheckpointInfo:
    step: int
    path: Path
    state: dict[str, Any]

    @property
    def metric(self) -> float | None:
        value = self.state.get("metric")
        return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def rng_state() -> dict[str, Any]:
    import torch

    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    try:
        import numpy as np

        state["numpy"] = np.random.get_state()
    except ImportError:  # pragma: no cover - numpy comes with torch
        pass
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import torch

    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if "numpy" in state:
        import numpy as np

        np.random.set_state(state["numpy"])


class CheckpointManager:
    def __init__(self, run_dir: Path, keep_top_k: int = 3, higher_is_better: bool = True):
        self.root = Path(run_dir) / "checkpoints"
        self.keep_top_k = keep_top_k
        self.higher_is_better = higher_is_better
        self.root.mkdir(parents=True, exist_ok=True)
        for leftover in self.root.glob(".tmp-*"):  # an interrupted write
            shutil.rmtree(leftover, ignore_errors=True)

    def list(self) -> list[CheckpointInfo]:
        out = []
        for p in self.root.iterdir():
            m = _STEP_DIR.match(p.name)
            if not m or not (p / "state.json").is_file():
                continue
            try:
                state = json.loads((p / "state.json").read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            out.append(CheckpointInfo(int(m.group(1)), p, state))
        return sorted(out, key=lambda c: c.step)

    def latest(self) -> CheckpointInfo | None:
        found = self.list()
        return found[-1] if found else None

    def best(self) -> CheckpointInfo | None:
        scored = [c for c in self.list() if c.metric is not None]
        if not scored:
            return None
        sign = 1 if self.higher_is_better else -1
        return max(scored, key=lambda c: (sign * c.metric, c.step))

    def save(self, step: int, write: Callable[[Path], None], state: dict[str, Any]) -> Path:
        """`write(tmp_dir)` writes the weights and optimiser files; then state.json goes in last and
        the folder is renamed to step_NNNNNN (replacing an older one of the same step)."""
        import torch

        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        target = self.root / f"step_{step:06d}"
        try:
            write(tmp)
            torch.save(rng_state(), tmp / "rng.pt")
            (tmp / "state.json").write_text(json.dumps({**state, "step": step}, indent=2, default=str) + "\n", encoding="utf-8")
            if target.exists():
                old = self.root / f".tmp-old-{step}-{os.getpid()}"
                os.replace(target, old)
                shutil.rmtree(old, ignore_errors=True)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        self.prune()
        return target

    def prune(self) -> list[Path]:
        found = self.list()
        if not found:
            return []
        keep = {found[-1].step}
        sign = 1 if self.higher_is_better else -1
        scored = sorted((c for c in found if c.metric is not None), key=lambda c: (sign * c.metric, c.step), reverse=True)
        keep.update(c.step for c in scored[: self.keep_top_k])
        removed = []
        for c in found:
            if c.step not in keep:
                shutil.rmtree(c.path, ignore_errors=True)
                removed.append(c.path)
        return removed

    def load_rng(self, info: CheckpointInfo) -> None:
        import torch

        path = info.path / "rng.pt"
        if path.exists():
            set_rng_state(torch.load(path, weights_only=False))
