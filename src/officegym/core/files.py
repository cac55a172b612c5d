"""Files written atomically, folders swapped into place, and JSONL logs that survive an interrupted append.

What a write does to what already sits at the path:
- nothing there, or a regular file: a temp file in the same folder is renamed onto it, so a reader
  sees the old file or the new one, never half of one. A file keeps its permission bits; a new one
  gets 0666 minus the umask, like any program's output.
- a symlink: the link stays; the file it points to is written by the same rules (a dangling link's
  target is created).
- a device, FIFO or socket (`--out /dev/null`, `/dev/stdout`, a pipe): written through, in place.
  Such a path is never replaced: renaming onto /dev/null as root turns it into a regular file.
- a folder: IsADirectoryError with the path.

Text is UTF-8. What UTF-8 cannot hold (a lone surrogate, which a model's valid JSON "\\ud800" can
carry into any row) is written as a backslash escape, so that one odd answer never stops a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

# Inside JSON text this escape is JSON's own (`\\ud800` reads back as the same string).
TEXT_ERRORS = "backslashreplace"


def _umask() -> int:
    """The process umask, read without changing it where the OS tells (Linux), else set and reset."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def resolve_output(path: str | os.PathLike[str]) -> Path:
    """The file a write to `path` lands in: symlinks followed (also dangling ones); a folder refused."""
    target = Path(path)
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    if target.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not a file")
    return target


def temp_dir(parent: str | os.PathLike[str], prefix: str) -> Path:
    """A new hidden folder in `parent` to fill and then rename into place, with the mode any
    program's new folder gets (0777 minus the umask; mkdtemp's own 0700 would follow the folder
    into place, hiding a model or checkpoint from the group the umask shares it with)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(path, 0o777 & ~_umask())
    return path


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open `path` for writing ("w" text, UTF-8, "\\n" newlines; or "wb") by the rules of this module;
    the new content appears on leaving the block without an exception, else the old stays."""
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', not {mode!r}")
    target = resolve_output(path)
    text_args: dict[str, Any] = {"encoding": "utf-8", "errors": TEXT_ERRORS, "newline": "\n"} if mode == "w" else {}
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        # A device, FIFO or socket: write through, never rename over it.
        with open(target, mode, **text_args) as fh:
            yield fh
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
        with os.fdopen(fd, mode, **text_args) as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write `data` to `path` atomically (see the module docstring for links and devices)."""
    with atomic_open(path, "wb") as fh:
        fh.write(data.encode("utf-8", TEXT_ERRORS) if isinstance(data, str) else data)
    return Path(path)


def replace_dir(source: str | os.PathLike[str], target: str | os.PathLike[str], aside_prefix: str | None = None) -> Path:
    """Move the finished folder `source` to `target` (same file system). Whatever sits at `target` is
    first moved aside in one rename (into a new hidden folder beside it, `aside_prefix` naming it) and
    deleted only after `source` took its name, so `target` holds the old content or the new, never a
    half-deleted folder; if the last rename fails, the old content goes back."""
    source, target = Path(source), Path(target)
    aside = None
    if os.path.lexists(target):
        # a fresh folder to move it into: a fixed name could collide with one an interrupted run left
        prefix = f".{target.name}.old-" if aside_prefix is None else aside_prefix
        aside = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
        os.replace(target, aside / target.name)
    try:
        os.replace(source, target)
    except BaseException:
        if aside is not None:
            os.replace(aside / target.name, target)
            aside.rmdir()
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
    return target


def jsonl_line(row: Any, default: Any = None) -> str:
    """One JSONL line. Non-ASCII stays readable; the only line break in the file is "\\n" (JSON
    escapes it inside strings), so readers must split on "\\n" alone, never on str.splitlines()'s
    U+2028, U+2029, U+0085, \\x1c-\\x1e, which may sit raw inside strings. A value JSON cannot
    hold raises TypeError unless `default` converts it."""
    line = json.dumps(row, ensure_ascii=False, default=default) + "\n"
    if not line.isascii():
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (valid JSON, "\ud800"): written as JSON's escape
            line = safe_text(line)
    return line


def safe_text(text: str) -> str:
    """`text` with what UTF-8 cannot hold (lone surrogates, which valid JSON can carry) as
    backslash escapes: inside JSON text, exactly JSON's own `\\udXXX` escape of the same value."""
    return text.encode("utf-8", TEXT_ERRORS).decode("utf-8")


def jsonl_lines(text: str) -> list[str]:
    """The lines of JSONL text (split on "\\n" only; a "\\r" before it is dropped)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_jsonl_text(path: str | os.PathLike[str]) -> list[str]:
    """The lines of a JSONL file, read in binary so that no decoder splits on other line breaks."""
    return jsonl_lines(Path(path).read_bytes().decode("utf-8"))


def write_jsonl_rows(path: str | os.PathLike[str], rows: Iterable[Any]) -> int:
    """Write rows as JSONL atomically; returns the number of rows."""
    count = 0
    with atomic_open(path, "w") as fh:
        for row in rows:
            fh.write(jsonl_line(row))
            count += 1
    return count


def load_appendable_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a JSONL file that is appended to as work finishes. An interrupted append can leave a
    torn last line: it is dropped and the file rewritten without it (atomically) so that appending
    continues on whole lines. A bad line before the last is damage, not an interruption: ValueError."""
    target = Path(path)
    if not target.exists():
        return []
    rows, torn = [], False
    lines = read_jsonl_text(target)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                torn = True
                continue
            raise ValueError(f"{target}:{i + 1}: not valid JSON (the file is damaged before its last line)") from None
    if torn:
        write_jsonl_rows(target, rows)
    return rows
