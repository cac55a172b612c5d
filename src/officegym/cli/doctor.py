"""`officegym doctor|envs`: what is installed, and which environments are registered."""

from __future__ import annotations

import typer
from rich.console import Console


def doctor() -> None:
    """Check Python, torch, the GPU, optional extras and the model cache, and say what to install."""
    from officegym.doctor import path_lines, render, run_checks

    checks = run_checks()
    out = Console()
    out.print(render(checks))
    for line in path_lines(checks):
        out.print(line, soft_wrap=True, markup=False, highlight=False)
    if any(c.required and c.status == "missing" for c in checks):
        raise typer.Exit(1)


def envs() -> None:
    """List the registered environments, each with the short names it also answers to."""
    from officegym.core.registry import aliases, names

    for n in names():
        also = aliases(n)
        typer.echo(n + (f"  (also: {', '.join(also)})" if also else ""))
