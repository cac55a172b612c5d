"""Memory the HTTP server's sessions hold: per session (tracemalloc against the server's own weighing)
and for a whole store (RSS).

Per session: fresh; one that wrote to three tables (an e-mail sent, a customer updated, an event
created: a typical write task); one that wrote every table; and the runaway of issue 47 N2 (one
e-mail with a 60 KB subject, then forwards of it, each storing "FW: " + the subject) until the
per-session bound refuses. Each line gives what tracemalloc saw and what the server weighed
(`held_bytes`, the bound it enforces: it must not be below what was seen).

Then the resident memory of this process before and after filling a store as `officegym serve`
holds it (same bounds, same weighing; calls go through officegym.server.limits and the store as
the server's tool route makes them): `--sessions` sessions of the three-table kind, then runaway
sessions until the store's byte bound refuses their writes.

    python benchmarks/server_memory.py [--world $OFFICEGYM_REFERENCE/csv_data] [--sessions 10000]
        [--max-store-bytes 1073741824] [--max-session-bytes 16777216]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
from pathlib import Path

from officegym.envs.workplace.tools import WRITE_TOOLS
from officegym.envs.workplace.world import load_world
from officegym.server.config import (
    DEFAULT_MAX_SESSION_BYTES,
    DEFAULT_MAX_SESSION_WRITE_BYTES,
    DEFAULT_MAX_SESSION_WRITES,
    DEFAULT_MAX_STORE_BYTES,
)
from officegym.server.limits import Seeded, WriteLimits, weigh
from officegym.server.sessions import SessionStore, measure_session_memory

# NeMo Gym's resources_servers/workplace_assistant (the sessions write to that world's ids)
DEFAULT_WORLD = Path(os.environ.get("OFFICEGYM_REFERENCE", Path(__file__).resolve().parents[2] / "shared" / "reference" / "workplace")) / "csv_data"


class Server:
    """The store and limits of `officegym serve`, with its tool route's order of checks."""

    def __init__(self, max_sessions: int, max_store_bytes: int, max_session_bytes: int):
        self.limits = WriteLimits(DEFAULT_MAX_SESSION_WRITES, DEFAULT_MAX_SESSION_WRITE_BYTES, WRITE_TOOLS,
                                  max_session_bytes)
        self.store: SessionStore = SessionStore(max_sessions, None, when_full="refuse", max_bytes=max_store_bytes)

    def seed(self, key: str, world) -> bool:
        seeded = Seeded(world.new_session())
        return self.store.put(key, seeded, weigh(seeded))

    def call(self, key: str, name: str, arguments: dict) -> bool:
        """One tool call; False when a bound refused it."""
        seeded = self.store.get(key)
        size = len(json.dumps(arguments).encode())
        if self.limits.refusal(seeded, name, size) is not None:
            return False
        if self.limits.is_write(name) and not self.store.has_room():
            return False
        status = seeded.session.execute(name, arguments).status
        self.limits.record(seeded, name, size, status)
        if self.limits.is_write(name):
            self.store.charge(key, seeded.held_bytes)
        return True


def three_tables(call, world) -> None:
    call("email_send_email", {"recipient": "a@b.cd", "subject": "Status", "body": "All done, thanks."})
    call("customer_relationship_manager_update_customer",
         {"customer_id": world.tables["crm"][0][0], "field": "status", "new_value": "Won"})
    call("calendar_create_event", {"event_name": "sync", "participant_email": "a@b.cd",
                                   "event_start": "2023-12-01 10:00:00", "duration": "30"})


def every_table(call, world) -> None:
    three_tables(call, world)
    task = world.tables["project_tasks"][0]
    call("project_management_update_task", {"task_id": task[0], "field": "list_name", "new_value": "Backlog"})
    call("analytics_create_plot", {"time_min": "2023-11-01", "time_max": "2023-11-30",
                                   "value_to_plot": "total_visits", "plot_type": "bar"})


def runaway(call, world=None) -> int:
    """Issue 47 N2: a 60 KB subject, then forwards of it until refused; the forwards that ran."""
    call("email_send_email", {"recipient": "a@b.cd", "subject": "x" * 60_000, "body": "b"})
    sent = 0
    while call("email_forward_email", {"email_id": _last_email_id, "recipient": "a@b.cd"}):
        sent += 1
    return sent


_last_email_id = ""


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def per_session(world, max_session_bytes: int, sample: int) -> None:
    def traced(label: str, exercise, n: int) -> None:
        weighed: list[int] = []

        def make():
            return world.new_session()

        def run(session):
            if exercise is not None:
                server = Server(2, DEFAULT_MAX_STORE_BYTES, max_session_bytes)
                server.store.put("k", Seeded(session))
                exercise(lambda name, arguments: server.call("k", name, arguments), world)
            weighed.append(session.held_bytes())

        m = measure_session_memory(make, n=n, exercise=run)
        seen = m.bytes_exercised
        print(f"per session, {label:34s} traced {seen / 1024:9.1f} KiB, weighed {weighed[-1] / 1024:9.1f} KiB "
              f"({n} sessions)")

    traced("fresh", None, sample)
    traced("three tables written", three_tables, sample)
    traced("every table written", every_table, sample)

    traced(f"runaway to the {max_session_bytes // 2**20} MiB bound", runaway, 3)


def main() -> None:
    global _last_email_id
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", type=Path, default=DEFAULT_WORLD)
    p.add_argument("--sessions", type=int, default=10_000)
    p.add_argument("--sample", type=int, default=200, help="sessions per tracemalloc measurement")
    p.add_argument("--max-store-bytes", type=int, default=DEFAULT_MAX_STORE_BYTES)
    p.add_argument("--max-session-bytes", type=int, default=DEFAULT_MAX_SESSION_BYTES)
    a = p.parse_args()
    world = load_world(a.world)
    ids = [int(r[0]) for r in world.tables["emails"] if r[0].isdigit()]
    _last_email_id = str(max(ids, default=0) + 1)  # the id send_email gives the runaway's e-mail
    print(f"python {platform.python_version()}, world {a.world}, {platform.machine()}")
    per_session(world, a.max_session_bytes, a.sample)

    server = Server(a.sessions + 1_000, a.max_store_bytes, a.max_session_bytes)
    gc.collect()
    before = rss_kb()
    for i in range(a.sessions):
        key = f"{i:036d}"
        server.seed(key, world)
        three_tables(lambda name, arguments, key=key: server.call(key, name, arguments), world)
    gc.collect()
    mid = rss_kb()
    held = server.store.stats().bytes
    print(f"RSS: world loaded {before / 1024:.0f} MiB; {a.sessions:,} sessions that wrote three tables: "
          f"+{(mid - before) / 1024:.0f} MiB ({(mid - before) / a.sessions:.1f} KiB each), weighed "
          f"{held / 2**20:.0f} MiB")
    runaways = forwards = 0
    while True:
        key = f"runaway{runaways}"
        if not server.seed(key, world):
            break
        runaways += 1
        ran = runaway(lambda name, arguments, key=key: server.call(key, name, arguments))
        forwards += ran
        if ran == 0 or not server.store.has_room():
            break
    gc.collect()
    after = rss_kb()
    held = server.store.stats().bytes
    print(f"RSS: then {runaways} runaway sessions ({forwards} forwards) until the store's bound of "
          f"{a.max_store_bytes / 2**20:.0f} MiB refused: +{(after - before) / 1024:.0f} MiB over the world, weighed "
          f"{held / 2**20:.0f} MiB; {after / 1024:.0f} MiB resident in all")


if __name__ == "__main__":
    main()
