"""Property tests: sessions never raise on model input, never leak, and verify is consistent."""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from officegym.core.types import ToolCall
from officegym.envs.workplace.tools import TOOLS
from officegym.envs.workplace.verify import verify_calls

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

PARAMS = sorted({p for cls, meth in TOOLS.values() for p in getattr(cls, meth).__code__.co_varnames[1:getattr(cls, meth).__code__.co_argcount]})
IDS = ["00000001", "00000013", "00000057", "00000199", "00000299", "00000300", "500", "1", ""]
TEXT = st.one_of(
    st.sampled_from([*IDS, "Won", "won", "Backlog", "Front end", "status", "list_name", "event_start", "duration", "2023-12-01 10:00:00", "2023-12-01", "(", "[a-", ".*", "raj", "a.b@atlas.com", "x@y"]),
    st.text(max_size=12),
)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=False, allow_infinity=False), TEXT)
JSON_VALUE = st.one_of(JSON_SCALAR, st.lists(JSON_SCALAR, max_size=3), st.dictionaries(st.text(max_size=3), JSON_SCALAR, max_size=2))
ARGS = st.dictionaries(st.sampled_from([*PARAMS, "bogus_arg"]), JSON_VALUE, max_size=4)
NAMES = st.one_of(st.sampled_from(sorted(TOOLS)), st.text(max_size=8))
CALL = st.builds(lambda n, a: ToolCall(name=n, arguments=a), NAMES, ARGS)
RAW_CALL = st.tuples(NAMES, st.one_of(ARGS, st.text(max_size=20), st.lists(JSON_SCALAR, max_size=2)))


@SETTINGS
@given(st.lists(RAW_CALL, max_size=12))
def test_random_calls_never_raise_and_always_return_json_text(ref_world, calls):
    session = ref_world.new_session()
    for name, args in calls:
        body = json.loads(session.call(name, args))
        # {"output": ...} from a tool, {"error": ...} for undecodable arguments, {"detail": ...} for non-objects
        assert isinstance(body, dict) and len(body.keys() & {"output", "error", "detail"}) == 1


@SETTINGS
@given(st.lists(CALL, max_size=10), st.lists(CALL, max_size=10))
def test_sessions_never_leak(ref_world, a_calls, b_calls):
    before = copy.deepcopy(ref_world.tables)
    a, b = ref_world.new_session(), ref_world.new_session()
    a.replay(a_calls)
    b.replay(b_calls)
    fresh = ref_world.new_session()
    assert ref_world.tables == before or _same_with_nan(ref_world.tables, before)
    for t in ("emails", "calendar", "plots", "project_tasks", "crm"):
        assert list(fresh.table(t).rows) == list(ref_world.tables[t])
    alone = ref_world.new_session()
    alone.replay(a_calls)
    for t in ("emails", "calendar", "plots", "project_tasks", "crm"):
        assert _rows(a.table(t).rows) == _rows(alone.table(t).rows)


def _rows(rows):
    return json.dumps(list(rows), default=str)


def _same_with_nan(x, y):
    return json.dumps(x, default=str) == json.dumps(y, default=str)


@SETTINGS
@given(st.lists(CALL, max_size=8))
def test_verify_of_x_against_x_is_one(ref_world, calls):
    for mode in ("outcome", "nemo_gym"):
        v = verify_calls(ref_world, calls, calls, mode)
        assert v.reward == 1.0 and not v.side_effects


def _independent_writes(world):
    crm = [r[0] for r in world.tables["crm"]]
    emails = [r[0] for r in world.tables["emails"]]
    tasks = [r[0] for r in world.tables["project_tasks"]]
    events = [r[0] for r in world.tables["calendar"]]
    return st.tuples(
        st.lists(st.sampled_from(crm), max_size=6, unique=True),
        st.lists(st.sampled_from(emails), max_size=4, unique=True),
        st.lists(st.sampled_from(tasks), max_size=3, unique=True),
        st.lists(st.sampled_from(events), max_size=3, unique=True),
        st.lists(st.text(min_size=1, max_size=6), max_size=3),
        st.randoms(use_true_random=False),
    )


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_outcome_verdict_ignores_order_of_independent_writes(ref_world, data):
    crm, emails, tasks, events, words, rnd = data.draw(_independent_writes(ref_world))
    half = len(crm) // 2
    calls = [ToolCall("customer_relationship_manager_update_customer", {"customer_id": c, "field": "status", "new_value": "Won"}) for c in crm[:half]]
    calls += [ToolCall("customer_relationship_manager_delete_customer", {"customer_id": c}) for c in crm[half:]]
    calls += [ToolCall("email_delete_email", {"email_id": e}) for e in emails]
    calls += [ToolCall("project_management_update_task", {"task_id": t, "field": "board", "new_value": "Design"}) for t in tasks]
    calls += [ToolCall("calendar_delete_event", {"event_id": e}) for e in events]
    for w in words:
        calls.append(ToolCall("email_send_email", {"recipient": "a.b@atlas.com", "subject": w, "body": w}))
        calls.append(ToolCall("analytics_create_plot", {"time_min": "2023-11-01", "time_max": w, "value_to_plot": "total_visits", "plot_type": "bar"}))
        calls.append(ToolCall("customer_relationship_manager_add_customer", {"customer_name": w, "assigned_to_email": "raj.patel@atlas.com", "status": "Lead"}))
        calls.append(ToolCall("calendar_create_event", {"event_name": w, "participant_email": "a@b.c", "event_start": "2023-12-01 10:00:00", "duration": "30"}))
    shuffled = list(calls)
    rnd.shuffle(shuffled)
    assert verify_calls(ref_world, shuffled, calls, "outcome").reward == 1.0
