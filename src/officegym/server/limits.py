"""What one live session may write, and what it has written.

A session's memory grows with what it writes (the arguments' text lands in its tables, and the
first write to a table copies that table's row list), so the server counts each session's
successful write calls and the bytes of their request bodies, and refuses a write that would pass
either bound with the reference's in-band error shape: the model reads why, nothing crashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Seeded:
    """A live session with the writes it made so far."""

    session: Any
    writes: int = 0
    write_bytes: int = 0


@dataclass(frozen=True)
class WriteLimits:
    max_writes: int
    max_bytes: int
    write_tools: frozenset[str] | None  # None: every tool may write (an environment that names none)

    def is_write(self, name: str) -> bool:
        return self.write_tools is None or name in self.write_tools

    def refusal(self, seeded: Seeded, name: str, size: int) -> str | None:
        """The error text for a write call that would pass a bound, else None."""
        if not self.is_write(name):
            return None
        if seeded.writes >= self.max_writes or seeded.write_bytes + size > self.max_bytes:
            return (f"Error executing tool '{name}': this session has reached its write limit "
                    f"({self.max_writes} writes, {self.max_bytes} bytes of write arguments; it has made "
                    f"{seeded.writes} writes of {seeded.write_bytes} bytes and this call has {size}). "
                    "The call was not run.")
        return None

    def record(self, seeded: Seeded, name: str, size: int, status: str) -> None:
        """Count a call that ran; only successful writes change a session's tables."""
        if status == "ok" and self.is_write(name):
            seeded.writes += 1
            seeded.write_bytes += size
