"""Analytics tools (SPEC 1.4). The visit log is read-only and pre-aggregated per date at load."""

from __future__ import annotations

from officegym.envs.workplace import str_dtype as pandas3
from officegym.envs.workplace.frame_ops import eq_mask
from officegym.envs.workplace.results import Rejected
from officegym.envs.workplace.tools.base import Toolkit
from officegym.envs.workplace.world import ANALYTICS_COLUMNS

PLOT_VALUES = [
    "total_visits", "session_duration_seconds", "user_engaged",
    "visits_direct", "visits_referral", "visits_search_engine", "visits_social_media",
]
PLOT_TYPES = ["bar", "line", "scatter", "histogram"]


class AnalyticsTool(Toolkit):
    __slots__ = ()

    def _dates(self, time_min, time_max) -> list[str]:
        """Dates with visits in range: the reference's string comparisons on date_of_visit.

        Comparing per date is the same as per visit row; only a list bound (compared elementwise by
        pandas) needs the row count for its error message."""
        world = self.s.world
        dates = world.dates
        text = self.s.pandas3
        if time_min:
            dates = [d for d, keep in zip(dates, _compare(dates, ">=", time_min, len(world.analytics), text)) if keep]
        if time_max:
            rows = len(world.analytics) if not time_min else sum(world.date_stats[d].visits for d in dates)
            dates = [d for d, keep in zip(dates, _compare(dates, "<=", time_max, rows, text)) if keep]
        return list(dates)

    def get_visitor_information_by_id(self, visitor_id=None):
        if not visitor_id:
            return Rejected("Visitor ID not provided.")
        world = self.s.world
        if isinstance(visitor_id, str):
            rows = [world.analytics[i] for i in world.visitors.get(visitor_id, ())]
        else:
            ids = [r[1] for r in world.analytics]
            rows = [r for r, hit in zip(world.analytics, eq_mask(ids, visitor_id, self.s.pandas3)) if hit]
        if not rows:
            return Rejected("Visitor not found.")
        out = [dict(zip(ANALYTICS_COLUMNS, r)) for r in rows]
        if self.s.durations_as_float:
            for rec in out:
                rec["session_duration_seconds"] = float(rec["session_duration_seconds"])
        return out

    def create_plot(self, time_min=None, time_max=None, value_to_plot=None, plot_type=None):
        if not time_min:
            return Rejected("Start date not provided.")
        if not time_max:
            return Rejected("End date not provided.")
        if value_to_plot not in PLOT_VALUES:
            return Rejected(
                "Value to plot must be one of 'total_visits', 'session_duration_seconds', 'user_engaged', "
                "'visits_direct', 'visits_referral', 'visits_search_engine', 'visits_social_media'"
            )
        if plot_type not in PLOT_TYPES:
            return Rejected("Plot type must be one of 'bar', 'line', 'scatter', or 'histogram'")
        file_path = f"plots/{time_min}_{time_max}_{value_to_plot}_{plot_type}.png"
        self.s.plots.append((file_path,))
        return file_path

    def total_visits_count(self, time_min=None, time_max=None):
        stats = self.s.world.date_stats
        return {d: stats[d].visits for d in self._dates(time_min, time_max)}

    def engaged_users_count(self, time_min=None, time_max=None):
        stats = self.s.world.date_stats
        return {d: stats[d].engaged for d in self._dates(time_min, time_max)}

    def traffic_source_count(self, time_min=None, time_max=None, traffic_source=None):
        dates = self._dates(time_min, time_max)
        stats = self.s.world.date_stats
        if traffic_source:
            if self.s.pandas3:
                pandas3.check_eq(traffic_source)
            if isinstance(traffic_source, list):
                n = sum(stats[d].visits for d in dates)
                if len(traffic_source) != n:
                    raise ValueError(("Lengths must match to compare", (n,), (len(traffic_source),)))
            if not isinstance(traffic_source, str):
                return {d: 0 for d in dates}
            return {d: stats[d].by_source.get(traffic_source, 0) for d in dates}
        return {d: stats[d].visits for d in dates}

    def get_average_session_duration(self, time_min=None, time_max=None):
        if not time_min and not time_max:
            # The reference converts the whole column to float in place when unfiltered.
            self.s.durations_as_float = True
        stats = self.s.world.date_stats
        dates = self._dates(time_min, time_max)
        for d in dates:
            if stats[d].duration_sum != stats[d].duration_sum:  # NaN: a non-numeric duration
                raise ValueError(f"could not convert string to float: {stats[d].bad_duration!r}")
        return {d: stats[d].duration_sum / stats[d].visits for d in dates}


def _compare(dates, op: str, bound, rows: int, str_dtype: bool) -> list[bool]:
    if str_dtype:
        pandas3.check_compare(op, bound, len(dates))
    if isinstance(bound, list):
        raise ValueError(("Lengths must match to compare", (rows,), (len(bound),)))
    if op == ">=":
        return [d >= bound for d in dates]
    return [d <= bound for d in dates]
