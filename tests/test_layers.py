"""Imports point downwards only (shared/DESIGN.md): checked on the source, not by convention."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "officegym"
# The top floor: each may use the floors below, none another of them (what they share lives in core).
TOP = ("train", "eval", "review", "server")


def imported_packages(folder: str) -> dict[str, set[str]]:
    """officegym sub-package (or top-level module) -> the files of `folder` that import it."""
    out: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "officegym" and len(parts) > 1 and parts[1] != folder:
                    out.setdefault(parts[1], set()).add(str(path.relative_to(PACKAGE)))
    return out


def test_core_imports_nothing_else_of_ours():
    assert imported_packages("core") == {}


def test_environments_import_only_core():
    assert set(imported_packages("envs")) <= {"core"}


def test_the_top_floor_packages_do_not_import_each_other():
    for folder in TOP:
        found = {pkg: files for pkg, files in imported_packages(folder).items() if pkg in TOP}
        assert found == {}, f"{folder} imports {found}"
