from __future__ import annotations

import json

import pytest

from officegym.core.toolcalls import (
    ToolCallParseError,
    function_calls_from_output,
    parse_tool_call,
    parse_workbench_call,
    to_workbench_call,
)


def test_nemo_ground_truth_keeps_raw_arguments():
    raw = '{"email_id": "00000057", "body": "Thanks"}'
    call = parse_tool_call({"name": "email_reply_email", "arguments": raw})
    assert call.name == "email_reply_email"
    assert call.arguments == {"email_id": "00000057", "body": "Thanks"}
    assert call.to_nemo() == {"name": "email_reply_email", "arguments": raw}


def test_responses_function_call_item():
    item = {"type": "function_call", "name": "email_delete_email", "arguments": '{"email_id":"1"}',
            "call_id": "call_1", "id": "fc_1", "status": "completed"}
    call = parse_tool_call(item)
    assert (call.name, call.arguments, call.call_id) == ("email_delete_email", {"email_id": "1"}, "call_1")
    assert call.extra == {"type": "function_call", "id": "fc_1", "status": "completed"}


def test_chat_completions_tool_call():
    item = {"id": "call_9", "type": "function", "function": {"name": "calendar_delete_event", "arguments": '{"event_id": "00000001"}'}}
    call = parse_tool_call(item)
    assert (call.name, call.arguments, call.call_id) == ("calendar_delete_event", {"event_id": "00000001"}, "call_9")


def test_bad_json_is_kept_not_raised():
    call = parse_tool_call({"name": "email_send_email", "arguments": '{"recipient": '})
    assert call.arguments is None and call.parse_error and call.raw_arguments == '{"recipient": '


def test_dict_arguments_accepted():
    call = parse_tool_call({"name": "x", "arguments": {"a": 1}})
    assert call.arguments == {"a": 1} and json.loads(call.arguments_json) == {"a": 1}


def test_non_object_rejected():
    with pytest.raises(ToolCallParseError):
        parse_tool_call(42)


def test_function_calls_from_output_keeps_order_and_skips_other_items():
    output = [
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "name": "a_b", "arguments": "{}", "call_id": "1"},
        {"type": "function_call_output", "call_id": "1", "output": "{}"},
        {"type": "function_call", "name": "c_d", "arguments": '{"x": 1}', "call_id": "2"},
        {"type": "message", "role": "assistant", "content": []},
    ]
    assert [c.name for c in function_calls_from_output(output)] == ["a_b", "c_d"]


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ('email.send_email.func(recipient="a@b.com", subject="Hi", body="Line\\nTwo")', "email_send_email",
         {"recipient": "a@b.com", "subject": "Hi", "body": "Line\nTwo"}),
        ('calendar.delete_event.func(event_id="00000013")', "calendar_delete_event", {"event_id": "00000013"}),
        ('company_directory.find_email_address.func(name="raj")', "company_directory_find_email_address", {"name": "raj"}),
        ("customer_relationship_manager.update_customer.func(customer_id='00000001', field='status', new_value='Won')",
         "customer_relationship_manager_update_customer", {"customer_id": "00000001", "field": "status", "new_value": "Won"}),
        ("analytics.create_plot.func(time_min='2023-11-01', time_max='2023-11-30', value_to_plot='total_visits', plot_type='bar')",
         "analytics_create_plot", {"time_min": "2023-11-01", "time_max": "2023-11-30", "value_to_plot": "total_visits", "plot_type": "bar"}),
    ],
)
def test_workbench_strings(text, name, args):
    call = parse_workbench_call(text)
    assert call.parse_error is None
    assert (call.name, call.arguments) == (name, args)
    again = parse_workbench_call(to_workbench_call(call))
    assert (again.name, again.arguments) == (name, args)


@pytest.mark.parametrize(
    "text",
    [
        'email.send_email.func(recipient=__import__("os").system("echo pwned"))',
        "email.delete_email.func(email_id=open('/etc/passwd').read())",
        'email.delete_email.func("00000001")',
        "email.delete_email.func(**{'email_id': '1'})",
        "not a call at all",
        "email.delete_email.func(email_id=",
        "(lambda: 1)()",
    ],
)
def test_workbench_strings_never_evaluated(text, capfd):
    call = parse_workbench_call(text)
    assert call.parse_error
    assert "pwned" not in capfd.readouterr().out


@pytest.mark.parametrize("text", [
    '{"email_id": "00000001"}', "{}", "[1, 2]", '"text"', "3", "NaN", "-Infinity", "null", " {} ", "{}\n", "\ufeff{}",
    '{"a": 1} {"b": 2}', '{"a": 1}x', "{", "", " ", '{"a": }', "{'a': 1}", '{"a": "\\ud800"}', '{"a": 1e999}',
])
def test_arguments_decode_exactly_as_json_loads(text):
    from officegym.core.toolcalls import _json_loads

    try:
        expected = json.loads(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError) as ours:
            _json_loads(text)
        assert str(ours.value) == str(exc)
    else:
        got = _json_loads(text)
        assert json.dumps(got) == json.dumps(expected) and type(got) is type(expected)


def test_with_id_is_a_new_call_that_keeps_what_the_call_came_with():
    call = parse_tool_call({"type": "function_call", "name": "email_delete_email", "arguments": '{"email_id":"1"',
                            "call_id": "fc_1", "id": "x"})
    fresh = call.with_id("call_0_0")
    assert (fresh.call_id, call.call_id) == ("call_0_0", "fc_1")
    assert (fresh.name, fresh.raw_arguments, fresh.parse_error) == (call.name, call.raw_arguments, call.parse_error)
    assert fresh.extra == {"type": "function_call", "id": "x"} and fresh.extra is not call.extra
