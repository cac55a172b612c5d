"""BaseEnvironment.reference_folders: where the pipeline's `eval.reference: auto` looks for an
environment's published example set."""

from __future__ import annotations

from officegym.core import registry
from officegym.pipeline.reference_set import find_reference


def test_the_workplace_looks_where_officegym_reference_points_then_in_the_cache(tmp_path, monkeypatch):
    root = tmp_path / "ref"
    monkeypatch.setenv("OFFICEGYM_REFERENCE", str(root))
    monkeypatch.setenv("OFFICEGYM_CACHE", str(tmp_path / "cache"))
    workplace = registry.environment_class(registry.DEFAULT_ENVIRONMENT)
    assert workplace.reference_folders()[0] == root and len(workplace.reference_folders()) == 2
    assert find_reference("auto", registry.DEFAULT_ENVIRONMENT) is None  # nothing there yet
    (root / "csv_data" / "processed").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "example.jsonl").write_text("{}\n")
    assert find_reference("auto", registry.DEFAULT_ENVIRONMENT) == (root / "data" / "example.jsonl", root / "csv_data")
    assert registry.environment_class("roles/cto").reference_folders() == []
    assert find_reference("auto", "roles/cto") is None and find_reference(None, registry.DEFAULT_ENVIRONMENT) is None
