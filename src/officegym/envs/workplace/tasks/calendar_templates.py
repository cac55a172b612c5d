"""Calendar task templates. Meetings are the user's; each event has one participant."""

from __future__ import annotations

import random
from datetime import date, datetime, time, timedelta

from officegym.envs.workplace.tasks.base import Plan, call, find, need, pick, template
from officegym.envs.workplace.tasks.dates import day_phrase
from officegym.envs.workplace.tasks.reads import day_bounds, search_events, stamp
from officegym.envs.workplace.tasks.text import MEETINGS, NEW_EVENT_NAMES
from officegym.envs.workplace.tasks.view import Event, WorldView

DAY_START, DAY_END = time(9, 0), time(18, 0)


def clock(t: datetime | time) -> str:
    """12-hour clock as people say it: "9am", "1:30pm"."""
    h, m = t.hour, t.minute
    suffix = "am" if h < 12 else "pm"
    h12 = h % 12 or 12
    return f"{h12}{suffix}" if m == 0 else f"{h12}:{m:02d}{suffix}"


def upcoming_days(w: WorldView, horizon: int = 14, with_events: bool = True) -> list[date]:
    days = [w.today + timedelta(days=k) for k in range(1, horizon + 1)]
    days = [d for d in days if d.weekday() < 5]
    return [d for d in days if w.events_by_day.get(d)] if with_events else days


def free_starts(w: WorldView, d: date, minutes: int) -> list[datetime]:
    """Half-hour starts on day d where a meeting of `minutes` fits between 9am and 6pm without overlap."""
    busy = w.events_by_day.get(d, [])
    out = []
    t = datetime.combine(d, DAY_START)
    last = datetime.combine(d, DAY_END) - timedelta(minutes=minutes)
    while t <= last:
        end = t + timedelta(minutes=minutes)
        if all(end <= e.start or t >= e.end for e in busy):
            out.append(t)
        t += timedelta(minutes=30)
    return out


def _future_day_with_events(w: WorldView, r: random.Random) -> tuple[date, list[Event]]:
    d = pick(r, upcoming_days(w))
    return d, w.events_by_day[d]


def _plan_day(w: WorldView, r: random.Random, d: date):
    phrase, rel = day_phrase(d, w.today, r)
    return phrase, int(rel)


@template("calendar.cancel_first_on_day", "calendar", (
    "Cancel my first meeting {day}",
    "Please delete the earliest event on my calendar {day}.",
    "Remove my first appointment {day}.",
))
def cancel_first_on_day(w: WorldView, r: random.Random) -> Plan:
    d, events = _future_day_with_events(w, r)
    target = events[0]
    phrase, steps = _plan_day(w, r, d)
    lo, hi = day_bounds(d)
    return Plan({"day": phrase}, [search_events(w, [target], "", lo, hi),
                                  call("calendar_delete_event", event_id=target.id)], date_steps=steps)


@template("calendar.rename_last_on_day", "calendar", (
    "Can you change the name of the last event {day} to {name}",
    "Rename my last meeting {day} to '{name}'.",
    "The final event on my calendar {day} should be called '{name}' - please update it.",
))
def rename_last_on_day(w: WorldView, r: random.Random) -> Plan:
    d, events = _future_day_with_events(w, r)
    target = events[-1]
    name = pick(r, [n for n in NEW_EVENT_NAMES if n.lower() != target.name.lower()])
    phrase, steps = _plan_day(w, r, d)
    lo, hi = day_bounds(d)
    return Plan({"day": phrase, "name": name}, [
        search_events(w, [target], "", lo, hi),
        call("calendar_update_event", event_id=target.id, field="event_name", new_value=name)], date_steps=steps)


@template("calendar.create_with_person", "calendar", (
    "Schedule a {minutes}-minute meeting called '{name}' with {first} {day} at {at}",
    "Book '{name}' with {first} {day} at {at} for {minutes} minutes.",
    "Put a {minutes} minute '{name}' on my calendar with {first}, {day} at {at}.",
))
def create_with_person(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, w.people)
    minutes = r.choice((30, 60, 90))
    d = pick(r, upcoming_days(w, with_events=False))
    start = pick(r, free_starts(w, d, minutes))
    name = pick(r, MEETINGS)
    phrase, steps = _plan_day(w, r, d)
    return Plan({"minutes": minutes, "name": name, "first": w.first(address), "day": phrase, "at": clock(start)}, [
        find(w.first(address)),
        call("calendar_create_event", event_name=name, participant_email=address, event_start=stamp(start),
             duration=str(minutes))], date_steps=steps)


@template("calendar.first_free_slot", "calendar", (
    "Book a {minutes}-minute '{name}' with {first} in my first free slot {day}",
    "Find the earliest free time {day} and schedule a {minutes} minute '{name}' with {first} there.",
    "Schedule '{name}' ({minutes} minutes) with {first} at the first time I'm free {day}.",
))
def first_free_slot(w: WorldView, r: random.Random) -> Plan:
    d, events = _future_day_with_events(w, r)
    minutes = r.choice((30, 60, 90))
    start = pick(r, free_starts(w, d, minutes)[:1])
    need(start.time() != DAY_START)  # a free 9am makes the search pointless; ask about busier days
    address = pick(r, w.people)
    name = pick(r, MEETINGS)
    phrase, steps = _plan_day(w, r, d)
    lo, hi = day_bounds(d)
    return Plan({"minutes": minutes, "name": name, "first": w.first(address), "day": phrase}, [
        search_events(w, events, "", lo, hi), find(w.first(address)),
        call("calendar_create_event", event_name=name, participant_email=address, event_start=stamp(start),
             duration=str(minutes))], date_steps=steps + 1)


@template("calendar.cancel_with_person_on_day", "calendar", (
    "Cancel my meetings with {first} {day}",
    "Please remove every meeting I have with {first} {day}.",
    "Clear all my events with {first} {day}.",
), can_do_nothing=True)
def cancel_with_person_on_day(w: WorldView, r: random.Random) -> Plan:
    """A third of the time the person has no meeting with me that day: nothing is cancelled."""
    d, events = _future_day_with_events(w, r)
    met = {e.participant for e in events}
    if r.random() < 1 / 3:
        address = pick(r, sorted(a for a in w.people if a not in met))
        targets, tempting = [], [call("calendar_delete_event", event_id=pick(r, events).id)]
    else:
        address = pick(r, sorted(a for a in met if a in w.people))
        targets, tempting = [e for e in events if e.participant == address], []
    phrase, steps = _plan_day(w, r, d)
    lo, hi = day_bounds(d)

    def trigger(probe) -> bool:
        out = probe("calendar_search_events", {"query": address, "time_min": stamp(lo), "time_max": stamp(hi),
                                               "page_size": 50})
        return isinstance(out, dict) and any(e["participant_email"] == address for e in out.get("events", ()))

    calls = [find(w.first(address)), search_events(w, targets, address, lo, hi) if targets else
             call("calendar_search_events", query=address, time_min=stamp(lo), time_max=stamp(hi))]
    return Plan({"first": w.first(address), "day": phrase},
                calls + [call("calendar_delete_event", event_id=e.id) for e in reversed(targets)], date_steps=steps,
                conditions=1, trigger=trigger, trigger_expected=bool(targets), tempting=tempting)


def _unique_named(events: list[Event]) -> list[Event]:
    names = [e.name.lower() for e in events]
    return [e for e in events if names.count(e.name.lower()) == 1]


def _named_event(w: WorldView, r: random.Random, ok=lambda e: True) -> tuple[date, list[Event], Event]:
    """An upcoming day with meetings and one of them whose name identifies it on that day."""
    d, events = _future_day_with_events(w, r)
    return d, events, pick(r, [e for e in _unique_named(events) if ok(e)])


def _update_named(w: WorldView, r: random.Random, d: date, target: Event, field: str, value: str):
    """The day's phrase, its date steps, and the calls: find the event by name that day, update it."""
    phrase, steps = _plan_day(w, r, d)
    lo, hi = day_bounds(d)
    return phrase, steps, [search_events(w, [target], target.name, lo, hi),
                           call("calendar_update_event", event_id=target.id, field=field, new_value=value)]


@template("calendar.reschedule", "calendar", (
    "Move my '{event}' meeting {day} to {at}",
    "Can you reschedule the '{event}' {day} so it starts at {at}?",
    "Push '{event}' {day} to {at}, please.",
))
def reschedule(w: WorldView, r: random.Random) -> Plan:
    d, events, target = _named_event(w, r)
    others = [e for e in events if e.id != target.id]
    starts = [t for t in free_starts(w, d, target.minutes)
              if t != target.start and all(t + timedelta(minutes=target.minutes) <= e.start or t >= e.end for e in others)]
    new = pick(r, starts)
    phrase, steps, calls = _update_named(w, r, d, target, "event_start", stamp(new))
    return Plan({"event": target.name, "day": phrase, "at": clock(new)}, calls, date_steps=steps)


@template("calendar.change_duration", "calendar", (
    "Make the '{event}' meeting {day} {minutes} minutes long",
    "Change the length of '{event}' {day} to {minutes} minutes.",
    "'{event}' {day} should last {minutes} minutes - update it please.",
))
def change_duration(w: WorldView, r: random.Random) -> Plan:
    d, _, target = _named_event(w, r)
    minutes = pick(r, [m for m in (30, 60, 90, 120) if m != target.minutes])
    phrase, steps, calls = _update_named(w, r, d, target, "duration", str(minutes))
    return Plan({"event": target.name, "day": phrase, "minutes": minutes}, calls, date_steps=steps)


@template("calendar.swap_participant", "calendar", (
    "Replace {first} with {second} in my '{event}' meeting {day}",
    "{second} will attend '{event}' {day} instead of {first}; update the invite.",
    "Change the participant of '{event}' {day} from {first} to {second}.",
))
def swap_participant(w: WorldView, r: random.Random) -> Plan:
    d, _, target = _named_event(w, r, lambda e: e.participant in w.people)
    other = pick(r, [a for a in w.people if a != target.participant])
    phrase, steps, calls = _update_named(w, r, d, target, "participant_email", other)
    return Plan({"first": w.first(target.participant), "second": w.first(other), "event": target.name, "day": phrase},
                [find(w.first(other)), *calls], date_steps=steps)


@template("calendar.cond_catch_up", "calendar", (
    "If I haven't met with {first} in the past fortnight, book a 30-minute '{name}' with them tomorrow at {at}. Otherwise leave my calendar as it is.",
    "Have I had a meeting with {first} in the last two weeks? If not, schedule '{name}' with them tomorrow at {at} for 30 minutes; if so, do nothing.",
    "Unless I've met {first} in the past two weeks, set up a 30 minute '{name}' with them at {at} tomorrow.",
), can_do_nothing=True)
def cond_catch_up(w: WorldView, r: random.Random) -> Plan:
    tomorrow = w.today + timedelta(days=1)
    need(tomorrow.weekday() < 5)
    address = pick(r, w.people)
    past = [e for e in w.events_by_person.get(address, ()) if e.start <= w.now]
    # "The past fortnight" read as 14 or as 13 days back must give the same answer.
    met = [any((w.today - e.start.date()).days <= span for e in past) for span in (13, 14)]
    need(met[0] == met[1])
    start = pick(r, free_starts(w, tomorrow, 30))
    name = pick(r, ("Catch-up", "Check-in", "Coffee chat", "1:1"))
    create = call("calendar_create_event", event_name=name, participant_email=address, event_start=stamp(start),
                  duration="30")
    since = datetime.combine(w.today - timedelta(days=14), time(0, 0))

    def trigger(probe) -> bool:
        out = probe("calendar_search_events", {"query": address, "time_min": stamp(since), "time_max": stamp(w.now),
                                               "page_size": 50})
        return not isinstance(out, dict)  # no meeting found: the booking is due

    window = call("calendar_search_events", query=address, time_min=stamp(since), time_max=stamp(w.now))
    fired = not met[0]
    calls = [find(w.first(address)), window] + ([create] if fired else [])
    return Plan({"first": w.first(address), "name": name, "at": clock(start)}, calls, conditions=1, date_steps=2,
                trigger=trigger, trigger_expected=fired, tempting=[] if fired else [create])


@template("calendar.cancel_next_with", "calendar", (
    "Cancel my next meeting with {first}",
    "Please delete the next event I have with {first}.",
    "I can't make my next meeting with {first}; remove it from my calendar.",
))
def cancel_next_with(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, [a for a in w.people if any(e.start > w.now for e in w.events_by_person.get(a, ()))])
    future = [e for e in w.events_by_person[address] if e.start > w.now]
    target = future[0]
    return Plan({"first": w.first(address)}, [
        find(w.first(address)), search_events(w, [target], address, w.now),
        call("calendar_delete_event", event_id=target.id)], date_steps=1)


@template("calendar.rename_upcoming", "calendar", (
    "Rename all my upcoming '{event}' meetings with {first} to '{name}'",
    "Every future '{event}' with {first} should now be called '{name}'. Please update them.",
    "Change the name of my upcoming '{event}' events with {first} to '{name}'.",
))
def rename_upcoming(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, w.people)
    future = [e for e in w.events_by_person.get(address, ()) if e.start > w.now]
    event = pick(r, {e.name for e in future})
    targets = [e for e in future if e.name == event]
    need(len(targets) <= 4)
    name = pick(r, NEW_EVENT_NAMES)
    return Plan({"event": event, "first": w.first(address), "name": name}, [
        find(w.first(address)), search_events(w, targets, address, w.now)]
        + [call("calendar_update_event", event_id=e.id, field="event_name", new_value=name) for e in targets],
        date_steps=1)


@template("calendar.clear_afternoon", "calendar", (
    "Clear my afternoon {day}: cancel every meeting that starts at noon or later",
    "Cancel all my meetings {day} that start at 12pm or after.",
    "I need my afternoon free {day}. Delete the events starting from noon onwards.",
))
def clear_afternoon(w: WorldView, r: random.Random) -> Plan:
    d, events = _future_day_with_events(w, r)
    noon = datetime.combine(d, time(12, 0))
    targets = [e for e in events if e.start >= noon]
    need(1 <= len(targets) <= 4)
    phrase, steps = _plan_day(w, r, d)
    _, hi = day_bounds(d)
    return Plan({"day": phrase}, [search_events(w, targets, "", noon, hi)]
                + [call("calendar_delete_event", event_id=e.id) for e in reversed(targets)], date_steps=steps)

