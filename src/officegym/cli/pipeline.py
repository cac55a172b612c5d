"""`officegym pipeline`: world -> tasks -> evals and training -> report, in one resumable run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from officegym.cli.common import console, fail


def pipeline(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Pipeline YAML (configs/quickstart.yaml, ...).")] = None,
    overrides: Annotated[list[str] | None, typer.Argument(help="dotted.key=value overrides, e.g. tasks.n=500")] = None,
) -> None:
    """World -> tasks -> baselines -> eval -> SFT -> eval -> GRPO -> eval -> report, resumable: rerun to continue.
    `env: roles/<role>` (configs/roles_*.yaml) trains an executive role."""
    from officegym.pipeline import Pipeline, PipelineError, load_pipeline_config
    from officegym.train.config_files import ConfigError

    try:
        cfg = load_pipeline_config(str(config) if config else None, overrides or [])
    except ConfigError as exc:
        fail(str(exc))
    from officegym.train.data import DataError
    from officegym.train.grpo import TrainingSetupError
    from officegym.train.modeling import ModelSetupError

    runner = Pipeline(cfg, console)
    try:
        runner.run()
    except (PipelineError, DataError, TrainingSetupError, ModelSetupError, ValueError, OSError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        console.print("[yellow]interrupted: rerun the same command to continue from the last finished stage or checkpoint[/]")
        raise typer.Exit(130) from None
    from officegym.pipeline import headline

    for line in headline(Path(cfg.out_dir)):
        console.print(line)
    typer.echo(str(Path(cfg.out_dir) / "report.html"))
