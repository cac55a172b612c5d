"""Table cells of the pipeline report: percentages and accuracies with their intervals."""

from __future__ import annotations

from typing import Any


def pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def acc_cell(rate: dict[str, Any] | None) -> str:
    """"47.6% [28.3, 67.6] (n=21)": accuracy, its 95% Wilson interval, the number of rollouts."""
    if not rate or rate.get("accuracy") is None:
        return "-"
    ci = rate.get("ci95")
    interval = f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
    return f"{pct(rate['accuracy'])}{interval} (n={rate.get('n', '?')})"
