"""The executive-role environments: CTO, COO, ReconcileGPT, Risk, Cost, and their council.

Each is a seeded scenario generator (difficulty 1-10, 5-10 % infeasible scenarios where the right
answer is to escalate), read tools, one final-answer tool, and an exact verifier whose optimum or
labels are computed at generation time. Registered as roles/cto, roles/coo, roles/reconcile,
roles/risk, roles/cost and roles/council.
"""

from officegym.envs.roles.base import Grade, RoleEnvironment, RoleSession, Scenario, ScenarioError
from officegym.envs.roles.coo import COOEnvironment
from officegym.envs.roles.cost import CostEnvironment
from officegym.envs.roles.council import CouncilEnvironment
from officegym.envs.roles.cto import CTOEnvironment
from officegym.envs.roles.reconcile import ReconcileEnvironment
from officegym.envs.roles.risk import RiskEnvironment

ENVIRONMENTS = {
    "roles/cto": CTOEnvironment,
    "roles/coo": COOEnvironment,
    "roles/reconcile": ReconcileEnvironment,
    "roles/risk": RiskEnvironment,
    "roles/cost": CostEnvironment,
    "roles/council": CouncilEnvironment,
}

__all__ = [
    "ENVIRONMENTS",
    "COOEnvironment",
    "CTOEnvironment",
    "CostEnvironment",
    "CouncilEnvironment",
    "Grade",
    "ReconcileEnvironment",
    "RiskEnvironment",
    "RoleEnvironment",
    "RoleSession",
    "Scenario",
    "ScenarioError",
]
