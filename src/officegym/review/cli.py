"""`officegym review ...`: flag a run into a review store, serve the review UI, export, import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

review_app = typer.Typer(no_args_is_help=True, add_completion=False,
                         help="Human review: flag rollouts, review them in a web UI, export the decisions as data.")
console = Console(stderr=True)

StoreOpt = Annotated[Path, typer.Option("--store", help="The review store (SQLite file; created when missing).")]
WorldOpt = Annotated[Path | None, typer.Option(
    "--world", help="World folder the rollouts ran in (default: the run's run.json, else eval's default world).")]


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(2)


def _store(path: Path):
    from officegym.review.store import Store, StoreError

    try:
        return Store(path)
    except (StoreError, OSError) as exc:
        _fail(str(exc))


def _envs(world: Path | None):
    from officegym.review.worlds import Environments, spec_for_path

    if world is not None and not world.exists():
        _fail(f"no such world folder: {world}")
    return Environments(spec_for_path(world) if world is not None else None)


@review_app.command("flag")
def flag_cmd(
    run_dir: Annotated[Path, typer.Argument(help="An eval run folder, a GRPO run folder, or any folder of rollout rows files.")],
    store: StoreOpt = Path("review.sqlite"),
    world: WorldOpt = None,
    audit_share: Annotated[float, typer.Option("--audit-share", min=0.0, max=1.0, help="Share of rollouts drawn for a random audit.")] = 0.05,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the audit draw.")] = 0,
    hard: Annotated[float, typer.Option("--hard-difficulty", help="Difficulty from which all-pass groups are suspicious.")] = 7,
    no_replay: Annotated[bool, typer.Option("--no-replay", help="Do not replay oracles or end states (no world needed).")] = False,
    run: Annotated[str | None, typer.Option("--run", help="Name of the run in item keys (default: the folder's name).")] = None,
) -> None:
    """Queue a run's rollouts for review, each with its reasons and a priority."""
    from officegym.review.flag import REASONS, FlagConfig, flag_run

    if not run_dir.exists():
        _fail(f"no such run folder: {run_dir}")
    st = _store(store)
    try:
        config = FlagConfig(audit_share=audit_share, seed=seed, hard_difficulty=hard, replay=not no_replay)
        with console.status("flagging"):
            res = flag_run(run_dir, st, config, world=world, run=run)
    except (ValueError, OSError) as exc:
        _fail(str(exc))
    finally:
        st.close()
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
    store: StoreOpt = Path("review.sqlite"),
    world: WorldOpt = None,
    host: Annotated[str, typer.Option("--host", help="127.0.0.1 keeps the UI on this machine (it has no login).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8765,
    reviewer: Annotated[str | None, typer.Option("--reviewer", help="Default reviewer name (the page can change it).")] = None,
) -> None:
    """Serve the review web UI."""
    try:
        import uvicorn

        from officegym.review.app import create_app
    except ImportError as exc:
        _fail(f"the review UI needs the server extra and jinja2 ({exc}): pip install 'officegym[server]' jinja2")
    st = _store(store)
    app = create_app(st, _envs(world), reviewer=reviewer)
    console.print(f"officegym review: {store} on http://{host}:{port}; Ctrl-C stops")
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        st.close()


@review_app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Option("--out", help="Folder for the exported files.")],
    store: StoreOpt = Path("review.sqlite"),
    world: WorldOpt = None,
) -> None:
    """Export decisions as RL pool edits, SFT conversations, verifier cases, Argilla and Label Studio files."""
    from officegym.review.export import export_store

    if not store.exists():
        _fail(f"no such review store: {store}")
    st = _store(store)
    try:
        bundle = export_store(st, out, _envs(world))
    finally:
        st.close()
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
    store: StoreOpt = Path("review.sqlite"),
    world: WorldOpt = None,
) -> None:
    """Import decisions made elsewhere (corrections are replayed and re-verified first)."""
    from officegym.review.imports import import_reviews

    if not path.exists():
        _fail(f"no such file: {path}")
    st = _store(store)
    try:
        res = import_reviews(st, path, _envs(world))
    except ValueError as exc:
        _fail(str(exc))
    finally:
        st.close()
    console.print(f"imported {res.imported}, already there {res.already}, refused {len(res.refused)}, "
                  f"unknown items {len(res.unknown_items)}")
    for r in res.refused:
        console.print(f"[yellow]refused {r}[/]")
