"""Risk: build a risk register from a project dossier with planted risks and decoys.

The generator plants risks by setting facts that trigger the rule book below, and decoys that look
risky but are mitigated (a single replica with failover, a CVE fixed in the pinned version, ...).
Every label (type, evidence, likelihood, impact, mitigations) follows from the facts by rule, so the
verifier is exact: entries are matched on (type, artifact, item); reward =
0.5 identification F1 + 0.25 scoring accuracy (1 - |score error| / 12) + 0.25 mitigation quality
(acceptable +1, forbidden -1), and 0 when a claimed score is not likelihood x impact. The oracle
reads the scores it claims off the score_register calculator, called on its draft register. A dossier
with an artifact that cannot be read cannot be assessed: the right answer is to escalate.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from officegym.core.types import ToolCall, ToolSpec
from officegym.envs.roles.base import (
    ESCALATE,
    ESCALATE_SPEC,
    Grade,
    RoleEnvironment,
    Scenario,
    ToolRefusal,
    draw_scenario,
    escalation_grade,
    infeasible_seed,
    tool,
)
from officegym.envs.roles.schema import schema_error

ROLE = "risk"
SUBMIT = "submit_register"
SCORE = "score_register"  # the calculator whose scores the answer claims
TIERS = {"internal": 1, "customer": 2, "revenue": 3}
LEVELS3 = {"low": 1, "medium": 2, "high": 3}
DATA_CLASSES = {"internal": 1, "confidential": 2, "regulated": 3}
SEVERITY = {"sev3": 1, "sev2": 2, "sev1": 3}
TOOLS_FROM_LEVEL = 4
INDIRECT_FROM_LEVEL = 5

ARTIFACTS = {  # name -> (description, key field of its rows)
    "architecture": ("deployed components: replicas, failover, tier, incidents in the last 90 days", "component"),
    "certificates": ("TLS certificates: days to expiry, auto-renewal, tier", "domain"),
    "dependencies": ("third-party packages: pinned version, licence, scope, parent package", "package"),
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
REGIONS = ("eu-west", "eu-central", "us-east", "us-west", "ap-south")
MITIGATIONS = (
    "add_replica", "configure_failover", "renew_certificate", "enable_auto_renew", "replace_dependency",
    "obtain_commercial_license", "upgrade_dependency", "apply_patch", "cross_train", "hire_backup",
    "increase_backup_frequency", "enable_continuous_replication", "migrate_data_region", "anonymise_data",
    "scale_capacity", "add_autoscaling", "reduce_scope", "request_budget_increase", "negotiate_exit_clause",
    "dual_source", "fix_root_cause", "add_monitoring", "accept_risk",
)


def version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _band(value: float, bounds: tuple[float, ...], levels: tuple[int, ...]) -> int:
    """levels[i] for the first bound the value does not exceed, else the last level."""
    for bound, level in zip(bounds, levels):
        if value <= bound:
            return level
    return levels[-1]


def projected_peak(row: dict[str, Any]) -> float:
    if "projected_peak_rps" in row:
        return row["projected_peak_rps"]
    return row["current_peak_rps"] * (1 + row["monthly_growth_pct"] / 100) ** row["horizon_months"]


def projected_spend(row: dict[str, Any]) -> int:
    if "projected_total_usd" in row:
        return row["projected_total_usd"]
    return row["spent_usd"] + row["monthly_burn_usd"] * row["months_remaining"]


def affecting_cves(public: dict[str, Any], row: dict[str, Any]) -> list[dict[str, Any]]:
    v = version_tuple(row["version"])
    return [c for c in public["cve_feed"] if c["package"] == row["package"]
            and version_tuple(c["introduced"]) <= v < version_tuple(c["fixed_in"])]


@dataclass(frozen=True)
class RiskType:
    """One entry of the rule book: where it lives, when a row is a risk, how it is scored."""

    name: str
    artifact: str
    rule: str  # the rule book line the model reads
    is_risk: Callable[[dict[str, Any], dict[str, Any]], bool]
    looks_risky: Callable[[dict[str, Any], dict[str, Any]], bool]  # the surface a careless reader sees
    likelihood: Callable[[dict[str, Any], dict[str, Any]], int]
    impact: Callable[[dict[str, Any], dict[str, Any]], int]
    acceptable: tuple[str, ...]
    forbidden: tuple[str, ...] = ("accept_risk",)


def _overrun(row: dict[str, Any]) -> int:
    return projected_spend(row) - row["budget_cap_usd"]


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
             "a package whose pinned version is affected by a CVE (introduced <= version < fixed_in; see "
             "lookup_cve). L by the highest CVSS among affecting CVEs: >=9->4, >=7->3, >=4->2, else 1. I: 3 if the "
             "package is internet-facing, else 2.",
             lambda r, p: bool(affecting_cves(p, r)),
             lambda r, p: any(c["package"] == r["package"] for c in p["cve_feed"]),
             lambda r, p: _band(-max((c["cvss"] for c in affecting_cves(p, r)), default=0.0), (-9, -7, -4),
                                (4, 3, 2, 1)),
             lambda r, p: 3 if r["internet_facing"] else 2, ("upgrade_dependency", "apply_patch")),
    RiskType("bus_factor", "staffing",
             "a system with a single maintainer and no trained backup. L by attrition_risk: low 2, medium 3, high 4. "
             "I by criticality: low 1, medium 2, high 3.",
             lambda r, p: r["maintainers"] == 1 and not r["trained_backup"], lambda r, p: r["maintainers"] == 1,
             lambda r, p: LEVELS3[r["attrition_risk"]] + 1, lambda r, p: LEVELS3[r["criticality"]],
             ("cross_train", "hire_backup"), ()),
    RiskType("backup_rpo_breach", "backups",
             "backups less frequent than the RPO (interval > rpo) without continuous replication. L by "
             "interval / rpo: <=2->2, <=4->3, else 4. I by data_class: internal 1, confidential 2, regulated 3.",
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
             "projected peak (current_peak_rps x (1 + monthly_growth_pct/100) ^ horizon_months, or "
             "projected_peak_rps when given) above capacity_rps, unless autoscaling_max_rps covers it. L by "
             "projected/capacity - 1: <=10%->2, <=25%->3, else 4. I by tier: internal 1, customer 2, revenue 3.",
             lambda r, p: projected_peak(r) > r["capacity_rps"] and (r["autoscaling_max_rps"] or 0) < projected_peak(r),
             lambda r, p: projected_peak(r) > 0.9 * r["capacity_rps"],
             lambda r, p: _band(projected_peak(r) / r["capacity_rps"] - 1, (0.10, 0.25), (2, 3, 4)),
             lambda r, p: TIERS[r["tier"]], ("scale_capacity", "add_autoscaling"), ()),
    RiskType("budget_overrun", "budget",
             "projected spend (spent_usd + monthly_burn_usd x months_remaining, or projected_total_usd when given) "
             "above budget_cap_usd by more than approved_increase_usd. L by overrun / cap: <=5%->2, <=15%->3, "
             "else 4. I by overrun in dollars: <50k 1, <200k 2, else 3.",
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


# --- rows: risky, decoy (looks risky, is mitigated) and clean, per artifact


def _version(rng: random.Random) -> str:
    return f"{rng.randint(1, 4)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"


def _row(artifact: str, name: str, kind: str, rtype: str | None, rng: random.Random, indirect: bool,
         feed: list[dict[str, Any]]) -> dict[str, Any]:
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
        row = {"package": name, "version": _version(rng), "license": rng.choice(("MIT", "Apache-2.0", "BSD-3-Clause")),
               "scope": "runtime" if r() < 0.7 else "dev", "via": None, "internet_facing": r() < 0.5}
        if rtype == "copyleft_license":
            row["license"] = rng.choice(("GPL-3.0", "AGPL-3.0")) if risky else rng.choice(("GPL-3.0", "LGPL-2.1"))
            row["scope"] = "runtime" if risky or row["license"] == "LGPL-2.1" else "dev"
        if rtype == "vulnerable_dependency":
            v = version_tuple(row["version"])
            if risky:
                introduced, fixed = f"{v[0]}.0.0", f"{v[0]}.{v[1]}.{v[2] + 1 + rng.randint(0, 3)}"
            else:  # fixed before the pinned version
                introduced, fixed = f"{max(0, v[0] - 1)}.0.0", f"{v[0]}.{v[1]}.{v[2]}"
            feed.append({"cve": f"CVE-2024-{rng.randint(1000, 99999)}", "package": name, "introduced": introduced,
                         "fixed_in": fixed, "cvss": round(rng.uniform(3.0, 10.0), 1)})
        if indirect and r() < 0.5:
            row["via"] = rng.choice(("web-framework", "report-engine", "sdk-core"))
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
        peak = projected_peak(row)
        if decoy:
            row["autoscaling_max_rps"] = int(peak * 1.3) + 100
        if risky and peak <= capacity:  # rounding of current_peak_rps can land below capacity: nudge up
            row["current_peak_rps"] += max(1, round((capacity - peak) / factor) + 1)
        if not indirect:
            row["projected_peak_rps"] = round(projected_peak(row), 1)
        return row
    if artifact == "budget":
        cap = 50_000 * rng.randint(4, 40)
        months = rng.randint(2, 8)
        target = cap * (rng.uniform(1.02, 1.4) if risky or decoy else rng.uniform(0.6, 0.95))
        spent = int(cap * rng.uniform(0.2, 0.5)) // 1000 * 1000
        burn = max(1000, int((target - spent) / months) // 1000 * 1000)
        row = {"workstream": name, "budget_cap_usd": cap, "spent_usd": spent, "monthly_burn_usd": burn,
               "months_remaining": months, "approved_increase_usd": 0}
        if risky and _overrun(row) <= 0:
            row["monthly_burn_usd"] += (-_overrun(row)) // months + 1000
        if decoy:
            row["approved_increase_usd"] = max(0, _overrun(row)) + 10_000
        if not indirect:
            row["projected_total_usd"] = projected_spend(row)
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


def truth_of(public: dict[str, Any]) -> list[dict[str, Any]]:
    """Every risk the rule book finds in the dossier, with its labels."""
    found = []
    for t in TYPES:
        artifact = public["artifacts"].get(t.artifact)
        if artifact is None:
            continue
        key = ARTIFACTS[t.artifact][1]
        for row in artifact:
            if t.is_risk(row, public):
                found.append({"risk_type": t.name, "artifact": t.artifact, "item": row[key],
                              "likelihood": t.likelihood(row, public), "impact": t.impact(row, public),
                              "acceptable": list(t.acceptable), "forbidden": list(t.forbidden)})
    return found


def _draw(rng: random.Random, difficulty: int, infeasible: bool) -> dict[str, Any] | None:
    n_planted = round(1 + (difficulty - 1) * 7 / 9)
    # levels 1-2 hold one and two artifacts (a curriculum a small model can start on: one rule to apply to
    # a few rows); from level 3 the dossier grows as in version 1 of the generator
    n_artifacts = difficulty if difficulty < 3 else 3 + (difficulty - 1) * 7 // 9
    n_decoys = round(n_planted * (difficulty - 1) / 9)
    indirect = difficulty >= INDIRECT_FROM_LEVEL
    chosen = sorted(rng.sample(tuple(ARTIFACTS), n_artifacts), key=tuple(ARTIFACTS).index)
    hosts = [t for t in TYPES if t.artifact in chosen]
    plan: dict[str, list[tuple[str, str | None]]] = {a: [] for a in chosen}
    for _ in range(n_planted):
        t = rng.choice(hosts)
        plan[t.artifact].append(("risk", t.name))
    for _ in range(n_decoys):
        t = rng.choice(hosts)
        plan[t.artifact].append(("decoy", t.name))
    feed: list[dict[str, Any]] = []
    artifacts: dict[str, list[dict[str, Any]]] = {}
    for a in chosen:
        kinds = plan[a] + [("clean", None)] * rng.randint(1, 2)
        if len(kinds) > len(NAMES[a]):
            return None
        rng.shuffle(kinds)
        names = rng.sample(NAMES[a], len(kinds))
        artifacts[a] = [_row(a, n, kind, rtype, rng, indirect, feed) for n, (kind, rtype) in zip(names, kinds)]
    public: dict[str, Any] = {"artifacts": artifacts, "cve_feed": sorted(feed, key=lambda c: c["cve"]), "restricted": None}
    truth = truth_of(public)
    # clean rows may trip a rule by chance (e.g. a copyleft licence drawn for a clean package); keep the count
    # of planted risks as designed so the level means what it says
    if len(truth) != n_planted:
        return None
    why = ""
    if infeasible:
        public["restricted"] = rng.choice(chosen)
        why = f"the {public['restricted']} artifact is restricted, so the dossier cannot be fully assessed"
    return {"public": public, "truth": truth, "why": why}


def rulebook(artifacts: Sequence[str] | None = None) -> str:
    """The rules of the risk types that can occur in a dossier of these artifacts (None: all): a
    type whose artifact is not in the dossier cannot be registered, so its rule is only tokens."""
    return "\n".join(f"- {t.name} ({t.artifact}): {t.rule} Mitigations: {', '.join(t.acceptable)}"
                     + (f"; never {', '.join(t.forbidden)}." if t.forbidden else ".")
                     for t in TYPES if artifacts is None or t.artifact in artifacts)


SYSTEM = (
    "You are the Risk agent of an executive decision system. Review the project dossier and register every risk "
    "that the rule book below defines, and nothing else: facts that look risky but are mitigated are not risks. "
    "Each entry gives risk_type, artifact, item (the row's key: component, domain, package, system, store, service, "
    "workstream, vendor or incident), likelihood L (1-4), impact I (1-3), score = L x I, and one mitigation code. "
    "overall_score is the highest entry score (0 for an empty register). Scores are recomputed; a score that is "
    "not L x I, or an overall score that is not the highest, scores 0: call {score}(entries) on the draft "
    "register and submit the register it returns. If any artifact of the dossier cannot be read, call "
    "{escalate}(reason) instead. Finish with exactly one call: {submit}(entries, overall_score) or "
    "{escalate}(reason). The first answer is final.\nRule book:\n{rules}"
)


def _brief(rng: random.Random, public: dict[str, Any], difficulty: int) -> str:
    project = rng.choice(("Atlas", "Beacon", "Cobalt", "Delta", "Ember", "Fjord", "Granite", "Harbor"))
    names = list(public["artifacts"])
    lines = [f"Project {project} goes to the steering committee next week. Build its risk register from the dossier "
             f"({len(names)} artifacts: {', '.join(names)})."]
    if difficulty < TOOLS_FROM_LEVEL:
        for a in names:
            lines.append(f"{a}:")
            if a == public["restricted"]:
                lines.append("  (restricted: access pending approval from the data owner)")
                continue
            lines += ["  " + json.dumps(row, separators=(", ", ": ")) for row in public["artifacts"][a]]
        if "dependencies" in public["artifacts"] and public["restricted"] != "dependencies":
            lines.append("CVE feed for these packages:")
            lines += ["  " + json.dumps(c, separators=(", ", ": ")) for c in public["cve_feed"]] or ["  (no CVEs)"]
    else:
        lines.append("Read the artifacts with the tools.")
    return "\n".join(lines)


@lru_cache(maxsize=8192)
def generate(seed: int, difficulty: int) -> Scenario:
    infeasible = infeasible_seed(seed)
    drawn, rng = draw_scenario(ROLE, seed, difficulty, _draw)
    public, truth = drawn["public"], drawn["truth"]
    inline = difficulty < TOOLS_FROM_LEVEL
    lookups: tuple[ToolCall, ...] = ()
    if not inline:
        reads = [ToolCall("read_artifact", {"name": a}) for a in public["artifacts"]]
        cves = [] if infeasible or "dependencies" not in public["artifacts"] else [
            ToolCall("lookup_cve", {"package": row["package"]}) for row in public["artifacts"]["dependencies"]]
        lookups = (ToolCall("list_artifacts", {}), *reads, *cves)
    checks: tuple[ToolCall, ...] = ()
    if infeasible:
        answer = ToolCall(ESCALATE, {"reason": drawn["why"]})
    else:
        # the claimed scores are what the calculator returns for the draft register
        drafts = [{"risk_type": t["risk_type"], "artifact": t["artifact"], "item": t["item"],
                   "likelihood": t["likelihood"], "impact": t["impact"], "mitigation": t["acceptable"][0]}
                  for t in truth]
        checks = (ToolCall(SCORE, {"entries": drafts}),)
        answer = ToolCall(SUBMIT, scored(drafts))
    return Scenario(
        role=ROLE, seed=seed, difficulty=difficulty, infeasible=infeasible, inline=inline, public=public,
        private={"truth": truth, "why_infeasible": drawn["why"],
                 "optimum_note": f"the dossier holds {len(truth)} risk(s) and every artifact is readable"},
        brief=_brief(rng, public, difficulty), lookups=lookups, answer=answer,
        template=f"{ROLE}/{'inline' if inline else 'tools'}" + ("/escalate" if infeasible else ""),
        checks=checks,
    )


def scored(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the score_register calculator returns: the entries with score = likelihood x impact after
    their impact, and the overall score (the highest; 0 for none), in the shape submit_register takes."""
    out = []
    for e in entries:
        row = {}
        for k, v in e.items():
            if k == "score":
                continue
            row[k] = v
            if k == "impact":
                row["score"] = e["likelihood"] * e["impact"]
        out.append(row)
    return {"entries": out, "overall_score": max((r["score"] for r in out), default=0)}


def _score(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The calculator: refuses an entry that submit_register would refuse (its spec checks only the
    factors, to keep the prompt short), so the mistake shows before the answer, then scores."""
    for i, e in enumerate(entries):
        error = schema_error(e, DRAFT_CHECK, f"entries[{i}]")
        if error:
            raise ToolRefusal(f"{error}; fix it before submitting")
    return scored(entries)


def _artifact(s: Scenario, name: Any) -> Any:
    if name not in s.public["artifacts"]:
        raise ToolRefusal(f"no artifact {name!r}; artifacts: {', '.join(s.public['artifacts'])}")
    if name == s.public["restricted"]:
        return {"status": "restricted", "message": "access pending approval from the data owner"}
    return s.public["artifacts"][name]


def _query(s: Scenario, a: dict[str, Any]) -> Any:
    rows = _artifact(s, "dependencies")
    if isinstance(rows, dict):
        return rows
    needle = a["filter"].lower()
    return [r for r in rows if any(needle in str(v).lower() for v in r.values())]


def _cve(s: Scenario, a: dict[str, Any]) -> Any:
    if s.public["restricted"] == "dependencies":
        raise ToolRefusal("the CVE feed is keyed on the dependency list, which is restricted")
    return [c for c in s.public["cve_feed"] if c["package"] == a["package"]]


READERS: dict[str, Callable[[Scenario, dict[str, Any]], Any]] = {
    "list_artifacts": lambda s, a: [{"name": n, "description": ARTIFACTS[n][0]} for n in s.public["artifacts"]],
    "read_artifact": lambda s, a: _artifact(s, a["name"]),
    "query_dependencies": _query,
    "lookup_cve": _cve,
    "get_financials": lambda s, a: _artifact(s, "budget"),
    SCORE: lambda s, a: _score(a["entries"]),
}
ENTRY = {
    "type": "object",
    "properties": {
        "risk_type": {"type": "string", "enum": [t.name for t in TYPES]},
        "artifact": {"type": "string", "enum": list(ARTIFACTS)},
        "item": {"type": "string"},
        "likelihood": {"type": "integer", "minimum": 1, "maximum": 4},
        "impact": {"type": "integer", "minimum": 1, "maximum": 3},
        "score": {"type": "integer", "minimum": 1, "maximum": 12},
        "mitigation": {"type": "string", "enum": list(MITIGATIONS)},
    },
    "required": ["risk_type", "artifact", "item", "likelihood", "impact", "score", "mitigation"],
    "additionalProperties": False,
}
# a draft entry: an entry of submit_register without its score, which the calculator adds. Only the
# factors are spelled out: repeating the entry's enums would add ~350 prompt tokens to every scenario
DRAFT = {"type": "object", "description": "an entry of " + SUBMIT + " without its score",
         "properties": {k: ENTRY["properties"][k] for k in ("likelihood", "impact")},
         "required": ["likelihood", "impact"]}
# what the calculator checks a draft entry against: submit_register's entry, its score optional (the
# calculator replaces it)
DRAFT_CHECK = {**ENTRY, "required": [k for k in ENTRY["required"] if k != "score"]}
SPECS = (
    tool("list_artifacts", "The artifacts of the dossier."),
    tool("read_artifact", "Every row of one artifact.", {"name": {"type": "string"}}, ["name"]),
    tool("query_dependencies", "Dependency rows with any field containing the text.", {"filter": {"type": "string"}},
         ["filter"]),
    tool("lookup_cve", "Every known CVE of a package: affected from `introduced` up to (not including) `fixed_in`, "
         "with its CVSS score.", {"package": {"type": "string"}}, ["package"]),
    tool("get_financials", "The budget artifact."),
    tool(SCORE, "Calculator: the register with each entry's score (likelihood x impact) and the overall score, "
         "ready to submit.", {"entries": {"type": "array", "items": DRAFT}}, ["entries"]),
    tool(SUBMIT, "Submit the risk register. Ends the episode.", {
        "entries": {"type": "array", "items": ENTRY},
        "overall_score": {"type": "integer", "minimum": 0, "maximum": 12},
    }, ["entries", "overall_score"]),
    ESCALATE_SPEC,
)


def grade(scenario: Scenario, answer: ToolCall) -> Grade:
    decided = escalation_grade(scenario, answer)
    if decided is not None:
        return decided
    entries = answer.arguments["entries"]
    truth = {(t["risk_type"], t["artifact"], t["item"]): t for t in scenario.private["truth"]}
    wrong_claims = [f"{e['item']}: score {e['score']} is not {e['likelihood']} x {e['impact']}"
                    for e in entries if e["score"] != e["likelihood"] * e["impact"]]
    top = max((e["likelihood"] * e["impact"] for e in entries), default=0)
    if answer.arguments["overall_score"] != top:
        wrong_claims.append(f"overall score {answer.arguments['overall_score']} is not the highest entry score {top}")
    matched: dict[tuple[str, str, str], dict[str, Any]] = {}
    false_alarms = []
    for e in entries:
        key = (e["risk_type"], e["artifact"], e["item"])
        if key in truth and key not in matched:
            matched[key] = e
        else:
            false_alarms.append(f"{e['risk_type']} on {e['artifact']}/{e['item']}")
    precision = len(matched) / len(entries) if entries else (1.0 if not truth else 0.0)
    recall = len(matched) / len(truth) if truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    errors = [abs(e["likelihood"] * e["impact"] - truth[k]["likelihood"] * truth[k]["impact"]) for k, e in matched.items()]
    scoring = sum(1 - err / 12 for err in errors) / len(errors) if errors else 0.0
    exact = sum(e["likelihood"] == truth[k]["likelihood"] and e["impact"] == truth[k]["impact"]
                for k, e in matched.items())
    marks = [1 if e["mitigation"] in truth[k]["acceptable"] else (-1 if e["mitigation"] in truth[k]["forbidden"] else 0)
             for k, e in matched.items()]
    mitigation = max(0.0, sum(marks) / len(marks)) if marks else 0.0
    components = {"f1": f1, "precision": precision, "recall": recall, "scoring_accuracy": scoring,
                  "severity_exact": exact / len(matched) if matched else 0.0, "mitigation_quality": mitigation,
                  "claims_ok": float(not wrong_claims)}
    missed = [f"{k[0]} on {k[1]}/{k[2]}" for k in truth if k not in matched]
    evidence = [f"F1 {f1:.3f} (precision {precision:.3f}, recall {recall:.3f}), scoring {scoring:.3f}, "
                f"mitigation {mitigation:.3f}"]
    if missed:
        evidence.append("missed: " + "; ".join(missed))
    if false_alarms:
        evidence.append("false alarms or duplicates: " + "; ".join(false_alarms))
    for k, e in matched.items():
        t = truth[k]
        if (e["likelihood"], e["impact"]) != (t["likelihood"], t["impact"]):
            evidence.append(f"{k[2]}: L{e['likelihood']} x I{e['impact']}, rule gives L{t['likelihood']} x I{t['impact']}")
        if e["mitigation"] in t["forbidden"]:
            evidence.append(f"{k[2]}: {e['mitigation']} is forbidden for {k[0]}")
    if wrong_claims:
        evidence += wrong_claims
        return Grade(0.0, False, "hallucinated_number", components, evidence)
    reward = 0.5 * f1 + 0.25 * scoring + 0.25 * mitigation
    perfect = f1 == 1.0 and exact == len(truth) and all(m == 1 for m in marks)
    return Grade(reward, perfect, "correct" if perfect else "partial", components, evidence)


class RiskEnvironment(RoleEnvironment):
    """Risk register from a dossier with planted risks and decoys."""

    role = ROLE
    name = "roles/risk"
    answer_tools = (SUBMIT, ESCALATE)

    generator = staticmethod(generate)
    generator_version = 2  # version 2: one and two artifacts at levels 1 and 2 (three before)
    specs = tuple(SPECS)
    reader_table = READERS
    grader = staticmethod(grade)

    def system_prompt(self, scenario: Scenario) -> str:
        return SYSTEM.format(submit=SUBMIT, score=SCORE, escalate=ESCALATE,
                             rules=rulebook(list(scenario.public["artifacts"])))

    def tool_specs(self, difficulty: int | None = None) -> list[ToolSpec]:
        """Below TOOLS_FROM_LEVEL the dossier is in the brief: the calculator and the answer tools alone
        (a reader there only invites a call that teaches nothing)."""
        if difficulty is not None and difficulty < TOOLS_FROM_LEVEL:
            return [s for s in SPECS if s.name in (SCORE, *self.answer_tools)]
        return list(SPECS)
