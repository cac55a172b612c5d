"""The 27 tool specs: NeMo Gym's names, parameters, types and required lists; our own wording.

Task rows carry their own `tools` list, so a NeMo Gym dataset is shown to the model exactly as
published; these specs are what officegym offers for its own tasks.
"""

from __future__ import annotations

from officegym.core.types import ToolSpec

S = "string"
I = "integer"  # noqa: E741


def _spec(name: str, description: str, params: list[tuple[str, str, str]], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {p: {"type": t, "description": d} for p, t, d in params},
            "required": required,
            "additionalProperties": False,
        },
    )


_PAGE = [("page", I, "Page of results to return, starting at 1 (default 1)"),
         ("page_size", I, "Results per page (default 5)")]
_EMAIL_FIELDS = "'email_id', 'inbox/outbox', 'sender/recipient', 'subject', 'sent_datetime', 'body'"
_EVENT_FIELDS = "'event_id', 'event_name', 'participant_email', 'event_start', 'duration'"
_TASK_FIELDS = "'task_id', 'task_name', 'assigned_to_email', 'list_name', 'due_date', 'board'"
_LISTS = "'Backlog', 'In Progress', 'In Review' or 'Completed'"
_BOARDS = "'Back end', 'Front end' or 'Design'"
_STATUSES = "'Qualified', 'Won', 'Lost', 'Lead' or 'Proposal'"
_PRODUCTS = "'Software', 'Hardware', 'Services', 'Consulting' or 'Training'"
_DATE = "Date as YYYY-MM-DD"
_TIME = "Date and time as YYYY-MM-DD HH:MM:SS"

TOOL_SPECS: list[ToolSpec] = [
    _spec("company_directory_find_email_address",
          "Look up colleagues' e-mail addresses: returns every address that contains the given text.",
          [("name", S, "Part of a person's name, e.g. a first or last name")], []),
    _spec("email_get_email_information_by_id", "Return one field of the e-mail with the given id.",
          [("email_id", S, "Id of the e-mail"), ("field", S, f"Field to return: one of {_EMAIL_FIELDS}")],
          ["email_id", "field"]),
    _spec("email_search_emails",
          "Search e-mails, newest first. An e-mail matches when every word of the query occurs in its "
          "subject, body or sender/recipient.",
          [("query", S, "Words to look for"), ("date_min", S, f"Earliest sent date, inclusive. {_DATE}"),
           ("date_max", S, f"Latest sent date, inclusive. {_DATE}"), *_PAGE], []),
    _spec("email_send_email", "Send an e-mail.",
          [("recipient", S, "Recipient's e-mail address"), ("subject", S, "Subject line"), ("body", S, "Message text")],
          ["recipient", "subject", "body"]),
    _spec("email_delete_email", "Delete the e-mail with the given id.", [("email_id", S, "Id of the e-mail")],
          ["email_id"]),
    _spec("email_forward_email", "Forward the e-mail with the given id to a recipient.",
          [("email_id", S, "Id of the e-mail"), ("recipient", S, "Recipient's e-mail address")],
          ["email_id", "recipient"]),
    _spec("email_reply_email", "Reply to the e-mail with the given id.",
          [("email_id", S, "Id of the e-mail"), ("body", S, "Reply text")], ["email_id", "body"]),
    _spec("calendar_get_event_information_by_id", "Return one field of the calendar event with the given id.",
          [("event_id", S, "8-digit id of the event"), ("field", S, f"Field to return: one of {_EVENT_FIELDS}")],
          ["event_id", "field"]),
    _spec("calendar_search_events",
          "Search calendar events by name or participant, latest start first, optionally within a time window.",
          [("query", S, "Text to find in the event name or participant e-mail"),
           ("time_min", S, f"Earliest start, inclusive. {_TIME}"),
           ("time_max", S, f"Latest start, inclusive. {_TIME}"), *_PAGE], []),
    _spec("calendar_create_event", "Create a calendar event and return its id.",
          [("event_name", S, "Name of the event"), ("participant_email", S, "Participant's e-mail address"),
           ("event_start", S, f"Start. {_TIME}"), ("duration", S, "Length in minutes, e.g. '60'")],
          ["event_name", "participant_email", "event_start", "duration"]),
    _spec("calendar_delete_event", "Delete the calendar event with the given id.",
          [("event_id", S, "8-digit id of the event")], ["event_id"]),
    _spec("calendar_update_event", "Change one field of a calendar event.",
          [("event_id", S, "8-digit id of the event"),
           ("field", S, "Field to change: one of 'event_name', 'participant_email', 'event_start', 'duration'"),
           ("new_value", S, "New value (event_start as YYYY-MM-DD HH:MM:SS, duration in minutes)")],
          ["event_id", "field", "new_value"]),
    _spec("analytics_get_visitor_information_by_id", "Return every recorded visit of a website visitor.",
          [("visitor_id", S, "Id of the visitor")], ["visitor_id"]),
    _spec("analytics_create_plot", "Create a plot of website analytics over a date range; returns its file path.",
          [("time_min", S, f"First date. {_DATE}"), ("time_max", S, f"Last date. {_DATE}"),
           ("value_to_plot", S, "One of 'total_visits', 'session_duration_seconds', 'user_engaged', "
                                "'visits_direct', 'visits_referral', 'visits_search_engine', 'visits_social_media'"),
           ("plot_type", S, "One of 'bar', 'line', 'scatter', 'histogram'")],
          ["time_min", "time_max", "value_to_plot", "plot_type"]),
    _spec("analytics_total_visits_count", "Number of website visits per day in a date range.",
          [("time_min", S, f"First date. {_DATE}"), ("time_max", S, f"Last date. {_DATE}")], []),
    _spec("analytics_engaged_users_count", "Number of engaged visitors per day in a date range.",
          [("time_min", S, f"First date. {_DATE}"), ("time_max", S, f"Last date. {_DATE}")], []),
    _spec("analytics_traffic_source_count", "Number of visits per day from one traffic source.",
          [("time_min", S, f"First date. {_DATE}"), ("time_max", S, f"Last date. {_DATE}"),
           ("traffic_source", S, "One of 'direct', 'referral', 'search engine', 'social media'")], []),
    _spec("analytics_get_average_session_duration", "Average session duration in seconds per day.",
          [("time_min", S, f"First date. {_DATE}"), ("time_max", S, f"Last date. {_DATE}")], []),
    _spec("project_management_get_task_information_by_id", "Return one field of the task with the given id.",
          [("task_id", S, "Id of the task"), ("field", S, f"Field to return: one of {_TASK_FIELDS}")],
          ["task_id", "field"]),
    _spec("project_management_search_tasks", "Find tasks matching every given filter; returns all matches.",
          [("task_name", S, "Text in the task name"), ("assigned_to_email", S, "Full e-mail address of the assignee"),
           ("list_name", S, f"List: {_LISTS}"), ("due_date", S, f"Due date. {_DATE}"),
           ("board", S, f"Board: {_BOARDS}")], []),
    _spec("project_management_create_task", "Create a task and return its id.",
          [("task_name", S, "Name of the task"), ("assigned_to_email", S, "E-mail address of a team member"),
           ("list_name", S, f"List: {_LISTS}"), ("due_date", S, f"Due date. {_DATE}"),
           ("board", S, f"Board: {_BOARDS}")],
          ["task_name", "assigned_to_email", "list_name", "due_date", "board"]),
    _spec("project_management_delete_task", "Delete the task with the given id.", [("task_id", S, "Id of the task")],
          ["task_id"]),
    _spec("project_management_update_task", "Change one field of a task.",
          [("task_id", S, "Id of the task"),
           ("field", S, "Field to change: one of 'task_name', 'assigned_to_email', 'list_name', 'due_date', 'board'"),
           ("new_value", S, "New value")], ["task_id", "field", "new_value"]),
    _spec("customer_relationship_manager_search_customers",
          "Find customers matching every given filter, in CRM order, a page at a time.",
          [("customer_name", S, "Text in the customer's name"), ("customer_email", S, "Text in the customer's e-mail"),
           ("product_interest", S, f"Product: {_PRODUCTS}"), ("status", S, f"Status: {_STATUSES}"),
           ("assigned_to_email", S, "E-mail of the sales person"),
           ("last_contact_date_min", S, f"Earliest last contact. {_DATE}"),
           ("last_contact_date_max", S, f"Latest last contact. {_DATE}"),
           ("follow_up_by_min", S, f"Earliest follow-up date. {_DATE}"),
           ("follow_up_by_max", S, f"Latest follow-up date. {_DATE}"), *_PAGE], []),
    _spec("customer_relationship_manager_update_customer", "Change one field of a customer record.",
          [("customer_id", S, "Id of the customer"),
           ("field", S, "Field to change: one of 'customer_name', 'assigned_to_email', 'customer_email', "
                        "'customer_phone', 'last_contact_date', 'product_interest', 'status', 'notes', 'follow_up_by'"),
           ("new_value", S, f"New value (status: {_STATUSES}; product_interest: {_PRODUCTS})")],
          ["customer_id", "field", "new_value"]),
    _spec("customer_relationship_manager_add_customer", "Add a customer to the CRM and return its id.",
          [("customer_name", S, "Customer's name"), ("assigned_to_email", S, "E-mail of the sales person"),
           ("status", S, f"Status: {_STATUSES}"), ("customer_email", S, "Customer's e-mail"),
           ("customer_phone", S, "Customer's phone"), ("last_contact_date", S, f"Last contact. {_DATE}"),
           ("product_interest", S, f"Product: {_PRODUCTS}"), ("notes", S, "Notes"),
           ("follow_up_by", S, f"Follow-up date. {_DATE}")],
          ["customer_name", "assigned_to_email", "status"]),
    _spec("customer_relationship_manager_delete_customer", "Delete the customer with the given id.",
          [("customer_id", S, "Id of the customer")], ["customer_id"]),
]

SPECS_BY_NAME = {s.name: s for s in TOOL_SPECS}
