"""`officegym plot RUN_DIR`: reward and validation-accuracy curves of a training run as PNG."""

from __future__ import annotations

from pathlib import Path

from officegym.train.tracking import read_metrics

CURVES = {
    "reward.png": ("train/reward_mean", "reward (train, mean)"),
    "val_accuracy.png": ("val/accuracy", "validation accuracy"),
    "loss.png": ("train/loss", "loss"),
}


def plot_run(run_dir: Path) -> list[Path]:
    """Write one PNG per curve that has data into run_dir/plots; returns their paths."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("plotting needs matplotlib: pip install 'officegym[report]'") from None
    records = read_metrics(Path(run_dir))
    if not records:
        raise FileNotFoundError(f"{run_dir} has no metrics.jsonl records")
    out_dir = Path(run_dir) / "plots"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, (key, title) in CURVES.items():
        points = [(r["step"], r[key]) for r in records if isinstance(r.get(key), int | float)]
        if not points:
            continue
        fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o" if len(points) < 30 else None)
        ax.set_xlabel("step")
        ax.set_title(f"{title}: {Path(run_dir).name}", fontsize=10)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out_dir / filename
        tmp = path.with_name(f".{filename}.tmp.png")
        fig.savefig(tmp, format="png")
        plt.close(fig)
        tmp.replace(path)
        written.append(path)
    return written
