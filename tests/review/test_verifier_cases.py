"""Verifier regression cases from human review: every case file in tests/review/cases/ (and the
files or folders listed in OFFICEGYM_VERIFIER_CASES, separated by the path separator) is checked
against the current verifier.

A case holds a task, the calls a rollout made, the world (by path or by generator seed) and the
verdict a reviewer confirmed. Cases marked `open` record a verifier mistake a reviewer reported
("verifier too strict / too lenient") that is not fixed yet: they are expected to fail, strictly,
so that the fix shows up as an unexpected pass and the case gets closed (`"open": false`).

cases/workplace_small.jsonl was exported by `officegym review export` after reviewing crafted
rollouts on the generated small world (seed 0): a corrected ground truth and accepted verdicts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from officegym.review.cases import read_cases, run_case
from officegym.review.worlds import Environments

HERE = Path(__file__).parent


def _case_files() -> list[Path]:
    files = sorted((HERE / "cases").glob("*.jsonl"))
    for entry in filter(None, os.environ.get("OFFICEGYM_VERIFIER_CASES", "").split(os.pathsep)):
        p = Path(entry)
        files += sorted(p.glob("*.jsonl")) if p.is_dir() else [p]
    return files


def _params():
    out = []
    for path in _case_files():
        if not path.exists():
            out.append(pytest.param({"missing": str(path)}, id=f"missing:{path}"))
            continue
        for case in read_cases(path):
            marks = [pytest.mark.xfail(strict=True, reason="open: the verifier mistake a reviewer reported is not fixed")] \
                if case.get("open") else []
            out.append(pytest.param(case, id=f"{path.stem}:{case['case_id']}", marks=marks))
    return out or [pytest.param(None, marks=pytest.mark.skip(reason="no verifier case files"))]


_ENVS = Environments()


@pytest.mark.parametrize("case", _params())
def test_verifier_case(case):
    assert "missing" not in case, f"OFFICEGYM_VERIFIER_CASES names {case.get('missing')}, which does not exist"
    got = run_case(case, _ENVS)
    assert got == case["expected"]["matched"], f"{case['case_id']}: verifier says matched={got}, review says {case['expected']}"
