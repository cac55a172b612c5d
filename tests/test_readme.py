"""The README's install-and-test lines are what CI runs (.ci/readme_block.py extracts them), so they
must exist, install the extra that holds every test dependency, and end with the test command."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _extractor():
    spec = importlib.util.spec_from_file_location("readme_block", ROOT / ".ci" / "readme_block.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_readme_block_ci_runs_installs_the_test_extra_and_ends_with_pytest():
    lines = _extractor().block((ROOT / "README.md").read_text(encoding="utf-8"), "install-and-test")
    assert lines[0].startswith('pip install -e ".[test]"')
    assert lines[-1].split("#")[0].strip() == "python -m pytest"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    test = extras["test"][0]
    for needed in ("dev", "server", "review", "roles", "report", "train", "bench"):
        assert needed in test, needed
    assert any(d.startswith("pandas") for d in extras["bench"])  # the timestamp and statistics tests compare with it
    # what made the README's test lines fail in a fresh venv: jinja2 (review UI), numpy/scipy (roles)
    assert any(d.startswith("jinja2") for d in extras["review"])
    assert any(d.startswith("scipy") for d in extras["roles"]) and any(d.startswith("numpy") for d in extras["roles"])
    assert "runs these lines as written" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_missing_marker_is_an_error():
    import pytest

    with pytest.raises(SystemExit, match="no '<!-- ci: nothing'"):
        _extractor().block("# title\n", "nothing")


def test_the_license_file_is_the_one_readme_and_pyproject_name():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "Apache-2.0"}
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert "Apache-2.0" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_generated_worlds_and_runs_are_not_committed_by_accident():
    ignored = (ROOT / ".gitignore").read_text().split()
    assert "worlds/" in ignored and "runs/" in ignored
