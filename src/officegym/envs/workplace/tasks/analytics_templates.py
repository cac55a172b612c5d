"""Analytics task templates: plots (the only state analytics can change) and conditions on the
visit counts that decide whether, or which, plot to make."""

from __future__ import annotations

import random
from datetime import date, timedelta

from officegym.envs.workplace.tasks.base import Plan, call, need, pick, template
from officegym.envs.workplace.tasks.dates import MONTHS, day_phrase, month_day, since_phrase
from officegym.envs.workplace.tasks.text import METRICS, PLOTS, SOURCES
from officegym.envs.workplace.tasks.view import WorldView


def plot(time_min: date, time_max: date, value: str, kind: str):
    return call("analytics_create_plot", time_min=time_min.isoformat(), time_max=time_max.isoformat(),
                value_to_plot=value, plot_type=kind)


def _metric(r: random.Random, values=None) -> tuple[str, str]:
    value = r.choice(sorted(values or METRICS))
    return value, r.choice(METRICS[value])


def _kind(r: random.Random) -> tuple[str, str]:
    kind = r.choice(sorted(PLOTS))
    return kind, r.choice(PLOTS[kind])


def _recent_day(w: WorldView, r: random.Random, back: int = 30, min_back: int = 0) -> date:
    days = [date.fromisoformat(d) for d in w.visit_dates]
    return pick(r, [d for d in days if min_back <= (w.today - d).days <= back])


def _counts(probe, tool: str, day: date, **extra) -> int:
    out = probe(tool, {"time_min": day.isoformat(), "time_max": day.isoformat(), **extra})
    return int(out.get(day.isoformat(), 0)) if isinstance(out, dict) else 0


@template("analytics.plot_since", "analytics", (
    "Can you make a {kind} of {metric} since {since}?",
    "Plot {metric} since {since} as a {kind}.",
    "I'd like a {kind} showing {metric} from {since} until today.",
))
def plot_since(w: WorldView, r: random.Random) -> Plan:
    since = _recent_day(w, r, 45, 1)
    since_text, rel = since_phrase(since, w.today, r)
    value, metric = _metric(r)
    kind, kind_text = _kind(r)
    return Plan({"kind": kind_text, "metric": metric, "since": since_text}, [plot(since, w.today, value, kind)],
                date_steps=int(rel))


@template("analytics.plot_between", "analytics", (
    "Plot {metric} between {start} and {end} as a {kind}",
    "Make a {kind} of {metric} from {start} to {end}.",
    "Create a {kind} for {metric} covering {start} through {end}.",
))
def plot_between(w: WorldView, r: random.Random) -> Plan:
    a, b = sorted(r.sample([date.fromisoformat(d) for d in w.visit_dates if (w.today - date.fromisoformat(d)).days <= 80], 2))
    value, metric = _metric(r)
    kind, kind_text = _kind(r)
    return Plan({"kind": kind_text, "metric": metric, "start": month_day(a), "end": month_day(b)},
                [plot(a, b, value, kind)])


@template("analytics.plot_month", "analytics", (
    "Make a {kind} of {metric} for {month}",
    "Plot {metric} over the whole of {month} as a {kind}.",
    "I need a {kind} of {metric} for the month of {month}.",
))
def plot_month(w: WorldView, r: random.Random) -> Plan:
    first_days = sorted({date.fromisoformat(d).replace(day=1) for d in w.visit_dates})
    # Only whole months that are over and fully inside the visit log.
    months = [m for m in first_days if m.isoformat() in w.visit_dates and (m + timedelta(days=32)).replace(day=1) <= w.today]
    start = pick(r, months)
    end = (start + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    value, metric = _metric(r)
    kind, kind_text = _kind(r)
    return Plan({"kind": kind_text, "metric": metric, "month": MONTHS[start.month - 1]},
                [plot(start, end, value, kind)], date_steps=1)


@template("analytics.two_plots", "analytics", (
    "Create {kind}s of {metric} and of {metric2} since {since}",
    "Make two {kind}s since {since}: one of {metric}, then one of {metric2}.",
    "Plot {metric} and then {metric2} since {since}, each as a {kind}.",
))
def two_plots(w: WorldView, r: random.Random) -> Plan:
    since = _recent_day(w, r, 45, 1)
    since_text, rel = since_phrase(since, w.today, r)
    v1, v2 = r.sample(sorted(METRICS), 2)
    kind = r.choice(sorted(PLOTS))
    kind_text = {"bar": "bar chart", "line": "line chart", "scatter": "scatter plot", "histogram": "histogram"}[kind]
    return Plan({"kind": kind_text, "metric": r.choice(METRICS[v1]), "metric2": r.choice(METRICS[v2]), "since": since_text},
                [plot(since, w.today, v1, kind), plot(since, w.today, v2, kind)], date_steps=int(rel))


@template("analytics.all_sources", "analytics", (
    "Plot direct, referral, search engine and social media visits since {since}, in that order, each as a separate {kind}",
    "Make one {kind} per traffic source since {since}: direct, then referral, then search engine, then social media.",
    "For each traffic source (direct, referral, search engine, social media, in that order) create a {kind} of its visits since {since}.",
))
def all_sources(w: WorldView, r: random.Random) -> Plan:
    since = _recent_day(w, r, 45, 1)
    since_text, rel = since_phrase(since, w.today, r)
    kind, kind_text = _kind(r)
    values = [SOURCES[s] for s in ("direct", "referral", "search engine", "social media")]
    return Plan({"kind": kind_text, "since": since_text}, [plot(since, w.today, v, kind) for v in values],
                date_steps=int(rel))


@template("analytics.cond_visits_threshold", "analytics", (
    "If we had more than {k} visits {day}, make a {kind} of total visits since {since}. Otherwise do nothing.",
    "Check the visits {day}: if there were over {k}, plot total visits since {since} as a {kind}; if not, leave it.",
    "Only if visits {day} exceeded {k}, create a {kind} of total visits since {since}.",
), can_do_nothing=True)
def cond_visits_threshold(w: WorldView, r: random.Random) -> Plan:
    d = _recent_day(w, r, 30)
    n = w.visits(d.isoformat())
    k = max(0, n + r.choice((-3, -2, -1, 1, 2, 3)))
    since = _recent_day(w, r, 45, 1)
    phrase, rel = day_phrase(d, w.today, r)
    since_text, rel2 = since_phrase(since, w.today, r)
    kind, kind_text = _kind(r)
    make = plot(since, w.today, "total_visits", kind)
    fired = n > k
    read = call("analytics_total_visits_count", time_min=d.isoformat(), time_max=d.isoformat())
    return Plan({"k": k, "day": phrase, "since": since_text, "kind": kind_text}, [read] + ([make] if fired else []),
                conditions=1, date_steps=int(rel) + int(rel2),
                trigger=lambda probe: _counts(probe, "analytics_total_visits_count", d) > k,
                trigger_expected=fired, tempting=[] if fired else [make])


@template("analytics.cond_engaged_compare", "analytics", (
    "If more users were engaged {day1} than {day2}, make a {kind} of engaged users between those two days. Otherwise do nothing.",
    "Compare engaged users {day1} and {day2}; if {day1} had more, plot engaged users from {day2_short} to {day1_short} as a {kind}, else don't plot anything.",
    "Was engagement higher {day1} than {day2}? If so, create a {kind} of engaged users covering both days and everything in between.",
), can_do_nothing=True)
def cond_engaged_compare(w: WorldView, r: random.Random) -> Plan:
    d1 = _recent_day(w, r, 12)
    d2 = _recent_day(w, r, 40, (w.today - d1).days + 2)
    e1, e2 = w.engaged(d1.isoformat()), w.engaged(d2.isoformat())
    need(e1 != e2)
    p1, rel1 = day_phrase(d1, w.today, r)
    p2, rel2 = day_phrase(d2, w.today, r, relative=False)
    kind, kind_text = _kind(r)
    make = plot(d2, d1, "user_engaged", kind)
    fired = e1 > e2
    reads = [call("analytics_engaged_users_count", time_min=d.isoformat(), time_max=d.isoformat()) for d in (d1, d2)]
    return Plan({"day1": p1, "day2": p2, "day1_short": month_day(d1), "day2_short": month_day(d2), "kind": kind_text},
                reads + ([make] if fired else []), conditions=1, date_steps=int(rel1) + int(rel2),
                trigger=lambda probe: _counts(probe, "analytics_engaged_users_count", d1)
                > _counts(probe, "analytics_engaged_users_count", d2),
                trigger_expected=fired, tempting=[] if fired else [make])


@template("analytics.cond_source_choice", "analytics", (
    "If {source1} traffic brought more visits than {source2} traffic since {since}, plot {source1} visits since then as a {kind}; otherwise plot {source2} visits.",
    "Since {since}, which got more visits: {source1} or {source2}? Make a {kind} of whichever was higher, from {since} to today.",
    "Compare {source1} and {source2} visits since {since} and create a {kind} of the larger of the two over that period.",
))
def cond_source_choice(w: WorldView, r: random.Random) -> Plan:
    s1, s2 = r.sample(sorted(SOURCES), 2)
    since = _recent_day(w, r, 30, 1)
    days = [d for d in w.visit_dates if d >= since.isoformat()]
    n1 = sum(w.source_visits(d, s1) for d in days)
    n2 = sum(w.source_visits(d, s2) for d in days)
    need(n1 != n2)
    since_text, rel = since_phrase(since, w.today, r)
    kind, kind_text = _kind(r)
    winner = s1 if n1 > n2 else s2
    reads = [call("analytics_traffic_source_count", time_min=since.isoformat(), time_max=w.today.isoformat(),
                  traffic_source=s) for s in (s1, s2)]
    return Plan({"source1": s1, "source2": s2, "since": since_text, "kind": kind_text},
                [*reads, plot(since, w.today, SOURCES[winner], kind)], conditions=1, date_steps=int(rel))


@template("analytics.cond_short_sessions", "analytics", (
    "If the average session duration {day} was under {x} seconds, make a {kind} of session duration since {since}. Otherwise do nothing.",
    "Check the average session length {day}. Below {x} seconds? Then plot session duration since {since} as a {kind}; if not, leave it.",
    "Only when sessions averaged less than {x} seconds {day}, create a {kind} of session durations since {since}.",
), can_do_nothing=True)
def cond_short_sessions(w: WorldView, r: random.Random) -> Plan:
    d = _recent_day(w, r, 30)
    avg = w.average_duration(d.isoformat())
    need(avg is not None)
    x = max(1, round(avg) + r.choice((-4, -3, -2, 2, 3, 4)))
    need(abs(avg - x) >= 0.5)
    since = _recent_day(w, r, 45, 1)
    phrase, rel = day_phrase(d, w.today, r)
    since_text, rel2 = since_phrase(since, w.today, r)
    kind, kind_text = _kind(r)
    make = plot(since, w.today, "session_duration_seconds", kind)
    fired = avg < x
    read = call("analytics_get_average_session_duration", time_min=d.isoformat(), time_max=d.isoformat())

    def trigger(probe) -> bool:
        out = probe("analytics_get_average_session_duration", {"time_min": d.isoformat(), "time_max": d.isoformat()})
        return isinstance(out, dict) and float(out[d.isoformat()]) < x

    return Plan({"day": phrase, "x": x, "since": since_text, "kind": kind_text}, [read] + ([make] if fired else []),
                conditions=1, date_steps=int(rel) + int(rel2), trigger=trigger, trigger_expected=fired,
                tempting=[] if fired else [make])


@template("analytics.plot_week_of", "analytics", (
    "Make a {kind} of {metric} for the week starting {monday}",
    "Plot {metric} from {monday} through the following Sunday as a {kind}.",
    "I want a {kind} of {metric} for the seven days beginning {monday}.",
))
def plot_week_of(w: WorldView, r: random.Random) -> Plan:
    mondays = [date.fromisoformat(d) for d in w.visit_dates if date.fromisoformat(d).weekday() == 0]
    monday = pick(r, [m for m in mondays if (m + timedelta(days=6)).isoformat() <= w.visit_dates[-1]][-8:])
    value, metric = _metric(r)
    kind, kind_text = _kind(r)
    return Plan({"kind": kind_text, "metric": metric, "monday": f"Monday, {month_day(monday)}"},
                [plot(monday, monday + timedelta(days=6), value, kind)], date_steps=1)


@template("analytics.cond_visits_trend", "analytics", (
    "If total visits on {d2} were higher than on {d1}, make a line chart of total visits between those dates; otherwise make a bar chart of it.",
    "Compare total visits on {d1} and {d2}. Higher on {d2}? Plot total visits from {d1} to {d2} as a line chart. Not higher? Use a bar chart.",
    "Plot total visits from {d1} to {d2}: as a line chart if visits went up from the first day to the last, as a bar chart if not.",
))
def cond_visits_trend(w: WorldView, r: random.Random) -> Plan:
    a, b = sorted(r.sample([date.fromisoformat(d) for d in w.visit_dates if (w.today - date.fromisoformat(d)).days <= 60], 2))
    na, nb = w.visits(a.isoformat()), w.visits(b.isoformat())
    kind = "line" if nb > na else "bar"
    reads = [call("analytics_total_visits_count", time_min=d.isoformat(), time_max=d.isoformat()) for d in (a, b)]
    return Plan({"d1": month_day(a), "d2": month_day(b)}, [*reads, plot(a, b, "total_visits", kind)], conditions=1)


@template("analytics.cond_source_share", "analytics", (
    "If more than half of the visits {day} came from {source} traffic, make a {kind} of {source} visits since {since}. Otherwise do nothing.",
    "Did {source} account for over 50% of visits {day}? If it did, plot {source} visits since {since} as a {kind}; if not, skip it.",
    "Check whether {source} traffic was the majority of visits {day}; only then create a {kind} of {source} visits since {since}.",
), can_do_nothing=True)
def cond_source_share(w: WorldView, r: random.Random) -> Plan:
    d = _recent_day(w, r, 30)
    source = r.choice(("direct", "direct", "social media", "search engine", "referral"))
    n, s = w.visits(d.isoformat()), w.source_visits(d.isoformat(), source)
    need(n > 0 and 2 * s != n)
    since = _recent_day(w, r, 45, 1)
    phrase, rel = day_phrase(d, w.today, r)
    since_text, rel2 = since_phrase(since, w.today, r)
    kind, kind_text = _kind(r)
    make = plot(since, w.today, SOURCES[source], kind)
    fired = 2 * s > n
    reads = [call("analytics_total_visits_count", time_min=d.isoformat(), time_max=d.isoformat()),
             call("analytics_traffic_source_count", time_min=d.isoformat(), time_max=d.isoformat(), traffic_source=source)]
    return Plan({"day": phrase, "source": source, "since": since_text, "kind": kind_text},
                reads + ([make] if fired else []), conditions=1, date_steps=int(rel) + int(rel2),
                trigger=lambda probe: 2 * _counts(probe, "analytics_traffic_source_count", d, traffic_source=source)
                > _counts(probe, "analytics_total_visits_count", d),
                trigger_expected=fired, tempting=[] if fired else [make])
