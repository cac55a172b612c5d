"""PNG plots for reports (matplotlib, imported lazily; reports work without it)."""

from __future__ import annotations

import io
from typing import Any


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bar_png(title: str, labels: list[str], values: list[float], ylabel: str = "accuracy") -> bytes:
    plt = _figure()
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(labels) + 2), 3.2), dpi=100)
    ax.bar(range(len(labels)), values, color="#4C72B0")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, max(1.0, max(values, default=0) * 1.1))
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _png(fig, plt)


def hist_png(title: str, values: list[float], xlabel: str, bins: int = 20) -> bytes:
    plt = _figure()
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=100)
    ax.hist(values, bins=bins, color="#55A868")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("rollouts")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return _png(fig, plt)


def lines_png(title: str, lines: list[tuple[str, list[float], list[float], str, int]], xlabel: str,
              ylabel: str) -> bytes:
    """One line per (label, xs, ys, style, colour index): "-" solid, "--" dashed; lines sharing a
    colour index share the colour (a run and its control)."""
    plt = _figure()
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for label, xs, ys, style, colour in lines:
        ax.plot(xs, ys, style, marker="o", markersize=3, color=colours[colour % len(colours)], label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    return _png(fig, plt)


def _png(fig: Any, plt: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()
