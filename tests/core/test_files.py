"""Writers never replace a device, FIFO or symlink they were not asked to replace; JSONL splits on
"\\n" only, whatever line separators the rows hold."""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading

import pytest

from officegym.core.files import (
    atomic_write,
    jsonl_line,
    load_appendable_jsonl,
    replace_dir,
    write_jsonl_rows,
)
from officegym.core.task import write_jsonl
from officegym.train.tracking import read_metrics, truncate_jsonl

ODD = "a\u2028b\u2029c\u0085d\x1ce\x1df\x1eg\x0bh\x0ci\rj"


def test_a_character_device_is_written_through_not_replaced(tmp_path):
    before = os.stat("/dev/null")
    atomic_write("/dev/null", "hello\n")
    write_jsonl("/dev/null", [{"a": 1}])
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_fifo_receives_the_bytes_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))  # noqa: SIM115
    reader.start()
    write_jsonl_rows(fifo, [{"x": 1}, {"y": 2}])
    reader.join(timeout=10)
    assert got == [b'{"x": 1}\n{"y": 2}\n']
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_stays_a_link_and_its_target_gets_the_content(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    atomic_write(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "sub" / "made.jsonl")
    write_jsonl(link, [{"a": 1}])
    assert link.is_symlink()
    assert (tmp_path / "sub" / "made.jsonl").read_text() == '{"a": 1}\n'


def test_a_folder_is_refused_with_its_path(tmp_path):
    with pytest.raises(IsADirectoryError, match=str(tmp_path)):
        atomic_write(tmp_path, "x")


def test_new_files_follow_the_umask_and_existing_files_keep_their_mode(tmp_path):
    old = os.umask(0o027)
    try:
        new = atomic_write(tmp_path / "new.txt", "x")
        assert stat.S_IMODE(os.stat(new).st_mode) == 0o640
    finally:
        os.umask(old)
    kept = tmp_path / "kept.txt"
    kept.write_text("x")
    os.chmod(kept, 0o604)
    atomic_write(kept, "y")
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o604


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "rows.jsonl"
    target.write_text('{"a": 1}\n')

    def rows():
        yield {"b": 2}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_jsonl_rows(target, rows())
    assert target.read_text() == '{"a": 1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


def test_rows_with_unicode_line_separators_survive_every_reader(tmp_path):
    rows = [{"id": i, "prompt": ODD, "arguments": {ODD: ODD}, "output": f"x{ODD}y"} for i in range(3)]
    path = tmp_path / "rows.jsonl"
    write_jsonl_rows(path, rows)
    assert "\u2028" in path.read_text(encoding="utf-8")  # written raw, readable
    assert load_appendable_jsonl(path) == rows
    # A torn append after them is dropped, the rows stay.
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(jsonl_line({"id": 9, "prompt": ODD})[:-5])
    assert load_appendable_jsonl(path) == rows
    assert truncate_jsonl(path, lambda r: r["id"] != 1) == 1
    assert [r["id"] for r in load_appendable_jsonl(path)] == [0, 2]
    metrics = tmp_path / "metrics.jsonl"
    write_jsonl_rows(metrics, [{"step": 1, "note": ODD}])
    assert read_metrics(tmp_path) == [{"step": 1, "note": ODD}]
    assert json.loads(metrics.read_text(encoding="utf-8").split("\n")[0])["note"] == ODD


def test_a_folder_swapped_into_place_replaces_the_old_one_and_leaves_nothing_aside(tmp_path):
    for old in ("folder", "file", None):
        target = tmp_path / "out"
        if old == "folder":
            target.mkdir()
            (target / "stale.txt").write_text("old")
        elif old == "file":
            target.write_text("old")
        new = tmp_path / ".new.tmp"
        new.mkdir()
        (new / "a.txt").write_text("new")
        assert replace_dir(new, target) == target
        assert sorted(p.name for p in target.iterdir()) == ["a.txt"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
        shutil.rmtree(target)


def test_a_failed_swap_puts_the_old_folder_back(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "kept.txt").write_text("old")
    with pytest.raises(FileNotFoundError):
        replace_dir(tmp_path / "missing", target)
    assert (target / "kept.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
