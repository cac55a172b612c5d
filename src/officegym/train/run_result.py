"""What a training run (SFT or GRPO) returns, and the error that stops one before it starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class TrainingSetupError(RuntimeError):
    """The run cannot start (bad data, an out_dir that holds another run, ...)."""


@dataclass
class TrainResult:
    run_dir: Path
    start_step: int
    last_step: int
    stopped: bool
    history: list[dict[str, Any]] = field(default_factory=list)
    exported_step: int | None = None  # whose weights out_dir/model holds (checkpoint.export)


def check_out_dir(run_dir: Path, resume: bool) -> None:
    """Refuse an out_dir that holds another run's checkpoints unless the run resumes it."""
    has_state = (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").glob("step_*"))
    if has_state and not resume:
        raise TrainingSetupError(f"{run_dir} already holds a run's checkpoints; use checkpoint.resume=true to continue it "
                                 "or choose another out_dir")
