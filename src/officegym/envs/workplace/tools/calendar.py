"""Calendar tools (SPEC 1.3)."""

from __future__ import annotations

from officegym.envs.workplace.frame_ops import contains_mask, timestamp
from officegym.envs.workplace.results import Rejected
from officegym.envs.workplace.tools.base import Toolkit, paginate
from officegym.envs.workplace.world import CALENDAR_COLUMNS

_GET_FIELDS = ["event_id", "event_name", "participant_email", "event_start", "duration"]
_UPDATE_FIELDS = ["event_name", "participant_email", "event_start", "duration"]
_START_FORMAT = "Invalid event_start format. Expected YYYY-MM-DD HH:MM:SS."
_COL = {c: i for i, c in enumerate(CALENDAR_COLUMNS)}


def _valid_id(event_id) -> bool:
    return isinstance(event_id, str) and len(event_id) == 8 and event_id.isdigit()


def _check_start(value):
    try:
        timestamp(value)
    except ValueError:
        return Rejected(_START_FORMAT)
    return None


def _check_duration(value):
    try:
        if int(value) <= 0:
            return Rejected("Duration must be a positive number of minutes.")
    except ValueError:
        return Rejected("Invalid duration format. Expected a number of minutes.")
    return None


class CalendarTool(Toolkit):
    __slots__ = ()

    def get_event_information_by_id(self, event_id=None, field=None):
        if not event_id:
            return Rejected("Event ID not provided.")
        if not field:
            return Rejected("Field not provided.")
        if not _valid_id(event_id):
            return Rejected("Invalid event ID format. Expected 8-digit ID.")
        if field not in _GET_FIELDS:
            return Rejected(f"Invalid field. Available fields are: {', '.join(_GET_FIELDS)}")
        table = self.s.calendar
        hits = table.id_positions(event_id)
        if hits:
            return {field: table.rows[hits[0]][_COL[field]]}
        return Rejected("Event not found.")

    def search_events(self, query="", time_min=None, time_max=None, page=1, page_size=5):
        if time_min:
            try:
                time_min = timestamp(time_min)
            except ValueError:
                return Rejected("Invalid time_min format. Expected YYYY-MM-DD HH:MM:SS.")
        if time_max:
            try:
                time_max = timestamp(time_max)
            except ValueError:
                return Rejected("Invalid time_max format. Expected YYYY-MM-DD HH:MM:SS.")
        table = self.s.calendar
        rows = table.rows
        by_name = contains_mask([r[1] for r in rows], query, na=False, str_dtype=table.is_str(1))
        by_email = contains_mask([r[2] for r in rows], query, na=False, str_dtype=table.is_str(2))
        hits = [r for r, a, b in zip(rows, by_name, by_email) if a or b]
        starts = self.s.world.event_starts
        try:
            timed = [(starts.get(id(r)) or timestamp(r[3]), r) for r in hits] if (time_min or time_max or hits) else []
            if time_min:
                timed = [t for t in timed if t[0] >= time_min]
            if time_max:
                timed = [t for t in timed if t[0] <= time_max]
            if timed:
                timed.sort(key=lambda t: t[0], reverse=True)  # latest first; stable for ties
        except TypeError as exc:
            if "offset-naive and offset-aware" in str(exc):  # pandas words this differently
                raise TypeError("Cannot compare tz-naive and tz-aware timestamps") from None
            raise
        if timed:
            result = paginate(timed, page, page_size, "events", "total_events")
            result["events"] = [dict(zip(CALENDAR_COLUMNS, r)) for _, r in result["events"]]
            return result
        return "No events found."

    def create_event(self, event_name=None, participant_email=None, event_start=None, duration=None):
        if not event_name:
            return Rejected("Event name not provided.")
        if not participant_email:
            return Rejected("Participant email not provided.")
        if not event_start:
            return Rejected("Event start not provided.")
        if not duration:
            return Rejected("Event duration not provided.")
        bad = _check_start(event_start) or _check_duration(duration)
        if bad:
            return bad
        participant_email = participant_email.lower()
        table = self.s.calendar
        event_id = str(int(table.max_id()) + 1).zfill(8)
        table.append((event_id, event_name, participant_email, event_start, duration))
        return event_id

    def delete_event(self, event_id=None):
        if not event_id:
            return Rejected("Event ID not provided.")
        if not _valid_id(event_id):
            return Rejected("Invalid event ID format. Expected 8-digit ID.")
        table = self.s.calendar
        if table.has_id(event_id):
            table.delete_id(event_id)
            return "Event deleted successfully."
        return Rejected("Event not found.")

    def update_event(self, event_id=None, field=None, new_value=None):
        if not event_id or not field or not new_value:
            return Rejected("Event ID, field, or new value not provided.")
        if not _valid_id(event_id):
            return Rejected("Invalid event ID format. Expected 8-digit ID.")
        if field not in _UPDATE_FIELDS:
            return Rejected(f"Invalid field. Available fields are: {', '.join(_UPDATE_FIELDS)}")
        if field == "event_start":
            bad = _check_start(new_value)
            if bad:
                return bad
        elif field == "duration":
            bad = _check_duration(new_value)
            if bad:
                return bad
        table = self.s.calendar
        if table.has_id(event_id):
            if field == "participant_email":
                new_value = new_value.lower()
            table.set_where_id(event_id, _COL[field], new_value)
            return "Event updated successfully."
        return Rejected("Event not found.")
