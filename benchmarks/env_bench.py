"""Workplace environment benchmark: officegym next to NeMo Gym's reference, one run, one table.

    python benchmarks/env_bench.py --world $OFFICEGYM_REFERENCE/csv_data [--repeat 200] [--fetch]

Prints median and p90 per operation: new session, every tool, verify of 1-, 3- and 6-call tasks in
both modes. With the reference available (pandas 2.3.2 and the pinned nemo-gym wheel in the cache;
--fetch downloads it) it times the same operations on the reference and prints the speed-up.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from officegym.core.types import ToolCall
from officegym.envs.workplace import load_world, verify_calls

# One representative call per tool (reads on data that exists, writes that succeed).
TOOL_CALLS: list[tuple[str, dict]] = [
    ("company_directory_find_email_address", {"name": "patel"}),
    ("email_get_email_information_by_id", {"email_id": "00000057", "field": "subject"}),
    ("email_search_emails", {"query": "carlos prototype"}),
    ("email_search_emails", {"query": "", "date_min": "2023-11-01", "date_max": "2023-11-15", "page": 2}),
    ("email_send_email", {"recipient": "raj.patel@atlas.com", "subject": "Hi", "body": "Hello"}),
    ("email_delete_email", {"email_id": "00000057"}),
    ("email_forward_email", {"email_id": "00000057", "recipient": "raj.patel@atlas.com"}),
    ("email_reply_email", {"email_id": "00000057", "body": "Thanks"}),
    ("calendar_get_event_information_by_id", {"event_id": "00000013", "field": "event_name"}),
    ("calendar_search_events", {"query": "sync up"}),
    ("calendar_search_events", {"time_min": "2023-12-01 00:00:00", "time_max": "2023-12-07 23:59:59"}),
    ("calendar_create_event", {"event_name": "1:1", "participant_email": "raj.patel@atlas.com", "event_start": "2023-12-01 10:00:00", "duration": "30"}),
    ("calendar_delete_event", {"event_id": "00000013"}),
    ("calendar_update_event", {"event_id": "00000013", "field": "duration", "new_value": "60"}),
    ("analytics_get_visitor_information_by_id", {"visitor_id": "5126"}),
    ("analytics_create_plot", {"time_min": "2023-11-01", "time_max": "2023-11-30", "value_to_plot": "total_visits", "plot_type": "bar"}),
    ("analytics_total_visits_count", {"time_min": "2023-11-01", "time_max": "2023-11-30"}),
    ("analytics_engaged_users_count", {"time_min": "2023-11-01", "time_max": "2023-11-30"}),
    ("analytics_traffic_source_count", {"time_min": "2023-11-01", "time_max": "2023-11-30", "traffic_source": "direct"}),
    ("analytics_get_average_session_duration", {"time_min": "2023-11-01", "time_max": "2023-11-30"}),
    ("project_management_get_task_information_by_id", {"task_id": "00000149", "field": "task_name"}),
    ("project_management_search_tasks", {"assigned_to_email": "leila.azizi@atlas.com", "list_name": "Backlog"}),
    ("project_management_create_task", {"task_name": "New", "assigned_to_email": "leila.azizi@atlas.com", "list_name": "Backlog", "due_date": "2023-12-15", "board": "Front end"}),
    ("project_management_delete_task", {"task_id": "00000149"}),
    ("project_management_update_task", {"task_id": "00000149", "field": "list_name", "new_value": "Completed"}),
    ("customer_relationship_manager_search_customers", {"status": "Lead", "product_interest": "Software"}),
    ("customer_relationship_manager_update_customer", {"customer_id": "00000095", "field": "status", "new_value": "Won"}),
    ("customer_relationship_manager_add_customer", {"customer_name": "Dakota Thomas", "assigned_to_email": "nadia.moreau@atlas.com", "status": "Lead"}),
    ("customer_relationship_manager_delete_customer", {"customer_id": "00000014"}),
]
WRITES = {n for n, _ in TOOL_CALLS if any(w in n for w in ("send", "delete", "forward", "reply", "create", "update", "add"))}


def _call(name: str, **args) -> ToolCall:
    return ToolCall(name=name, arguments=args)


VERIFY_TASKS = {
    "1-call": [_call("email_reply_email", email_id="00000057", body="Thanks for the update")],
    "3-call": [_call("customer_relationship_manager_update_customer", customer_id=i, field="assigned_to_email", new_value="raj.patel@atlas.com")
               for i in ("00000095", "00000080", "00000035")],
    "6-call": [
        _call("email_send_email", recipient="raj.patel@atlas.com", subject="Plan", body="See attached"),
        _call("calendar_create_event", event_name="Plan review", participant_email="raj.patel@atlas.com", event_start="2023-12-01 10:00:00", duration="60"),
        _call("project_management_update_task", task_id="00000149", field="list_name", new_value="In Progress"),
        _call("analytics_create_plot", time_min="2023-11-01", time_max="2023-11-30", value_to_plot="total_visits", plot_type="line"),
        _call("customer_relationship_manager_update_customer", customer_id="00000037", field="status", new_value="Lost"),
        _call("customer_relationship_manager_delete_customer", customer_id="00000014"),
    ],
}


def measure(fn: Callable[[], object], repeat: int, setup: Callable[[], object] | None = None) -> list[float]:
    """Seconds per call; `setup` (untimed) makes a fresh argument each time when given."""
    times = []
    for _ in range(repeat):
        arg = setup() if setup else None
        t0 = time.perf_counter()
        fn(arg) if setup else fn()
        times.append(time.perf_counter() - t0)
    return times


def stats(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def bench_officegym(world, repeat: int) -> dict[str, list[float]]:
    res = {"new session": measure(world.new_session, repeat * 10)}
    for name, args in TOOL_CALLS:
        label = f"{name} {json.dumps(args)[:40]}"
        res[label] = measure(lambda s, n=name, a=args: s.call(n, a), repeat, setup=world.new_session)
    for size, calls in VERIFY_TASKS.items():
        for mode in ("outcome", "nemo_gym"):
            res[f"verify {size} ({mode})"] = measure(lambda c=calls, m=mode: verify_calls(world, c, c, m), repeat)
    return res


def bench_reference(ref, repeat: int) -> dict[str, list[float]]:
    from officegym.envs.workplace.reference import TOOLKITS

    def env():
        return ref.get_tools(list(TOOLKITS))

    res = {"new session": measure(env, max(5, repeat // 4))}
    route = ref.call_route if hasattr(ref, "call_route") else None
    for name, args in TOOL_CALLS:
        label = f"{name} {json.dumps(args)[:40]}"
        if route:
            fn = lambda e, n=name, a=args: route(e, n, a)  # noqa: E731
        else:
            fn = lambda e, n=name, a=args: e["functions"][n](**a)  # noqa: E731
        res[label] = measure(fn, max(5, repeat // 4), setup=env)
    for size, calls in VERIFY_TASKS.items():
        dicts = [{"name": c.name, "arguments": json.dumps(c.arguments)} for c in calls]
        t = measure(lambda d=dicts: ref.is_correct(d, d, None), max(5, repeat // 10))
        res[f"verify {size} (outcome)"] = t
        res[f"verify {size} (nemo_gym)"] = t
    return res


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--world", required=True, type=Path)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--fetch", action="store_true", help="download the pinned nemo-gym wheel if missing")
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args(argv)

    world = load_world(args.world)
    ours = bench_officegym(world, args.repeat)
    ref_res: dict[str, list[float]] = {}
    ref_note = "reference: skipped"
    if not args.no_reference:
        from officegym.envs.workplace.reference import ensure_reference, load_reference

        ensure_reference(download=args.fetch)
        ref = load_reference()
        if ref is not None:
            ref_res = bench_reference(ref, args.repeat)
            import pandas

            ref_note = f"reference: NeMo Gym 0.7.0 workplace_assistant, pandas {pandas.__version__}"
        else:
            ref_note = "reference: unavailable (pandas 2.3.2 and the nemo-gym wheel are needed; --fetch)"

    table = Table(title="workplace environment: time per operation")
    for col in ("operation", "officegym median", "p90", "reference median", "p90", "speed-up"):
        table.add_column(col, justify="left" if col == "operation" else "right")
    rows = {}
    for label, times in ours.items():
        med, p90 = stats(times)
        r = ref_res.get(label)
        rmed, rp90 = stats(r) if r else (None, None)
        rows[label] = {"officegym_median_s": med, "officegym_p90_s": p90, "reference_median_s": rmed, "reference_p90_s": rp90}
        table.add_row(
            label, _fmt(med), _fmt(p90), _fmt(rmed) if r else "-", _fmt(rp90) if r else "-",
            f"{rmed / med:,.0f}x" if r else "-",
        )
    console = Console(width=160)
    console.print(table)
    env_line = (
        f"{dt.date.today()} | Python {platform.python_version()} | {platform.machine()} | "
        f"{platform.processor() or platform.platform()} | {ref_note}"
    )
    console.print(env_line)
    if args.json:
        args.json.write_text(json.dumps({"env": env_line, "rows": rows}, indent=2))
    return 0


def _fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e3:.2f} ms"


if __name__ == "__main__":
    sys.exit(main())
