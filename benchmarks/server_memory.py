"""Memory the HTTP server's sessions hold: per session (tracemalloc) and for a full store (RSS).

Per session, for a session that is fresh, one that wrote to three tables (an e-mail sent, a
customer updated, an event created: the case of a typical write task), and the worst cases the
default write budget allows (its write count, or every table written and its bytes spent). Writes go
through the server's own budget (officegym.server.limits), as tool calls over HTTP do.

Then the resident memory of this process before and after filling a store with `--sessions`
sessions of the three-table kind, as `officegym serve` holds them (the world is loaded first).

    python benchmarks/server_memory.py [--world ../shared/reference/workplace/csv_data] [--sessions 10000]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
from pathlib import Path

from officegym.envs.workplace.tools import WRITE_TOOLS
from officegym.envs.workplace.world import load_world
from officegym.server.config import DEFAULT_MAX_SESSION_WRITE_BYTES, DEFAULT_MAX_SESSION_WRITES
from officegym.server.limits import Seeded, WriteLimits
from officegym.server.sessions import SessionStore, measure_session_memory

DEFAULT_WORLD = Path(__file__).resolve().parents[2] / "shared" / "reference" / "workplace" / "csv_data"
LIMITS = WriteLimits(DEFAULT_MAX_SESSION_WRITES, DEFAULT_MAX_SESSION_WRITE_BYTES, WRITE_TOOLS)


def call(seeded: Seeded, name: str, arguments: dict) -> bool:
    """One tool call as the server makes it; False when the write budget refused it."""
    size = len(json.dumps(arguments).encode())
    if LIMITS.refusal(seeded, name, size) is not None:
        return False
    LIMITS.record(seeded, name, size, seeded.session.execute(name, arguments).status)
    return True


def three_tables(seeded: Seeded) -> None:
    call(seeded, "email_send_email", {"recipient": "a@b.cd", "subject": "Status", "body": "All done, thanks."})
    call(seeded, "customer_relationship_manager_update_customer",
         {"customer_id": "00000001", "field": "status", "new_value": "Won"})
    call(seeded, "calendar_create_event", {"event_name": "sync", "participant_email": "a@b.cd",
                                           "event_start": "2023-12-01 10:00:00", "duration": "30"})


def many_small_writes(seeded: Seeded) -> None:
    while call(seeded, "email_send_email", {"recipient": "a@b.cd", "subject": "s", "body": "b"}):
        pass


def big_writes(seeded: Seeded) -> None:
    """Every table written (each one's row list copied), then e-mails until the byte budget is spent."""
    three_tables(seeded)
    assignee, board = seeded.session.world.tables["project_tasks"][0][2::3]
    call(seeded, "project_management_create_task", {"task_name": "t", "assigned_to_email": assignee,
                                                     "list_name": "Backlog", "due_date": "2023-12-01", "board": board})
    call(seeded, "analytics_create_plot", {"time_min": "2023-11-01", "time_max": "2023-11-30",
                                           "value_to_plot": "total_visits", "plot_type": "bar"})
    while call(seeded, "email_send_email", {"recipient": "a@b.cd", "subject": "s", "body": "x" * 8000}):
        pass
    session = seeded.session
    assert all(session.table(t).owned for t in ("emails", "calendar", "plots", "project_tasks", "crm"))


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", type=Path, default=DEFAULT_WORLD)
    p.add_argument("--sessions", type=int, default=10_000)
    p.add_argument("--sample", type=int, default=200, help="sessions per tracemalloc measurement")
    a = p.parse_args()
    world = load_world(a.world)
    print(f"python {platform.python_version()}, world {a.world}, {platform.machine()}")

    def make() -> Seeded:
        return Seeded(world.new_session())

    for label, exercise, n in (("fresh", None, a.sample), ("three tables written", three_tables, a.sample),
                               (f"{DEFAULT_MAX_SESSION_WRITES} small writes (budget)", many_small_writes, 20),
                               (f"all tables + {DEFAULT_MAX_SESSION_WRITE_BYTES // 1024} KiB (budget)", big_writes, 20)):
        m = measure_session_memory(make, n=n, exercise=exercise)
        per = m.bytes_fresh if exercise is None else m.bytes_exercised
        print(f"per session, {label:32s} {per / 1024:9.1f} KiB  ({n} sessions traced)")

    gc.collect()
    before = rss_kb()
    store: SessionStore = SessionStore(max_sessions=a.sessions, idle_ttl_s=None, when_full="refuse")
    for i in range(a.sessions):
        seeded = make()
        three_tables(seeded)
        store.put(f"{i:036d}", seeded)
    gc.collect()
    after = rss_kb()
    print(f"RSS: world loaded {before / 1024:.0f} MiB; with {len(store):,} sessions that wrote three tables "
          f"{after / 1024:.0f} MiB (+{(after - before) / 1024:.0f} MiB, {(after - before) / len(store):.1f} KiB each)")


if __name__ == "__main__":
    main()
