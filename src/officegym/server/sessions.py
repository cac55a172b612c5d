"""Bounded session store: at most `max_sessions` live sessions, each dropped after `idle_ttl_s`
seconds without use. When the store is full of live sessions, a new one either pushes out the
least recently used (`when_full="evict"`) or is refused (`"refuse"`). The server refuses, but
first evicts the least recently used session if it has been idle for `evict_idle_s` (a rollout
that crashed leaves its session behind, and NeMo Gym's agent aborts the whole collection on a
refused seed; evicting a session in active use would instead make its rollout read "Session not
initialized"), so only a store whose every session is in active use refuses. The same eviction
keeps the sum of what sessions hold under `max_bytes`; past it, sessions in use may not grow (the
server refuses their writes in band, limits.py).

NeMo Gym's reference keeps every seeded session until the process exits (0.5-1 MB each, SPEC 7),
so a long training run grows without bound. Here a session costs a few hundred bytes until it
writes (its written tables' row lists are copied then), and idle ones expire.

The store is an OrderedDict kept in least-recently-used order behind one lock, so it is safe to
use from the event loop and from worker threads alike. Because entries are ordered by last use,
the expired ones are always at the front: dropping them costs only as much as there are.
"""

from __future__ import annotations

import gc
import threading
import time
import tracemalloc
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Generic, TypeVar

S = TypeVar("S")


@dataclass
class StoreStats:
    live: int = 0
    bytes: int = 0  # what the live sessions hold, as weighed after their writes (limits.py)
    created: int = 0
    closed: int = 0  # removed on purpose (verify, close_session)
    evicted_lru: int = 0  # pushed out because the store was full (when_full="evict")
    evicted_idle: int = 0  # pushed out, idle for evict_idle_s, because the store was full (count or bytes)
    expired: int = 0  # idle for longer than the TTL
    refused: int = 0  # new sessions turned away because the store was full of live ones
    misses: int = 0  # lookups of an unknown, closed, evicted or expired session

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class SessionStore(Generic[S]):
    """session id -> session, bounded by count, by bytes and by idle time (TTL).

    `idle_ttl_s=None` disables the TTL; `when_full` is "evict" (LRU) or "refuse"; with "refuse",
    `evict_idle_s` lets a new session push out the least recently used one when that one has been
    idle for that long. `max_bytes` bounds the sum of what sessions hold (`put(..., nbytes)`,
    `charge`): past it, idle sessions are evicted as for the count, and `has_room` says whether a
    session in use may grow. `clock` is injectable for tests (monotonic seconds).
    """

    def __init__(
        self,
        max_sessions: int = 10_000,
        idle_ttl_s: float | None = 3600.0,
        clock: Callable[[], float] = time.monotonic,
        when_full: str = "evict",
        evict_idle_s: float | None = None,
        max_bytes: int | None = None,
    ):
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if idle_ttl_s is not None and idle_ttl_s <= 0:
            raise ValueError("idle_ttl_s must be positive (or None for no TTL)")
        if when_full not in ("evict", "refuse"):
            raise ValueError("when_full must be 'evict' or 'refuse'")
        if evict_idle_s is not None and evict_idle_s < 0:
            raise ValueError("evict_idle_s must be at least 0 (or None never to evict a live session)")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("max_bytes must be at least 1 (or None for no bound)")
        self.evict_idle_s = evict_idle_s
        self.max_sessions = max_sessions
        self.idle_ttl_s = idle_ttl_s
        self.when_full = when_full
        self.max_bytes = max_bytes
        self._clock = clock
        self._items: OrderedDict[str, tuple[S, float, int]] = OrderedDict()  # id -> (session, last use, bytes)
        self._bytes = 0
        self._lock = threading.Lock()
        self._stats = StoreStats()

    def put(self, key: str, session: S, nbytes: int = 0) -> bool:
        """Store `session` (weighing `nbytes`) under `key`, replacing any session there, as the
        most recently used. False when the store is full of live sessions and refuses new ones
        (`when_full="refuse"`)."""
        now = self._clock()
        with self._lock:
            self._drop_expired(now)
            if key in self._items:
                self._remove(key)
            elif self.when_full == "refuse" and len(self._items) >= self.max_sessions and not self._evict_idle(now):
                self._stats.refused += 1
                return False
            self._items[key] = (session, now, nbytes)
            self._bytes += nbytes
            self._stats.created += 1
            while len(self._items) > self.max_sessions:
                self._remove(next(iter(self._items)))
                self._stats.evicted_lru += 1
            self._make_room(now)
            return True

    def get(self, key: str) -> S | None:
        """The live session under `key` (and mark it used), or None."""
        now = self._clock()
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                self._stats.misses += 1
                return None
            session, last, nbytes = entry
            if self._expired(last, now):
                self._remove(key)
                self._stats.expired += 1
                self._stats.misses += 1
                return None
            self._items[key] = (session, now, nbytes)
            self._items.move_to_end(key)
            return session

    def charge(self, key: str, nbytes: int) -> None:
        """The session under `key` now weighs `nbytes` (after a write)."""
        with self._lock:
            entry = self._items.get(key)
            if entry is not None:
                self._bytes += nbytes - entry[2]
                self._items[key] = (entry[0], entry[1], nbytes)

    def has_room(self) -> bool:
        """Whether the sessions hold less than `max_bytes`, once idle ones were evicted to make room."""
        if self.max_bytes is None:
            return True
        with self._lock:
            return self._make_room(self._clock())

    def pop(self, key: str) -> S | None:
        """Remove and return the session under `key` (None when there is none)."""
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._remove(key)
            self._stats.closed += 1
            return entry[0]

    def sweep(self) -> int:
        """Drop every expired session now; returns how many went."""
        with self._lock:
            return self._drop_expired(self._clock())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        """Whether `key` holds a live session (does not count as a use)."""
        with self._lock:
            entry = self._items.get(key)  # type: ignore[call-overload]
            return entry is not None and not self._expired(entry[1], self._clock())

    def stats(self) -> StoreStats:
        with self._lock:
            s = StoreStats(**asdict(self._stats))
            s.live = len(self._items)
            s.bytes = self._bytes
            return s

    def evicted_idle(self) -> int:
        """Sessions pushed out idle so far (read without the lock: a count for logging)."""
        return self._stats.evicted_idle

    # -- internals (lock held) -------------------------------------------------------------------

    def _remove(self, key: str) -> None:
        self._bytes -= self._items.pop(key)[2]

    def _expired(self, last: float, now: float) -> bool:
        return self.idle_ttl_s is not None and now - last > self.idle_ttl_s

    def _evict_idle(self, now: float) -> bool:
        """Push out the least recently used session if it has idled for evict_idle_s."""
        if self.evict_idle_s is None or not self._items:
            return False
        key, (_, last, _) = next(iter(self._items.items()))
        if now - last < self.evict_idle_s:
            return False  # the least recently used is in use, so every other one is too
        self._remove(key)
        self._stats.evicted_idle += 1
        return True

    def _make_room(self, now: float) -> bool:
        """Evict idle sessions while the store holds max_bytes or more, never the most recently
        used (the caller's); whether it is under now."""
        if self.max_bytes is None:
            return True
        while self._bytes >= self.max_bytes:
            if len(self._items) < 2 or not self._evict_idle(now):
                return False
        return True

    def _drop_expired(self, now: float) -> int:
        if self.idle_ttl_s is None:
            return 0
        dropped = 0
        while self._items:
            key, (_, last, _) = next(iter(self._items.items()))
            if not self._expired(last, now):
                break
            self._remove(key)
            dropped += 1
        self._stats.expired += dropped
        return dropped


@dataclass
class SessionMemory:
    """Memory a session holds, from tracemalloc: fresh, and after `exercise` ran on it."""

    sessions: int
    bytes_fresh: float
    bytes_exercised: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure_session_memory(
    make_session: Callable[[], Any],
    n: int = 500,
    exercise: Callable[[Any], Any] | None = None,
) -> SessionMemory:
    """Bytes per live session held in a SessionStore: `n` sessions are created (and `exercise`d,
    e.g. a few writes) and kept alive; the growth of traced memory is divided by `n`. The world's
    shared rows are not counted: they exist once per process, whatever the number of sessions."""

    def per_session(prepare: Callable[[Any], Any] | None) -> float:
        store: SessionStore[Any] = SessionStore(max_sessions=n + 1, idle_ttl_s=None)
        keys = [f"{i:036d}" for i in range(n)]  # same length as a uuid4 string
        gc.collect()
        was_tracing = tracemalloc.is_tracing()
        if not was_tracing:
            tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for key in keys:
                session = make_session()
                if prepare is not None:
                    prepare(session)
                store.put(key, session)
            gc.collect()
            after = tracemalloc.get_traced_memory()[0]
        finally:
            if not was_tracing:
                tracemalloc.stop()
        del store
        return (after - before) / n

    fresh = per_session(None)
    exercised = per_session(exercise) if exercise is not None else None
    return SessionMemory(n, fresh, exercised)
