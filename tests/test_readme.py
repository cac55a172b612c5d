"""The README's install-and-test lines are what CI runs (.ci/readme_block.py extracts them), so they
must exist, install the extra that holds every test dependency, and end with the test command."""

from __future__ import annotations

import importlib.util
import json
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


def test_the_five_minute_path_runs_as_written(tmp_path):
    """The README's five-minute block, line by line in a fresh folder, as a newcomer types it: no model,
    seconds a command. The review UI's line serves until the page it names answers, then is stopped."""
    import os
    import re
    import shutil
    import signal
    import subprocess
    import time

    import httpx
    import pytest

    if shutil.which("officegym") is None:
        pytest.skip("the officegym command is not on PATH (pip install -e .)")
    lines = _extractor().block((ROOT / "README.md").read_text(encoding="utf-8"), "five-minute")
    assert [line.split()[:3] for line in lines[:2]] == [["officegym", "generate", "world"], ["officegym", "generate", "tasks"]]
    assert lines[-1].startswith("officegym review serve ")
    env = {**os.environ, "OFFICEGYM_CACHE": str(tmp_path / "cache"), "COLUMNS": "120"}
    work = tmp_path / "work"
    work.mkdir()
    for line in lines[:-1]:
        done = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (line, done.stderr[-3000:])
    oracle = json.loads((work / "runs" / "oracle" / "metrics.json").read_text())
    assert oracle["accuracy"] == 1.0 and (work / "runs" / "random" / "report.html").is_file()
    url = re.search(r"http://127\.0\.0\.1:\d+", lines[-1]).group(0)
    server = subprocess.Popen(["bash", "-c", lines[-1]], cwd=work, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline, page = time.time() + 60, None
        while page is None and time.time() < deadline and server.poll() is None:
            try:
                page = httpx.get(url + "/queue", timeout=2)
            except httpx.HTTPError:
                time.sleep(0.3)
        assert page is not None and page.status_code == 200, server.stderr.read().decode() if server.poll() is not None else "no answer"
        assert 'data-count="pending"' in page.text
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(20)


def test_the_docs_link_only_to_what_a_clone_has():
    """Every relative link of README.md and docs/ resolves (anchors included), none points at the
    project's private ../shared folder, and results.md stays a page of today's figures."""
    import re

    def slug(heading: str) -> str:  # GitHub's anchor of a heading
        return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text, page
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", text):
            if target.startswith("http"):
                continue
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and path.suffix == ".md":
                headings = {slug(h) for h in re.findall(r"(?m)^#+ (.*)$", path.read_text(encoding="utf-8"))}
                if anchor not in headings:
                    broken.append(f"{page.name}: {target}#{anchor}")
    assert broken == []
    assert len((ROOT / "docs" / "results.md").read_text(encoding="utf-8").splitlines()) <= 400
