"""benchmarks/step_profile.py: operators sorted by kind, and the step's shapes timed alone."""

from __future__ import annotations

import types

from rich.console import Console


def test_operators_are_sorted_by_the_work_they_do(benchmark_script):
    mod = benchmark_script("step_profile")
    attention, matrix, softmax, elementwise = (kind for kind, _ in mod.KINDS)
    assert mod.kind_of("aten::mm") == matrix
    assert mod.kind_of("aten::addmm") == matrix
    assert mod.kind_of("aten::_scaled_dot_product_flash_attention_for_cpu_backward") == attention
    assert mod.kind_of("aten::_log_softmax_backward_data") == softmax
    assert mod.kind_of("aten::silu_backward") == elementwise
    assert mod.kind_of("aten::view").startswith("other")


def test_kernels_time_every_shape_and_attention_kernel(benchmark_script):
    import torch

    mod = benchmark_script("step_profile")
    torch.set_num_threads(1)
    config = types.SimpleNamespace(hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2)
    console = Console(record=True, width=200)
    mod.kernels(console, config, rows=2, rest=6, prompt=10)
    text = console.export_text()
    assert "[12 x 32] @ [32 x 64]" in text and "[12 x 64] @ [64 x 32]" in text  # 2 rows x 6 tokens
    for label in ("flash (PyTorch's CPU default)", "math kernel", "plain matrix products", "without gradient"):
        assert label in text
