"""Differential tests: officegym's workplace tools and verifier against NeMo Gym's reference code.

The reference (nemo-gym 0.7.0, `resources_servers/workplace_assistant`) runs from the officegym cache
(`$OFFICEGYM_CACHE` or ~/.cache/officegym). The module is skipped when pandas or the cached reference
is missing; set OFFICEGYM_FETCH_REFERENCE=1 to let it download the pinned wheel with pip.

The generators and comparison live in benchmarks/parity_calls.py, shared with the long-running
benchmarks/parity_fuzz.py. Every failure message carries the seed, the call sequence up to the
divergence and both outputs; rerun one sequence with
`parity_calls.run_sequence(ref, world, parity_calls.random_sequence(random.Random(SEED), N), SEED)`.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.reference

try:
    import pandas  # noqa: F401
except ImportError:
    pytest.skip("pandas is not installed (pip install 'officegym[bench]')", allow_module_level=True)

_HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "parity_calls.py"
_spec = importlib.util.spec_from_file_location("parity_calls", _HARNESS)
pc = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("parity_calls", pc)
_spec.loader.exec_module(pc)

_env = pc.setup(download=os.environ.get("OFFICEGYM_FETCH_REFERENCE") == "1")
if _env is None:
    pytest.skip(
        "NeMo Gym reference code not cached (set OFFICEGYM_FETCH_REFERENCE=1 to download nemo-gym==0.7.0)",
        allow_module_level=True,
    )
REF, WORLD = _env
DATA = pc.reference_data_dir() / "data"

# Budget: about 6,000 calls in 8 blocks and about 350 verdict pairs, well under a minute on 2 cores.
CALL_BLOCKS = 8
SEQUENCES_PER_BLOCK = 30
PAIR_BLOCKS = 4
PAIRS_PER_BLOCK = 60


def _fail_message(divergences: list, total: int) -> str:
    unknown = [d for d in divergences if d.known is None]
    kinds: dict[str, list] = {}
    for d in unknown:
        kinds.setdefault(d.signature(), []).append(d)
    parts = [f"{len(unknown)} divergences ({len(kinds)} kinds) in {total} comparisons:"]
    for sig, ds in kinds.items():
        d = min(ds, key=lambda d: len(d.calls))
        parts.append(f"\n[{len(ds)}x] {sig}\n{d.report(max_calls=15)}")
    return "\n".join(parts)


@pytest.mark.parametrize("block", range(CALL_BLOCKS))
def test_per_call_parity(block: int) -> None:
    """Random sequences: identical output text after every call, identical tables at the end."""
    stats = pc.Stats()
    found = []
    for i in range(SEQUENCES_PER_BLOCK):
        seed = 1000 * block + i
        rng = random.Random(seed)
        calls = pc.random_sequence(rng, rng.randint(10, 40))
        found += pc.run_sequence(REF, WORLD, calls, seed, stats)
    total = sum(stats.calls.values())
    assert not [d for d in found if d.known is None], _fail_message(found, total)


def test_generator_covers_every_tool() -> None:
    rng = random.Random(0)
    calls = pc.random_calls(rng, 3000)
    names = {n for n, _ in calls}
    assert set(pc.TOOL_NAMES) <= names
    assert len(pc.TOOL_NAMES) == 27
    assert names - set(pc.TOOL_NAMES), "unknown tool names are part of the mix"


def test_state_dependent_paths_are_exercised() -> None:
    """Sanity of the harness: the reference accepts many writes, so later calls see changed state."""
    ref = pc.ReferenceSession(REF)
    rng = random.Random(7)
    ok = 0
    for name, args in pc.random_sequence(rng, 300, write_bias=0.9):
        text = ref.call(name, args)
        ok += name in pc.WRITES and ("successfully" in text or '"output":"000' in text or "plots/" in text)
    assert ok > 60, ok
    assert len(ref.frame("plots")) > 0


@pytest.mark.parametrize("name", sorted(pc.REGRESSIONS))
def test_regression_sequences(name: str) -> None:
    """Minimal reproductions of divergences the fuzzer found (see the comments in parity_calls.py)."""
    found = pc.run_sequence(REF, WORLD, pc.REGRESSIONS[name], name)
    assert not [d for d in found if d.known is None], _fail_message(found, len(pc.REGRESSIONS[name]))


def test_recorded_rollout_outputs() -> None:
    """The five recorded rollouts: our output, and the route emulation's, equal the recorded HTTP bodies."""
    found = []
    n = 0
    for label, calls in pc.rollout_outputs(DATA):
        n += len(calls)
        found += pc.check_recorded(REF, WORLD, label, calls)
    assert n > 0
    assert not found, _fail_message(found, n)


def _verdict_divergences(pairs) -> list:
    found = []
    for label, pred, gt in pairs:
        ours, theirs = pc.compare_verdict(REF, WORLD, pred, gt)
        if ours != theirs:
            found.append(
                pc.Divergence(
                    "verdict", "verify", label, [pred, gt], f"is_correct={theirs}", f"verify_calls={ours}"
                )
            )
    return found


def test_verdict_parity_examples() -> None:
    """example.jsonl ground truths and example_rollouts.jsonl predictions, in many combinations."""
    pairs = pc.example_pairs(DATA)
    assert len(pairs) >= 50
    found = _verdict_divergences(pairs)
    assert not found, _fail_message(found, len(pairs))


def test_verdict_parity_regressions() -> None:
    found = _verdict_divergences(pc.REGRESSION_PAIRS)
    assert not found, _fail_message(found, len(pc.REGRESSION_PAIRS))


@pytest.mark.parametrize("block", range(PAIR_BLOCKS))
def test_verdict_parity_random(block: int) -> None:
    """verify_calls(mode="nemo_gym").reward == float(is_correct(pred, gt, None)) on random pairs."""
    pairs = []
    for i in range(PAIRS_PER_BLOCK):
        seed = 1000 * block + i
        kind, pred, gt = pc.random_pair(random.Random(seed))
        pairs.append((f"{seed} ({kind})", pred, gt))
    found = _verdict_divergences(pairs)
    assert not found, _fail_message(found, len(pairs))
