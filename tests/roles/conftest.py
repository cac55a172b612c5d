"""Fixtures for the role environments: one instance of each, and small task sets."""

from __future__ import annotations

import pytest

from officegym.core import registry

ROLE_ENVS = ("roles/cto", "roles/coo", "roles/reconcile", "roles/risk", "roles/cost", "roles/council")
SINGLE = ROLE_ENVS[:5]


@pytest.fixture(scope="session")
def envs():
    return {name: registry.make(name) for name in ROLE_ENVS}


@pytest.fixture(scope="session")
def task_sets(envs):
    """60 tasks per environment over every level (seed 123)."""
    return {name: env.generate_tasks(60, 123) for name, env in envs.items()}
