"""`python -m officegym.cli`: the `officegym` command."""

from officegym.cli import app

app()
