"""`officegym nemo-gym root|config`: where NeMo Gym's launcher finds officegym's resources server."""

from __future__ import annotations

from typing import Annotated

import typer

nemo_gym_app = typer.Typer(no_args_is_help=True, add_completion=False,
                           help="Run officegym's Workplace Assistant from NeMo Gym's launcher (docs/nemo-rl.md).")


@nemo_gym_app.command("root")
def root() -> None:
    """Print the folder to give NeMo Gym as a search root (--search-dir, or NEMO_GYM_EXTRA_ROOTS)."""
    from officegym.integrations.nemo_gym import root as root_dir

    typer.echo(str(root_dir()))


@nemo_gym_app.command("config")
def config(
    show: Annotated[bool, typer.Option("--show", help="Print the config itself, not its path.")] = False,
    relative: Annotated[bool, typer.Option("--relative", help="The path relative to the root (what +config_paths names with the root searched).")] = False,
) -> None:
    """Print the path of the shipped NeMo Gym config (instance workplace_assistant, mode nemo_gym)."""
    from officegym.integrations.nemo_gym import config_path, config_relpath

    if show:
        typer.echo(config_path().read_text(encoding="utf-8"), nl=False)
    else:
        typer.echo(config_relpath() if relative else str(config_path()))
