"""Sessions on a tiny hand-made world: copy-on-write, isolation, labels, clock."""

from __future__ import annotations

import json

from officegym.envs.workplace.world import load_world


def test_fresh_session_shares_base_rows(tiny_world):
    s = tiny_world.new_session()
    assert s.emails.rows is tiny_world.tables["emails"]
    assert not s.emails.owned


def test_first_write_copies_the_list_not_the_rows(tiny_world):
    s = tiny_world.new_session()
    s.call("email_delete_email", {"email_id": "00000001"})
    assert s.emails.owned and s.emails.rows is not tiny_world.tables["emails"]
    assert s.emails.rows[0] is tiny_world.tables["emails"][0]
    assert len(tiny_world.tables["emails"]) == 3
    assert tiny_world.new_session().emails.rows is tiny_world.tables["emails"]


def test_updates_do_not_touch_the_world_or_other_sessions(tiny_world):
    a, b = tiny_world.new_session(), tiny_world.new_session()
    a.call("customer_relationship_manager_update_customer", {"customer_id": "00000000", "field": "status", "new_value": "Won"})
    assert a.crm.rows[0][7] == "Won"
    assert b.crm.rows[0][7] == "Lead" and tiny_world.tables["crm"][0][7] == "Lead"


def test_row_labels_follow_the_reference(tiny_world):
    s = tiny_world.new_session()
    s.call("email_delete_email", {"email_id": "00000001"})
    assert s.emails.labels == [0, 2]
    s.call("email_send_email", {"recipient": "a.b@c.d", "subject": "s", "body": "b"})
    assert s.emails.labels == [0, 1, 2]  # insert relabels everything
    s.call("calendar_delete_event", {"event_id": "00000001"})
    s.call("calendar_create_event", {"event_name": "n", "participant_email": "a@b.c", "event_start": "2023-12-02 09:00:00", "duration": "30"})
    assert s.calendar.labels == [0, 2, 0]
    s.call("analytics_create_plot", {"time_min": "a", "time_max": "b", "value_to_plot": "user_engaged", "plot_type": "bar"})
    s.call("analytics_create_plot", {"time_min": "a", "time_max": "c", "value_to_plot": "user_engaged", "plot_type": "bar"})
    assert s.plots.labels == [0, 1]
    assert s.emails.origins == [0, 2, None]


def test_new_ids(tiny_world):
    s = tiny_world.new_session()
    out = lambda name, args: json.loads(s.call(name, args))["output"]  # noqa: E731
    assert out("calendar_create_event", {"event_name": "n", "participant_email": "a@b.c", "event_start": "2023-12-02", "duration": "30"}) == "00000003"
    assert out("customer_relationship_manager_add_customer", {"customer_name": "n", "assigned_to_email": "c@d.e", "status": "Lead"}) == "00000003"
    s.call("email_send_email", {"recipient": "a.b@c.d", "subject": "s", "body": "b"})
    assert s.emails.rows[-1][0] == "3"


def test_analytics_on_tiny_world(tiny_world):
    s = tiny_world.new_session()
    out = lambda name, args=None: json.loads(s.call(name, args or {}))["output"]  # noqa: E731
    assert out("analytics_total_visits_count") == {"2023-11-28": 2, "2023-11-29": 1, "2023-11-30": 1}
    assert out("analytics_engaged_users_count", {"time_min": "2023-11-29"}) == {"2023-11-29": 1, "2023-11-30": 0}
    assert out("analytics_traffic_source_count", {"traffic_source": "direct"}) == {"2023-11-28": 1, "2023-11-29": 0, "2023-11-30": 1}
    assert out("analytics_get_average_session_duration", {"time_max": "2023-11-28"}) == {"2023-11-28": 8.0}
    assert out("analytics_total_visits_count", {"time_min": 5}) == (
        "Error executing tool 'analytics_total_visits_count': '>=' not supported between instances of 'str' and 'int'"
    )


def test_world_clock_from_world_json(tmp_path, reference_dir):
    import shutil

    target = tmp_path / "w"
    shutil.copytree(reference_dir / "csv_data", target)
    (target / "world.json").write_text('{"now": "2025-03-04 17:00:00"}')
    w = load_world(target)
    s = w.new_session()
    s.call("email_send_email", {"recipient": "a.b@c.d", "subject": "s", "body": "b"})
    assert s.emails.rows[-1][4] == "2025-03-04 17:00:00"


def test_bad_world_folders(tmp_path):
    import pytest

    from officegym.envs.workplace.world import WorldFormatError

    with pytest.raises(WorldFormatError, match="is not a folder"):
        load_world(tmp_path / "nope")
    (tmp_path / "processed").mkdir()
    with pytest.raises(WorldFormatError, match="missing file"):
        load_world(tmp_path)
    (tmp_path / "processed" / "emails.csv").write_text("a,b\n1,2\n")
    with pytest.raises(WorldFormatError, match="header"):
        load_world(tmp_path)
