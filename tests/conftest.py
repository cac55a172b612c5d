"""Shared fixtures: the reference world from ../shared when present, and a tiny hand-made world."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from officegym.envs.workplace.world import NAN, build_world, load_world

# The same numerics on every CI machine: precision auto means float32 on a CPU in the tests, whether
# or not this one has bf16 hardware (tests of the detection set the flags themselves).
os.environ.setdefault("OFFICEGYM_CPU_BF16", "0")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("OFFICEGYM_SHARED", REPO.parent / "shared"))
REFERENCE = SHARED / "reference" / "workplace"


NO_REFERENCE = ("NeMo Gym's reference data is not available: clone https://github.com/NVIDIA-NeMo/Gym and set "
                "OFFICEGYM_REFERENCE=<clone>/resources_servers/workplace_assistant")


@pytest.fixture(scope="session")
def reference_dir(tmp_path_factory) -> Path:
    """The reference folder: csv_data/, example.jsonl, example_rollouts.jsonl. OFFICEGYM_REFERENCE
    may name NeMo Gym's own resources_servers/workplace_assistant, whose examples sit in data/."""
    given = os.environ.get("OFFICEGYM_REFERENCE")
    root = Path(given).expanduser() if given else REFERENCE
    if not (root / "csv_data").is_dir():
        pytest.skip(NO_REFERENCE)
    if (root / "example.jsonl").exists() or not (root / "data" / "example.jsonl").exists():
        return root
    view = tmp_path_factory.mktemp("reference")  # NeMo Gym's layout seen as ours, without copying
    (view / "csv_data").symlink_to((root / "csv_data").resolve(), target_is_directory=True)
    for name in ("example.jsonl", "example_rollouts.jsonl"):
        if (root / "data" / name).exists():
            (view / name).symlink_to((root / "data" / name).resolve())
    return view


@pytest.fixture(scope="session")
def ref_world(reference_dir):
    return load_world(reference_dir / "csv_data")


@pytest.fixture(scope="session")
def tiny_world():
    """Three people, a handful of rows per table: small enough to reason about by hand."""
    tables = {
        "emails": (
            ("00000000", "inbox", "ana.lee@acme.com", "Update on Budget", "2023-11-01 09:00:00", "Hi Sam, budget is done. Ana"),
            ("00000001", "inbox", "bo.kim@acme.com", "Task Update on Login page", "2023-11-02 10:00:00", "Sam, login page shipped. Bo"),
            ("00000002", "inbox", "ana.lee@acme.com", "Update on Offsite", "2023-11-03 11:00:00", "Dear Sam, offsite booked. Ana"),
        ),
        "calendar": (
            ("00000000", "sync up", "ana.lee@acme.com", "2023-11-29 09:00:00", "30"),
            ("00000001", "Quarterly Review", "bo.kim@acme.com", "2023-12-01 10:00:00", "60"),
            ("00000002", "team sync up", "bo.kim@acme.com", "2023-12-04 14:00:00", "90"),
        ),
        "project_tasks": (
            ("00000000", "Fix login bug", "bo.kim@acme.com", "Backlog", "2023-11-28", "Front end"),
            ("00000001", "Design logo", "ana.lee@acme.com", "In Progress", "2023-12-01", "Design"),
            ("00000002", "Add caching", "bo.kim@acme.com", "In Review", "2023-12-05", "Back end"),
        ),
        "crm": (
            ("00000000", "cy.ortiz@acme.com", "Dana Fox", "dana.fox@foxco", NAN, "2023-11-20 23:59:00", "Software", "Lead", "2023-12-04 23:59:00", NAN),
            ("00000001", "cy.ortiz@acme.com", "Eli Gray", "eli.gray@grayinc", "555-000-1111", "2023-11-01 23:59:00", "Hardware", "Proposal", "2023-11-20 23:59:00", "2023-11-01: Had a call. "),
            ("00000002", "cy.ortiz@acme.com", "Fay Hunt", "fay.hunt@huntllc", NAN, "2023-10-15 23:59:00", "Services", "Won", "2023-11-10 23:59:00", "On holiday. "),
        ),
    }
    analytics = (
        ("2023-11-28", "0001", "3", "12", "direct", True),
        ("2023-11-28", "0002", "1", "4", "referral", False),
        ("2023-11-29", "0001", "5", "30", "search engine", True),
        ("2023-11-30", "0003", "2", "9", "direct", False),
    )
    directory = ("ana.lee@acme.com", "bo.kim@acme.com", "cy.ortiz@acme.com")
    return build_world("tiny", tables, directory, analytics)


@pytest.fixture(scope="session")
def fake_openai_module():
    """tests/agent/fake_openai.py (a scripted OpenAI-compatible server on 127.0.0.1), loaded once."""
    from importlib import util

    pytest.importorskip("uvicorn")
    spec = util.spec_from_file_location("fake_openai", REPO / "tests" / "agent" / "fake_openai.py")
    mod = util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def tiny_world_dir(tmp_path_factory) -> Path:
    """A small generated world on disk (the workplace environment loads worlds from folders)."""
    from officegym.envs.workplace.generate import generate_world, write_world

    path = tmp_path_factory.mktemp("world") / "w"
    write_world(generate_world(1, "small"), path, overwrite=True)
    return path
