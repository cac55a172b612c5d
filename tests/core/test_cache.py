"""One cache folder and one default world for every command and trainer."""

from __future__ import annotations

from pathlib import Path


def test_the_cache_expands_the_home_folder_everywhere(monkeypatch, tmp_path):
    from officegym.agent.models import model_cache_dir
    from officegym.bench.bfcl_lib import _project_root
    from officegym.core.cache import cache_root
    from officegym.envs.workplace.generate import default_world_path
    from officegym.envs.workplace.reference import reference_root

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OFFICEGYM_CACHE", "~/x")
    root = tmp_path / "x"
    assert cache_root() == root and reference_root() == root / "ref" / "unpacked"
    assert model_cache_dir("m") == root / "models" / "m"
    assert default_world_path() == root / "worlds" / "seed0-reference"
    assert _project_root() == root / "bfcl-eval"
    monkeypatch.delenv("OFFICEGYM_CACHE")
    assert cache_root() == Path(tmp_path) / ".cache" / "officegym"


def test_cli_and_trainer_share_the_default_world(monkeypatch, tmp_path):
    from officegym.cli import common
    from officegym.core import registry

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OFFICEGYM_CACHE", "~/c")
    path = Path(registry.make("workplace").world_path)  # what the trainer builds without data.world
    assert path == tmp_path / "c" / "worlds" / "seed0-reference" and (path / "world.json").exists()
    assert common.default_world() == path
