"""The report's validation plot draws intervals whose float bounds land a hair past the point."""

from __future__ import annotations

import pytest

from officegym.eval.stats import wilson_interval
from officegym.pipeline.report import write_validation_plot


def test_a_validation_of_0_of_12_plots(tmp_path):
    pytest.importorskip("matplotlib")
    series = [(step, k / 12, *wilson_interval(k, 12)) for step, k in ((0, 1), (5, 0), (10, 12))]
    assert series[1][2] > 0.0  # Wilson's lower bound at 0 of 12 is 2.8e-17, above the point
    path = write_validation_plot(tmp_path, series)
    assert path is not None and path.is_file() and path.stat().st_size > 0
