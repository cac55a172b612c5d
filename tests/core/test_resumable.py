"""core/resumable.py: the JSONL that evaluations and councils append to and resume from."""

from __future__ import annotations

import json

from officegym.core.resumable import ResumableRows


def test_resume_skips_done_jobs_retries_marked_rows_and_drops_a_torn_line(tmp_path):
    path = tmp_path / "sub" / "rows.jsonl"
    store = ResumableRows(path, lambda r: r["id"])
    assert store.rows == [] and store.todo([1, 2], lambda j: j) == [1, 2]
    with store.appending() as append:
        append({"id": 1, "ok": True})
        append({"id": 2, "ok": False})
        append({"id": 3, "ok": True, "text": "\ud800"})  # a lone surrogate is escaped, not fatal
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"id": 4, "ok": tr')  # an interrupted append

    again = ResumableRows(path, lambda r: r["id"], retry=lambda r: not r["ok"])
    assert again.retried == 1 and [r["id"] for r in again.old] == [1, 3]
    assert again.todo([1, 2, 3, 4], lambda j: j) == [2, 4]
    # the row to retry and the torn line are gone from the file before anything is appended
    assert [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines()] == [1, 3]
    with again.appending(default=str) as append:
        append({"id": 2, "ok": True, "when": object()})
    assert [r["id"] for r in again.rows] == [1, 3, 2] and [r["id"] for r in again.new] == [2]
    assert len(path.read_text(encoding="utf-8").splitlines()) == 3
