"""Name pools for briefs: companies and products (fictional)."""

from __future__ import annotations

import random

COMPANIES = (
    "Northwind Health", "Bluefin Logistics", "Asterisk Bank", "Juniper Retail", "Helio Energy", "Kestrel Media",
    "Orbital Insurance", "Pinecone Travel", "Quarry Analytics", "Riverbend Foods", "Saffron Telecom", "Tidewater Labs",
)
PRODUCTS = (
    "customer portal", "payments API", "mobile app back end", "claims platform", "analytics pipeline",
    "booking service", "partner marketplace", "support assistant", "order management system", "data lake",
)


def company_and_product(rng: random.Random) -> tuple[str, str]:
    return rng.choice(COMPANIES), rng.choice(PRODUCTS)
