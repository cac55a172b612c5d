"""Per-step memory metrics: this process, its peak and its descendants, from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from officegym.train.memory import descendants, memory_metrics


def _proc(root: Path, pid: int, rss_kb: int, hwm_kb: int, children: dict[int, list[int]]) -> None:
    d = root / str(pid)
    for tid, kids in children.items():
        (d / "task" / str(tid)).mkdir(parents=True)
        (d / "task" / str(tid) / "children").write_text(" ".join(map(str, kids)) + (" " if kids else ""))
    (d / "status").write_text(f"Name:\tx\nVmHWM:\t{hwm_kb} kB\nVmRSS:\t{rss_kb} kB\nThreads:\t1\n")


def test_fake_proc_tree(tmp_path: Path) -> None:
    # 10 forks 11 from its main thread and 12 from a second thread; 11 forks 13.
    _proc(tmp_path, 10, 2 * 1024**2, 3 * 1024**2, {10: [11], 15: [12]})
    _proc(tmp_path, 11, 1024**2, 1024**2, {11: [13]})
    _proc(tmp_path, 12, 512 * 1024, 512 * 1024, {12: []})
    _proc(tmp_path, 13, 256 * 1024, 256 * 1024, {13: []})
    assert sorted(descendants(10, tmp_path)) == [11, 12, 13]
    m = memory_metrics(10, tmp_path)
    assert m == {"mem/rss_gb": 2.0, "mem/peak_rss_gb": 3.0, "mem/children_rss_gb": 1.75}


def test_child_gone_between_listing_and_reading(tmp_path: Path) -> None:
    _proc(tmp_path, 10, 1024**2, 1024**2, {10: [11]})  # 11 is listed but has exited: no folder
    assert memory_metrics(10, tmp_path)["mem/children_rss_gb"] == 0.0


def test_without_proc_only_the_peak(tmp_path: Path) -> None:
    m = memory_metrics(10, tmp_path / "none")
    assert set(m) == {"mem/peak_rss_gb"} and m["mem/peak_rss_gb"] > 0


@pytest.mark.skipif(not Path(f"/proc/{os.getpid()}/task").is_dir(), reason="needs Linux /proc")
def test_real_child_counted() -> None:
    before = memory_metrics()
    assert 0 < before["mem/rss_gb"] <= before["mem/peak_rss_gb"]
    code = "b = bytearray(64 * 1024**2); import sys; sys.stdout.write('ok\\n'); sys.stdout.flush(); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ok\n"
        if not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists():
            pytest.skip("kernel without /proc/PID/task/TID/children")
        assert child.pid in descendants(os.getpid())
        assert memory_metrics()["mem/children_rss_gb"] - before["mem/children_rss_gb"] > 60 / 1024
    finally:
        child.communicate("")


def _glibc() -> bool:
    import platform

    return sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not _glibc(), reason="malloc_trim is glibc's")
def test_trim_returns_freed_heap_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    from officegym.train import memory

    monkeypatch.delenv("OFFICEGYM_MALLOC_TRIM", raising=False)
    memory._libc_trim.cache_clear()
    memory.release_free_memory()
    # 2 KB objects come from malloc's heap (not pymalloc, not mmap); the last one pins the heap's
    # top, so free() alone cannot shrink it and ~200 MB of free pages stay resident until a trim
    chunks = [bytearray(2048) for _ in range(100_000)]
    keep = bytearray(2048)
    del chunks
    assert memory.release_free_memory()["mem/trimmed_gb"] > 0.1
    del keep


def test_trim_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from officegym.train import memory

    monkeypatch.setenv("OFFICEGYM_MALLOC_TRIM", "0")
    memory._libc_trim.cache_clear()
    try:
        assert memory.release_free_memory() == {}
    finally:
        memory._libc_trim.cache_clear()
