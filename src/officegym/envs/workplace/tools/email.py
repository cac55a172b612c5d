"""E-mail tools (SPEC 1.2)."""

from __future__ import annotations

from officegym.envs.workplace.errors import Rejected
from officegym.envs.workplace.frame_ops import array_contains, column_max, eq_mask, ne_mask
from officegym.envs.workplace.timestamps import parse_timestamp
from officegym.envs.workplace.tools.base import Toolkit, paginate, records
from officegym.envs.workplace.world import EMAIL_COLUMNS, email_haystack

_FIELDS = ", ".join(EMAIL_COLUMNS)


class EmailTool(Toolkit):
    __slots__ = ()

    def _first(self, email_id):
        table = self.s.emails
        mask = eq_mask([r[0] for r in table.rows], email_id)
        for row, hit in zip(table.rows, mask):
            if hit:
                return dict(zip(EMAIL_COLUMNS, row))
        return None

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
            cache = self.s.world.email_haystacks
            hits = []
            for row in self.s.emails.rows:
                hay = cache.get(id(row))
                if hay is None:
                    hay = email_haystack(row)
                if all(w in hay for w in words):
                    hits.append(row)
            # Newest first; the reference sorts parsed datetimes (ties keep table order).
            keyed = [(parse_timestamp(r[4]), i, r) for i, r in enumerate(hits)]
            keyed.sort(key=lambda t: (t[0], -t[1]), reverse=True)
            emails = records(EMAIL_COLUMNS, [r for _, _, r in keyed])
            if date_min:
                emails = [e for e in emails if parse_timestamp(e["sent_datetime"]).date() >= parse_timestamp(date_min).date()]
            if date_max:
                emails = [e for e in emails if parse_timestamp(e["sent_datetime"]).date() <= parse_timestamp(date_max).date()]
            result = paginate(emails, page, page_size, "emails", "total_emails")
            if len(emails):
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
            email_id = str(int(column_max([r[0] for r in table.rows])) + 1) if table.rows else "1"
            table.append((email_id, "outbox", recipient, subject, self.s.world.now, body))
            return "Email sent successfully."
        except Exception as e:
            return Rejected(f"Error sending email: {e}")

    def delete_email(self, email_id=None):
        if not email_id:
            return Rejected("Email ID not provided.")
        try:
            table = self.s.emails
            ids = [r[0] for r in table.rows]
            if array_contains(ids, email_id):
                table.keep(ne_mask(ids, email_id))
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
            if not array_contains([r[0] for r in self.s.emails.rows], email_id):
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
            if not array_contains([r[0] for r in self.s.emails.rows], email_id):
                return Rejected("Email not found.")
            email = self._first(email_id)
            # Replying to an outbox mail goes to its original recipient: the same column.
            result = self.send_email(email["sender/recipient"], f"RE: {email['subject']}", body)
            if "Error" in result or "Invalid" in result:
                return result
            return "Email replied successfully."
        except Exception as e:
            return Rejected(f"Error replying to email: {e}")
