"""Multi-domain task templates: chains across CRM, calendar, e-mail, analytics and projects."""

from __future__ import annotations

import random
from datetime import date, timedelta

from officegym.envs.workplace.tasks.analytics_templates import _counts, _kind, _recent_day, plot
from officegym.envs.workplace.tasks.base import Plan, call, find, need, pick, template
from officegym.envs.workplace.tasks.calendar_templates import clock, free_starts, upcoming_days
from officegym.envs.workplace.tasks.crm_templates import find_customer, named_customer
from officegym.envs.workplace.tasks.crm_templates import update as update_customer
from officegym.envs.workplace.tasks.dates import day_phrase, month_day, since_phrase
from officegym.envs.workplace.tasks.pm_templates import overdue, unique_task
from officegym.envs.workplace.tasks.pm_templates import update as update_task
from officegym.envs.workplace.tasks.reads import (
    customer_hits,
    day_bounds,
    search_customers,
    search_emails,
    search_events,
    search_tasks,
    stamp,
    task_hits,
)
from officegym.envs.workplace.tasks.text import BODIES, METRICS, PRODUCTS, REPLIES, SOURCES
from officegym.envs.workplace.tasks.view import WorldView

EMAIL, CAL, AN, PM, CRM = "email", "calendar", "analytics", "project_management", "customer_relationship_manager"


def send(to: str, subject: str, body: str):
    return call("email_send_email", recipient=to, subject=subject, body=body)


def create_event(name: str, who: str, start, minutes: int):
    return call("calendar_create_event", event_name=name, participant_email=who, event_start=stamp(start),
                duration=str(minutes))


def _slot(w: WorldView, r: random.Random, minutes: int = 30):
    d = pick(r, upcoming_days(w, 10, with_events=False))
    start = pick(r, free_starts(w, d, minutes))
    phrase, rel = day_phrase(d, w.today, r)
    return d, start, phrase, int(rel)


@template("multi.crm_owner_meeting", (CRM, CAL), (
    "Set up a {minutes}-minute meeting called '{name}' with the sales rep who owns {customer}, {day} at {at}",
    "Book '{name}' for {minutes} minutes {day} at {at} with whoever is assigned to {customer} in the CRM.",
    "Find {customer}'s account owner in the CRM and schedule '{name}' with them {day} at {at} ({minutes} minutes).",
))
def crm_owner_meeting(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r)
    minutes = r.choice((30, 60))
    _, start, phrase, rel = _slot(w, r, minutes)
    name = f"{c.name} account review"
    return Plan({"minutes": minutes, "name": name, "customer": c.name, "day": phrase, "at": clock(start)},
                [find_customer(w, c), create_event(name, c.assignee, start, minutes)], date_steps=rel)


@template("multi.visits_email", (AN, EMAIL), (
    "Email {first} the number of visits we had {day}. Use the subject 'Visits on {iso}' and the body 'We had <number> visits on {iso}.'",
    "Tell {first} by email how many visits the site got {day}: subject 'Visits on {iso}', body 'We had <number> visits on {iso}.' with the real number.",
    "Look up total visits {day} and send {first} an email titled 'Visits on {iso}' saying 'We had <number> visits on {iso}.'",
))
def visits_email(w: WorldView, r: random.Random) -> Plan:
    d = _recent_day(w, r, 14)
    address = pick(r, w.people)
    phrase, rel = day_phrase(d, w.today, r)
    n = w.visits(d.isoformat())
    return Plan({"first": w.first(address), "day": phrase, "iso": d.isoformat()}, [
        call("analytics_total_visits_count", time_min=d.isoformat(), time_max=d.isoformat()), find(w.first(address)),
        send(address, f"Visits on {d.isoformat()}", f"We had {n} visits on {d.isoformat()}.")], date_steps=rel)


@template("multi.overdue_email", (PM, EMAIL), (
    "If {first} has any overdue tasks, email them with the subject 'Overdue tasks' and the body '{body}'. Otherwise do nothing.",
    "Check whether {first} has tasks past their due date that aren't completed; if so send them an email (subject 'Overdue tasks', body '{body}'), if not, don't.",
    "Send {first} an email titled 'Overdue tasks' saying '{body}', but only if they have overdue tasks.",
), can_do_nothing=True)
def overdue_email(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, w.engineers)
    late = overdue(w, address)
    need(late is not None)
    body = "Please give me an update on your overdue tasks."
    mail = send(address, "Overdue tasks", body)
    fired = bool(late)

    def trigger(probe) -> bool:
        out = probe("project_management_search_tasks", {"assigned_to_email": address})
        return isinstance(out, list) and any(
            t["list_name"] != "Completed" and t["due_date"] < w.today.isoformat() for t in out)

    return Plan({"first": w.first(address), "body": body}, [
        find(w.first(address)), search_tasks(w, assignee=address)] + ([mail] if fired else []),
        conditions=1, date_steps=1, trigger=trigger, trigger_expected=fired, tempting=[] if fired else [mail])


@template("multi.email_to_meeting", (EMAIL, CAL), (
    "Schedule a 30-minute meeting named '{subject}' with whoever sent me the email '{subject}', {day} at {at}",
    "Whoever emailed me about '{subject}': book 30 minutes with them {day} at {at}, called '{subject}'.",
    "Set up '{subject}' (30 minutes) {day} at {at} with the sender of the email with that subject.",
))
def email_to_meeting(w: WorldView, r: random.Random) -> Plan:
    by_subject = w.emails_by_subject
    subject = pick(r, sorted(s for s, es in by_subject.items()
                             if len(es) == 1 and es[0].box == "inbox" and es[0].address in w.people))
    target = by_subject[subject][0]
    _, start, phrase, rel = _slot(w, r)
    return Plan({"subject": subject, "day": phrase, "at": clock(start)}, [
        search_emails(w, [target], subject), create_event(subject, target.address, start, 30)], date_steps=rel)


@template("multi.forward_to_next_meeting", (CAL, EMAIL), (
    "Forward my last email from {first} to the person I'm meeting next",
    "Whoever my next meeting is with should get {first}'s most recent email; please forward it.",
    "Send the latest email from {first} on to the participant of my next meeting.",
))
def forward_to_next_meeting(w: WorldView, r: random.Random) -> Plan:
    future = [e for e in w.events if e.start > w.now]
    need(bool(future))
    nxt = future[0]
    need(nxt.participant in w.people and (len(future) < 2 or future[1].start != nxt.start))
    address = pick(r, [a for a in w.people if a != nxt.participant
                       and any(e.box == "inbox" for e in w.emails_by_address.get(a, ()))])
    last = [e for e in w.emails_by_address[address] if e.box == "inbox"][-1]
    return Plan({"first": w.first(address)}, [
        search_events(w, [nxt], "", w.now, day_bounds(nxt.start.date())[1]),
        find(w.first(address)), search_emails(w, [last], address),
        call("email_forward_email", email_id=last.id, recipient=nxt.participant)], date_steps=1)


@template("multi.crm_email_customers", (CRM, EMAIL), (
    "Email all of {first}'s {status} customers interested in {product} with the subject '{subject}' and the body '{body}'",
    "Send '{subject}' / '{body}' by email to every {status} customer of {first} who wants {product}.",
    "For each customer {first} owns in the {status} stage with {product} interest, send an email: subject '{subject}', body '{body}'.",
))
def crm_email_customers(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, w.sales)
    status, product = r.choice(("Lead", "Qualified", "Proposal")), r.choice(PRODUCTS)
    targets = customer_hits(w, assignee=address, status=status, product=product)
    need(1 <= len(targets) <= 4 and all(c.email and "@" in c.email and "." in c.email for c in targets))
    subject, body = "Following up", pick(r, BODIES)
    return Plan({"first": w.first(address), "status": status.lower(), "product": product.lower(), "subject": subject,
                 "body": body}, [
        find(w.first(address)), search_customers(w, targets, assignee=address, status=status, product=product)]
        + [send(c.email, subject, body) for c in targets])


@template("multi.cond_review_meeting", (PM, CAL), (
    "If {first} has any tasks in review, book a 30-minute '{name}' with them {day} at {at}. Otherwise do nothing.",
    "Does {first} have tasks In Review? If yes, schedule '{name}' with them {day} at {at} for 30 minutes; if no, leave my calendar alone.",
    "Only if {first} has something in the In Review list, set up a 30 minute '{name}' with them {day} at {at}.",
), can_do_nothing=True)
def cond_review_meeting(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, w.engineers)
    in_review = task_hits(w, assignee=address, list_name="In Review")
    _, start, phrase, rel = _slot(w, r)
    name = "Review sync"
    make = create_event(name, address, start, 30)
    fired = bool(in_review)

    def trigger(probe) -> bool:
        out = probe("project_management_search_tasks", {"assigned_to_email": address, "list_name": "In Review"})
        return isinstance(out, list) and len(out) > 0

    return Plan({"first": w.first(address), "name": name, "day": phrase, "at": clock(start)}, [
        find(w.first(address)), search_tasks(w, assignee=address, list_name="In Review")] + ([make] if fired else []),
        conditions=1, date_steps=rel, trigger=trigger, trigger_expected=fired, tempting=[] if fired else [make])


@template("multi.engagement_task", (AN, PM), (
    "If fewer users were engaged {day1} than {day2}, create a task '{name}' for {first} on the {board} board in Backlog, due {due}. Otherwise do nothing.",
    "Compare engaged users {day1} and {day2}. If it dropped, add '{name}' to the {board} board's Backlog for {first}, due {due}; if not, do nothing.",
    "Only when engagement {day1} was lower than {day2}, create the Backlog task '{name}' ({board} board, {first}, due {due}).",
), can_do_nothing=True)
def engagement_task(w: WorldView, r: random.Random) -> Plan:
    d1 = _recent_day(w, r, 7)
    d2 = d1 - timedelta(days=r.choice((1, 7)))
    e1, e2 = w.engaged(d1.isoformat()), w.engaged(d2.isoformat())
    need(e1 != e2 and d2.isoformat() in w.visit_dates)
    address = pick(r, w.engineers)
    board = w.board_of[address]
    due = w.today + timedelta(days=r.randint(3, 14))
    name = "Investigate the engagement drop"
    need(w.task_name_counts.get(name.lower(), 0) == 0)
    p1, rel1 = day_phrase(d1, w.today, r)
    p2, rel2 = day_phrase(d2, w.today, r, relative=False)
    make = call("project_management_create_task", task_name=name, assigned_to_email=address, list_name="Backlog",
                due_date=due.isoformat(), board=board)
    fired = e1 < e2
    reads = [call("analytics_engaged_users_count", time_min=d.isoformat(), time_max=d.isoformat()) for d in (d1, d2)]
    return Plan({"day1": p1, "day2": p2, "name": name, "first": w.first(address), "board": board,
                 "due": month_day(due)}, reads + [find(w.first(address))] + ([make] if fired else []),
                conditions=1, date_steps=rel1 + rel2,
                trigger=lambda probe: _counts(probe, "analytics_engaged_users_count", d1)
                < _counts(probe, "analytics_engaged_users_count", d2),
                trigger_expected=fired, tempting=[] if fired else [make])


@template("multi.traffic_task_choice", (AN, PM), (
    "Create a Backlog task for {first} on the {board} board due {due}: call it 'Grow {source} traffic' if {source} visits since {since} were below {k}, otherwise 'Maintain {source} traffic'.",
    "Check {source} visits since {since}. Under {k}? Then add 'Grow {source} traffic' for {first} ({board} board, Backlog, due {due}); else add 'Maintain {source} traffic' the same way.",
    "Depending on whether {source} traffic since {since} was under {k} visits, create 'Grow {source} traffic' or 'Maintain {source} traffic' in {first}'s Backlog on the {board} board, due {due}.",
))
def traffic_task_choice(w: WorldView, r: random.Random) -> Plan:
    source = r.choice(sorted(SOURCES))
    since = _recent_day(w, r, 30, 3)
    total = sum(w.source_visits(d, source) for d in w.visit_dates if d >= since.isoformat())
    k = max(1, total + r.choice((-5, -2, 3, 6)))
    address = pick(r, w.engineers)
    board = w.board_of[address]
    due = w.today + timedelta(days=r.randint(3, 21))
    since_text, rel = since_phrase(since, w.today, r)
    name = f"{'Grow' if total < k else 'Maintain'} {source} traffic"
    return Plan({"first": w.first(address), "board": board, "due": month_day(due), "source": source,
                 "since": since_text, "k": k}, [
        call("analytics_traffic_source_count", time_min=since.isoformat(), time_max=w.today.isoformat(),
             traffic_source=source), find(w.first(address)),
        call("project_management_create_task", task_name=name, assigned_to_email=address, list_name="Backlog",
             due_date=due.isoformat(), board=board)], conditions=1, date_steps=int(rel))


@template("multi.email_task_assignee", (PM, EMAIL), (
    "Email the person assigned to '{task}' with the subject '{task}' and the body '{body}'",
    "Whoever owns the task '{task}' should get an email: subject '{task}', body '{body}'.",
    "Find the assignee of '{task}' and send them '{body}' with '{task}' as the subject.",
))
def email_task_assignee(w: WorldView, r: random.Random) -> Plan:
    task = unique_task(w, r)
    body = pick(r, BODIES)
    return Plan({"task": task.name, "body": body}, [search_tasks(w, task_name=task.name), send(task.assignee, task.name, body)])


@template("multi.customer_demo", (CRM, CAL), (
    "Book a 60-minute '{customer} demo' {day} at {at} with {customer} at their email address from the CRM",
    "Schedule '{customer} demo' for an hour {day} at {at}; invite {customer} using the email in the CRM.",
    "Put a 60 minute '{customer} demo' on my calendar {day} at {at}, with {customer}'s CRM email as the participant.",
))
def customer_demo(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r, [c for c in w.customers if c.email])
    _, start, phrase, rel = _slot(w, r, 60)
    return Plan({"customer": c.name, "day": phrase, "at": clock(start)},
                [find_customer(w, c), create_event(f"{c.name} demo", c.email, start, 60)], date_steps=rel)


@template("multi.cond_meeting_moves_tasks", (CAL, PM), (
    "If I have a meeting with {first} {day}, move their In Progress tasks to In Review. Otherwise leave them.",
    "Am I meeting {first} {day}? If so, put all of {first}'s In Progress tasks into In Review; if not, do nothing.",
    "Only if {first} is on my calendar {day}, move {first}'s tasks from In Progress to In Review.",
), can_do_nothing=True)
def cond_meeting_moves_tasks(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, [a for a in w.engineers if task_hits(w, assignee=a, list_name="In Progress")])
    targets = task_hits(w, assignee=address, list_name="In Progress")
    need(len(targets) <= 4)
    d = pick(r, upcoming_days(w, 7, with_events=False))
    meets = [e for e in w.events_by_day.get(d, ()) if e.participant == address]
    fired = bool(meets)
    phrase, rel = day_phrase(d, w.today, r)
    lo, hi = day_bounds(d)
    moves = [update_task(t, "list_name", "In Review") for t in targets]

    def trigger(probe) -> bool:
        out = probe("calendar_search_events", {"query": address, "time_min": stamp(lo), "time_max": stamp(hi)})
        return isinstance(out, dict) and len(out["events"]) > 0

    return Plan({"first": w.first(address), "day": phrase}, [
        find(w.first(address)), call("calendar_search_events", query=address, time_min=stamp(lo), time_max=stamp(hi))]
        + ([search_tasks(w, assignee=address, list_name="In Progress"), *moves] if fired else []),
        conditions=1, date_steps=int(rel), trigger=trigger, trigger_expected=fired, tempting=[] if fired else moves)


@template("multi.won_and_email", (CRM, EMAIL), (
    "Mark {customer} as Won and email their account manager with the subject 'Closed: {customer}' and the body '{body}'",
    "{customer} signed! Set them to Won in the CRM and send their sales rep an email titled 'Closed: {customer}' saying '{body}'.",
    "Update {customer} to Won, then email whoever owns the account: subject 'Closed: {customer}', body '{body}'.",
))
def won_and_email(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r, [c for c in w.customers if c.status != "Won"])
    body = "Congratulations on closing this deal!"
    return Plan({"customer": c.name, "body": body}, [
        find_customer(w, c), update_customer(c, "status", "Won"), send(c.assignee, f"Closed: {c.name}", body)])


@template("multi.reassign_overdue_email", (PM, EMAIL), (
    "Reassign all of {first}'s overdue tasks to {second} and email {second} with the subject 'Handover' and the body '{body}'",
    "{second} takes over {first}'s overdue tasks: reassign them, then send {second} an email 'Handover' saying '{body}'.",
    "Give {first}'s overdue tasks to {second}, and let {second} know by email (subject 'Handover', body '{body}').",
))
def reassign_overdue_email(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, w.engineers)
    late = overdue(w, address)
    need(bool(late) and len(late) <= 4)
    other = pick(r, [a for a in w.engineers if a != address])
    body = "I have reassigned some overdue tasks to you. Thanks for picking them up."
    return Plan({"first": w.first(address), "second": w.first(other), "body": body}, [
        find(w.first(address)), find(w.first(other)), search_tasks(w, assignee=address)]
        + [update_task(t, "assigned_to_email", other) for t in late] + [send(other, "Handover", body)], date_steps=1)


@template("multi.email_next_meeting", (CAL, EMAIL), (
    "Email the person I'm meeting next with the subject 'See you soon' and the body '{body}'",
    "Send whoever my next meeting is with an email: subject 'See you soon', body '{body}'.",
    "Look up my next meeting and email its participant 'See you soon' / '{body}'.",
))
def email_next_meeting(w: WorldView, r: random.Random) -> Plan:
    future = [e for e in w.events if e.start > w.now]
    need(bool(future) and (len(future) < 2 or future[1].start != future[0].start))
    nxt = future[0]
    body = pick(r, ("Looking forward to our meeting.", "See you at our meeting!", "Talk soon."))
    return Plan({"body": body}, [search_events(w, [nxt], "", w.now, day_bounds(nxt.start.date())[1]),
                                 send(nxt.participant, "See you soon", body)], date_steps=1)


@template("multi.cond_won_onboarding", (CRM, PM), (
    "If {customer} is a Won customer, create a task 'Onboard {customer}' for {first} on the {board} board in Backlog due {due}. Otherwise do nothing.",
    "Check {customer}'s status: if Won, add 'Onboard {customer}' to {first}'s Backlog on the {board} board, due {due}; if not, do nothing.",
    "Only if we won {customer}, set up the Backlog task 'Onboard {customer}' for {first} ({board} board, due {due}).",
), can_do_nothing=True)
def cond_won_onboarding(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r)
    address = pick(r, w.engineers)
    board = w.board_of[address]
    due = w.today + timedelta(days=r.randint(3, 21))
    fired = c.status == "Won"
    make = call("project_management_create_task", task_name=f"Onboard {c.name}", assigned_to_email=address,
                list_name="Backlog", due_date=due.isoformat(), board=board)

    def trigger(probe) -> bool:
        out = probe("customer_relationship_manager_search_customers", {"customer_name": c.name})
        return isinstance(out, dict) and any(x["status"] == "Won" for x in out["customers"])

    return Plan({"customer": c.name, "first": w.first(address), "board": board, "due": month_day(due)},
                [find_customer(w, c), find(w.first(address))] + ([make] if fired else []), conditions=1,
                trigger=trigger, trigger_expected=fired, tempting=[] if fired else [make])


@template("multi.traffic_email_choice", (AN, EMAIL), (
    "If we had more than {k} visits {day}, email {first} 'Great traffic' with the body '{good}'; otherwise email them 'Low traffic' with the body '{bad}'.",
    "Check visits {day}. Over {k}: send {first} an email 'Great traffic' / '{good}'. Otherwise: 'Low traffic' / '{bad}'.",
    "Depending on whether visits {day} exceeded {k}, send {first} either 'Great traffic' ('{good}') or 'Low traffic' ('{bad}').",
))
def traffic_email_choice(w: WorldView, r: random.Random) -> Plan:
    d = _recent_day(w, r, 7)
    n = w.visits(d.isoformat())
    k = max(0, n + r.choice((-3, -1, 1, 3)))
    address = pick(r, w.people)
    good, bad = "Traffic looked great, nice work.", "Traffic was low; let's discuss."
    phrase, rel = day_phrase(d, w.today, r)
    mail = send(address, "Great traffic", good) if n > k else send(address, "Low traffic", bad)
    return Plan({"k": k, "day": phrase, "first": w.first(address), "good": good, "bad": bad}, [
        call("analytics_total_visits_count", time_min=d.isoformat(), time_max=d.isoformat()), find(w.first(address)), mail],
        conditions=1, date_steps=int(rel))


@template("multi.cancel_and_email", (CAL, EMAIL), (
    "Cancel my next meeting with {first} and email them with the subject 'Meeting cancelled' and the body '{body}'",
    "Delete my upcoming meeting with {first}, then let them know by email: 'Meeting cancelled', '{body}'.",
    "I can't make my next meeting with {first}. Remove it and send them 'Meeting cancelled' with the message '{body}'.",
))
def cancel_and_email(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, [a for a in w.people if any(e.start > w.now for e in w.events_by_person.get(a, ()))])
    target = next(e for e in w.events_by_person[address] if e.start > w.now)
    body = "Sorry, I have to cancel our meeting. Let's find another time."
    return Plan({"first": w.first(address), "body": body}, [
        find(w.first(address)), search_events(w, [target], address, w.now),
        call("calendar_delete_event", event_id=target.id), send(address, "Meeting cancelled", body)], date_steps=1)


@template("multi.email_customer_then_status", (CRM, EMAIL), (
    "Send {customer} an email with the subject '{subject}' and the body '{body}', then set their status to Proposal",
    "Email {customer} ('{subject}': '{body}') at the address in the CRM and move them to the Proposal stage.",
    "Write to {customer} using their CRM email - subject '{subject}', body '{body}' - and update their status to Proposal.",
))
def email_customer_then_status(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r, [c for c in w.customers if c.email and "." in c.email and c.status in ("Lead", "Qualified")])
    subject, body = "Our proposal", "Please find our proposal attached. Happy to answer any questions."
    return Plan({"customer": c.name, "subject": subject, "body": body}, [
        find_customer(w, c), send(c.email, subject, body), update_customer(c, "status", "Proposal")])


@template("multi.plot_and_email", (AN, EMAIL), (
    "Make a {kind} of {metric} since {since} and email {first} the file path of the plot, with the subject 'New chart'",
    "Create a {kind} of {metric} since {since}, then send {first} an email titled 'New chart' whose body is the plot's file path.",
    "Plot {metric} since {since} as a {kind} and mail the resulting file path to {first} (subject 'New chart').",
))
def plot_and_email(w: WorldView, r: random.Random) -> Plan:
    since = _recent_day(w, r, 30, 1)
    value = r.choice(sorted(METRICS))
    kind, kind_text = _kind(r)
    address = pick(r, w.people)
    since_text, rel = since_phrase(since, w.today, r)
    path = f"plots/{since.isoformat()}_{w.today.isoformat()}_{value}_{kind}.png"
    return Plan({"kind": kind_text, "metric": r.choice(METRICS[value]), "since": since_text, "first": w.first(address)}, [
        plot(since, w.today, value, kind), find(w.first(address)), send(address, "New chart", path)], date_steps=int(rel))


@template("multi.task_review_meeting", (PM, CAL), (
    "Schedule a {minutes}-minute 'Task review: {task}' with the assignee of '{task}' {day} at {at}",
    "Book {minutes} minutes {day} at {at} with whoever owns '{task}', called 'Task review: {task}'.",
    "Set up 'Task review: {task}' ({minutes} minutes) {day} at {at} with the person assigned to that task.",
))
def task_review_meeting(w: WorldView, r: random.Random) -> Plan:
    task = unique_task(w, r, [t for t in w.tasks if t.list_name != "Completed"])
    minutes = r.choice((30, 60))
    _, start, phrase, rel = _slot(w, r, minutes)
    return Plan({"minutes": minutes, "task": task.name, "day": phrase, "at": clock(start)}, [
        search_tasks(w, task_name=task.name), create_event(f"Task review: {task.name}", task.assignee, start, minutes)],
        date_steps=rel)


@template("multi.reply_and_complete", (EMAIL, PM), (
    "Reply '{reply}' to {first}'s last email, and mark their task '{task}' as completed",
    "Answer {first}'s most recent email with '{reply}', then move '{task}' to Completed.",
    "Send '{reply}' in reply to the latest email from {first} and set the task '{task}' to Completed.",
))
def reply_and_complete(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, [a for a in w.engineers if any(e.box == "inbox" for e in w.emails_by_address.get(a, ()))])
    last = [e for e in w.emails_by_address[address] if e.box == "inbox"][-1]
    task = unique_task(w, r, [t for t in w.tasks_by_assignee[address] if t.list_name != "Completed"])
    reply = pick(r, REPLIES)
    return Plan({"first": w.first(address), "reply": reply, "task": task.name}, [
        find(w.first(address)), search_emails(w, [last], address), call("email_reply_email", email_id=last.id, body=reply),
        search_tasks(w, task_name=task.name), update_task(task, "list_name", "Completed")])


@template("multi.cond_followup_meeting", (CRM, CAL), (
    "If {customer}'s follow-up date is before {day}, book a 30-minute '{customer} follow-up' with their account manager {when} at {at}. Otherwise do nothing.",
    "Check when {customer} needs a follow-up; if it is due before {day}, schedule '{customer} follow-up' (30 minutes) with the account owner {when} at {at}. If not, leave it.",
    "Only if {customer}'s follow-up is due earlier than {day}, set up a 30 minute '{customer} follow-up' {when} at {at} with whoever owns the account.",
), can_do_nothing=True)
def cond_followup_meeting(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r, [c for c in w.customers if c.follow_up_day])
    cut = date.fromisoformat(c.follow_up_day) + timedelta(days=r.choice((-5, -2, 2, 5)))
    fired = c.follow_up_day < cut.isoformat()
    _, start, when, rel = _slot(w, r)
    make = create_event(f"{c.name} follow-up", c.assignee, start, 30)

    def trigger(probe) -> bool:
        out = probe("customer_relationship_manager_search_customers", {"customer_name": c.name})
        return isinstance(out, dict) and any((x["follow_up_by"] or "")[:10] < cut.isoformat() for x in out["customers"])

    return Plan({"customer": c.name, "day": month_day(cut), "when": when, "at": clock(start)},
                [find_customer(w, c)] + ([make] if fired else []), conditions=1, date_steps=rel,
                trigger=trigger, trigger_expected=fired, tempting=[] if fired else [make])
