"""`officegym review ...`: flag a run into a review store, serve the review UI, export, import.

A run's store is RUN/review/review.sqlite (where the pipeline keeps its own), so `flag RUN`,
`serve RUN` and `export RUN` find it without --store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

review_app = typer.Typer(no_args_is_help=True, add_completion=False,
                         help="Human review: flag rollouts, review them in a web UI, export the decisions as data.")
console = Console(stderr=True)

StoreOpt = Annotated[Path | None, typer.Option("--store", help="The review store (SQLite file); default: RUN/review/review.sqlite.")]
RunArg = Annotated[Path | None, typer.Argument(help="The run folder flagged with `review flag` (its store is RUN/review/review.sqlite).",
                                               show_default=False)]
WorldOpt = Annotated[Path | None, typer.Option(
    "--world", help="World folder the rollouts ran in (default: the run's run.json, else eval's default world).")]


def _fail(message: str) -> None:
    # One line whatever the terminal's width; paths may hold brackets, which rich reads as markup.
    console.print(f"[bold red]error:[/] {escape(' '.join(message.split()))}", soft_wrap=True, highlight=False)
    raise typer.Exit(2)


def run_store(run: Path) -> Path:
    """A run's review store: RUN/review/review.sqlite (beside the file for a rows file)."""
    return (run.parent if run.is_file() else run) / "review" / "review.sqlite"


def _store_path(run: Path | None, store: Path | None, must_exist: bool = True) -> Path:
    if store is None:
        if run is None:
            _fail("name the run folder (RUN) or the review store (--store)")
        if not run.exists():
            _fail(f"no such run folder: {run}")
        store = run_store(run)
    if must_exist and not store.is_file():
        hint = f"; `officegym review flag {run}` makes it" if run is not None else ""
        _fail(f"no such review store: {store}{hint}")
    return store


@contextmanager
def _opened(path: Path) -> Iterator:
    """The store at `path`, checked whole first; a damaged or foreign file, or an SQLite error
    on the way, ends the command with one line instead of a traceback."""
    from officegym.review.store import Store
    from officegym.review.store_schema import StoreError

    try:
        st = Store(path, integrity=True)
    except (StoreError, OSError) as exc:
        _fail(str(exc))
    try:
        yield st
    except sqlite3.Error as exc:
        _fail(f"{path}: {exc}")
    finally:
        st.close()


def _envs(world: Path | None):
    from officegym.review.worlds import Environments, spec_for_path

    if world is not None and not world.exists():
        _fail(f"no such world folder: {world}")
    return Environments(spec_for_path(world) if world is not None else None)


@review_app.command("flag")
def flag_cmd(
    run_dir: Annotated[Path, typer.Argument(help="An eval run folder, a GRPO run folder, a council run folder "
                                                 "(councils.jsonl), or any folder of such rows files.")],
    store: StoreOpt = None,
    world: WorldOpt = None,
    audit_share: Annotated[float, typer.Option("--audit-share", min=0.0, max=1.0, help="Share of rollouts drawn for a random audit.")] = 0.05,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the audit draw.")] = 0,
    hard: Annotated[float, typer.Option("--hard-difficulty", help="Difficulty from which all-pass groups are suspicious.")] = 7,
    no_replay: Annotated[bool, typer.Option("--no-replay", help="Do not replay oracles or end states (no world needed).")] = False,
    run: Annotated[str | None, typer.Option("--run", help="Name of the run in item keys (default: the folder's name).")] = None,
    tasks: Annotated[Path | None, typer.Option("--tasks", help="The roles/council task rows a council run was played "
                                                               "from (default: what its run.json says).")] = None,
) -> None:
    """Queue a run's rollouts (or councils) for review, each with its reasons and a priority."""
    from officegym.review.flag import REASONS, FlagConfig, flag_run

    if not run_dir.exists():
        _fail(f"no such run folder: {run_dir}")
    if tasks is not None and not tasks.is_file():
        _fail(f"no such task file: {tasks}")
    store = _store_path(run_dir, store, must_exist=False)
    with _opened(store) as st:
        try:
            config = FlagConfig(audit_share=audit_share, seed=seed, hard_difficulty=hard, replay=not no_replay)
            with console.status("flagging"):
                res = flag_run(run_dir, st, config, world=world, run=run, tasks=tasks)
        except (ValueError, OSError) as exc:
            _fail(str(exc))
    rep = res.report
    table = Table(title=f"{run_dir}: {rep.rollouts} rollouts in {rep.groups} groups -> {len(rep.items)} items "
                        f"({res.added} new, {res.refreshed} refreshed)")
    table.add_column("reason")
    table.add_column("items", justify="right")
    table.add_column("meaning")
    for code, text in REASONS.items():
        if rep.by_reason.get(code):
            table.add_row(code, str(rep.by_reason[code]), text)
    console.print(table)
    if rep.training_only:
        console.print(f"{rep.training_only} groups fail every sample with a sound oracle: too hard for the policy, not queued")
    for p in rep.problems[:20]:
        console.print(f"[yellow]{p}[/]")
    if len(rep.problems) > 20:
        console.print(f"[yellow]... and {len(rep.problems) - 20} more[/]")
    typer.echo(str(store))


@review_app.command("serve")
def serve_cmd(
    run_dir: RunArg = None,
    store: StoreOpt = None,
    world: WorldOpt = None,
    host: Annotated[str, typer.Option("--host", help="127.0.0.1 keeps the UI on this machine (it has no login).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port of the web UI.")] = 8765,
    reviewer: Annotated[str | None, typer.Option("--reviewer", help="Default reviewer name (the page can change it).")] = None,
    allowed_hosts: Annotated[str | None, typer.Option(
        "--allowed-hosts", help="Comma-separated host or host:port names the UI answers to, instead of localhost and "
                                "--host on --port ('*': any; a name without a port: any port).")] = None,
) -> None:
    """Serve the review web UI of RUN's store (or --store's)."""
    try:
        import uvicorn

        from officegym.review.app import create_app
        from officegym.review.guard import WILDCARD_HOSTS, AllowedHosts
    except ImportError as exc:
        _fail(f"the review UI needs the server extra and jinja2 ({exc}): pip install 'officegym[server]' jinja2")
    envs = _envs(world)
    path = _store_path(run_dir, store)
    try:
        allowed = AllowedHosts.parse(allowed_hosts) if allowed_hosts is not None else AllowedHosts.for_bind(host, port)
    except ValueError as exc:
        _fail(str(exc))
    with _opened(path) as st:
        app = create_app(st, envs, reviewer=reviewer, allowed_hosts=allowed)
        console.print(f"officegym review: {escape(str(path))} on http://{host}:{port}; Ctrl-C stops", soft_wrap=True, highlight=False)
        if allowed_hosts is None and host.strip("[]") in WILDCARD_HOSTS:
            console.print("on every interface, yet only localhost names pass the Host check: "
                          "add --allowed-hosts with the names others use to reach this machine", soft_wrap=True)
        uvicorn.run(app, host=host, port=port, log_level="warning")


@review_app.command("export")
def export_cmd(
    run_dir: RunArg = None,
    out: Annotated[Path | None, typer.Option("--out", help="Folder for the exported files; default: the export folder beside "
                                                            "the store (RUN/review/export).")] = None,
    store: StoreOpt = None,
    world: WorldOpt = None,
) -> None:
    """Export decisions as RL pool edits, SFT conversations, verifier cases, Argilla and Label Studio files."""
    from officegym.review.export import export_store

    envs = _envs(world)
    path = _store_path(run_dir, store)
    out = out if out is not None else path.parent / "export"
    with _opened(path) as st:
        try:
            bundle = export_store(st, out, envs)
        except OSError as exc:
            _fail(f"cannot write the export to {out}: {exc}")
    table = Table(title=f"exported to {out}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for k, v in bundle.counts.items():
        table.add_row(k, str(v))
    console.print(table)
    for s in bundle.skipped:
        console.print(f"[yellow]skipped {s}[/]")


@review_app.command("import")
def import_cmd(
    path: Annotated[Path, typer.Argument(help="decisions.jsonl, a Label Studio export (JSON) or Argilla records (JSON).")],
    store: Annotated[Path, typer.Option("--store", help="The review store holding the reviewed items (RUN/review/review.sqlite).")],
    world: WorldOpt = None,
) -> None:
    """Import decisions made elsewhere (corrections are replayed and re-verified first)."""
    from officegym.review.imports import import_reviews

    if not path.exists():
        _fail(f"no such file: {path}")
    envs = _envs(world)
    with _opened(_store_path(None, store)) as st:
        try:
            res = import_reviews(st, path, envs)
        except ValueError as exc:
            _fail(str(exc))
    console.print(f"imported {res.imported}, already there {res.already}, refused {len(res.refused)}, "
                  f"unknown items {len(res.unknown_items)}")
    for r in res.refused:
        console.print(f"[yellow]refused {r}[/]")
