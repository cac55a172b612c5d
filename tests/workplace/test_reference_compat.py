"""reference_compat: the workplace reproduces NeMo Gym's reference on pandas 2.3.2 (the default, what
its uv.lock pins) or, on request, on pandas 3.1 (what `pip install nemo-gym` resolves, with pyarrow).

The pandas3 texts below are what the reference (nemo-gym 0.7.0's workplace_assistant tools) answered
on pandas 3.1.1 with pyarrow 26 for the same calls on the reference world. Where pandas 3 is
installed, the last test runs the differential harness against the reference itself.
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path

import pytest

from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.workplace.compat import DEFAULT_REFERENCE_COMPAT, check_reference_compat
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.session import WorkplaceSession
from officegym.envs.workplace.str_dtype import needs_python_regex

pyarrow_missing = importlib.util.find_spec("pyarrow") is None
needs_pyarrow = pytest.mark.skipif(pyarrow_missing, reason="pandas3 matches patterns with pyarrow's RE2")

EVENT = "00000013"


def out(session: WorkplaceSession, tool: str, /, **arguments) -> object:
    return json.loads(session.call(tool, arguments))["output"]


def err(name: str, text: str) -> str:
    return f"Error executing tool '{name}': {text}"


@pytest.fixture()
def both(ref_world):
    if pyarrow_missing:
        pytest.skip("pandas3 matches patterns with pyarrow's RE2")
    return WorkplaceSession(ref_world), WorkplaceSession(ref_world, "pandas3")


# -- the setting


def test_the_default_is_the_pandas2_reference_and_unchanged(ref_world):
    assert DEFAULT_REFERENCE_COMPAT == "pandas2"
    env = WorkplaceEnvironment(ref_world)
    assert env.reference_compat == "pandas2" and env.session().reference_compat == "pandas2"
    s = env.session()
    assert out(s, "calendar_update_event", event_id=EVENT, field="duration", new_value=30) == "Event updated successfully."
    assert out(s, "calendar_get_event_information_by_id", event_id=EVENT, field="duration") == {"duration": 30}
    assert out(s, "company_directory_find_email_address", name="(") == err(
        "company_directory_find_email_address", "missing ), unterminated subpattern at position 0")


def test_an_unknown_setting_is_refused(ref_world):
    with pytest.raises(ValueError, match="choose from pandas2, pandas3"):
        WorkplaceEnvironment(ref_world, reference_compat="pandas4")
    with pytest.raises(ValueError, match="unknown reference_compat"):
        check_reference_compat("")


# -- what differs on pandas 3


def test_a_number_written_into_a_text_column_is_refused_and_nothing_changes(both):
    old, new = both
    name = "calendar_update_event"
    assert out(new, name, event_id=EVENT, field="duration", new_value=30) == err(
        name, "Invalid value '30' for dtype 'str'. Value should be a string or missing value, got 'int' instead.")
    assert out(new, "calendar_get_event_information_by_id", event_id=EVENT, field="duration") == {"duration": "90"}
    assert new.execute(name, {"event_id": EVENT, "field": "duration", "new_value": 30}).status == "error"
    assert out(new, name, event_id=EVENT, field="duration", new_value="45") == "Event updated successfully."
    for value, kind in ((1.5, "float"), (True, "bool")):
        assert out(new, name, event_id=EVENT, field="event_name", new_value=value) == err(
            name, f"Invalid value '{value}' for dtype 'str'. Value should be a string or missing value, "
                  f"got '{kind}' instead.")
    array = "Invalid value for dtype 'str'. Value should be a string or missing value (or array of those)."
    assert out(new, name, event_id=EVENT, field="event_name", new_value=[5]) == err(name, array)
    assert out(new, name, event_id=EVENT, field="event_name", new_value={"k": 1}) == err(name, array)
    assert out(new, name, event_id=EVENT, field="event_name", new_value=["a", "b"]) == err(
        name, "Must have equal len keys and value when setting with an iterable")
    assert out(new, name, event_id=EVENT, field="event_name", new_value=["x"]) == "Event updated successfully."
    for tool, key, row_id, field in (("customer_relationship_manager_update_customer", "customer_id", "00000084", "notes"),
                                     ("project_management_update_task", "task_id", "00000081", "task_name")):
        assert out(new, tool, **{key: row_id, "field": field, "new_value": 5}) == err(
            tool, "Invalid value '5' for dtype 'str'. Value should be a string or missing value, got 'int' instead.")
    # pandas 2 wrote every one of them
    assert out(old, name, event_id=EVENT, field="duration", new_value=30) == "Event updated successfully."


def test_a_created_row_with_a_number_makes_that_column_take_anything(both):
    _, new = both
    assert out(new, "calendar_create_event", event_name="e", participant_email="a@b.cd",
               event_start="2023-12-01 10:00:00", duration=30) == "00000300"
    # concat made `duration` an object column: pandas 3 writes a number there now, not into event_name
    assert out(new, "calendar_update_event", event_id=EVENT, field="duration", new_value=45) == "Event updated successfully."
    assert out(new, "calendar_update_event", event_id=EVENT, field="event_name", new_value=45).startswith(
        "Error executing tool 'calendar_update_event': Invalid value '45' for dtype 'str'")


@pytest.mark.parametrize(("pattern", "pandas3", "pandas2"), [
    ("(", "missing ): (", "missing ), unterminated subpattern at position 0"),
    ("[", "missing ]: [", "unterminated character set at position 0"),
    ("*", "no argument for repetition operator: *", "nothing to repeat at position 0"),
    (")", "unexpected ): )", "unbalanced parenthesis at position 0"),
    ("a**", "bad repetition operator: **", "multiple repeat at position 2"),
    ("\\", "trailing \\", "bad escape (end of pattern) at position 0"),
    ("[z-a]", "invalid character class range: z-a", "bad character range z-a at position 1"),
])
def test_bad_patterns_read_as_pyarrows_re2_reads_them(both, pattern, pandas3, pandas2):
    old, new = both
    name = "company_directory_find_email_address"
    assert out(new, name, name=pattern) == err(name, f"Invalid regular expression: {pandas3}")
    assert out(old, name, name=pattern) == err(name, pandas2)


def test_patterns_re2_lacks_go_to_pythons_re_and_a_search_over_no_rows_compiles_nothing(both):
    old, new = both
    found = out(new, "company_directory_find_email_address", name="(?=a)a")  # a lookahead: Python's re
    assert found == out(old, "company_directory_find_email_address", name="(?=a)a") and len(found) > 5
    assert out(new, "company_directory_find_email_address", name="lena") == ["lena.schmidt@atlas.com"]
    assert out(new, "project_management_search_tasks", task_name="no such task at all", board="(") == []
    assert out(old, "project_management_search_tasks", task_name="no such task at all", board="(") == err(
        "project_management_search_tasks", "missing ), unterminated subpattern at position 0")
    assert out(new, "calendar_search_events", query="(") == err(
        "calendar_search_events", "Invalid regular expression: missing ): (")
    assert out(new, "calendar_search_events", query="sync")["events"] == out(old, "calendar_search_events", query="sync")["events"]


def test_which_patterns_pandas3_hands_to_pythons_re():
    ascii_cells, accented = ["alpha", "beta"], ["alpha", "José"]
    assert needs_python_regex("(?=a)", ascii_cells) and needs_python_regex(r"(a)\1", ascii_cells)
    assert needs_python_regex(r"\s", ascii_cells) and needs_python_regex(r"[\S]", ascii_cells)
    assert needs_python_regex(r"\u00e9", ascii_cells) and not needs_python_regex(r"\\u00e9", ascii_cells)
    assert not needs_python_regex(r"\w+", ascii_cells) and needs_python_regex(r"\w+", accented)
    assert not needs_python_regex("a$", ascii_cells) and needs_python_regex("a$", ["a\n"])
    assert not needs_python_regex("(", ascii_cells)  # re cannot parse it: RE2 answers
    assert not needs_python_regex(r"a|b(c)*", ascii_cells)


@pytest.mark.parametrize(("name", "arguments", "text"), [
    ("analytics_total_visits_count", {"time_min": 5}, "Invalid comparison between dtype=str and int"),
    ("analytics_engaged_users_count", {"time_max": 1.5}, "Invalid comparison between dtype=str and float"),
    ("analytics_traffic_source_count", {"time_min": True}, "Invalid comparison between dtype=str and bool"),
    ("analytics_get_visitor_information_by_id", {"visitor_id": {"a": 1}}, "eq not implemented for <class 'dict'>"),
    ("analytics_traffic_source_count", {"traffic_source": {"a": 1}}, "eq not implemented for <class 'dict'>"),
    ("customer_relationship_manager_search_customers", {"follow_up_by_min": 5},
     "Invalid comparison between dtype=str and int"),
    ("customer_relationship_manager_search_customers", {"last_contact_date_max": {"a": 1}},
     "le not implemented for <class 'dict'>"),
    ("project_management_delete_task", {"task_id": ["00000149"]}, "Lengths must match to compare"),
])
def test_wrong_argument_types_get_pandas3s_errors(both, name, arguments, text):
    _, new = both
    assert out(new, name, **arguments) == err(name, text)


def test_wrong_id_types_in_the_email_tools(both):
    old, new = both
    assert out(new, "email_delete_email", email_id={"id": "00000057"}) == "Error deleting email: eq not implemented for <class 'dict'>"
    assert out(new, "email_delete_email", email_id=["00000057"]) == "Error deleting email: Lengths must match to compare"
    assert out(new, "email_delete_email", email_id=["00000057", "00000058"]) == (
        "Error deleting email: The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()")
    assert out(new, "email_get_email_information_by_id", email_id={"id": "00000057"}, field="subject") == (
        "Error retrieving email information: eq not implemented for <class 'dict'>")
    assert out(old, "email_delete_email", email_id={"id": "00000057"}) == "Email not found."


def test_text_pyarrow_cannot_store_is_refused(both):
    _, new = both
    assert out(new, "email_send_email", recipient="a@b.cd", subject="x\ud800", body="b") == (
        "Error sending email: 'utf-8' codec can't encode character '\\ud800' in position 1: surrogates not allowed")
    assert len(new.emails.rows) == 500


def test_verify_replays_as_the_chosen_reference_does(ref_world):
    if pyarrow_missing:
        pytest.skip("pandas3 matches patterns with pyarrow's RE2")
    truth = [ToolCall("calendar_update_event", {"event_id": EVENT, "field": "duration", "new_value": "30"})]
    typed = [ToolCall("calendar_update_event", {"event_id": EVENT, "field": "duration", "new_value": 30})]
    task = Task(id="t", input=[], ground_truth=truth)
    # pandas 2 writes the number (the outcome mode counts 30 as "30"); pandas 3 refuses it
    assert WorkplaceEnvironment(ref_world).verify(task, typed).reward == 1.0
    refused = WorkplaceEnvironment(ref_world, reference_compat="pandas3").verify(task, typed)
    assert refused.reward == 0.0 and "Invalid value '30'" in refused.invalid_calls[0].error
    assert WorkplaceEnvironment(ref_world, reference_compat="pandas3").verify(task, truth).reward == 1.0


# -- against the reference itself, where pandas 3 is installed


def _pandas_major() -> int:
    try:
        import pandas
    except ImportError:
        return 0
    return int(pandas.__version__.split(".")[0])


@pytest.mark.reference
@pytest.mark.skipif(_pandas_major() < 3, reason="needs pandas >= 3 (the pandas2 mode's parity is test_reference_parity.py)")
def test_pandas3_mode_matches_the_reference_on_pandas3():
    harness = Path(__file__).resolve().parents[2] / "benchmarks" / "parity_calls.py"
    spec = importlib.util.spec_from_file_location("parity_calls", harness)
    pc = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("parity_calls", pc)
    spec.loader.exec_module(pc)
    env = pc.setup()
    if env is None:
        pytest.skip("the NeMo Gym reference is not cached")
    ref, world = env

    class Pandas3World:
        def new_session(self):
            return WorkplaceSession(world, "pandas3")

    found = []
    for seed in range(40):
        rng = random.Random(seed)
        found += pc.run_sequence(ref, Pandas3World(), pc.random_sequence(rng, rng.randint(10, 40)), seed)
    # pandas 3's `str` columns are not object columns: the harness's dtype check does not apply
    unknown = [d for d in found if d.known is None and "dtypes not object" not in d.reference]
    assert not unknown, "\n\n".join(d.report(max_calls=10) for d in unknown[:5])
