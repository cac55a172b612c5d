"""Metrics per step: a JSONL file always, TensorBoard when installed, W&B or trackio when asked.

Every record is `{"step": n, "time": unix, **metrics}` with numeric values under slash-separated
names (`train/reward_mean`, `val/accuracy`, `time/generation_s`). A resumed run first drops the
records of steps after the checkpoint it resumes from, so the file never holds two histories.
Optional sinks that are missing or fail to start are reported once and skipped; they never stop a
run.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write, read_jsonl_text

log = logging.getLogger(__name__)

METRICS = "metrics.jsonl"


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """The records of a run; a torn last line (interrupted write) is skipped."""
    path = Path(run_dir) / METRICS
    if not path.exists():
        return []
    out = []
    for line in read_jsonl_text(path):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def truncate_jsonl(path: Path, keep: Any) -> int:
    """Rewrite a JSONL file atomically keeping the rows for which keep(row) is true (torn lines go);
    returns the number of rows dropped."""
    if not path.exists():
        return 0
    kept, dropped = [], 0
    for line in read_jsonl_text(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            dropped += 1
            continue
        if keep(row):
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        atomic_write(path, "".join(line + "\n" for line in kept))
    return dropped


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsLogger:
    """Writes metric records to run_dir/metrics.jsonl and the optional sinks."""

    def __init__(self, run_dir: Path, *, tensorboard: bool = True, wandb: bool = False, trackio: bool = False,
                 project: str = "officegym", run_name: str | None = None, offline: bool = True,
                 config: dict[str, Any] | None = None):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / METRICS
        self.notes: list[str] = []
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run
        self._tb: Any = None
        self._wandb: Any = None
        self._trackio: Any = None
        name = run_name or self.run_dir.name
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(log_dir=str(self.run_dir / "tensorboard"))
            except (ImportError, ModuleNotFoundError):
                self.notes.append("TensorBoard: the tensorboard package is not installed; skipped")
        if wandb:
            try:
                import wandb as wandb_mod

                if offline:
                    os.environ.setdefault("WANDB_MODE", "offline")
                self._wandb = wandb_mod.init(project=project, name=name, dir=str(self.run_dir), config=config or {},
                                             resume="allow")
            except ImportError:
                self.notes.append("W&B: the wandb package is not installed; skipped")
            except Exception as exc:  # a sink that cannot start must not stop training
                self.notes.append(f"W&B could not start ({type(exc).__name__}: {exc}); skipped")
        if trackio:
            try:
                import trackio as trackio_mod

                trackio_mod.init(project=project, name=name, config=config or {})
                self._trackio = trackio_mod
            except ImportError:
                self.notes.append("trackio: the trackio package is not installed; skipped")
            except Exception as exc:
                self.notes.append(f"trackio could not start ({type(exc).__name__}: {exc}); skipped")
        for note in self.notes:
            log.warning(note)

    @property
    def sinks(self) -> list[str]:
        return ["jsonl"] + [n for n, s in (("tensorboard", self._tb), ("wandb", self._wandb), ("trackio", self._trackio)) if s]

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        record = {"step": int(step), "time": time.time(), **{k: _clean(v) for k, v in metrics.items()}}
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        numeric = {k: float(v) for k, v in metrics.items()
                   if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(float(v))}
        if self._tb is not None:
            for k, v in numeric.items():
                self._tb.add_scalar(k, v, step)
            self._tb.flush()
        if self._wandb is not None:
            self._safe(lambda: self._wandb.log(numeric, step=step), "W&B")
        if self._trackio is not None:
            self._safe(lambda: self._trackio.log(numeric, step=step), "trackio")

    def _safe(self, fn: Any, name: str) -> None:
        try:
            fn()
        except Exception as exc:
            log.warning("%s logging failed (%s); continuing", name, exc)

    def close(self) -> None:
        self._fh.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._safe(self._wandb.finish, "W&B")
        if self._trackio is not None:
            self._safe(self._trackio.finish, "trackio")


class NullLogger:
    """What ranks other than 0 log under torchrun: nothing (rank 0 writes the job's metrics)."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass
