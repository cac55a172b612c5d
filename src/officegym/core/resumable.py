"""A resumable JSONL of finished jobs: what `officegym eval` (rollouts.jsonl) and `officegym
council` (councils.jsonl) write as each job ends, so an interrupted run resumes where it stopped."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from officegym.core.files import jsonl_line, load_appendable_jsonl, write_jsonl_rows

Job = TypeVar("Job")


class ResumableRows:
    """The rows already in `path` (a torn last line from an interruption dropped); rows that
    `retry(row)` says must run again are taken out of the file at once. `todo(jobs, job_key)` keeps
    the jobs whose key no row holds (`row_key(row)`); `appending()` yields the function that appends
    a finished row, flushed, so nothing finished is lost."""

    def __init__(self, path: Path, row_key: Callable[[dict[str, Any]], Hashable],
                 retry: Callable[[dict[str, Any]], bool] | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = load_appendable_jsonl(self.path)
        again = [r for r in rows if retry is not None and retry(r)]
        if again:
            rows = [r for r in rows if not retry(r)]  # type: ignore[misc]
            write_jsonl_rows(self.path, rows)
        self.retried = len(again)
        self.old: list[dict[str, Any]] = rows
        self.new: list[dict[str, Any]] = []
        self._done = {row_key(r) for r in rows}

    def todo(self, jobs: Iterable[Job], job_key: Callable[[Job], Hashable]) -> list[Job]:
        return [j for j in jobs if job_key(j) not in self._done]

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row, old then new."""
        return self.old + self.new

    @contextmanager
    def appending(self, default: Any = None) -> Iterator[Callable[[dict[str, Any]], None]]:
        """`default` converts values JSON cannot hold (as json.dumps's)."""
        with open(self.path, "a", encoding="utf-8") as fh:

            def append(row: dict[str, Any]) -> None:
                fh.write(jsonl_line(row, default))  # a lone surrogate in a model's text is escaped, not fatal
                fh.flush()
                self.new.append(row)

            yield append
