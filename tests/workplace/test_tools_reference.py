"""Every tool on the reference world: normal use and each message SPEC.md documents (sections 1, 8.1)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def s(ref_world):
    return ref_world.new_session()


def out(session, name, args=None):
    return json.loads(session.call(name, args or {}))["output"]


# -- directory ----------------------------------------------------------------------------------

def test_directory(s):
    assert out(s, "company_directory_find_email_address", {"name": "Patel"}) == ["anaya.patel@atlas.com", "raj.patel@atlas.com"]
    assert out(s, "company_directory_find_email_address", {"name": "aisha"}) == ["aisha.chen@atlas.com"]
    assert len(out(s, "company_directory_find_email_address", {"name": "atlas"})) == 20
    assert out(s, "company_directory_find_email_address", {"name": "Raj Patel"}) == []
    assert out(s, "company_directory_find_email_address", {"name": "sam"}) == []
    assert out(s, "company_directory_find_email_address", {"name": ""}) == "Name not provided."
    assert out(s, "company_directory_find_email_address") == "Name not provided."


# -- email ----------------------------------------------------------------------------------------

def test_email_get(s):
    assert out(s, "email_get_email_information_by_id", {"email_id": "00000057", "field": "inbox/outbox"}) == {"inbox/outbox": "inbox"}
    assert out(s, "email_get_email_information_by_id", {"field": "subject"}) == "Email ID not provided."
    assert out(s, "email_get_email_information_by_id", {"email_id": "00000057"}) == "Field not provided."
    assert out(s, "email_get_email_information_by_id", {"email_id": "57", "field": "subject"}) == "Email not found."
    assert out(s, "email_get_email_information_by_id", {"email_id": 57, "field": "subject"}) == "Email not found."
    assert out(s, "email_get_email_information_by_id", {"email_id": "00000057", "field": "sender"}) == (
        "Field 'sender' not found. Available fields: email_id, inbox/outbox, sender/recipient, subject, sent_datetime, body"
    )


def test_email_unexpected_argument_message(s):
    text = s.call("email_get_email_information_by_id", {"email_id": "00000057", "field": "subject", "useless_argument": 1})
    assert json.loads(text)["output"] == (
        "Error executing tool 'email_get_email_information_by_id': EmailTool.get_email_information_by_id() "
        "got an unexpected keyword argument 'useless_argument'"
    )


def test_email_search(s):
    res = out(s, "email_search_emails", {"query": "carlos prototype"})
    assert res["pagination"]["page"] == 1 and res["pagination"]["page_size"] == 5
    dates = [e["sent_datetime"] for e in res["emails"]]
    assert dates == sorted(dates, reverse=True)
    assert all("carlos" in (e["subject"] + e["body"] + e["sender/recipient"]).lower() for e in res["emails"])
    assert list(res["emails"][0]) == ["email_id", "inbox/outbox", "sender/recipient", "subject", "sent_datetime", "body"]
    one = out(s, "email_search_emails", {"query": "carlos.rodriguez@atlas.com", "date_min": "2023-11-18", "date_max": "2023-11-18"})
    assert one["pagination"] == {"total_emails": 1, "page": 1, "page_size": 5, "total_pages": 1}
    assert out(s, "email_search_emails", {"query": "zzzzqqq"}) == "No emails found."
    allp = out(s, "email_search_emails", {"page": 150})
    assert allp["pagination"] == {"total_emails": 500, "page": 100, "page_size": 5, "total_pages": 100}
    assert out(s, "email_search_emails", {"page_size": 0}) == "Error searching emails: integer division or modulo by zero"
    assert out(s, "email_search_emails", {"page": "2"}) == (
        "Error searching emails: '<' not supported between instances of 'int' and 'str'"
    )
    assert out(s, "email_search_emails", {"date_min": "garbage"}).startswith(
        "Error searching emails: Unknown datetime string format, unable to parse: garbage"
    )
    # query words are plain substrings, not regular expressions
    assert out(s, "email_search_emails", {"query": "("}) == "No emails found."


def test_email_send_and_ids(s):
    assert out(s, "email_send_email", {"recipient": "a@b", "subject": "s", "body": "b"}) == "Invalid recipient email address."
    assert out(s, "email_send_email", {"recipient": "x.y@z", "subject": "s"}) == "Recipient, subject, or body not provided."
    assert out(s, "email_send_email", {"recipient": "A.B@Atlas.com", "subject": "S", "body": "B"}) == "Email sent successfully."
    assert out(s, "email_send_email", {"recipient": "a.b@atlas.com", "subject": "S2", "body": "B2"}) == "Email sent successfully."
    rows = s.emails.rows
    assert [r[0] for r in rows[-2:]] == ["500", "501"]
    assert rows[-2] == ("500", "outbox", "a.b@atlas.com", "S", "2023-11-30 23:59:00", "B")


def test_email_delete_forward_reply(s):
    assert out(s, "email_delete_email", {}) == "Email ID not provided."
    assert out(s, "email_delete_email", {"email_id": "nope"}) == "Email not found."
    assert out(s, "email_forward_email", {"email_id": "00000057"}) == "Email ID or recipient not provided."
    assert out(s, "email_forward_email", {"email_id": "nope", "recipient": "bad"}) == "Invalid recipient email address."
    assert out(s, "email_forward_email", {"email_id": "nope", "recipient": "a.b@c.com"}) == "Email not found."
    assert out(s, "email_forward_email", {"email_id": "00000057", "recipient": "Raj.Patel@atlas.com"}) == "Email forwarded successfully."
    fw = s.emails.rows[-1]
    orig = next(r for r in s.world.tables["emails"] if r[0] == "00000057")
    assert fw[2] == "raj.patel@atlas.com" and fw[3] == "FW: " + orig[3] and fw[5] == orig[5]
    assert out(s, "email_reply_email", {"email_id": "00000057"}) == "Email ID or body not provided."
    assert out(s, "email_reply_email", {"email_id": "00000057", "body": "Thanks"}) == "Email replied successfully."
    re_ = s.emails.rows[-1]
    assert re_[2] == orig[2] and re_[3] == "RE: " + orig[3] and re_[5] == "Thanks"
    assert out(s, "email_delete_email", {"email_id": "00000057"}) == "Email deleted successfully."
    assert out(s, "email_delete_email", {"email_id": "00000057"}) == "Email not found."


# -- calendar -------------------------------------------------------------------------------------

def test_calendar_get(s):
    assert out(s, "calendar_get_event_information_by_id", {"event_id": "00000013", "field": "event_name"}) == {"event_name": "sync up"}
    assert out(s, "calendar_get_event_information_by_id", {"field": "x"}) == "Event ID not provided."
    assert out(s, "calendar_get_event_information_by_id", {"event_id": "13"}) == "Field not provided."
    assert out(s, "calendar_get_event_information_by_id", {"event_id": "13", "field": "x"}) == "Invalid event ID format. Expected 8-digit ID."
    assert out(s, "calendar_get_event_information_by_id", {"event_id": 13, "field": "x"}) == "Invalid event ID format. Expected 8-digit ID."
    assert out(s, "calendar_get_event_information_by_id", {"event_id": "00000013", "field": "x"}) == (
        "Invalid field. Available fields are: event_id, event_name, participant_email, event_start, duration"
    )
    assert out(s, "calendar_get_event_information_by_id", {"event_id": "00009999", "field": "duration"}) == "Event not found."


def test_calendar_search(s):
    res = out(s, "calendar_search_events", {"query": "sync up"})
    names = [e["event_name"].lower() for e in res["events"]]
    assert all("sync up" in n for n in names)
    starts = [e["event_start"] for e in res["events"]]
    assert starts == sorted(starts, reverse=True)
    win = out(s, "calendar_search_events", {"time_min": "2023-12-01", "time_max": "2023-12-01 23:59:59", "page_size": 50})
    assert all(e["event_start"].startswith("2023-12-01") for e in win["events"])
    assert out(s, "calendar_search_events", {"time_min": "bogus"}) == "Invalid time_min format. Expected YYYY-MM-DD HH:MM:SS."
    assert out(s, "calendar_search_events", {"time_max": "bogus"}) == "Invalid time_max format. Expected YYYY-MM-DD HH:MM:SS."
    assert out(s, "calendar_search_events", {"query": "("}) == (
        "Error executing tool 'calendar_search_events': missing ), unterminated subpattern at position 0"
    )
    assert out(s, "calendar_search_events", {"page_size": 0}) == (
        "Error executing tool 'calendar_search_events': integer division or modulo by zero"
    )
    assert out(s, "calendar_search_events", {"query": "no such meeting"}) == "No events found."


def test_calendar_create_validation_order_and_storage(s):
    base = {"event_name": "1:1", "participant_email": "Raj.Patel@atlas.com", "event_start": "2023-12-01 10:00:00", "duration": "30"}
    for missing, msg in [("event_name", "Event name not provided."), ("participant_email", "Participant email not provided."),
                         ("event_start", "Event start not provided."), ("duration", "Event duration not provided.")]:
        assert out(s, "calendar_create_event", {k: v for k, v in base.items() if k != missing}) == msg
    assert out(s, "calendar_create_event", {**base, "event_start": "next tuesday"}) == "Invalid event_start format. Expected YYYY-MM-DD HH:MM:SS."
    assert out(s, "calendar_create_event", {**base, "duration": "0.5"}) == "Invalid duration format. Expected a number of minutes."
    assert out(s, "calendar_create_event", {**base, "duration": "30 minutes"}) == "Invalid duration format. Expected a number of minutes."
    assert out(s, "calendar_create_event", {**base, "duration": "-5"}) == "Duration must be a positive number of minutes."
    # no business-hours or overlap rule is enforced
    assert out(s, "calendar_create_event", {**base, "event_start": "2023-12-01 20:00:00", "duration": "600"}) == "00000300"
    assert out(s, "calendar_create_event", {**base, "duration": 30.5}) == "00000301"
    rows = s.calendar.rows
    assert rows[-2] == ("00000300", "1:1", "raj.patel@atlas.com", "2023-12-01 20:00:00", "600")
    assert rows[-1][4] == 30.5  # stored as passed
    assert s.calendar.labels[-2:] == [0, 0]  # concat without ignore_index


def test_calendar_delete_update(s):
    assert out(s, "calendar_delete_event", {}) == "Event ID not provided."
    assert out(s, "calendar_delete_event", {"event_id": "13"}) == "Invalid event ID format. Expected 8-digit ID."
    assert out(s, "calendar_delete_event", {"event_id": "00009999"}) == "Event not found."
    assert out(s, "calendar_update_event", {"event_id": "00000013", "field": "event_name"}) == "Event ID, field, or new value not provided."
    assert out(s, "calendar_update_event", {"event_id": "00000013", "field": "event_id", "new_value": "1"}) == (
        "Invalid field. Available fields are: event_name, participant_email, event_start, duration"
    )
    # field checks come before the existence check
    assert out(s, "calendar_update_event", {"event_id": "00009999", "field": "duration", "new_value": "x"}) == (
        "Invalid duration format. Expected a number of minutes."
    )
    assert out(s, "calendar_update_event", {"event_id": "00009999", "field": "duration", "new_value": "30"}) == "Event not found."
    assert out(s, "calendar_update_event", {"event_id": "00000013", "field": "participant_email", "new_value": "X.Y@Atlas.com"}) == (
        "Event updated successfully."
    )
    row = next(r for r in s.calendar.rows if r[0] == "00000013")
    assert row[2] == "x.y@atlas.com"
    assert out(s, "calendar_delete_event", {"event_id": "00000013"}) == "Event deleted successfully."


# -- analytics ------------------------------------------------------------------------------------

def test_analytics_counts(s):
    # values on the reference data, checked against the reference code
    total = out(s, "analytics_total_visits_count")
    assert len(total) == 91 and sum(total.values()) == 1000 and list(total) == sorted(total)
    assert out(s, "analytics_engaged_users_count", {"time_min": "2023-10-22", "time_max": "2023-10-22"}) == {"2023-10-22": 5}
    assert out(s, "analytics_traffic_source_count", {"time_min": "2023-10-22", "time_max": "2023-10-22", "traffic_source": "direct"}) == {"2023-10-22": 10}
    assert out(s, "analytics_total_visits_count", {"time_min": "2023-10-22", "time_max": "2023-10-22"}) == {"2023-10-22": 13}
    assert out(s, "analytics_get_average_session_duration", {"time_min": "2023-10-22", "time_max": "2023-10-22"}) == {"2023-10-22": 15.76923076923077}
    assert set(out(s, "analytics_traffic_source_count", {"traffic_source": "Direct"}).values()) == {0}
    assert out(s, "analytics_traffic_source_count") == total


def test_analytics_visitor_and_float_side_effect(s):
    visits = out(s, "analytics_get_visitor_information_by_id", {"visitor_id": "5126"})
    assert len(visits) == 3 and isinstance(visits[0]["user_engaged"], bool)
    assert isinstance(visits[0]["session_duration_seconds"], str)
    assert out(s, "analytics_get_visitor_information_by_id", {"visitor_id": "x"}) == "Visitor not found."
    assert out(s, "analytics_get_visitor_information_by_id") == "Visitor ID not provided."
    out(s, "analytics_get_average_session_duration")  # no bounds: the reference converts the column in place
    again = out(s, "analytics_get_visitor_information_by_id", {"visitor_id": "5126"})
    assert isinstance(again[0]["session_duration_seconds"], float)


def test_analytics_create_plot(s):
    assert out(s, "analytics_create_plot", {"time_max": "b", "value_to_plot": "total_visits", "plot_type": "bar"}) == "Start date not provided."
    assert out(s, "analytics_create_plot", {"time_min": "a", "value_to_plot": "total_visits", "plot_type": "bar"}) == "End date not provided."
    assert out(s, "analytics_create_plot", {"time_min": "a", "time_max": "b", "value_to_plot": "visits", "plot_type": "bar"}).startswith(
        "Value to plot must be one of 'total_visits'"
    )
    assert out(s, "analytics_create_plot", {"time_min": "a", "time_max": "b", "value_to_plot": "total_visits", "plot_type": "pie"}) == (
        "Plot type must be one of 'bar', 'line', 'scatter', or 'histogram'"
    )
    path = out(s, "analytics_create_plot", {"time_min": "2023-11-01", "time_max": "2023-11-30", "value_to_plot": "total_visits", "plot_type": "bar"})
    assert path == "plots/2023-11-01_2023-11-30_total_visits_bar.png"
    assert s.plots.rows == [(path,)]


# -- project management ---------------------------------------------------------------------------

def test_pm_get_and_search(s):
    assert out(s, "project_management_get_task_information_by_id", {"task_id": "00000149", "field": "task_name"}) == {"task_name": "Add animation to carousel"}
    assert out(s, "project_management_get_task_information_by_id", {"task_id": "00000149", "field": "x"}) == "Field not found."
    assert out(s, "project_management_get_task_information_by_id", {"task_id": "x", "field": "x"}) == "Task not found."
    assert out(s, "project_management_search_tasks", {}) == "No search parameters provided."
    assert out(s, "project_management_search_tasks", {"assigned_to_email": "leila"}) == "Invalid email format for assigned_to_email."
    leila = out(s, "project_management_search_tasks", {"assigned_to_email": "Leila.Azizi@atlas.com"})
    assert leila and {t["assigned_to_email"] for t in leila} == {"leila.azizi@atlas.com"}
    prog = out(s, "project_management_search_tasks", {"list_name": "progress"})
    assert len(prog) == 13 and {t["list_name"] for t in prog} == {"In Progress"}
    assert len(out(s, "project_management_search_tasks", {"task_name": "", "board": "front"})) == 100
    assert out(s, "project_management_search_tasks", {"task_name": "no such task"}) == []


def test_pm_create_update_delete(s):
    ok = {"task_name": "New", "assigned_to_email": "Leila.Azizi@atlas.com", "list_name": "Backlog", "due_date": "2023-12-15", "board": "Front end"}
    assert out(s, "project_management_create_task", {**ok, "board": ""}) == "Missing task details."
    assert out(s, "project_management_create_task", {**ok, "assigned_to_email": "raj.patel@atlas.com"}) == (
        "Assignee email not valid. Please choose from the list of team members."
    )
    assert out(s, "project_management_create_task", {**ok, "list_name": "backlog"}) == (
        "List not valid. Please choose from: 'Backlog', 'In Progress', 'In Review', 'Completed'."
    )
    assert out(s, "project_management_create_task", {**ok, "board": "front end"}) == (
        "Board not valid. Please choose from: 'Back end', 'Front end', 'Design'."
    )
    assert out(s, "project_management_create_task", ok) == "00000300"
    assert s.project_tasks.rows[-1][2] == "leila.azizi@atlas.com"
    assert out(s, "project_management_update_task", {"task_id": "00000300", "field": "list_name"}) == "Task ID, field, or new value not provided."
    assert out(s, "project_management_update_task", {"task_id": "00000300", "field": "list_name", "new_value": "Done"}).startswith("List not valid.")
    assert out(s, "project_management_update_task", {"task_id": "00000300", "field": "priority", "new_value": "x"}) == "Field not valid."
    assert out(s, "project_management_update_task", {"task_id": "nope", "field": "list_name", "new_value": "Completed"}) == "Task not found."
    assert out(s, "project_management_update_task", {"task_id": "00000300", "field": "list_name", "new_value": "Completed"}) == "Task updated successfully."
    assert out(s, "project_management_delete_task", {"task_id": "00000300"}) == "Task deleted successfully."
    assert out(s, "project_management_delete_task", {"task_id": "00000300"}) == "Task not found."
    assert out(s, "project_management_delete_task", {}) == "Task ID not provided."
    # deleting the max id and inserting again reuses it
    assert out(s, "project_management_create_task", ok) == "00000300"


# -- CRM ------------------------------------------------------------------------------------------

def test_crm_search(s):
    assert out(s, "customer_relationship_manager_search_customers", {"page": 2}) == (
        "No search parameters provided. Please provide at least one parameter."
    )
    leads = out(s, "customer_relationship_manager_search_customers", {"status": "lead", "page_size": 100})
    assert leads["pagination"]["total_customers"] == 42
    akira = out(s, "customer_relationship_manager_search_customers", {"assigned_to_email": "akira", "page_size": 100})
    assert akira["pagination"]["total_customers"] == 42
    rec = leads["customers"][0]
    assert list(rec) == ["customer_id", "assigned_to_email", "customer_name", "customer_email", "customer_phone",
                         "last_contact_date", "product_interest", "status", "follow_up_by", "notes"]
    assert any(c["customer_phone"] is None for c in leads["customers"])  # empty cells come back as null
    # *_max excludes the day itself because stored dates end in 23:59:00
    day = "2023-11-01"
    upto = out(s, "customer_relationship_manager_search_customers", {"last_contact_date_max": day, "page_size": 500})
    assert all(c["last_contact_date"] < day for c in upto["customers"])
    assert out(s, "customer_relationship_manager_search_customers", {"customer_name": "Nobody Atall"}) == "No customers found."
    assert out(s, "customer_relationship_manager_search_customers", {"customer_phone": "1"}).startswith(
        "Error executing tool 'customer_relationship_manager_search_customers': CustomerRelationshipManagerTool.search_customers() "
        "got an unexpected keyword argument 'customer_phone'"
    )


def test_crm_update_add_delete(s):
    assert out(s, "customer_relationship_manager_update_customer", {"customer_id": "00000001", "field": "status"}) == (
        "Customer ID, field, or new value not provided."
    )
    assert out(s, "customer_relationship_manager_update_customer", {"customer_id": "00000001", "field": "status", "new_value": "won"}) == (
        "Status not valid. Please choose from: 'Qualified', 'Won', 'Lost', 'Lead', 'Proposal'"
    )
    assert out(s, "customer_relationship_manager_update_customer", {"customer_id": "00000001", "field": "product_interest", "new_value": "Cars"}).startswith(
        "Product interest not valid."
    )
    assert out(s, "customer_relationship_manager_update_customer", {"customer_id": "00000001", "field": "phone", "new_value": "1"}).startswith(
        "Field not valid. Please choose from: 'customer_name'"
    )
    assert out(s, "customer_relationship_manager_update_customer", {"customer_id": "nope", "field": "status", "new_value": "Won"}) == "Customer not found."
    assert out(s, "customer_relationship_manager_update_customer", {"customer_id": "00000001", "field": "customer_email", "new_value": "A@B.C"}) == (
        "Customer updated successfully."
    )
    assert next(r for r in s.crm.rows if r[0] == "00000001")[3] == "a@b.c"
    assert out(s, "customer_relationship_manager_add_customer", {"customer_name": "X"}) == (
        "Please provide all required fields: customer_name, assigned_to_email, status."
    )
    new_id = out(s, "customer_relationship_manager_add_customer", {"customer_name": "Dakota Thomas", "assigned_to_email": "Nadia.Moreau@atlas.com", "status": "Bogus"})
    assert new_id == "00000200"
    assert s.crm.rows[-1] == ("00000200", "nadia.moreau@atlas.com", "Dakota Thomas", None, None, None, None, "Bogus", None, "")
    assert out(s, "customer_relationship_manager_delete_customer", {}) == "Customer ID not provided."
    assert out(s, "customer_relationship_manager_delete_customer", {"customer_id": "00000200"}) == "Customer deleted successfully."
    assert out(s, "customer_relationship_manager_delete_customer", {"customer_id": "00000200"}) == "Customer not found."


# -- dispatch -------------------------------------------------------------------------------------

def test_dispatch_errors_never_raise(s):
    assert out(s, "no_such_tool") == "Error executing tool 'no_such_tool': 'no_such_tool'"
    # what NeMo Gym's agent and HTTP layer answer: bad JSON never reaches the tool, a non-object is a 422
    assert json.loads(s.call("email_send_email", "{not json")) == {
        "error": "Invalid tool call arguments: JSONDecodeError('Expecting property name enclosed in double quotes: line 1 column 2 (char 1)')"
    }
    assert s.call("email_send_email", "[1, 2]") == (
        '{"detail":[{"type":"model_attributes_type","loc":["body"],"msg":"Input should be a valid dictionary '
        'or object to extract fields from","input":[1,2]}]}'
    )
    assert json.loads(s.call("email_send_email", "null"))["detail"][0]["input"] is None
    assert out(s, "email_send_email", {"recipient": 5, "subject": "s", "body": "b"}) == (
        "Error executing tool 'email_send_email': argument of type 'int' is not iterable"
    )
    # nulls are dropped like the live route does
    assert out(s, "email_search_emails", {"query": None, "page": None})["pagination"]["total_emails"] == 500
    # arguments as a JSON string work like a dict
    assert out(s, "email_delete_email", '{"email_id": "00000001"}') == "Email deleted successfully."


def test_body_text_is_compact_json(s):
    assert s.call("email_delete_email", {"email_id": "00000002"}) == '{"output":"Email deleted successfully."}'
    assert s.call("company_directory_find_email_address", {"name": "aisha"}) == '{"output":["aisha.chen@atlas.com"]}'


def test_lone_surrogates_from_a_model_never_raise(s):
    assert json.loads(s.call("x\ud800", {}))["output"] == "Error executing tool 'x?': 'x?'"
    assert out(s, "email_send_email", {"recipient": "a.b@c.d", "subject": "\ud800", "body": "b"}) == "Email sent successfully."
    assert out(s, "email_search_emails", {"query": "a.b@c.d"})["emails"][0]["subject"] == "?"
