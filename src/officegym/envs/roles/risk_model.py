"""Risk scenarios as facts: the areas of a dossier and the facts of their items (what assess_risks
takes), the rule book and its findings on a row, and the rows the generator plants (risks, decoys that
look risky but are mitigated, clean ones). The prose layer (risk_brief.py) states the facts; risk.py
offers the tools (assess_risks applies the rule book to facts passed in) and grades.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

TIERS = {"internal": 1, "customer": 2, "revenue": 3}
LEVELS3 = {"low": 1, "medium": 2, "high": 3}
DATA_CLASSES = {"internal": 1, "confidential": 2, "regulated": 3}
SEVERITY = {"sev3": 1, "sev2": 2, "sev1": 3}
REGIONS = ("eu-west", "eu-central", "us-east", "us-west", "ap-south")
LICENSES = ("MIT", "Apache-2.0", "BSD-3-Clause", "GPL-3.0", "AGPL-3.0", "LGPL-2.1")

ARTIFACTS = {  # area -> (description, key field of its rows)
    "architecture": ("deployed components: replicas, failover, tier, incidents in the last 90 days", "component"),
    "certificates": ("TLS certificates: days to expiry, auto-renewal, tier", "domain"),
    "dependencies": ("third-party packages: pinned version, licence, scope, exposure, advisories", "package"),
    "staffing": ("systems and their maintainers", "system"),
    "backups": ("backup schedules against the recovery point objective (RPO)", "store"),
    "data_stores": ("where data lives, whether it holds personal data, allowed regions", "store"),
    "capacity_forecast": ("peak load, capacity and growth per service", "service"),
    "budget": ("workstream budgets, spend and burn", "workstream"),
    "vendor_contracts": ("vendor contracts: exit clause, term, annual value", "vendor"),
    "incidents": ("incidents of the last 90 days and the state of their fixes", "incident"),
}
NAMES = {
    "architecture": ("api-gateway", "orders-db", "session-cache", "auth-service", "search-index", "payments-worker",
                     "billing-db", "event-bus", "image-store", "reporting-db"),
    "certificates": ("api.corp.example", "shop.corp.example", "login.corp.example", "status.corp.example",
                     "admin.corp.example", "cdn.corp.example", "partners.corp.example"),
    "dependencies": ("fastjson", "yaml-parse", "http-kit", "imgproc", "xmlsec", "jwt-tools", "orm-lite", "zipstream",
                     "csv-fast", "logcore", "cryptokit", "pdfgen"),
    "staffing": ("billing", "search", "payments", "identity", "reporting", "mobile-api", "data-pipeline",
                 "notifications"),
    "backups": ("orders-db", "users-db", "ledger-db", "files-bucket", "analytics-warehouse", "crm-db"),
    "data_stores": ("users-db", "events-lake", "support-tickets", "marketing-list", "logs-archive", "payments-vault"),
    "capacity_forecast": ("checkout", "search", "login", "recommendations", "media", "notifications"),
    "budget": ("cloud-migration", "mobile-rewrite", "data-platform", "security-program", "support-tooling"),
    "vendor_contracts": ("Acme Cloud", "DataVault Inc", "Streamline SaaS", "CallCenter Pro", "MapTiles Ltd", "PayRail"),
    "incidents": ("INC-101", "INC-102", "INC-103", "INC-104", "INC-105", "INC-106", "INC-107"),
}
MITIGATIONS = (
    "add_replica", "configure_failover", "renew_certificate", "enable_auto_renew", "replace_dependency",
    "obtain_commercial_license", "upgrade_dependency", "apply_patch", "cross_train", "hire_backup",
    "increase_backup_frequency", "enable_continuous_replication", "migrate_data_region", "anonymise_data",
    "scale_capacity", "add_autoscaling", "reduce_scope", "request_budget_increase", "negotiate_exit_clause",
    "dual_source", "fix_root_cause", "add_monitoring", "accept_risk",
)

# The facts assess_risks takes per area (the tool's arguments), as the schema each item is checked against.
_BOOL = {"type": "boolean"}
_VERSION = {"type": "string", "maxLength": 20}


def _int(lo: int, hi: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": lo, "maximum": hi}


def _num(lo: float, hi: float) -> dict[str, Any]:
    return {"type": "number", "minimum": lo, "maximum": hi}


def _enum(values: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


MONEY_MAX = 10**10
FIELDS: dict[str, dict[str, dict[str, Any]]] = {
    "architecture": {"replicas": _int(1, 1000), "failover": _BOOL, "tier": _enum(TIERS), "incidents_90d": _int(0, 10**4)},
    "certificates": {"days_to_expiry": _int(0, 10**5), "auto_renew": _BOOL, "tier": _enum(TIERS)},
    "dependencies": {"version": _VERSION, "license": _enum(LICENSES), "scope": _enum(("runtime", "dev")),
                     "internet_facing": _BOOL,
                     "advisories": {"type": "array", "maxItems": 50, "items": {
                         "type": "object", "required": ["fixed_in", "cvss"], "additionalProperties": False,
                         "properties": {"cve": {"type": "string", "maxLength": 40}, "fixed_in": _VERSION,
                                        "cvss": _num(0, 10)}}}},
    "staffing": {"maintainers": _int(0, 1000), "trained_backup": _BOOL, "attrition_risk": _enum(LEVELS3),
                 "criticality": _enum(LEVELS3)},
    "backups": {"backup_interval_hours": _num(0, 10**5), "rpo_hours": _num(0.01, 10**5),
                "continuous_replication": _BOOL, "data_class": _enum(DATA_CLASSES)},
    "data_stores": {"contains_pii": _BOOL, "region": _enum(REGIONS),
                    "allowed_regions": {"type": "array", "maxItems": 5, "items": _enum(REGIONS)},
                    "records_millions": _num(0, 10**5)},
    "capacity_forecast": {"capacity_rps": _num(0.01, 10**9), "current_peak_rps": _num(0, 10**9),
                          "monthly_growth_pct": _num(-100, 1000), "horizon_months": _int(0, 120),
                          "autoscaling_max_rps": _num(0, 10**9), "tier": _enum(TIERS)},
    "budget": {"budget_cap_usd": _num(1, MONEY_MAX), "spent_usd": _num(0, MONEY_MAX),
               "monthly_burn_usd": _num(0, MONEY_MAX), "months_remaining": _num(0, 1200),
               "approved_increase_usd": _num(0, MONEY_MAX)},
    "vendor_contracts": {"exit_clause": _BOOL, "term_months": _int(0, 1200), "annual_value_usd": _num(0, MONEY_MAX)},
    "incidents": {"occurrences_90d": _int(0, 10**4), "fix_status": _enum(("open", "deployed")),
                  "severity": _enum(SEVERITY)},
}


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _band(value: float, bounds: tuple[float, ...], levels: tuple[int, ...]) -> int:
    """levels[i] for the first bound the value does not exceed, else the last level."""
    for bound, level in zip(bounds, levels):
        if value <= bound:
            return level
    return levels[-1]


def projected_peak(row: dict[str, Any]) -> float:
    return row["current_peak_rps"] * (1 + row["monthly_growth_pct"] / 100) ** row["horizon_months"]


def projected_spend(row: dict[str, Any]) -> float:
    return row["spent_usd"] + row["monthly_burn_usd"] * row["months_remaining"]


def affecting(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The advisories the pinned version is exposed to (pinned version below fixed_in)."""
    v = version_tuple(row["version"])
    return [a for a in row["advisories"] if v < version_tuple(a["fixed_in"])]


def _overrun(row: dict[str, Any]) -> float:
    return projected_spend(row) - row["budget_cap_usd"]


@dataclass(frozen=True)
class RiskType:
    """One entry of the rule book: where it lives, when a row is a risk, how it is scored. The
    callables take (row, public) so that baselines can call them on a scenario's rows."""

    name: str
    artifact: str
    rule: str  # the rule book line the model reads
    is_risk: Callable[[dict[str, Any], Any], bool]
    looks_risky: Callable[[dict[str, Any], Any], bool]  # the surface a careless reader sees
    likelihood: Callable[[dict[str, Any], Any], int]
    impact: Callable[[dict[str, Any], Any], int]
    acceptable: tuple[str, ...]
    forbidden: tuple[str, ...] = ("accept_risk",)


TYPES = (
    RiskType("single_point_of_failure", "architecture",
             "a component with 1 replica and no failover. L by incidents_90d: 0->1, 1->2, 2-3->3, 4+->4. I by tier: "
             "internal 1, customer 2, revenue 3.",
             lambda r, p: r["replicas"] == 1 and not r["failover"], lambda r, p: r["replicas"] == 1,
             lambda r, p: _band(r["incidents_90d"], (0, 1, 3), (1, 2, 3, 4)), lambda r, p: TIERS[r["tier"]],
             ("add_replica", "configure_failover")),
    RiskType("certificate_expiry", "certificates",
             "a certificate expiring within 30 days without auto-renewal. L by days_to_expiry: <=7->4, <=14->3, "
             "<=21->2, else 1. I by tier: internal 1, customer 2, revenue 3.",
             lambda r, p: r["days_to_expiry"] <= 30 and not r["auto_renew"], lambda r, p: r["days_to_expiry"] <= 30,
             lambda r, p: _band(r["days_to_expiry"], (7, 14, 21), (4, 3, 2, 1)), lambda r, p: TIERS[r["tier"]],
             ("renew_certificate", "enable_auto_renew")),
    RiskType("copyleft_license", "dependencies",
             "a GPL-3.0 or AGPL-3.0 package in runtime scope of our proprietary product (dev scope and LGPL are "
             "fine). L: AGPL-3.0 4, GPL-3.0 3. I: 3.",
             lambda r, p: r["license"] in ("GPL-3.0", "AGPL-3.0") and r["scope"] == "runtime",
             lambda r, p: "GPL" in r["license"],
             lambda r, p: 4 if r["license"] == "AGPL-3.0" else 3, lambda r, p: 3,
             ("replace_dependency", "obtain_commercial_license")),
    RiskType("vulnerable_dependency", "dependencies",
             "a package whose pinned version is below the fixed_in version of an advisory (CVE) against it. L by "
             "the highest CVSS among those advisories: >=9->4, >=7->3, >=4->2, else 1. I: 3 if the package is "
             "internet-facing, else 2.",
             lambda r, p: bool(affecting(r)), lambda r, p: bool(r["advisories"]),
             lambda r, p: _band(-max((a["cvss"] for a in affecting(r)), default=0.0), (-9, -7, -4), (4, 3, 2, 1)),
             lambda r, p: 3 if r["internet_facing"] else 2, ("upgrade_dependency", "apply_patch")),
    RiskType("bus_factor", "staffing",
             "a system with a single maintainer and no trained backup. L by attrition_risk: low 2, medium 3, high 4. "
             "I by criticality: low 1, medium 2, high 3.",
             lambda r, p: r["maintainers"] == 1 and not r["trained_backup"], lambda r, p: r["maintainers"] == 1,
             lambda r, p: LEVELS3[r["attrition_risk"]] + 1, lambda r, p: LEVELS3[r["criticality"]],
             ("cross_train", "hire_backup"), ()),
    RiskType("backup_rpo_breach", "backups",
             "backups less frequent than the RPO (backup_interval_hours > rpo_hours) without continuous "
             "replication. L by interval / rpo: <=2->2, <=4->3, else 4. I by data_class: internal 1, confidential 2, "
             "regulated 3.",
             lambda r, p: r["backup_interval_hours"] > r["rpo_hours"] and not r["continuous_replication"],
             lambda r, p: r["backup_interval_hours"] > r["rpo_hours"],
             lambda r, p: _band(r["backup_interval_hours"] / r["rpo_hours"], (2, 4), (2, 3, 4)),
             lambda r, p: DATA_CLASSES[r["data_class"]], ("increase_backup_frequency", "enable_continuous_replication")),
    RiskType("data_residency", "data_stores",
             "personal data stored outside the allowed regions. L: 4 with 1 million records or more, else 3. I: 3.",
             lambda r, p: r["contains_pii"] and r["region"] not in r["allowed_regions"],
             lambda r, p: r["region"] not in r["allowed_regions"],
             lambda r, p: 4 if r["records_millions"] >= 1 else 3, lambda r, p: 3,
             ("migrate_data_region", "anonymise_data")),
    RiskType("capacity_shortfall", "capacity_forecast",
             "projected peak (current_peak_rps x (1 + monthly_growth_pct/100) ^ horizon_months) above capacity_rps, "
             "unless autoscaling_max_rps (0: none) covers it. L by projected/capacity - 1: <=10%->2, <=25%->3, "
             "else 4. I by tier: internal 1, customer 2, revenue 3.",
             lambda r, p: projected_peak(r) > r["capacity_rps"] and (r["autoscaling_max_rps"] or 0) < projected_peak(r),
             lambda r, p: projected_peak(r) > 0.9 * r["capacity_rps"],
             lambda r, p: _band(projected_peak(r) / r["capacity_rps"] - 1, (0.10, 0.25), (2, 3, 4)),
             lambda r, p: TIERS[r["tier"]], ("scale_capacity", "add_autoscaling"), ()),
    RiskType("budget_overrun", "budget",
             "projected spend (spent_usd + monthly_burn_usd x months_remaining) above budget_cap_usd by more than "
             "approved_increase_usd. L by overrun / cap: <=5%->2, <=15%->3, else 4. I by overrun in dollars: "
             "<50k 1, <200k 2, else 3.",
             lambda r, p: _overrun(r) > r["approved_increase_usd"], lambda r, p: _overrun(r) > 0,
             lambda r, p: _band(_overrun(r) / r["budget_cap_usd"], (0.05, 0.15), (2, 3, 4)),
             lambda r, p: 1 if _overrun(r) < 50_000 else (2 if _overrun(r) < 200_000 else 3),
             ("reduce_scope", "request_budget_increase"), ()),
    RiskType("vendor_lock_in", "vendor_contracts",
             "a contract with no exit clause and a term of 24 months or more. L: 3 for 36 months or more, else 2. "
             "I by annual value: <100k 1, <500k 2, else 3.",
             lambda r, p: not r["exit_clause"] and r["term_months"] >= 24, lambda r, p: not r["exit_clause"],
             lambda r, p: 3 if r["term_months"] >= 36 else 2,
             lambda r, p: 1 if r["annual_value_usd"] < 100_000 else (2 if r["annual_value_usd"] < 500_000 else 3),
             ("negotiate_exit_clause", "dual_source"), ()),
    RiskType("repeat_incident", "incidents",
             "the same root cause twice or more in 90 days with its fix still open. L: 2 occurrences 3, 3+ 4. "
             "I by severity: sev3 1, sev2 2, sev1 3.",
             lambda r, p: r["occurrences_90d"] >= 2 and r["fix_status"] == "open", lambda r, p: r["occurrences_90d"] >= 2,
             lambda r, p: 3 if r["occurrences_90d"] == 2 else 4, lambda r, p: SEVERITY[r["severity"]],
             ("fix_root_cause", "add_monitoring")),
)
TYPE_BY_NAME = {t.name: t for t in TYPES}


def rulebook(artifacts: Sequence[str] | None = None) -> str:
    """The rules of the risk types of these areas (None: all), each with the facts assess_risks takes."""
    return "\n".join(f"- {t.name} ({t.artifact}; facts: {', '.join(FIELDS[t.artifact])}): {t.rule} "
                     f"Mitigations: {', '.join(t.acceptable)}" + (f"; never {', '.join(t.forbidden)}." if t.forbidden else ".")
                     for t in TYPES if artifacts is None or t.artifact in artifacts)


def findings(area: str, row: dict[str, Any]) -> list[dict[str, Any]]:
    """The risks the rule book finds in one row of `area`, with their labels."""
    key = ARTIFACTS[area][1]
    return [{"risk_type": t.name, "artifact": area, "item": row[key], "likelihood": t.likelihood(row, None),
             "impact": t.impact(row, None), "acceptable": list(t.acceptable), "forbidden": list(t.forbidden)}
            for t in TYPES if t.artifact == area and t.is_risk(row, None)]


def truth_of(public: dict[str, Any]) -> list[dict[str, Any]]:
    """Every risk the rule book finds in the dossier, in rule-book order."""
    found = []
    for t in TYPES:
        for row in public["artifacts"].get(t.artifact, ()):
            found += [f for f in findings(t.artifact, row) if f["risk_type"] == t.name]
    return found


def facts_of(area: str, row: dict[str, Any]) -> dict[str, Any]:
    """assess_risks' item for a row: its area, its key and the facts the rule book reads."""
    facts = {k: row[k] for k in FIELDS[area]}
    if area == "capacity_forecast":
        facts["autoscaling_max_rps"] = row["autoscaling_max_rps"] or 0
    return {"area": area, "item": row[ARTIFACTS[area][1]], **facts}


def solver_arguments(public: dict[str, Any]) -> dict[str, Any]:
    """The arguments of the ground truth's assess_risks call: every item of the dossier with its facts."""
    return {"items": [facts_of(a, row) for a, rows in public["artifacts"].items() for row in rows]}


# --- rows: risky, decoy (looks risky, is mitigated) and clean, per area


def _version(rng: random.Random) -> str:
    return f"{rng.randint(1, 4)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"


def _thousands(x: float) -> int:
    """Up to the next whole thousand: every sum of money in a brief is a whole number of thousands."""
    return -(-int(x) // 1000) * 1000


def _row(artifact: str, name: str, kind: str, rtype: str | None, rng: random.Random) -> dict[str, Any]:
    """A row of `artifact` keyed `name`: kind is risk (of type rtype), decoy (of type rtype) or clean."""
    r = rng.random
    risky, decoy = kind == "risk", kind == "decoy"
    if artifact == "architecture":
        return {"component": name, "replicas": 1 if risky or decoy else rng.randint(2, 4),
                "failover": decoy or (not risky and r() < 0.5), "tier": rng.choice(tuple(TIERS)),
                "incidents_90d": rng.randint(0, 5)}
    if artifact == "certificates":
        return {"domain": name, "days_to_expiry": rng.randint(2, 30) if risky or decoy else rng.randint(45, 300),
                "auto_renew": decoy or (not risky and r() < 0.5), "tier": rng.choice(tuple(TIERS))}
    if artifact == "dependencies":
        row: dict[str, Any] = {"package": name, "version": _version(rng),
                               "license": rng.choice(("MIT", "Apache-2.0", "BSD-3-Clause")),
                               "scope": "runtime" if r() < 0.7 else "dev", "internet_facing": r() < 0.5, "advisories": []}
        if rtype == "copyleft_license":
            row["license"] = rng.choice(("GPL-3.0", "AGPL-3.0")) if risky else rng.choice(("GPL-3.0", "LGPL-2.1"))
            row["scope"] = "runtime" if risky or row["license"] == "LGPL-2.1" else "dev"
        if rtype == "vulnerable_dependency":
            v = version_tuple(row["version"])
            # a risk is fixed after the pinned version; a decoy's fix is the pinned version itself
            fixed = f"{v[0]}.{v[1]}.{v[2] + 1 + rng.randint(0, 3)}" if risky else row["version"]
            row["advisories"] = [{"cve": f"CVE-2024-{rng.randint(1000, 99999)}", "fixed_in": fixed,
                                  "cvss": round(rng.uniform(3.0, 10.0), 1)}]
        return row
    if artifact == "staffing":
        return {"system": name, "maintainers": 1 if risky or decoy else rng.randint(2, 4),
                "trained_backup": decoy or (not risky and r() < 0.5),
                "attrition_risk": rng.choice(tuple(LEVELS3)), "criticality": rng.choice(tuple(LEVELS3))}
    if artifact == "backups":
        rpo = rng.choice((1, 4, 12, 24))
        interval = rpo * rng.choice((2, 3, 4, 6)) if risky or decoy else rpo // rng.choice((1, 2)) or 1
        return {"store": name, "backup_interval_hours": interval, "rpo_hours": rpo,
                "continuous_replication": decoy, "data_class": rng.choice(tuple(DATA_CLASSES))}
    if artifact == "data_stores":
        allowed = sorted(rng.sample(REGIONS[:2], rng.randint(1, 2)))
        outside = rng.choice([x for x in REGIONS if x not in allowed])
        return {"store": name, "contains_pii": risky or (not decoy and r() < 0.5),
                "region": outside if risky or decoy else rng.choice(allowed), "allowed_regions": allowed,
                "records_millions": round(rng.uniform(0.1, 9.0), 1)}
    if artifact == "capacity_forecast":
        capacity = 100 * rng.randint(10, 60)
        growth, horizon = rng.choice((2, 3, 5, 8)), rng.choice((6, 9, 12))
        factor = (1 + growth / 100) ** horizon
        target = capacity * (rng.uniform(1.03, 1.5) if risky or decoy else rng.uniform(0.5, 0.85))
        row = {"service": name, "capacity_rps": capacity, "current_peak_rps": max(1, round(target / factor)),
               "monthly_growth_pct": growth, "horizon_months": horizon, "tier": rng.choice(tuple(TIERS)),
               "autoscaling_max_rps": None}
        if (risky or decoy) and projected_peak(row) <= capacity:  # rounding can land below capacity: nudge up
            row["current_peak_rps"] += max(1, round((capacity - projected_peak(row)) / factor) + 1)
        if decoy:
            row["autoscaling_max_rps"] = (int(projected_peak(row) * 1.3) + 100) // 100 * 100
        return row
    if artifact == "budget":
        cap = 50_000 * rng.randint(4, 40)
        months = rng.randint(2, 8)
        target = cap * (rng.uniform(1.02, 1.4) if risky or decoy else rng.uniform(0.6, 0.95))
        spent = int(cap * rng.uniform(0.2, 0.5)) // 1000 * 1000
        burn = max(1000, int((target - spent) / months) // 1000 * 1000)
        row = {"workstream": name, "budget_cap_usd": cap, "spent_usd": spent, "monthly_burn_usd": burn,
               "months_remaining": months, "approved_increase_usd": 0}
        if (risky or decoy) and _overrun(row) <= 0:
            row["monthly_burn_usd"] += _thousands(-_overrun(row) / months) + 1000
        if decoy:
            row["approved_increase_usd"] = _thousands(_overrun(row) + 10_000)
        return row
    if artifact == "vendor_contracts":
        if risky:
            exit_clause, term = False, rng.choice((24, 36, 48))
        elif decoy:
            exit_clause, term = False, rng.choice((6, 12))
        else:
            exit_clause, term = True, rng.choice((12, 24, 36))
        return {"vendor": name, "exit_clause": exit_clause, "term_months": term,
                "annual_value_usd": 10_000 * rng.randint(2, 90)}
    if artifact == "incidents":
        return {"incident": name, "service": rng.choice(NAMES["capacity_forecast"]),
                "root_cause": rng.choice(("config drift", "memory leak", "expired token", "disk full", "bad deploy")),
                "occurrences_90d": rng.randint(2, 4) if risky or decoy else 1,
                "fix_status": "deployed" if decoy else rng.choice(("open", "deployed")),
                "severity": rng.choice(tuple(SEVERITY))}
    raise ValueError(f"unknown artifact {artifact!r}")


def draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    """The dossier's rows (public["artifacts"]), the risks in them and, per row, whether it was planted
    as a risk, a decoy or clean (`kinds`, for the prose: updates pick the mitigating fact of those)."""
    n_planted = round(1 + (difficulty - 1) * 7 / 9)
    # levels 1-2 hold one and two areas (a curriculum a small model can start on); from level 3 the
    # dossier grows as in version 1 of the generator
    n_artifacts = difficulty if difficulty < 3 else 3 + (difficulty - 1) * 7 // 9
    n_decoys = round(n_planted * (difficulty - 1) / 9)
    chosen = sorted(rng.sample(tuple(ARTIFACTS), n_artifacts), key=tuple(ARTIFACTS).index)
    hosts = [t for t in TYPES if t.artifact in chosen]
    plan: dict[str, list[tuple[str, str | None]]] = {a: [] for a in chosen}
    for _ in range(n_planted):
        t = rng.choice(hosts)
        plan[t.artifact].append(("risk", t.name))
    for _ in range(n_decoys):
        t = rng.choice(hosts)
        plan[t.artifact].append(("decoy", t.name))
    artifacts: dict[str, list[dict[str, Any]]] = {}
    kinds: dict[tuple[str, str], str] = {}
    for a in chosen:
        planned = plan[a] + [("clean", None)] * rng.randint(1, 2)
        if len(planned) > len(NAMES[a]):
            return None
        rng.shuffle(planned)
        names = rng.sample(NAMES[a], len(planned))
        artifacts[a] = [_row(a, n, kind, rtype, rng) for n, (kind, rtype) in zip(names, planned)]
        kinds.update({(a, n): kind for n, (kind, _) in zip(names, planned)})
    public: dict[str, Any] = {"artifacts": artifacts, "restricted": None}
    truth = truth_of(public)
    # a clean row may trip a rule by chance (a copyleft licence drawn for a clean package): keep the
    # count of planted risks as designed so that the level means what it says
    if len(truth) != n_planted:
        return None
    return {"public": public, "truth": truth, "kinds": kinds, "infeasible": infeasible}
