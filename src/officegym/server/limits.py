"""What one live session may write, and what it holds.

A session's memory grows with what it writes: the first write to a table copies that table's row
lists, and a write can hold far more than its request carried (`email_forward_email` stores
"FW: " + a subject the session wrote before). So the server weighs each session after every write
call (`held_bytes`, the environment's upper bound of what the session holds beyond the shared
world; for an environment without one, the bytes of its write requests) and refuses a write once
the session holds `max_session_bytes`, with the reference's in-band error shape: the model reads
why, nothing crashes. The store bounds the sum over all sessions (sessions.py). Counting a session's
writes (`max_writes`) or their request bytes (`max_bytes`) is left to an operator who asks for it:
the reference refuses no write, and the bytes held are what memory depends on.
"""

from __future__ import annotations

from dataclasses import dataclass

from officegym.core.session import BaseSession

# What a session is weighed at before its first write when its environment cannot weigh it.
FRESH_SESSION_BYTES = 1024


@dataclass
class Seeded:
    """A live session with the writes it made so far and what it holds."""

    session: BaseSession
    writes: int = 0
    write_bytes: int = 0
    held_bytes: int = FRESH_SESSION_BYTES


@dataclass(frozen=True)
class WriteLimits:
    max_writes: int | None  # None: any number
    max_bytes: int | None  # None: any size
    write_tools: frozenset[str] | None  # None: every tool may write (an environment that names none)
    max_session_bytes: int | None = None  # what one session may hold; None: unbounded

    def is_write(self, name: str) -> bool:
        return self.write_tools is None or name in self.write_tools

    def refusal(self, seeded: Seeded, name: str, size: int) -> str | None:
        """The error text for a write call that would pass a bound, else None."""
        if not self.is_write(name):
            return None
        too_many = self.max_writes is not None and seeded.writes >= self.max_writes
        too_big = self.max_bytes is not None and seeded.write_bytes + size > self.max_bytes
        if too_many or too_big:
            bounds = ", ".join(b for b in (f"{self.max_writes} writes" if self.max_writes is not None else "",
                                           f"{self.max_bytes} bytes of write arguments" if self.max_bytes is not None
                                           else "") if b)
            return (f"Error executing tool '{name}': this session has reached its write limit "
                    f"({bounds}; it has made {seeded.writes} writes of {seeded.write_bytes} bytes and this call has "
                    f"{size}). The call was not run.")
        if self.max_session_bytes is not None and seeded.held_bytes >= self.max_session_bytes:
            return (f"Error executing tool '{name}': this session holds {seeded.held_bytes} bytes of data, its "
                    f"limit is {self.max_session_bytes}. The call was not run.")
        return None

    def record(self, seeded: Seeded, name: str, size: int, status: str) -> None:
        """Count a call that ran and weigh the session again after a write call (any status: a
        failed call may have written before it failed)."""
        if not self.is_write(name):
            return
        if status == "ok":
            seeded.writes += 1
            seeded.write_bytes += size
        weigh(seeded)


def weigh(seeded: Seeded) -> int:
    """What the session holds now (its environment's upper bound, else its write requests' bytes)."""
    held = seeded.session.held_bytes()
    seeded.held_bytes = held if held is not None else FRESH_SESSION_BYTES + seeded.write_bytes
    return seeded.held_bytes
