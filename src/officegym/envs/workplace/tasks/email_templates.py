"""E-mail task templates."""

from __future__ import annotations

import random
from datetime import timedelta

from officegym.envs.workplace.tasks.base import Plan, call, find, need, pick, template
from officegym.envs.workplace.tasks.dates import day_phrase, since_phrase
from officegym.envs.workplace.tasks.reads import search_emails
from officegym.envs.workplace.tasks.text import BODIES, REPLIES, SUBJECTS
from officegym.envs.workplace.tasks.view import WorldView


def _inbox(w: WorldView, address: str):
    return [e for e in w.emails_by_address.get(address, ()) if e.box == "inbox"]


def _sender(w: WorldView, r: random.Random, minimum: int = 1) -> str:
    return pick(r, [a for a in w.people if len(_inbox(w, a)) >= minimum])


@template("email.reply_last_about", "email", (
    "Reply to {first}'s last email about '{subject}' with '{body}'",
    "Please answer {first}'s most recent email about '{subject}' with '{body}'.",
    "Respond to the latest email {first} sent me about '{subject}': '{body}'",
))
def reply_last_about(w: WorldView, r: random.Random) -> Plan:
    address = _sender(w, r)
    subject = pick(r, {e.subject for e in _inbox(w, address)})
    target = max((e for e in _inbox(w, address) if e.subject == subject), key=lambda e: e.sent)
    body = pick(r, REPLIES)
    return Plan({"first": w.first(address), "subject": subject, "body": body}, [
        find(w.first(address)), search_emails(w, [target], f"{subject} {address}"),
        call("email_reply_email", email_id=target.id, body=body)])


@template("email.delete_last_from", "email", (
    "Delete my last email from {first}",
    "Can you delete the most recent email {first} sent me?",
    "Remove the latest email I got from {first}.",
))
def delete_last_from(w: WorldView, r: random.Random) -> Plan:
    address = _sender(w, r)
    target = _inbox(w, address)[-1]
    return Plan({"first": w.first(address)}, [
        find(w.first(address)), search_emails(w, [target], address), call("email_delete_email", email_id=target.id)])


@template("email.forward_last_from", "email", (
    "Forward {first}'s last email to {second}",
    "Please forward the most recent email from {first} to {second}.",
    "Send {second} the latest email I received from {first}.",
))
def forward_last_from(w: WorldView, r: random.Random) -> Plan:
    address = _sender(w, r)
    other = pick(r, [a for a in w.people if a != address])
    target = _inbox(w, address)[-1]
    return Plan({"first": w.first(address), "second": w.first(other)}, [
        find(w.first(address)), find(w.first(other)), search_emails(w, [target], address),
        call("email_forward_email", email_id=target.id, recipient=other)])


@template("email.send_to_person", "email", (
    "Send {first} an email with the subject '{subject}' saying '{body}'",
    "Email {first}: subject '{subject}', message '{body}'",
    "Can you write to {first}? Subject: '{subject}'. Body: '{body}'",
))
def send_to_person(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, w.people)
    subject, body = pick(r, SUBJECTS), pick(r, BODIES)
    return Plan({"first": w.first(address), "subject": subject, "body": body}, [
        find(w.first(address)), call("email_send_email", recipient=address, subject=subject, body=body)])


@template("email.send_to_address", "email", (
    "Send an email to {address} with the subject '{subject}' and the body '{body}'",
    "Email {address} with subject '{subject}': '{body}'",
    "Write an email to {address}. Subject '{subject}', text '{body}'.",
))
def send_to_address(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, w.directory)
    subject, body = pick(r, SUBJECTS), pick(r, BODIES)
    return Plan({"address": address, "subject": subject, "body": body},
                [call("email_send_email", recipient=address, subject=subject, body=body)])


@template("email.delete_all_subject", "email", (
    "Delete all emails with the subject '{subject}'",
    "Please remove every email whose subject is '{subject}'.",
    "Clean up my mailbox: delete all the emails titled '{subject}'.",
))
def delete_all_subject(w: WorldView, r: random.Random) -> Plan:
    by_subject = w.emails_by_subject
    # Only subjects whose search finds exactly those e-mails: "RE: <subject>" or a body that
    # mentions the subject would make "all emails with the subject" ambiguous.
    subject = pick(r, [s for s, es in by_subject.items()
                       if 2 <= len(es) <= 5 and len(w.email_matches(s)) == len(es)])
    targets = sorted(by_subject[subject], key=lambda e: e.sent, reverse=True)
    return Plan({"subject": subject}, [search_emails(w, targets, subject)]
                + [call("email_delete_email", email_id=e.id) for e in targets])


@template("email.forward_from_on_day", "email", (
    "Forward all the emails {first} sent me {day} to {second}",
    "Please send {second} every email I got from {first} {day}.",
    "Forward everything {first} emailed me {day} to {second}.",
))
def forward_from_on_day(w: WorldView, r: random.Random) -> Plan:
    address = _sender(w, r)
    d = pick(r, sorted({e.sent.date() for e in _inbox(w, address) if (w.today - e.sent.date()).days <= 30}))
    targets = sorted((e for e in _inbox(w, address) if e.sent.date() == d), key=lambda e: e.sent, reverse=True)
    need(len(targets) <= 3)
    other = pick(r, [a for a in w.people if a != address])
    phrase, rel = day_phrase(d, w.today, r)
    return Plan({"first": w.first(address), "second": w.first(other), "day": phrase}, [
        find(w.first(address)), find(w.first(other)), search_emails(w, targets, address, d, d)]
        + [call("email_forward_email", email_id=e.id, recipient=other) for e in targets], date_steps=int(rel))


@template("email.reply_latest_on_day", "email", (
    "Reply '{body}' to the last email I received {day}",
    "Answer the most recent email that came in {day} with '{body}'.",
    "For the latest email I got {day}, reply: '{body}'",
))
def reply_latest_on_day(w: WorldView, r: random.Random) -> Plan:
    days = sorted({e.sent.date() for e in w.emails if e.box == "inbox" and 0 <= (w.today - e.sent.date()).days <= 14})
    d = pick(r, days)
    inbox = [e for e in w.emails if e.box == "inbox" and e.sent.date() == d]
    target = max(inbox, key=lambda e: e.sent)
    need(sum(e.sent == target.sent for e in inbox) == 1)
    body = pick(r, REPLIES)
    phrase, rel = day_phrase(d, w.today, r)
    return Plan({"day": phrase, "body": body}, [
        search_emails(w, [target], "", d, d), call("email_reply_email", email_id=target.id, body=body)],
        date_steps=int(rel))


@template("email.cond_forward_recent", "email", (
    "If {first} has emailed me since {since}, forward their latest email to {second}. Otherwise, don't do anything.",
    "Check whether {first} sent me anything since {since}; if so, forward the most recent one to {second}, if not, leave it.",
    "Has {first} written to me since {since}? If yes, forward {second} their last email; if no, do nothing.",
), can_do_nothing=True)
def cond_forward_recent(w: WorldView, r: random.Random) -> Plan:
    address = _sender(w, r)
    other = pick(r, [a for a in w.people if a != address])
    last = _inbox(w, address)[-1]
    since = w.today - timedelta(days=r.choice((7, 14, 21, 28)))
    since_text, rel = since_phrase(since, w.today, r)
    fired = last.sent.date() >= since
    forward = call("email_forward_email", email_id=last.id, recipient=other)
    reads = [find(w.first(address)), find(w.first(other))]

    def trigger(probe) -> bool:
        out = probe("email_search_emails", {"query": address, "date_min": since.isoformat(), "page_size": 50})
        return isinstance(out, dict) and any(
            e["inbox/outbox"] == "inbox" and e["sender/recipient"] == address for e in out["emails"])

    if fired:
        calls = [*reads, search_emails(w, [last], address, since), forward]
    else:
        calls = [*reads, call("email_search_emails", query=address, date_min=since.isoformat())]
    return Plan({"first": w.first(address), "second": w.first(other), "since": since_text}, calls,
                conditions=1, date_steps=int(rel), trigger=trigger, trigger_expected=fired,
                tempting=[] if fired else [forward])


@template("email.delete_last_sent_to", "email", (
    "Delete the last email I sent to {first}",
    "Remove my most recent email to {first} from my outbox.",
    "Can you delete the latest message I sent {first}?",
))
def delete_last_sent_to(w: WorldView, r: random.Random) -> Plan:
    address = pick(r, [a for a in w.people if any(e.box == "outbox" for e in w.emails_by_address.get(a, ()))])
    target = [e for e in w.emails_by_address[address] if e.box == "outbox"][-1]
    return Plan({"first": w.first(address)}, [
        find(w.first(address)), search_emails(w, [target], address), call("email_delete_email", email_id=target.id)])
