"""`officegym train sft|grpo --config C.yaml [dotted.key=value ...]`, `officegym train export RUN_DIR
--out DIR [--step N]` and `officegym plot RUN_DIR`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

train_app = typer.Typer(no_args_is_help=True, add_completion=False, help="Train a policy: SFT and GRPO.")
console = Console(stderr=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="YAML config (see configs/); omitted: defaults.")]
Overrides = Annotated[list[str] | None, typer.Argument(help="dotted.key=value overrides, e.g. grpo.num_generations_per_prompt=8")]


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(2)


def _run(kind: str, config: Path | None, overrides: list[str] | None) -> None:
    from officegym.train.config import GRPORunConfig, SFTRunConfig
    from officegym.train.config_files import ConfigError, load_config
    from officegym.train.data import DataError
    from officegym.train.grpo import TrainingSetupError
    from officegym.train.modeling import ModelSetupError

    try:
        cfg = load_config(GRPORunConfig if kind == "grpo" else SFTRunConfig, config, overrides or [])
    except ConfigError as exc:
        _fail(str(exc))
    try:
        if kind == "grpo":
            from officegym.train.grpo import train_grpo

            result = train_grpo(cfg, console)
        else:
            from officegym.train.sft import train_sft

            result = train_sft(cfg, console)
    except (DataError, TrainingSetupError, ModelSetupError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: the step in progress was abandoned; rerun the same command to resume "
                      "from the last checkpoint[/]")
        raise typer.Exit(130) from None
    if result.stopped:
        console.print(f"[yellow]stopped after step {result.last_step}; rerun the same command to resume[/]")
        raise typer.Exit(130)
    console.print(f"run folder: {result.run_dir} (steps {result.start_step + 1}-{result.last_step})")


@train_app.command("sft")
def sft(config: ConfigOpt = None, overrides: Overrides = None) -> None:
    """Supervised fine-tuning on ground-truth replays or good rollouts (assistant tokens only)."""
    _run("sft", config, overrides)


@train_app.command("grpo")
def grpo(config: ConfigOpt = None, overrides: Overrides = None) -> None:
    """GRPO with the environment's verifier as the reward (resumable: rerun to continue)."""
    _run("grpo", config, overrides)


@train_app.command("export")
def export(run_dir: Annotated[Path, typer.Argument(help="A training run folder (holds config.yaml and checkpoints/).")],
           out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the merged model (vllm:DIR or hf:DIR load it).")],
           step: Annotated[int | None, typer.Option("--step", help="Which checkpoint; omitted: the latest.")] = None) -> None:
    """Export one checkpoint of a run as a standalone model (merged weights and tokenizer)."""
    from officegym.train.export import export_checkpoint
    from officegym.train.modeling import ModelSetupError

    try:
        path, got = export_checkpoint(run_dir, out, step)
    except ModelSetupError as exc:
        _fail(str(exc))
    console.print(f"step {got} of {run_dir} exported to {path}")


def plot_command(run_dir: Annotated[Path, typer.Argument(help="A training run folder (holds metrics.jsonl).")]) -> None:
    """Draw the reward and validation-accuracy curves of a run as PNG (RUN_DIR/plots)."""
    from officegym.core.inputs import InputError, input_file
    from officegym.train.plot import plot_run

    try:
        if (run_dir / "metrics.jsonl").exists():  # a binary or damaged file is named, not a traceback
            input_file(run_dir / "metrics.jsonl", "metrics file")
        paths = plot_run(run_dir)
    except (FileNotFoundError, RuntimeError, InputError) as exc:
        _fail(str(exc))
    for p in paths:
        typer.echo(str(p))
