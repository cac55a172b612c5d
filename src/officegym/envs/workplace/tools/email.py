"""E-mail tools (SPEC 1.2)."""

from __future__ import annotations

from officegym.envs.workplace.frame_ops import timestamp
from officegym.envs.workplace.results import Rejected
from officegym.envs.workplace.tools.base import Toolkit, paginate, records
from officegym.envs.workplace.world import EMAIL_COLUMNS, email_haystack

_FIELDS = ", ".join(EMAIL_COLUMNS)


class EmailTool(Toolkit):
    __slots__ = ()

    def _first(self, email_id):
        table = self.s.emails
        hits = table.id_positions(email_id)
        return dict(zip(EMAIL_COLUMNS, table.rows[hits[0]])) if hits else None

    def _entries(self):
        """(haystack, sent time, row) per e-mail in table order; cached for rows of the world."""
        world = self.s.world
        table = self.s.emails
        if not table.owned:
            return world.email_entries
        index = world.email_index
        return [index.get(id(row)) or (email_haystack(row), None, row) for row in table.rows]

    def get_email_information_by_id(self, email_id=None, field=None):
        if not email_id:
            return Rejected("Email ID not provided.")
        if not field:
            return Rejected("Field not provided.")
        try:
            email = self._first(email_id)
            if email is not None:
                if field in email:
                    return {field: email[field]}
                return Rejected(f"Field '{field}' not found. Available fields: {_FIELDS}")
            return Rejected("Email not found.")
        except Exception as e:
            return Rejected(f"Error retrieving email information: {e}")

    def search_emails(self, query="", date_min=None, date_max=None, page=1, page_size=5):
        try:
            words = query.lower().split()
            entries = self._entries()
            for w in words:  # every word must occur; filtering word by word narrows fast
                entries = [e for e in entries if w in e[0]]
            hits = [(e[1] if e[1] is not None else timestamp(e[2][4]), e[2]) for e in entries]
            # Newest first; a stable sort keeps table order among equal times.
            hits.sort(key=lambda h: h[0], reverse=True)
            if date_min and hits:
                low = timestamp(date_min).date()
                hits = [h for h in hits if h[0].date() >= low]
            if date_max and hits:
                high = timestamp(date_max).date()
                hits = [h for h in hits if h[0].date() <= high]
            result = paginate(hits, page, page_size, "emails", "total_emails")
            if hits:
                result["emails"] = records(EMAIL_COLUMNS, [row for _, row in result["emails"]])
                return result
            return "No emails found."
        except Exception as e:
            return Rejected(f"Error searching emails: {e}")

    def send_email(self, recipient=None, subject=None, body=None):
        if not recipient or not subject or not body:
            return Rejected("Recipient, subject, or body not provided.")
        if "@" not in recipient or "." not in recipient:
            return Rejected("Invalid recipient email address.")
        try:
            recipient = recipient.lower()
            table = self.s.emails
            email_id = str(int(table.max_id()) + 1) if table.rows else "1"
            table.append((email_id, "outbox", recipient, subject, self.s.world.now, body))
            return "Email sent successfully."
        except Exception as e:
            return Rejected(f"Error sending email: {e}")

    def delete_email(self, email_id=None):
        if not email_id:
            return Rejected("Email ID not provided.")
        try:
            table = self.s.emails
            if table.has_id(email_id):
                table.delete_id(email_id)
                return "Email deleted successfully."
            return Rejected("Email not found.")
        except Exception as e:
            return Rejected(f"Error deleting email: {e}")

    def forward_email(self, email_id=None, recipient=None):
        if not email_id or not recipient:
            return Rejected("Email ID or recipient not provided.")
        if "@" not in recipient or "." not in recipient:
            return Rejected("Invalid recipient email address.")
        try:
            if not self.s.emails.has_id(email_id):
                return Rejected("Email not found.")
            recipient = recipient.lower()
            email = self._first(email_id)
            result = self.send_email(recipient, f"FW: {email['subject']}", email["body"])
            if "Error" in result or "Invalid" in result:
                return result
            return "Email forwarded successfully."
        except Exception as e:
            return Rejected(f"Error forwarding email: {e}")

    def reply_email(self, email_id=None, body=None):
        if not email_id or not body:
            return Rejected("Email ID or body not provided.")
        try:
            if not self.s.emails.has_id(email_id):
                return Rejected("Email not found.")
            email = self._first(email_id)
            # Replying to an outbox mail goes to its original recipient: the same column.
            result = self.send_email(email["sender/recipient"], f"RE: {email['subject']}", body)
            if "Error" in result or "Invalid" in result:
                return result
            return "Email replied successfully."
        except Exception as e:
            return Rejected(f"Error replying to email: {e}")
