"""/aggregate_metrics against NeMo Gym 0.7.0's own `compute_aggregate_metrics` (issue 47 item 5):
the same rows give the same values, the repeat, completeness and observability keys included.

NeMo Gym's `reward_profile.py` and `metrics_config.py` run from the cached wheel (as the parity
tests' reference does), under a stand-in `nemo_gym` package that supplies what they import from
the rest of NeMo Gym: constants, the single-agent run labels, the AggregateMetrics model. Skipped
without the wheel, pandas or scipy (`pip install 'officegym[bench]' scipy`, and the wheel in
$OFFICEGYM_CACHE/ref, which OFFICEGYM_FETCH_REFERENCE=1 fetches for the parity tests)."""

from __future__ import annotations

import math
import random
import sys
import types
import warnings
import zipfile
from typing import Any

import pytest

from officegym.envs.workplace.reference import WHEEL_NAME
from officegym.server.metrics import aggregate_metrics

pytestmark = pytest.mark.reference

OURS_ONLY = ("num_tasks", "num_rollouts", "num_masked")  # officegym's additions, with pass@k


def _stand_in_package(tmp_path_factory) -> Any:
    from officegym.core.cache import cache_root

    wheel = cache_root() / "ref" / WHEEL_NAME
    if not wheel.is_file():
        pytest.skip(f"no {wheel} (OFFICEGYM_FETCH_REFERENCE=1 with the parity tests fetches it)")
    pytest.importorskip("pandas")
    pytest.importorskip("scipy")
    pytest.importorskip("orjson")
    root = tmp_path_factory.mktemp("ng")
    pkg = root / "nemo_gym"
    (pkg / "cli").mkdir(parents=True)
    with zipfile.ZipFile(wheel) as zf:
        for name in ("reward_profile.py", "metrics_config.py"):
            (pkg / name).write_bytes(zf.read(f"nemo_gym/{name}"))
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("")
    (pkg / "cli" / "_compat.py").write_text(
        "def moved_attr_getter(module, moved):\n"
        "    def missing(name):\n        raise AttributeError(name)\n    return missing\n")
    (pkg / "config_types.py").write_text(
        "from typing import Any, Dict, List, Optional\nfrom pydantic import BaseModel, Field\n"
        "class BaseNeMoGymCLIConfig(BaseModel):\n    pass\n"
        "class AggregateMetrics(BaseModel):\n"
        "    group_level_metrics: List[Dict[str, Any]] = Field(default_factory=list)\n"
        "    agent_metrics: Dict[str, Any] = Field(default_factory=dict)\n"
        "    key_metrics: Dict[str, Any] = Field(default_factory=dict)\n"
        "    perf_summary: Optional[Dict[str, Any]] = None\n"
        "    repeat_level_metrics: List[Dict[str, Any]] = Field(default_factory=list)\n")
    (pkg / "global_config.py").write_text(
        'TASK_INDEX_KEY_NAME = "_ng_task_index"\nROLLOUT_INDEX_KEY_NAME = "_ng_rollout_index"\n'
        'ATTEMPT_INDEX_KEY_NAME = "_ng_attempt_index"\nAGENT_REF_KEY_NAME = "agent_ref"\n'
        "def rollout_run_key(row):\n    return (row.get(AGENT_REF_KEY_NAME) or {}).get('name')\n"
        "def rollout_run_labels(rows):\n"
        "    return {rollout_run_key(r): rollout_run_key(r) for r in rows if rollout_run_key(r) is not None}\n")
    return root


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = _stand_in_package(tmp_path_factory)
    saved = {name: sys.modules.get(name) for name in ("wandb",)}
    wandb = types.ModuleType("wandb")

    class Histogram:  # one object per column (histograms are dropped before serialisation)
        def __init__(self, data):
            self.data = list(data)

    wandb.Histogram = Histogram
    sys.modules["wandb"] = wandb
    sys.path.insert(0, str(root))
    try:
        from nemo_gym.reward_profile import AggregateMetricsMixin, compute_aggregate_metrics

        mixin = AggregateMetricsMixin()

        def run(rows):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return compute_aggregate_metrics(rows, compute_metrics_fn=mixin.compute_metrics,
                                                 get_key_metrics_fn=mixin.get_key_metrics,
                                                 compute_repeat_metrics_fn=mixin.compute_repeat_metrics).model_dump()

        yield run
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == "nemo_gym" or m.startswith("nemo_gym.")]:
            del sys.modules[name]
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _rows(rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    repeats = rng.randint(1, 4)
    for task in rng.sample(range(12), rng.randint(1, 5)):
        for rollout in range(repeats):
            if rng.random() < 0.15:
                continue
            row: dict[str, Any] = {"_ng_task_index": task, "_ng_rollout_index": rollout,
                                   "reward": rng.choice([0.0, 1.0, 0.5, rng.random()])}
            if rng.random() < 0.5:
                row["n_calls"] = rng.randint(0, 9)
            if rng.random() < 0.4:
                row["flag"] = rng.random() < 0.5
            if rng.random() < 0.2:
                row["_private"] = 3
            if rng.random() < 0.15:
                row["mask_sample"] = True
            if rng.random() < 0.7:
                row["response"] = {"usage": {"input_tokens": rng.randint(1, 999), "output_tokens": rng.randint(1, 99)}}
            if rng.random() < 0.5:
                row["ng_perf"] = {k: rng.choice([rng.randint(0, 500), rng.random() * 100])
                                  for k in ("prompt_tokens", "completion_tokens", "num_turns", "total_latency_ms",
                                            "token_observability_coverage", "cached_prompt_tokens")
                                  if rng.random() < 0.7}
            rows.append(row)
    return rows


def _same(ours: Any, theirs: Any, path: str = "") -> None:
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and ours.keys() == theirs.keys(), (path, sorted(ours.keys() ^ theirs.keys()))
        for key in theirs:
            _same(ours[key], theirs[key], f"{path}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{path}[{i}]")
    elif isinstance(theirs, float) and not isinstance(ours, bool):
        assert math.isclose(ours, theirs, rel_tol=1e-11, abs_tol=1e-11), (path, ours, theirs)
    else:
        assert ours == theirs, (path, ours, theirs)


@pytest.mark.parametrize("seed", range(4))
def test_values_equal_nemo_gyms_on_random_rollouts(reference, seed):
    rng = random.Random(seed)
    cases = [_rows(rng) for _ in range(40)]
    cases += [[], [{"_ng_task_index": 0, "reward": 1.0, "mask_sample": True}],
              [{"_ng_task_index": 0, "_ng_rollout_index": 0.0, "reward": 1}, {"_ng_task_index": 1, "_ng_rollout_index": 1.0,
                                                                              "reward": 0, "mask_sample": 1}]]
    for rows in cases:
        ours = aggregate_metrics(rows)
        ours["agent_metrics"] = {k: v for k, v in ours["agent_metrics"].items()
                                 if k not in OURS_ONLY and not k.startswith("pass@")}
        ours["key_metrics"] = {k: v for k, v in ours["key_metrics"].items() if not k.startswith("pass@")}
        _same(ours, reference(rows))
