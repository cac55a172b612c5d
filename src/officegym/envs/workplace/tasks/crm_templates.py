"""Customer-relationship-manager task templates."""

from __future__ import annotations

import random
from datetime import date, timedelta

from officegym.envs.workplace.tasks.base import Plan, call, find, need, pick, template
from officegym.envs.workplace.tasks.dates import month_day
from officegym.envs.workplace.tasks.reads import customer_hits, plain, search_customers
from officegym.envs.workplace.tasks.text import FIRMS, FIRST_NAMES, LAST_NAMES, PRODUCTS, STATUSES
from officegym.envs.workplace.tasks.view import Customer, WorldView


def update(c: Customer, field: str, value: str):
    return call("customer_relationship_manager_update_customer", customer_id=c.id, field=field, new_value=value)


def named_customer(w: WorldView, r: random.Random, pool=None) -> Customer:
    """A customer whose name finds only them."""
    ok = {c.id for c in w.nameable_customers}
    pool = pool if pool is not None else w.customers
    return pick(r, [c for c in pool if c.id in ok and plain(c.name)])


def find_customer(w: WorldView, c: Customer):
    return search_customers(w, [c], name=c.name)


def _rep(w: WorldView, r: random.Random, but: str | None = None) -> str:
    return pick(r, [a for a in w.sales if a != but])


@template("customer_relationship_manager.reassign_leads", "customer_relationship_manager", (
    "{second} is taking over all of {first}'s leads that are interested in {product}. Can you reassign them in the crm?",
    "Reassign every {product} lead owned by {first} to {second} in the CRM.",
    "Move {first}'s leads with an interest in {product} over to {second}.",
))
def reassign_leads(w: WorldView, r: random.Random) -> Plan:
    address = _rep(w, r)
    other = _rep(w, r, address)
    product = r.choice(PRODUCTS)
    targets = customer_hits(w, assignee=address, status="Lead", product=product)
    need(1 <= len(targets) <= 6)
    return Plan({"first": w.first(address), "second": w.first(other), "product": product.lower()}, [
        find(w.first(address)), find(w.first(other)),
        search_customers(w, targets, assignee=address, status="Lead", product=product)]
        + [update(c, "assigned_to_email", other) for c in targets])


@template("customer_relationship_manager.delete_status_product", "customer_relationship_manager", (
    "We no longer need to keep all of {first}'s customers that are in the {status} stage and interested in {product}. Can you delete them from the crm?",
    "Delete {first}'s {status} customers who are interested in {product} from the CRM.",
    "Remove every customer assigned to {first} with status {status} and {product} interest.",
))
def delete_status_product(w: WorldView, r: random.Random) -> Plan:
    address = _rep(w, r)
    status, product = r.choice(STATUSES), r.choice(PRODUCTS)
    targets = customer_hits(w, assignee=address, status=status, product=product)
    need(1 <= len(targets) <= 6)
    return Plan({"first": w.first(address), "status": status.lower(), "product": product.lower()}, [
        find(w.first(address)), search_customers(w, targets, assignee=address, status=status, product=product)]
        + [call("customer_relationship_manager_delete_customer", customer_id=c.id) for c in targets])


@template("customer_relationship_manager.stale_proposals", "customer_relationship_manager", (
    "Move all customers that haven't responded to a proposal for the {product} product in {weeks} weeks to lost in the crm",
    "Any {product} proposal with no contact for {weeks} weeks is lost: update those customers' status.",
    "Mark as Lost every customer in the Proposal stage for {product} whom we last contacted more than {weeks} weeks ago.",
))
def stale_proposals(w: WorldView, r: random.Random) -> Plan:
    product = r.choice(PRODUCTS)
    weeks = r.choice((2, 3, 4))
    cut = w.today - timedelta(weeks=weeks)
    pool = customer_hits(w, status="Proposal", product=product)
    # A customer contacted exactly on the cut-off day makes "more than N weeks" debatable.
    need(all(c.last_contact_day != cut.isoformat() for c in pool))
    targets = [c for c in pool if c.last_contact_day < cut.isoformat()]
    need(1 <= len(targets) <= 6)
    return Plan({"product": product.lower(), "weeks": weeks}, [
        search_customers(w, targets, status="Proposal", product=product, contact_max=cut.isoformat())]
        + [update(c, "status", "Lost") for c in targets], date_steps=1)


def _new_customer(w: WorldView, r: random.Random) -> tuple[str, str]:
    first, last = r.choice(FIRST_NAMES), r.choice(LAST_NAMES)
    name = f"{first} {last}"
    need(w.customer_name_counts.get(name.lower(), 0) == 0)
    return name, f"{first.lower()}.{last.lower()}@{r.choice(FIRMS)}.com"


@template("customer_relationship_manager.add_customer", "customer_relationship_manager", (
    "Add {name} to the CRM as a {status} interested in {product}, assigned to {first}",
    "New customer: {name}, status {status}, interested in {product}. {first} owns the account.",
    "Please create a CRM entry for {name} ({status}, {product}) and assign it to {first}.",
))
def add_customer(w: WorldView, r: random.Random) -> Plan:
    address = _rep(w, r)
    name, _ = _new_customer(w, r)
    status, product = r.choice(("Lead", "Lead", "Qualified")), r.choice(PRODUCTS)
    return Plan({"name": name, "status": status.lower(), "product": product.lower(), "first": w.first(address)}, [
        find(w.first(address)),
        call("customer_relationship_manager_add_customer", customer_name=name, assigned_to_email=address, status=status,
             product_interest=product)])


@template("customer_relationship_manager.add_customer_contact", "customer_relationship_manager", (
    "Add a new lead {name} (email {email}, phone {phone}) interested in {product} to the CRM and assign them to {first}",
    "Put {name} in the CRM: lead, {product}, {email}, {phone}, owner {first}.",
    "Create a lead for {name} with email {email} and phone {phone}; they want {product}. Assign to {first}.",
))
def add_customer_contact(w: WorldView, r: random.Random) -> Plan:
    address = _rep(w, r)
    name, email = _new_customer(w, r)
    phone = f"{r.randint(200, 989)}-{r.randint(200, 999)}-{r.randint(1000, 9999)}"
    product = r.choice(PRODUCTS)
    return Plan({"name": name, "email": email, "phone": phone, "product": product.lower(), "first": w.first(address)}, [
        find(w.first(address)),
        call("customer_relationship_manager_add_customer", customer_name=name, assigned_to_email=address, status="Lead",
             customer_email=email, customer_phone=phone, product_interest=product)])


@template("customer_relationship_manager.set_status", "customer_relationship_manager", (
    "Change {customer}'s status to {status} in the CRM",
    "{customer} is now {status}; update the CRM.",
    "Set the status of customer {customer} to {status}.",
))
def set_status(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r)
    status = pick(r, [s for s in STATUSES if s != c.status])
    return Plan({"customer": c.name, "status": status}, [find_customer(w, c), update(c, "status", status)])


@template("customer_relationship_manager.set_product", "customer_relationship_manager", (
    "{customer} is now interested in {product} instead. Update the CRM.",
    "Change the product interest of {customer} to {product}.",
    "In the CRM, {customer}'s product interest should be {product}.",
))
def set_product(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r)
    product = pick(r, [p for p in PRODUCTS if p != c.product])
    return Plan({"customer": c.name, "product": product}, [find_customer(w, c), update(c, "product_interest", product)])


@template("customer_relationship_manager.set_phone", "customer_relationship_manager", (
    "Update {customer}'s phone number to {phone}",
    "{customer} has a new phone number: {phone}. Please save it in the CRM.",
    "Set the phone of customer {customer} to {phone}.",
))
def set_phone(w: WorldView, r: random.Random) -> Plan:
    c = named_customer(w, r)
    phone = f"{r.randint(200, 989)}-{r.randint(200, 999)}-{r.randint(1000, 9999)}"
    return Plan({"customer": c.name, "phone": phone}, [find_customer(w, c), update(c, "customer_phone", phone)])


@template("customer_relationship_manager.cond_lead_qualified", "customer_relationship_manager", (
    "If {customer} is still a lead, mark them as qualified. Otherwise leave them alone.",
    "Check {customer} in the CRM: if their status is Lead, change it to Qualified; if not, do nothing.",
    "Move {customer} to Qualified, but only if they are currently a lead.",
), can_do_nothing=True)
def cond_lead_qualified(w: WorldView, r: random.Random) -> Plan:
    # An already qualified customer would make "do nothing" and "qualify" the same outcome.
    c = named_customer(w, r, [c for c in w.customers if c.status != "Qualified"])
    fired = c.status == "Lead"
    change = update(c, "status", "Qualified")

    def trigger(probe) -> bool:
        out = probe("customer_relationship_manager_search_customers", {"customer_name": c.name})
        return isinstance(out, dict) and any(x["status"] == "Lead" for x in out["customers"])

    return Plan({"customer": c.name}, [find_customer(w, c)] + ([change] if fired else []), conditions=1,
                trigger=trigger, trigger_expected=fired, tempting=[] if fired else [change])


@template("customer_relationship_manager.delete_lost_before", "customer_relationship_manager", (
    "Delete all of {first}'s lost customers that we last contacted before {day}",
    "Remove {first}'s customers in the Lost stage whose last contact was before {day}.",
    "Clean up the CRM: {first}'s lost customers not contacted since before {day} can go.",
), can_do_nothing=True)
def delete_lost_before(w: WorldView, r: random.Random) -> Plan:
    """The cut may be their earliest last contact: then no customer qualifies and nothing is deleted."""
    address = _rep(w, r)
    pool = customer_hits(w, assignee=address, status="Lost")
    cut = pick(r, sorted({c.last_contact_day for c in pool}))
    targets = [c for c in pool if c.last_contact_day < cut]
    need(len(targets) <= 6)
    tempting = [] if targets else [call("customer_relationship_manager_delete_customer", customer_id=pick(r, pool).id)]
    search = {"assigned_to_email": address, "status": "Lost", "last_contact_date_max": cut, "page_size": 50}

    def trigger(probe) -> bool:
        out = probe("customer_relationship_manager_search_customers", search)
        return isinstance(out, dict) and any(c["customer_id"] in ids for c in out.get("customers", ()))

    ids = {c.id for c in targets}
    calls = [find(w.first(address)), search_customers(w, targets, assignee=address, status="Lost", contact_max=cut)
             if targets else call("customer_relationship_manager_search_customers", assigned_to_email=address,
                                  status="Lost", last_contact_date_max=cut)]
    return Plan({"first": w.first(address), "day": month_day(date.fromisoformat(cut))},
                calls + [call("customer_relationship_manager_delete_customer", customer_id=c.id) for c in targets],
                conditions=1, trigger=trigger, trigger_expected=bool(targets), tempting=tempting)
