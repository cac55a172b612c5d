"""Checkpoints: atomic step folders, an index of the complete ones, the top K by a validation metric
plus the latest, and resume.

A checkpoint is `run_dir/checkpoints/step_000010/` holding the weights (`model/` or `adapter/`),
`optimizer.pt` (optimiser and scheduler state), `rng.pt` (Python, NumPy, torch and CUDA generators,
as tensors and plain values so that it loads with `weights_only=True`) and `state.json` (step, data
position, metric, anything the trainer adds). It is written into a temporary folder beside the
others and renamed into place.

`run_dir/checkpoints.json` is the commit record: it lists the kept checkpoints with the size of each of their
files and is replaced atomically, only once a new checkpoint folder is complete. Pruning writes an
index that no longer lists what it drops before deleting anything, and a folder is renamed to
`.tmp-*` before it is deleted, so a kill at any moment leaves the index listing whole checkpoints
only; the next run deletes the `.tmp-*` leftovers. A listed checkpoint whose files are missing or
of another size is skipped with a warning. A run folder written before the index existed is read
from its step folders (those holding state.json) until its next save writes one.

Retention: after each save, every checkpoint is deleted except the latest and the `keep_top_k`
best by `metric` (ties go to the later step); checkpoints without the metric are kept only while
they are the latest.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import pickle
import random
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write, replace_dir, temp_dir

_STEP_DIR = re.compile(r"^step_(\d+)$")
INDEX = "checkpoints.json"  # beside the checkpoints/ folder, which then holds step folders only
log = logging.getLogger(__name__)
_warned: set[str] = set()


def _warn(message: str) -> None:
    """Log a problem once: the checkpoints are listed several times per save and resume."""
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


@dataclass
class CheckpointInfo:
    step: int
    path: Path
    state: dict[str, Any]
    files: dict[str, int] | None = None  # relative path -> size, as the index records them

    @property
    def metric(self) -> float | None:
        value = self.state.get("metric")
        return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def rng_state() -> dict[str, Any]:
    """Every generator's state as tensors and plain Python values (loadable with weights_only)."""
    import torch

    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy comes with torch
        return state
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state["numpy"] = {"kind": str(kind), "keys": [int(k) for k in keys], "pos": int(pos), "has_gauss": int(has_gauss),
                      "cached_gaussian": float(cached)}
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import torch

    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if isinstance(state.get("numpy"), dict):
        import numpy as np

        n = state["numpy"]
        np.random.set_state((n["kind"], np.array(n["keys"], dtype=np.uint32), n["pos"], n["has_gauss"],
                             n["cached_gaussian"]))


def find_checkpoints(run_dir: str | os.PathLike[str]) -> list[CheckpointInfo]:
    """The complete checkpoints of a run, oldest first; reads only (nothing is created or deleted)."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    entries = _read_index(root)
    if entries is None:
        return sorted(_scan(root), key=lambda c: c.step)
    listed = (_listed(root, e) for e in entries)
    return sorted((c for c in listed if c is not None), key=lambda c: c.step)


def _read_index(root: Path) -> list[Any] | None:
    path = root.parent / INDEX
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        _warn(f"{path} is unreadable ({exc}): checkpoints are read from their folders")
        return None
    entries = data.get("checkpoints") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        _warn(f"{path} lists no checkpoints: they are read from their folders")
        return None
    return entries


def _listed(root: Path, entry: Any) -> CheckpointInfo | None:
    """The checkpoint an index entry names, or None (with a warning) when its files are not all there."""
    name = entry.get("dir") if isinstance(entry, dict) else None
    files = entry.get("files") if isinstance(entry, dict) else None
    m = _STEP_DIR.match(name) if isinstance(name, str) else None
    if m is None or not isinstance(files, dict):
        _warn(f"{root.parent / INDEX}: skipped a malformed entry {entry!r}")
        return None
    path = root / name
    bad = [rel for rel, size in files.items() if not _has_size(path / rel, size)]
    if bad:
        shown = ", ".join(sorted(bad)[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        _warn(f"checkpoint {path} is listed in {INDEX} but {shown} is missing or incomplete: skipped")
        return None
    state = _state(path)
    return None if state is None else CheckpointInfo(int(m.group(1)), path, state, {str(k): int(v) for k, v in files.items()})


def _has_size(path: Path, size: Any) -> bool:
    try:
        return path.is_file() and path.stat().st_size == size
    except OSError:
        return False


def _scan(root: Path) -> list[CheckpointInfo]:
    """Step folders holding state.json: how runs written before the index are read."""
    out = []
    for p in root.iterdir():
        m = _STEP_DIR.match(p.name)
        state = _state(p) if m and (p / "state.json").is_file() else None
        if state is not None:
            out.append(CheckpointInfo(int(m.group(1)), p, state))
    return out


def _state(path: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((path / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _file_sizes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


class CheckpointManager:
    def __init__(self, run_dir: Path, keep_top_k: int = 3, higher_is_better: bool = True):
        self.root = Path(run_dir) / "checkpoints"
        self.keep_top_k = keep_top_k
        self.higher_is_better = higher_is_better
        self.root.mkdir(parents=True, exist_ok=True)
        for leftover in self.root.glob(".tmp-*"):  # an interrupted write or deletion
            shutil.rmtree(leftover, ignore_errors=True)

    def list(self) -> list[CheckpointInfo]:
        return find_checkpoints(self.root.parent)

    def latest(self) -> CheckpointInfo | None:
        found = self.list()
        return found[-1] if found else None

    def best(self) -> CheckpointInfo | None:
        scored = [c for c in self.list() if c.metric is not None]
        if not scored:
            return None
        sign = 1 if self.higher_is_better else -1
        return max(scored, key=lambda c: (sign * c.metric, c.step))

    def save(self, step: int, write: Callable[[Path], None], state: dict[str, Any],
             rng: dict[str, Any] | None = None) -> Path:
        """`write(tmp_dir)` writes the weights and optimiser files; then the RNG state (`rng`, taken
        earlier with `rng_state()`, or the generators' state now) and state.json go in, the folder is
        renamed to step_NNNNNN (replacing an older one of the same step), and only then does the
        index list it."""
        import torch

        tmp = temp_dir(self.root, ".tmp-")  # the umask's mode, not mkdtemp's 0700
        target = self.root / f"step_{step:06d}"
        full_state = {**state, "step": step}
        try:
            write(tmp)
            torch.save(rng if rng is not None else rng_state(), tmp / "rng.pt")
            (tmp / "state.json").write_text(json.dumps(full_state, indent=2, default=str) + "\n", encoding="utf-8")
            files = _file_sizes(tmp)
            # an older folder of the same step is set aside under a name the next start clears
            replace_dir(tmp, target, aside_prefix=f".tmp-del-{target.name}-")
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        saved = CheckpointInfo(step, target, json.loads(json.dumps(full_state, default=str)), files)
        self._commit([c for c in self.list() if c.step != step] + [saved])
        return target

    def prune(self) -> list[Path]:
        """Drop every checkpoint retention does not keep; returns the folders deleted."""
        return self._commit(self.list())

    def _commit(self, found: list[CheckpointInfo]) -> list[Path]:
        """Write the index of the kept checkpoints, then delete every other step folder."""
        found = sorted(found, key=lambda c: c.step)
        keep = self._keep(found)
        kept = [c for c in found if c.step in keep]
        rows = [{"step": c.step, "dir": c.path.name, "metric": c.metric,
                 "files": c.files if c.files is not None else _file_sizes(c.path)} for c in kept]
        atomic_write(self.root.parent / INDEX, json.dumps({"checkpoints": rows}, indent=1) + "\n")
        listed = {c.path.name for c in kept}
        removed = []
        for p in sorted(self.root.iterdir()):
            if _STEP_DIR.match(p.name) and p.name not in listed:  # pruned, or never committed
                self._discard(p)
                removed.append(p)
        return removed

    def _keep(self, found: list[CheckpointInfo]) -> set[int]:
        if not found:
            return set()
        keep = {found[-1].step}
        sign = 1 if self.higher_is_better else -1
        scored = sorted((c for c in found if c.metric is not None), key=lambda c: (sign * c.metric, c.step), reverse=True)
        keep.update(c.step for c in scored[: self.keep_top_k])
        return keep

    def _discard(self, path: Path) -> None:
        """Rename first (one atomic step), delete after: a half-deleted folder never keeps a step's name."""
        doomed = Path(tempfile.mkdtemp(prefix=f".tmp-del-{path.name}-", dir=self.root))
        # onto the empty folder just made; a folder gone already, or not ours to move, is unlisted anyway
        with contextlib.suppress(OSError):
            os.replace(path, doomed)
        shutil.rmtree(doomed, ignore_errors=True)

    def load_rng(self, info: CheckpointInfo) -> None:
        import torch

        path = info.path / "rng.pt"
        if not path.exists():
            return
        try:
            state = torch.load(path, weights_only=True)
        except pickle.UnpicklingError:
            _warn(f"{path} holds objects a safe load refuses (written by an older officegym): the run "
                  "continues with fresh random streams")
            return
        set_rng_state(state)
