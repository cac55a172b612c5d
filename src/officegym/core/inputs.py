"""Files and folders a command is given, checked before any reader touches them.

Readers deep in the layers raise whatever the OS or the codec raises (UnicodeDecodeError without a
file name, IsADirectoryError, FileExistsError from mkdir); checking the path first turns each into
one InputError whose message names the path and the problem.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

_CHUNK = 1 << 20


class InputError(ValueError):
    """A path given to a command cannot be used; the message names it and says why."""


def input_file(path: str | os.PathLike[str], what: str = "file", utf8: bool = True) -> Path:
    """`path` if it is a readable UTF-8 text file, else InputError (`what` names it: "task file").

    The UTF-8 check reads the whole file. A command that reads a big file once anyway may skip it
    (`utf8=False`) and call `input_file(path, what)` when its reader meets a UnicodeDecodeError: the
    InputError then says on which line the text stops being UTF-8."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            if utf8 and stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # a pipe read here would be empty for the reader
                _check_utf8(fh, p, what)
    except FileNotFoundError:
        raise InputError(f"no such {what}: {p}") from None
    except IsADirectoryError:
        raise InputError(f"{what} {p} is a folder, not a file") from None
    except NotADirectoryError:
        raise InputError(f"no such {what}: {p} (a parent of it is a file)") from None
    except PermissionError:
        raise InputError(f"cannot read {what} {p}: permission denied") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {p}: {exc.strerror or exc}") from None
    return p


def _check_utf8(fh, path: Path, what: str) -> None:
    """Decode the stream in chunks (files may be large); the first bad byte is reported by line."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    lines = 1
    while True:
        chunk = fh.read(_CHUNK)
        pending = decoder.getstate()[0]  # an incomplete character carried over (never a newline)
        try:
            decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            data = pending + chunk
            line = lines + data[: exc.start].count(b"\n")
            raise InputError(f"{what} {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})") from None
        if not chunk:
            return
        lines += chunk.count(b"\n")


def read_text(path: str | os.PathLike[str], what: str = "file") -> str:
    """The text of a UTF-8 file, or InputError."""
    return input_file(path, what).read_text(encoding="utf-8")


def input_dir(path: str | os.PathLike[str], what: str = "folder") -> Path:
    """`path` if it is an existing folder, else InputError."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"no such {what}: {p}")
    if not p.is_dir():
        raise InputError(f"{what} {p} is a file, not a folder")
    return p


def output_dir(path: str | os.PathLike[str], what: str = "output folder", overwrite: bool = True) -> Path:
    """`path` if a command may write into it: missing (it will be made) or a folder, and, unless
    `overwrite`, an empty one. Nothing is created here."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{what} {p} exists and is not a folder")
    if not overwrite and p.is_dir():
        held = sorted(child.name for child in p.iterdir())
        if held:
            shown = ", ".join(held[:4]) + (f" and {len(held) - 4} more" if len(held) > 4 else "")
            raise InputError(f"{what} {p} is not empty (holds {shown}): pass --overwrite to write into it anyway")
    return p


def output_file(path: str | os.PathLike[str], what: str = "output file") -> Path:
    """`path` if a file may be written there: not a folder, and its parent not a file."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {p} is a folder, not a file")
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{what} {p} cannot be written: {parent} is a file, not a folder")
    return p
