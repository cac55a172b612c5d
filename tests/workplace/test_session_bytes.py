"""A session's weight (`held_bytes`, what the server bounds) is an upper bound of its memory, and
close to it (issue 47 N2)."""

from __future__ import annotations

import gc
import json
import tracemalloc

import pytest


class _FromJson:
    """A session whose calls' arguments are decoded from JSON, as the server's are (fresh strings,
    not constants the test module already holds)."""

    def __init__(self, session):
        self.session = session

    def call(self, name, arguments):
        return self.session.call(name, json.dumps(arguments))

    def __getattr__(self, name):
        return getattr(self.session, name)


def _traced_and_weighed(world, exercise, n: int = 20) -> tuple[float, float]:
    # One untraced run first: caches filled once per process (regexes, lazily built indexes) are not
    # a session's memory, and whether an earlier test filled them depends on the test order.
    exercise(_FromJson(world.new_session()))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        sessions = []
        for _ in range(n):
            s = world.new_session()
            exercise(_FromJson(s))
            sessions.append(s)
        gc.collect()
        traced = (tracemalloc.get_traced_memory()[0] - before) / n
    finally:
        tracemalloc.stop()
    return traced, sum(s.held_bytes() for s in sessions) / n


def _writes(s):
    s.call("email_send_email", {"recipient": "a@b.cd", "subject": "Status", "body": "All done."})
    s.call("customer_relationship_manager_update_customer", {"customer_id": "00000001", "field": "status", "new_value": "Won"})
    s.call("calendar_create_event", {"event_name": "sync", "participant_email": "a@b.cd",
                                     "event_start": "2023-12-01 10:00:00", "duration": "30"})


def _forwards(s):
    s.call("email_send_email", {"recipient": "a@b.cd", "subject": "x" * 20_000, "body": "b"})
    for _ in range(30):
        s.call("email_forward_email", {"email_id": "501", "recipient": "a@b.cd"})


def _deletes(s):
    for email_id in list(s.emails.ids())[:100]:
        s.call("email_delete_email", {"email_id": email_id})


def _cell_values(s):
    s.call("customer_relationship_manager_update_customer",
           {"customer_id": "00000001", "field": "notes", "new_value": "n" * 5000})
    s.call("project_management_update_task", {"task_id": "00000001", "field": "task_name", "new_value": "t" * 3000})


@pytest.mark.parametrize("exercise", [lambda s: None, _writes, _forwards, _deletes, _cell_values],
                         ids=["fresh", "writes", "forwards", "deletes", "cell_values"])
def test_held_bytes_bounds_what_a_session_holds(ref_world, exercise):
    traced, weighed = _traced_and_weighed(ref_world, exercise)
    assert traced <= weighed <= max(1.25 * traced, traced + 2048)


def test_a_fresh_session_weighs_no_table():
    from officegym.envs.workplace.table import value_bytes

    assert value_bytes("abc") < value_bytes("abc" * 100)
    nested = {"a": [1, 2, {"b": "c" * 100}]}
    assert value_bytes(nested) > 100
