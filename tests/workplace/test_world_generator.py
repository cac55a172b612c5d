"""The world generator: determinism, the csv_data layout, all 27 tools on a generated world,
consistency checks (and that they catch planted errors), sizes, originality, speed."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from officegym.envs.workplace.generate import (
    SIZES,
    WorldCheckError,
    check_tables,
    find_problems,
    generate_world,
    world_files,
    world_problems,
    write_world,
)
from officegym.envs.workplace.generate import names as vocab
from officegym.envs.workplace.generate.world import unique_address
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.envs.workplace.world import load_world

SEED = 7


@pytest.fixture(scope="module")
def generated():
    return generate_world(SEED)


@pytest.fixture(scope="module")
def world_dir(generated, tmp_path_factory) -> Path:
    return write_world(generated, tmp_path_factory.mktemp("worlds") / "seed7")


@pytest.fixture(scope="module")
def loaded(world_dir):
    return load_world(world_dir)


def _digest(world) -> str:
    h = hashlib.sha256()
    for rel, data in sorted(world_files(world).items()):
        h.update(rel.encode() + b"\0" + data)
    return h.hexdigest()


# ----------------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_bytes(tmp_path):
    a = write_world(generate_world(3, "small"), tmp_path / "a")
    b = write_world(generate_world(3, "small"), tmp_path / "b")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert [str(f) for f in files] == [
        "processed/analytics_data.csv", "processed/calendar_events.csv",
        "processed/customer_relationship_manager_data.csv", "processed/emails.csv", "processed/project_tasks.csv",
        "raw/email_addresses.csv", "world.json",
    ]
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    assert _digest(generate_world(SEED)) == _digest(generate_world(SEED))


def test_bytes_do_not_depend_on_the_hash_seed():
    code = (
        "import hashlib; from officegym.envs.workplace.generate import generate_world, world_files;"
        "files = world_files(generate_world(5, 'small'));"
        "h = hashlib.sha256();"
        "[h.update(k.encode() + b'\\0' + files[k]) for k in sorted(files)];"
        "print(h.hexdigest())"
    )
    digests = {
        subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": hs},
                       capture_output=True, text=True, check=True).stdout.strip()
        for hs in ("0", "4242")
    }
    assert digests == {_digest(generate_world(5, "small"))}


def test_different_seeds_give_different_companies():
    worlds = [generate_world(s, "small") for s in range(10)]
    assert len({_digest(w) for w in worlds}) == 10
    assert len({w.company.domain for w in worlds}) >= 8
    assert len({w.company.industry.key for w in worlds}) >= 4
    assert len({w.now for w in worlds}) >= 9
    assert len({w.user for w in worlds}) >= 4


def test_tables_draw_from_independent_streams():
    # Analytics does not depend on the company; calendar times do not depend on the user.
    a = generate_world(SEED, "small")
    b = generate_world(SEED, "small", company="Completely Different Corp", user="Quinn")
    assert a.tables["analytics"] == b.tables["analytics"]
    assert [r[3] for r in a.tables["calendar"]] == [r[3] for r in b.tables["calendar"]]
    assert a.tables["emails"] != b.tables["emails"]


# ---------------------------------------------------------------------------------- sizes, layout


@pytest.mark.parametrize("size", ["small", "reference", "large"])
def test_sizes_have_the_right_counts(size, generated):
    w = generated if size == "reference" else generate_world(SEED, size)
    spec = SIZES[size]
    assert w.counts == {
        "employees": spec.employees, "emails": spec.emails, "calendar": spec.events,
        "analytics": spec.visits, "project_tasks": spec.tasks, "crm": spec.customers,
    }
    if size == "reference":
        assert w.counts == {"employees": 20, "emails": 500, "calendar": 300, "analytics": 1000,
                            "project_tasks": 300, "crm": 200}
    assert len(set(w.directory)) == len(w.directory)
    assert all(a.endswith("@" + w.company.domain) for a in w.directory)
    assert Counter(e.team for e in w.employees) == {t: spec.per_team for t in vocab.TEAMS}
    assert not any(w.user.lower() in a for a in w.directory)
    if spec.unique_first_names:  # a first name finds exactly one person, as in the reference
        for e in w.employees:
            assert [a for a in w.directory if e.first.lower() in a] == [e.email]
    owners = {r[2] for r in w.tables["project_tasks"]} | {r[1] for r in w.tables["crm"]}
    assert owners == set(w.directory)  # everybody owns a task (engineering, design) or a customer (sales)
    assert w.problems() == []


def test_large_size_is_ten_times_reference():
    ref, large = SIZES["reference"], SIZES["large"]
    for field in ("employees", "emails", "events", "visits", "tasks", "customers"):
        assert getattr(large, field) == 10 * getattr(ref, field)


def test_colliding_names_get_distinct_addresses():
    taken: set[str] = set()
    first = unique_address("Maya", "Silva", "x.com", taken)
    taken.add(first)
    second = unique_address("Maya", "Silva", "x.com", taken)
    taken.add(second)
    assert (first, second, unique_address("Maya", "Silva", "x.com", taken)) == (
        "maya.silva@x.com", "maya.silva2@x.com", "maya.silva3@x.com")


def test_written_folder_loads_and_matches_memory(generated, world_dir, loaded):
    meta = json.loads((world_dir / "world.json").read_text())
    assert {"now", "seed", "size", "company", "domain", "user", "counts"} <= set(meta)
    assert (meta["seed"], meta["size"], meta["now"], meta["user"]) == (SEED, "reference", generated.now, generated.user)
    assert meta["counts"] == generated.counts
    assert loaded.now == generated.now
    assert (world_dir / "raw" / "email_addresses.csv").read_text().splitlines() == list(generated.directory)
    memory = generated.to_world()
    for name in ("emails", "calendar", "project_tasks", "crm"):
        assert loaded.tables[name] == memory.tables[name], name
    assert loaded.analytics == memory.analytics
    assert world_problems(loaded, meta) == []


def test_write_is_atomic_and_refuses_to_clobber(tmp_path, generated):
    small = generate_world(1, "small")
    out = write_world(small, tmp_path / "w")
    with pytest.raises(FileExistsError):
        write_world(small, out)
    (tmp_path / "empty").mkdir()
    write_world(small, tmp_path / "empty")  # an existing empty folder is fine
    write_world(generate_world(2, "small"), out, overwrite=True)
    assert json.loads((out / "world.json").read_text())["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "w"]  # no temp folders left


def test_arguments_are_validated():
    with pytest.raises(ValueError, match="size"):
        generate_world(1, "huge")
    with pytest.raises(ValueError, match="now"):
        generate_world(1, "small", now="30/11/2023")
    with pytest.raises(ValueError, match="user"):
        generate_world(1, "small", user="R2D2")
    with pytest.raises(TypeError):
        generate_world("1", "small")


# ------------------------------------------------------------------------------------ content


def test_now_default_and_given():
    w = generate_world(SEED, "small")
    now = datetime.fromisoformat(w.now)
    assert w.now.endswith(" 23:59:00") and now.weekday() < 5
    g = generate_world(SEED, "small", now="2024-05-15")
    assert g.now == "2024-05-15 23:59:00"
    h = generate_world(SEED, "small", now="2024-05-15 12:30:00")
    assert max(r[4] for r in h.tables["emails"]) <= "2024-05-15 12:30:00"
    assert h.problems() == []


def test_reference_world_is_shaped_like_the_reference(generated):
    w, t = generated, generated.tables
    now, today = w.now, w.now[:10]
    emails, events, tasks, crm, visits = t["emails"], t["calendar"], t["project_tasks"], t["crm"], t["analytics"]
    # mail: inbox and outbox threads, all before now, within ~2 months, sorted ascending
    assert {r[1] for r in emails} == {"inbox", "outbox"}
    assert any(r[3].startswith("RE: ") for r in emails)
    assert [r[4] for r in emails] == sorted(r[4] for r in emails) and emails[-1][4] <= now
    assert (date.fromisoformat(today) - date.fromisoformat(emails[0][4][:10])).days <= 61
    assert all("\\n" in r[5] and "\n" not in r[5] for r in emails)  # literal backslash-n, one line
    assert all(f"{w.user}" in r[5] for r in emails)
    # ids: a permutation, not the row order
    assert [r[0] for r in emails] != sorted(r[0] for r in emails)
    # calendar: past and future meetings
    future = sum(r[3] > now for r in events)
    assert 0.05 * len(events) < future < 0.4 * len(events)
    assert {r[4] for r in events} == {"30", "60", "90", "120"}
    # tasks: every board, several lists, due dates around now, some overdue
    assert Counter(r[5] for r in tasks) == {"Back end": 100, "Front end": 100, "Design": 100}
    overdue = [r for r in tasks if r[4] < today and r[3] != "Completed"]
    assert 0 < len(overdue) < 0.35 * len(tasks)
    assert any(r[4] > today for r in tasks)
    # CRM: sales team owns it; reference date format; sorted by last contact, most recent first
    assert {r[1] for r in crm} == set(w.teams["Sales"])
    assert all(r[5].endswith(" 23:59:00") and r[8].endswith(" 23:59:00") for r in crm)
    assert [r[5] for r in crm] == sorted((r[5] for r in crm), reverse=True)
    # analytics: the reference's distributions, roughly
    sources = Counter(r[4] for r in visits)
    assert 400 < sources["direct"] < 600 and 220 < sources["social media"] < 380
    assert 3 < sum(int(r[2]) for r in visits) / len(visits) < 8.5
    assert 14 < sum(int(r[3]) for r in visits) / len(visits) < 26
    assert all(r[5] == str(int(r[3]) > 10 and int(r[2]) > 1) for r in visits)
    assert max(r[0] for r in visits) <= today


def test_task_mails_match_their_tasks(generated):
    tasks = {r[1]: r for r in generated.tables["project_tasks"]}
    done = [r for r in generated.tables["emails"] if r[3].startswith("Done: ") and r[3][6:] in tasks]
    assert done
    for row in done:
        task = tasks[row[3][6:]]
        assert row[1] == "inbox" and row[2] == task[2]
    # mails about a customer name a real customer and come from its owner
    owners = {r[2]: r[1] for r in generated.tables["crm"]}
    recaps = [r for r in generated.tables["emails"] if r[3].startswith("Call recap: ")]
    assert recaps and all(owners[r[3][len("Call recap: "):]] == r[2] for r in recaps)


def test_custom_company_and_user():
    w = generate_world(4, "small", company="Acme Rockets", user="Quinn")
    assert w.company.name == "Acme Rockets" and w.company.domain.startswith("acmerockets.")
    assert w.user == "Quinn" and not any("quinn" in a for a in w.directory)
    assert any(r[5].startswith("Hi Quinn,") or r[5].endswith("Quinn") for r in w.tables["emails"])


# --------------------------------------------------------------------------- the 27 tools on it


def test_every_tool_works_on_a_generated_world(generated, loaded):
    w, t = generated, generated.tables
    today = date.fromisoformat(w.now[:10])
    s = loaded.new_session()
    used: set[str] = set()

    def out(tool, **args):
        used.add(tool)
        return json.loads(s.call(tool, args))["output"]

    # directory: a first name finds exactly its person; the user is not there
    for e in w.employees:
        assert out("company_directory_find_email_address", name=e.first) == [e.email]
    assert out("company_directory_find_email_address", name=w.user) == []
    assert out("company_directory_find_email_address", name=w.company.domain) == list(w.directory)

    # e-mail
    by_id = {r[0]: r for r in t["emails"]}
    assert out("email_get_email_information_by_id", email_id="00000000", field="subject") == {"subject": by_id["00000000"][3]}
    task_name = next(r[1] for r in t["project_tasks"] if any(r[1] in m[3] for m in t["emails"]))
    expected = [m for m in t["emails"] if all(word in f"{m[3]} {m[5]} {m[2]}".lower() for word in task_name.lower().split())]
    found = out("email_search_emails", query=task_name, page_size=100)
    assert found["pagination"]["total_emails"] == len(expected) > 0
    assert {e["email_id"] for e in found["emails"]} == {m[0] for m in expected}
    last_day = t["emails"][-1][4][:10]
    on_day = out("email_search_emails", date_min=last_day, date_max=last_day, page_size=100)
    assert on_day["pagination"]["total_emails"] == sum(m[4].startswith(last_day) for m in t["emails"])
    someone = w.teams["Design"][0]
    assert out("email_send_email", recipient=someone, subject="Hello", body="Hi there") == "Email sent successfully."
    assert s.emails.rows[-1][:3] == ("500", "outbox", someone) and s.emails.rows[-1][4] == w.now
    inbox = next(r for r in t["emails"] if r[1] == "inbox")
    assert out("email_reply_email", email_id=inbox[0], body="Thanks!") == "Email replied successfully."
    assert s.emails.rows[-1][2:4] == (inbox[2], f"RE: {inbox[3]}")
    assert out("email_forward_email", email_id=inbox[0], recipient=someone) == "Email forwarded successfully."
    assert s.emails.rows[-1][2:4] == (someone, f"FW: {inbox[3]}")
    assert out("email_delete_email", email_id=inbox[0]) == "Email deleted successfully."
    assert out("email_delete_email", email_id=inbox[0]) == "Email not found."

    # calendar
    event = next(r for r in t["calendar"] if r[0] == "00000000")
    assert out("calendar_get_event_information_by_id", event_id="00000000", field="event_name") == {"event_name": event[1]}
    person = event[2]
    upcoming = out("calendar_search_events", query=person, time_min=w.now, page_size=100)
    expected = [r for r in t["calendar"] if r[2] == person and r[3] >= w.now]
    if expected:
        assert upcoming["pagination"]["total_events"] == len(expected)
        starts = [e["event_start"] for e in upcoming["events"]]
        assert starts == sorted(starts, reverse=True) and all(x > w.now for x in starts)
    else:
        assert upcoming == "No events found."
    tomorrow = today + timedelta(days=1)
    while tomorrow.weekday() >= 5:
        tomorrow += timedelta(days=1)
    busy = [(datetime.fromisoformat(r[3]), int(r[4])) for r in t["calendar"] if r[3].startswith(tomorrow.isoformat())]
    slot = datetime.combine(tomorrow, datetime.min.time()).replace(hour=9)
    while any(b <= slot < b + timedelta(minutes=d) or slot <= b < slot + timedelta(minutes=30) for b, d in busy):
        slot += timedelta(minutes=30)
    new_id = out("calendar_create_event", event_name="Generator check", participant_email=someone,
                 event_start=f"{slot:%Y-%m-%d %H:%M:%S}", duration="30")
    assert new_id == "00000300"
    assert out("calendar_update_event", event_id=new_id, field="duration", new_value="60") == "Event updated successfully."
    assert out("calendar_delete_event", event_id="00000005") == "Event deleted successfully."
    assert out("calendar_delete_event", event_id="5") == "Invalid event ID format. Expected 8-digit ID."

    # analytics
    visits = t["analytics"]
    visitor = visits[0][1]
    records = out("analytics_get_visitor_information_by_id", visitor_id=visitor)
    assert len(records) == sum(r[1] == visitor for r in visits)
    assert records[0]["user_engaged"] is (visits[0][5] == "True")
    totals = out("analytics_total_visits_count")
    assert sum(totals.values()) == len(visits) and max(totals) <= w.now[:10]
    assert sum(out("analytics_engaged_users_count").values()) == sum(r[5] == "True" for r in visits)
    direct = out("analytics_traffic_source_count", traffic_source="direct")
    assert sum(direct.values()) == sum(r[4] == "direct" for r in visits)
    day = visits[0][0]
    durations = [int(r[3]) for r in visits if r[0] == day]
    avg = out("analytics_get_average_session_duration", time_min=day, time_max=day)
    assert avg == {day: pytest.approx(sum(durations) / len(durations))}
    first = (today - timedelta(days=6)).isoformat()
    assert out("analytics_create_plot", time_min=first, time_max=today.isoformat(), value_to_plot="total_visits",
               plot_type="bar") == f"plots/{first}_{today.isoformat()}_total_visits_bar.png"

    # project management
    task = next(r for r in t["project_tasks"] if r[0] == "00000000")
    assert out("project_management_get_task_information_by_id", task_id="00000000", field="assigned_to_email") == {
        "assigned_to_email": task[2]}
    mine = out("project_management_search_tasks", assigned_to_email=task[2])
    assert len(mine) == sum(r[2] == task[2] for r in t["project_tasks"]) > 0
    assert len(out("project_management_search_tasks", board="Design", list_name="Completed")) == sum(
        r[5] == "Design" and r[3] == "Completed" for r in t["project_tasks"])
    engineer = w.teams["Back end"][0]
    assert out("project_management_create_task", task_name="Generator check", assigned_to_email=engineer,
               list_name="Backlog", due_date=tomorrow.isoformat(), board="Back end") == "00000300"
    assert out("project_management_create_task", task_name="x", assigned_to_email=w.teams["Sales"][0],
               list_name="Backlog", due_date=tomorrow.isoformat(), board="Back end") == (
        "Assignee email not valid. Please choose from the list of team members.")
    assert out("project_management_update_task", task_id="00000000", field="list_name",
               new_value="Completed") == "Task updated successfully."
    assert out("project_management_delete_task", task_id="00000001") == "Task deleted successfully."

    # CRM, with the reference's date quirk: stored "YYYY-MM-DD 23:59:00", so *_max=D excludes day D
    crm = t["crm"]
    won = out("customer_relationship_manager_search_customers", status="Won", page_size=1000)
    assert won["pagination"]["total_customers"] == sum(r[7] == "Won" for r in crm)
    d = crm[len(crm) // 2][5][:10]
    on_or_after = out("customer_relationship_manager_search_customers", last_contact_date_min=d, page_size=1000)
    assert on_or_after["pagination"]["total_customers"] == sum(r[5][:10] >= d for r in crm)
    before = out("customer_relationship_manager_search_customers", last_contact_date_max=d, page_size=1000)
    assert before["pagination"]["total_customers"] == sum(r[5][:10] < d for r in crm)
    seller = crm[0][1]
    assert out("customer_relationship_manager_update_customer", customer_id=crm[0][0], field="status",
               new_value="Won") == "Customer updated successfully."
    assert out("customer_relationship_manager_add_customer", customer_name="New Prospect", assigned_to_email=seller,
               status="Lead") == "00000200"
    assert out("customer_relationship_manager_delete_customer", customer_id=crm[1][0]) == "Customer deleted successfully."

    assert used == {spec.name for spec in TOOL_SPECS}


# ------------------------------------------------------------------------------------ checks


def _tables(world):
    return {name: [list(r) for r in rows] for name, rows in world.tables.items()}


def _problems(world, tables):
    return find_problems(tables, world.directory, world.now, user=world.user, teams=world.teams, windows=world.windows)


def test_checks_catch_planted_errors():
    w = generate_world(2, "small")
    assert _problems(w, _tables(w)) == []

    t = _tables(w)
    t["emails"][1][0] = t["emails"][0][0]
    assert any("duplicate id" in p for p in _problems(w, t))

    t = _tables(w)
    t["emails"][3][2] = "mallory@elsewhere.com"
    assert any("'mallory@elsewhere.com' is not in the directory" in p for p in _problems(w, t))

    t = _tables(w)
    t["project_tasks"][0][2] = "ghost@" + w.company.domain
    t["crm"][0][1] = w.teams["Design"][0]  # a task owner also owning a customer
    found = _problems(w, t)
    assert any("ghost@" in p and "not in the directory" in p for p in found)
    assert any("owns customers and project tasks" in p for p in found)

    t = _tables(w)
    t["emails"][0][5] = "See nobody@nowhere.org for details"
    assert any("nobody@nowhere.org" in p for p in _problems(w, t))

    t = _tables(w)  # overlap: a second event starting inside the first one, same day
    e0 = t["calendar"][0]
    begin = datetime.fromisoformat(e0[3])
    clash = [t["calendar"][1][0], "clash", e0[2], f"{begin + timedelta(minutes=0):%Y-%m-%d %H:%M:%S}", "30"]
    t["calendar"][1] = clash
    assert any("overlap" in p for p in _problems(w, t))

    t = _tables(w)
    row = t["analytics"][0]
    row[5] = "False" if row[5] == "True" else "True"
    t["crm"][0][7] = "won"
    t["project_tasks"][0][3] = "Done"
    t["crm"][1][5] = "2023-13-01 23:59:00"
    t["calendar"][2][4] = "45"
    found = _problems(w, t)
    for needle in ("user_engaged is", "status 'won'", "list_name 'Done'", "last_contact_date '2023-13-01", "duration '45'"):
        assert any(needle in p for p in found), needle

    t = _tables(w)
    t["crm"][0][0] = "17"
    with pytest.raises(WorldCheckError) as info:
        check_tables(t, w.directory, w.now)
    assert "not an 8-digit string" in str(info.value) and info.value.problems


def test_checks_pass_on_the_reference_world(ref_world):
    # The reference's customer addresses have no top-level domain ("first.last@company").
    assert world_problems(ref_world, require_tld=False, user="Sam") == []
    assert any("customer_email" in p for p in world_problems(ref_world))


# ------------------------------------------------------------------------------ originality


def _reference_strings(reference_dir: Path) -> dict[str, set[str]]:
    processed = reference_dir / "csv_data" / "processed"

    def column(fname, name):
        with open(processed / fname, newline="", encoding="utf-8") as fh:
            return {row[name].lower() for row in csv.DictReader(fh)}

    events = column("calendar_events.csv", "event_name")
    raw_events = reference_dir / "csv_data" / "raw" / "events.csv"
    if raw_events.exists():
        events |= {line.strip().lower() for line in raw_events.read_text(encoding="utf-8").splitlines() if line.strip()}
    return {
        "subject": column("emails.csv", "subject"),
        "body": column("emails.csv", "body"),
        "event": events,
        "task": column("project_tasks.csv", "task_name"),
        "customer": column("customer_relationship_manager_data.csv", "customer_name"),
    }


def test_never_reproduces_reference_strings(reference_dir):
    ref = _reference_strings(reference_dir)
    # every customer name the vocabulary can make, and every fixed meeting name
    assert not {f"{first} {last}".lower() for first in vocab.FIRST_NAMES for last in vocab.LAST_NAMES} & ref["customer"]
    fixed = [m for pool in (vocab.MEETINGS_FORMAL, vocab.MEETINGS_INFORMAL, *vocab.MEETINGS_BY_TEAM.values())
             for m in pool if "{" not in m]
    assert not {m.lower() for m in fixed} & ref["event"]
    for seed in (0, 1, 2, SEED):
        w = generate_world(seed)
        t = w.tables
        assert not {r[3].lower() for r in t["emails"]} & ref["subject"], seed
        assert not {r[5].lower() for r in t["emails"]} & ref["body"], seed
        assert not {r[1].lower() for r in t["calendar"]} & ref["event"], seed
        assert not {r[1].lower() for r in t["project_tasks"]} & ref["task"], seed
        assert not {r[2].lower() for r in t["crm"]} & ref["customer"], seed


# ---------------------------------------------------------------------------------------- speed


def test_reference_size_generates_well_under_two_seconds():
    # A guard against accidental blow-ups, far above the measured time (benchmarks/world_gen_bench.py).
    best = min(_timed(lambda: generate_world(11)) for _ in range(2))
    assert best < 2.0


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
