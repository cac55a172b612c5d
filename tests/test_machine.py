from __future__ import annotations

import pytest

from officegym import machine
from officegym.machine import Load, default_threads, load_advice, measure_load


def test_load_is_the_busy_share_of_the_cores_between_two_readings(monkeypatch):
    readings = iter([(100.0, 400.0), (175.0, 500.0)])  # 75 of 100 jiffies busy
    monkeypatch.setattr(machine, "_cpu_times", lambda: next(readings))
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(machine.time, "sleep", lambda s: None)
    load = measure_load(0.1)
    assert load == Load(busy=3.0, cores=4) and load.free == 1


def test_threads_take_the_free_cores_and_the_user_can_choose(monkeypatch):
    monkeypatch.delenv("OFFICEGYM_THREADS", raising=False)
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    assert default_threads(Load(busy=0.1, cores=2)) == 2
    assert default_threads(Load(busy=1.2, cores=2)) == 1
    assert default_threads(Load(busy=2.0, cores=2)) == 1  # never 0
    monkeypatch.setenv("OFFICEGYM_THREADS", "3")
    assert default_threads(Load(busy=2.0, cores=2)) == 3


def test_advice_only_when_other_work_holds_a_core():
    assert load_advice(None) is None
    assert load_advice(Load(busy=0.2, cores=2)) is None
    text = load_advice(Load(busy=1.0, cores=2))
    assert "1.0 of 2 cores busy" in text and "1 thread " in text


@pytest.mark.skipif(machine._cpu_times() is None, reason="no /proc/stat")
def test_a_real_reading_is_within_the_cores():
    load = measure_load(0.05)
    assert load is not None and 0.0 <= load.busy <= load.cores + 0.5
