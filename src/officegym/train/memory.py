"""Resident memory of the training process and its children, logged per step so that growth over
a long run shows in metrics.jsonl (`mem/*`, in GB) instead of as an OOM kill at step 30; and the
heap's free pages handed back to the OS after each step."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import sys
from functools import cache
from pathlib import Path

_GB = 1024**3


def _status_kb(path: Path, field: str) -> int | None:
    """A `field:  N kB` line of /proc/PID/status, in kB; None where it cannot be read."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _children(pid: int, proc: Path) -> list[int]:
    """Direct children of `pid` (every thread's list: a child belongs to the thread that forked it)."""
    out: list[int] = []
    try:
        for task in (proc / str(pid) / "task").iterdir():
            try:
                out += [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
    except OSError:
        return []
    return out


def descendants(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Every process below `pid` (the vLLM engine core and its workers live there)."""
    seen: list[int] = []
    todo = _children(pid, proc)
    while todo:
        child = todo.pop()
        if child not in seen:
            seen.append(child)
            todo += _children(child, proc)
    return seen


def memory_metrics(pid: int | None = None, proc: Path = Path("/proc")) -> dict[str, float]:
    """`mem/rss_gb` (this process now), `mem/peak_rss_gb` (its high-water mark) and
    `mem/children_rss_gb` (its descendants now, summed). Off Linux only the peak is known."""
    pid = os.getpid() if pid is None else pid
    status = proc / str(pid) / "status"
    rss = _status_kb(status, "VmRSS")
    if rss is None:  # no /proc: the peak from getrusage (kB on Linux, bytes on macOS)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {"mem/peak_rss_gb": peak / (_GB if sys.platform == "darwin" else 1024**2)}
    out = {"mem/rss_gb": rss / 1024**2}
    hwm = _status_kb(status, "VmHWM")
    if hwm is not None:
        out["mem/peak_rss_gb"] = hwm / 1024**2
    kids = [_status_kb(proc / str(c) / "status", "VmRSS") for c in descendants(pid, proc)]
    out["mem/children_rss_gb"] = sum(k for k in kids if k is not None) / 1024**2
    return out


@cache
def _libc_trim() -> object | None:
    """glibc's malloc_trim, or None (another libc, another OS, or switched off)."""
    if os.environ.get("OFFICEGYM_MALLOC_TRIM", "1") == "0" or not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


def release_free_memory() -> dict[str, float]:
    """Hand the heap's free pages back to the OS (glibc keeps them after the update's activations
    are freed, so a long run's resident memory grows with fragmentation); returns
    `mem/trimmed_gb`, what resident memory fell by, or {} where it cannot (OFFICEGYM_MALLOC_TRIM=0
    switches it off, to measure the growth without it)."""
    trim = _libc_trim()
    if trim is None:
        return {}
    before = _status_kb(Path(f"/proc/{os.getpid()}/status"), "VmRSS")
    trim(0)
    after = _status_kb(Path(f"/proc/{os.getpid()}/status"), "VmRSS")
    return {} if before is None or after is None else {"mem/trimmed_gb": max(0, before - after) / 1024**2}
