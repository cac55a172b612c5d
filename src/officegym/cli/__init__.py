"""The `officegym` command. Each sub-command is a thin call into the layers; the commands live by job
in generate.py, eval.py (tools, call, verify, eval, report, compare), serve.py, mcp.py, nemo_gym.py, council.py,
pipeline.py and doctor.py (doctor, envs), and what they share in common.py."""

from __future__ import annotations

import typer
from typer.core import TyperGroup

from officegym.cli.common import fail
from officegym.core.inputs import InputError


class _Root(TyperGroup):
    """The root of the command tree: a path or setting any layer finds unusable (InputError) ends
    the command with its one-line message, and the help shows flags without a type."""

    def parse_args(self, ctx, args):
        _plain_flags(self, ctx)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InputError as exc:
            fail(str(exc))


def _plain_flags(command, ctx) -> None:
    """Rich help prints every flag's type ("<bool>") where only values have one; an empty metavar
    prints nothing. Done on the whole tree because subcommands build their --help option lazily."""
    for param in [*command.params, command.get_help_option(ctx)]:
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _plain_flags(sub, ctx)


app = typer.Typer(cls=_Root, no_args_is_help=True, add_completion=False,
                  help="officegym: environments, data and RL for tool-using agents.")


def _mount() -> None:
    """The commands and sub-apps, in the order the help lists them (commands first, then groups)."""
    from officegym.bench.cli import bench_app
    from officegym.cli.council import council
    from officegym.cli.doctor import doctor, envs
    from officegym.cli.eval import compare, eval_cmd, report
    from officegym.cli.generate import generate_app
    from officegym.cli.mcp import mcp
    from officegym.cli.nemo_gym import nemo_gym_app
    from officegym.cli.pipeline import pipeline
    from officegym.cli.serve import serve
    from officegym.cli.tools import call, tools, verify
    from officegym.review.cli import review_app
    from officegym.train.cli import plot_command, train_app

    app.add_typer(generate_app, name="generate")
    app.add_typer(review_app, name="review")
    app.add_typer(bench_app, name="bench")
    app.add_typer(train_app, name="train")
    app.add_typer(nemo_gym_app, name="nemo-gym")
    app.command("plot")(plot_command)
    for command in (tools, call, verify):
        app.command()(command)
    app.command("eval")(eval_cmd)
    for command in (report, compare, serve, mcp, council, pipeline, doctor, envs):
        app.command()(command)


_mount()

__all__ = ["app"]
