"""A local Ray cluster for the tests of episodes on Ray: 2 CPUs, bound to 127.0.0.1, started once for
the folder (starting one costs seconds); without Ray installed the folder skips."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install 'officegym[ray]' to run the Ray rollout tests")


@pytest.fixture(scope="session")
def ray_cluster():
    from officegym.agent.ray_cluster import connect

    cluster = connect(None, num_cpus=2, object_store_memory=128 * 2**20)
    assert cluster.owned, "the Ray tests start their own local cluster; this process was already connected"
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def by_value(request):
    """Let Ray workers unpickle what the test module defines (a fake policy): test modules are not
    importable there, so cloudpickle sends their classes by value."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(request.module)
    yield
    cloudpickle.unregister_pickle_by_value(request.module)


@pytest.fixture(scope="session")
def world_dir(tiny_world_dir) -> Path:
    return tiny_world_dir


@pytest.fixture(scope="session")
def tasks(world_dir):
    """16 generated workplace tasks over `world_dir`, several templates and domains."""
    from officegym.core.task import Task
    from officegym.sdg.dataset import build_dataset
    from officegym.sdg.workplace import WorkplaceSource

    ds = build_dataset([WorkplaceSource(world_dir)], 16, seed=0)
    return [Task.from_row(r) for split in ds.rows.values() for r in split]
