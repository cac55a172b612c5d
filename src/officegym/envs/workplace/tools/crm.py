"""Customer-relationship-manager tools (SPEC 1.6)."""

from __future__ import annotations

from officegym.envs.workplace.frame_ops import compare_mask, contains_mask
from officegym.envs.workplace.results import Rejected
from officegym.envs.workplace.tools.base import Toolkit, paginate, records, select
from officegym.envs.workplace.world import CRM_COLUMNS

STATUSES = ["Qualified", "Won", "Lost", "Lead", "Proposal"]
PRODUCTS = ["Software", "Hardware", "Services", "Consulting", "Training"]
_COL = {c: i for i, c in enumerate(CRM_COLUMNS)}
_TEXT_FILTERS = ("customer_name", "customer_email", "product_interest", "status", "assigned_to_email")


class CustomerRelationshipManagerTool(Toolkit):
    __slots__ = ()

    def search_customers(
        self,
        customer_name=None,
        customer_email=None,
        product_interest=None,
        status=None,
        assigned_to_email=None,
        last_contact_date_min=None,
        last_contact_date_max=None,
        follow_up_by_min=None,
        follow_up_by_max=None,
        page=1,
        page_size=5,
    ):
        if not any([
            customer_name, customer_email, product_interest, status, assigned_to_email,
            last_contact_date_min, last_contact_date_max, follow_up_by_min, follow_up_by_max,
        ]):
            return Rejected("No search parameters provided. Please provide at least one parameter.")
        table = self.s.crm
        rows = list(table.rows)
        texts = (customer_name, customer_email, product_interest, status, assigned_to_email)
        for column, pattern in zip(_TEXT_FILTERS, texts):
            if pattern:
                ci = _COL[column]
                rows = select(rows, contains_mask([r[ci] for r in rows], pattern, str_dtype=table.is_str(ci)))
        bounds = (
            ("last_contact_date", ">=", last_contact_date_min),
            ("last_contact_date", "<=", last_contact_date_max),
            ("follow_up_by", ">=", follow_up_by_min),
            ("follow_up_by", "<=", follow_up_by_max),
        )
        for column, op, bound in bounds:
            if bound:
                ci = _COL[column]
                rows = select(rows, compare_mask([r[ci] for r in rows], op, bound, str_dtype=table.is_str(ci)))
        customers = records(CRM_COLUMNS, rows)
        result = paginate(customers, page, page_size, "customers", "total_customers")
        if customers:
            return result
        return "No customers found."

    def update_customer(self, customer_id=None, field=None, new_value=None):
        if not customer_id or not field or not new_value:
            return Rejected("Customer ID, field, or new value not provided.")
        if field == "status" and new_value not in STATUSES:
            return Rejected("Status not valid. Please choose from: 'Qualified', 'Won', 'Lost', 'Lead', 'Proposal'")
        if field == "product_interest" and new_value not in PRODUCTS:
            return Rejected(
                "Product interest not valid. Please choose from: 'Software', 'Hardware', 'Services', "
                "'Consulting', 'Training'"
            )
        if field in ["customer_email", "assigned_to_email"]:
            new_value = new_value.lower()
        table = self.s.crm
        if table.has_id(customer_id):
            if field in _COL:
                table.set_where_id(customer_id, _COL[field], new_value)
                return "Customer updated successfully."
            return Rejected(
                "Field not valid. Please choose from: 'customer_name', 'assigned_to_email', 'customer_email', "
                "'customer_phone', 'last_contact_date', 'product_interest', 'status', 'notes', 'follow_up_by'"
            )
        return Rejected("Customer not found.")

    def add_customer(
        self,
        customer_name=None,
        assigned_to_email=None,
        status=None,
        customer_email=None,
        customer_phone=None,
        last_contact_date=None,
        product_interest=None,
        notes="",
        follow_up_by=None,
    ):
        if not all([customer_name, assigned_to_email, status]):
            return Rejected("Please provide all required fields: customer_name, assigned_to_email, status.")
        assigned_to_email = assigned_to_email.lower()
        if customer_email:
            customer_email = customer_email.lower()
        table = self.s.crm
        new_id = str(int(table.max_id()) + 1).zfill(8)
        table.append((
            new_id, assigned_to_email, customer_name, customer_email, customer_phone,
            last_contact_date, product_interest, status, follow_up_by, notes,
        ), reorders_columns=True)  # the reference builds the new row with its columns in another order
        return new_id

    def delete_customer(self, customer_id=None):
        if not customer_id:
            return Rejected("Customer ID not provided.")
        table = self.s.crm
        if not table.has_id(customer_id):
            return Rejected("Customer not found.")
        table.delete_id(customer_id)
        return "Customer deleted successfully."
