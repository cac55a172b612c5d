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


def test_bf16_counts_as_native_only_with_amx_or_avx512_bf16(monkeypatch):
    monkeypatch.delenv("OFFICEGYM_CPU_BF16", raising=False)
    assert machine.cpu_bf16({"avx2", "fma"}) is None
    assert machine.cpu_bf16({"avx512f", "avx512_bf16"}) == "avx512_bf16"
    assert machine.cpu_bf16({"amx_bf16", "avx512_bf16"}) == "amx_bf16"
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"avx2"})
    assert machine.cpu_dtype() == "float32"
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"avx2", "amx_bf16"})
    assert machine.cpu_dtype() == "bfloat16"


def test_cpu_flags_read_this_machine():
    flags = machine.cpu_flags()
    assert isinstance(flags, set)
    if flags:  # Linux x86: every such CPU has sse2
        assert machine.cpu_bf16(flags) in (None, *machine.BF16_FLAGS)


def test_precision_auto_follows_the_cpus_bf16_hardware_and_bf16_without_it_warns(monkeypatch, caplog):
    torch = pytest.importorskip("torch")
    from officegym.train.modeling import autocast_dtype

    monkeypatch.delenv("OFFICEGYM_CPU_BF16", raising=False)
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"avx2"})
    assert autocast_dtype("auto", "cpu") is None
    assert autocast_dtype("fp32", "cpu") is None
    with caplog.at_level("WARNING", logger="officegym.train.modeling"):
        assert autocast_dtype("bf16", "cpu") is torch.bfloat16
    assert "30x slower" in caplog.text
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"avx512f", "amx_bf16"})
    caplog.clear()
    with caplog.at_level("WARNING", logger="officegym.train.modeling"):
        assert autocast_dtype("auto", "cpu") is torch.bfloat16
        assert autocast_dtype("bf16", "cpu") is torch.bfloat16
    assert not caplog.text


def test_vllm_on_a_cpu_defaults_to_the_cpus_dtype_and_keeps_an_explicit_one(monkeypatch, caplog):
    from officegym.agent import vllm_engine

    monkeypatch.delenv("OFFICEGYM_CPU_BF16", raising=False)
    monkeypatch.setattr(vllm_engine, "_on_cpu", lambda: True)
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"avx2"})
    assert vllm_engine.engine_options({})["dtype"] == "float32"
    assert vllm_engine.engine_options({"dtype": "auto"})["dtype"] == "float32"
    assert vllm_engine.engine_options({"dtype": "float32"})["dtype"] == "float32"
    with caplog.at_level("WARNING", logger="officegym.agent.vllm_engine"):
        assert vllm_engine.engine_options({"dtype": "bfloat16"})["dtype"] == "bfloat16"
    assert "emulated" in caplog.text
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"amx_bf16"})
    assert vllm_engine.engine_options({})["dtype"] == "bfloat16"
    assert vllm_engine.engine_options({"dtype": "auto"})["dtype"] == "bfloat16"


def test_vllm_on_a_cpu_caches_prefixes_in_32_token_blocks_unless_told(monkeypatch):
    from officegym.agent import vllm_engine

    monkeypatch.setattr(vllm_engine, "_on_cpu", lambda: True)
    assert vllm_engine.engine_options({})["block_size"] == 32
    assert vllm_engine.engine_options({"block_size": 128})["block_size"] == 128
    monkeypatch.setattr(vllm_engine, "_on_cpu", lambda: False)
    assert "block_size" not in vllm_engine.engine_options({})


def test_the_environment_can_force_bf16_on_or_off(monkeypatch):
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"amx_bf16"})
    monkeypatch.setenv("OFFICEGYM_CPU_BF16", "0")
    assert machine.cpu_dtype() == "float32"
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"avx2"})
    monkeypatch.setenv("OFFICEGYM_CPU_BF16", "1")
    assert machine.cpu_dtype() == "bfloat16"


def test_the_governor_rechooses_threads_each_step_as_other_work_comes_and_goes(monkeypatch):
    """A process that takes a core in the middle of a run costs one step: the next step measures
    again and drops to the free cores (threads chosen once at start kept 2 for the whole run)."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    monkeypatch.delenv("OFFICEGYM_THREADS", raising=False)
    monkeypatch.setattr(machine, "usable_cores", lambda: 2)
    loads = iter([Load(busy=0.1, cores=2), Load(busy=1.0, cores=2), Load(busy=0.2, cores=2)])
    monkeypatch.setattr(machine, "measure_load", lambda seconds: next(loads))
    gov = machine.ThreadGovernor()
    try:
        assert gov.update() == (2, 0.1) and torch.get_num_threads() == 2
        assert gov.update() == (1, 1.0) and torch.get_num_threads() == 1
        assert gov.update() == (2, 0.2) and torch.get_num_threads() == 2
        assert machine.thread_metrics(2, 0.2) == {"machine/threads": 2.0, "machine/busy_cores": 0.2}
    finally:
        torch.set_num_threads(before)


def test_a_chosen_thread_count_is_kept_and_not_measured(monkeypatch):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    monkeypatch.setattr(machine, "measure_load", lambda seconds: pytest.fail("measured although fixed"))
    try:
        assert machine.ThreadGovernor(fixed=1).update() == (1, None)
        monkeypatch.setenv("OFFICEGYM_THREADS", "1")
        assert machine.ThreadGovernor().update() == (1, None)
        assert machine.thread_metrics(1, None) == {"machine/threads": 1.0}
    finally:
        torch.set_num_threads(before)


def test_niced_work_counts_as_busy_only_where_it_gives_way(monkeypatch, tmp_path):
    """/proc/stat's "nice" column is time of niced processes: with autogroup off they yield to a
    process at nice 0, so the cores they hold are free for it; with autogroup on they do not."""
    import builtins

    from officegym import machine

    stat = "cpu  100 300 0 600 0 0 0 0 0 0\n"  # user, nice, system, idle, ...
    real_open = builtins.open

    def fake_open(path, *a, **k):
        if path == "/proc/stat":
            return real_open(tmp_path / "stat", *a, **k)
        if path == "/proc/sys/kernel/sched_autogroup_enabled":
            return real_open(tmp_path / "autogroup", *a, **k)
        return real_open(path, *a, **k)

    (tmp_path / "stat").write_text(stat)
    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(machine.os, "getpriority", lambda *a: 0)
    (tmp_path / "autogroup").write_text("1\n")
    assert machine._cpu_times() == (400.0, 1000.0)
    (tmp_path / "autogroup").write_text("0\n")
    assert machine._cpu_times() == (100.0, 1000.0)
    monkeypatch.setattr(machine.os, "getpriority", lambda *a: 5)  # niced ourselves: others need not yield
    assert machine._cpu_times() == (400.0, 1000.0)
