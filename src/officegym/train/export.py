"""A standalone model from any checkpoint of a training run (`officegym train export`).

A run exports its last (or best) checkpoint as RUN/model when it ends; learning curves and
checkpoint picking need the others too, evaluated the same way (`vllm:DIR`, `hf:DIR`)."""

from __future__ import annotations

from pathlib import Path

from officegym.train.checkpoint import CheckpointInfo, find_checkpoints
from officegym.train.modeling import EXPORT_MARK, ModelSetupError


def pick_checkpoint(run_dir: Path, step: int | None) -> CheckpointInfo:
    """The checkpoint of `step` (None: the latest) of the run in `run_dir`."""
    found = find_checkpoints(run_dir)
    if not found:
        raise ModelSetupError(f"{run_dir} holds no complete checkpoint (looked in {run_dir / 'checkpoints'})")
    if step is None:
        return found[-1]
    for info in found:
        if info.step == step:
            return info
    raise ModelSetupError(f"{run_dir} has no checkpoint of step {step}; it has steps {[c.step for c in found]}")


def export_checkpoint(run_dir: Path, out: Path, step: int | None = None) -> tuple[Path, int]:
    """Merge checkpoint `step` of the run (its config.yaml says the model and the adapter) into
    `out`; returns (out, step). An existing `out` is replaced only when it is an earlier export."""
    from officegym.train.config import GRPORunConfig, SFTRunConfig
    from officegym.train.config_files import load_config
    from officegym.train.modeling import load_train_model, token_renderer

    run_dir, out = Path(run_dir), Path(out)
    config = run_dir / "config.yaml"
    if not config.is_file():
        raise ModelSetupError(f"{config} not found: give the folder of a training run (it holds config.yaml and checkpoints/)")
    if out.exists() and not (out / EXPORT_MARK).is_file():
        raise ModelSetupError(f"{out} exists and is not a model officegym exported: choose another --out")
    info = pick_checkpoint(run_dir, step)
    cfg = load_config(GRPORunConfig if "grpo" in _top_keys(config) else SFTRunConfig, config)
    tm = load_train_model(cfg.model, cfg.lora, cfg.seed)
    token_renderer(tm, cfg)  # puts the run's chat template on the tokenizer, as training did before its own export
    tm.load_trainable(info.path)
    return tm.export(out), info.step


def _top_keys(path: Path) -> set[str]:
    """The sections of a run's resolved config (a GRPO run's has `grpo`)."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return set(data) if isinstance(data, dict) else set()
