"""`officegym serve`: an environment over HTTP (NeMo Gym's resources-server protocol)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from officegym.cli.common import WorldOpt, console, fail, load_world
from officegym.core import registry


def serve(
    world: WorldOpt = None,
    env: Annotated[str, typer.Option("--env", help="Environment to serve (see `officegym envs`; workplace is short for workplace_assistant).")] = "workplace_assistant",
    host: Annotated[str, typer.Option("--host", help="Interface to listen on; 127.0.0.1 keeps it on this machine (any other needs --secret).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8000,
    mode: Annotated[str | None, typer.Option("--mode", help="Verification mode: outcome (default) or nemo_gym.")] = None,
    reference_compat: Annotated[str | None, typer.Option("--reference-compat", help="The workplace's: reproduce NeMo Gym's reference as on pandas 2.3.2 (pandas2, the default: its uv.lock's) or pandas 3.1 (pandas3: what pip install nemo-gym resolves; needs pyarrow).")] = None,
    max_sessions: Annotated[int, typer.Option("--max-sessions", min=1, help="Live sessions kept; at the cap see --evict-idle.")] = 10_000,
    idle_ttl: Annotated[float, typer.Option("--idle-ttl", min=0, help="Seconds an unused session is kept (0: until closed).")] = 3600.0,
    evict_idle: Annotated[float, typer.Option("--evict-idle", min=0, help="At --max-sessions, a new session evicts the least recently used one idle this many seconds (0: never; then the new one gets 503).")] = 60.0,
    max_body_bytes: Annotated[int, typer.Option("--max-body-bytes", min=1024, help="Larger bodies: /verify scores 0, other routes get 413.")] = 64 * 1024 * 1024,
    max_session_writes: Annotated[int, typer.Option("--max-session-writes", min=0, help="Successful write calls per session, later ones failing as tool errors (0: any number, the default; memory is bounded by --max-session-bytes and --max-store-bytes).")] = 0,
    max_session_write_bytes: Annotated[int, typer.Option("--max-session-write-bytes", min=0, help="Bytes of write-call arguments per session (0: any, the default).")] = 0,
    max_session_bytes: Annotated[int, typer.Option("--max-session-bytes", min=0, help="Bytes of data one session may hold (0: unbounded); past it, writes fail as tool errors.")] = 16 * 1024 * 1024,
    max_store_bytes: Annotated[int, typer.Option("--max-store-bytes", min=0, help="Bytes of data all sessions may hold together (0: unbounded); past it, idle sessions are evicted, else writes fail as tool errors.")] = 1024 * 1024 * 1024,
    max_verify_calls: Annotated[int, typer.Option("--max-verify-calls", min=1, help="Predicted calls one /verify scores; more score 0.")] = 1000,
    secret: Annotated[str | None, typer.Option("--secret", envvar="OFFICEGYM_SERVER_SECRET", help="Cookie signing secret (default: the reference's public one, refused for a --host other machines reach).")] = None,
    model_base_url: Annotated[str | None, typer.Option("--model-base-url", help="Default OpenAI-compatible server for POST /run, e.g. http://127.0.0.1:9000/v1")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Default model name for POST /run.")] = None,
    model_api: Annotated[str, typer.Option("--model-api", help="POST /run talks chat (Chat Completions) or responses (Responses API).")] = "chat",
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, max=100, help="Model turns per POST /run episode.")] = 6,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn's log level: critical, error, warning, info or debug.")] = "warning",
    model_call_capture_dir: Annotated[Path | None, typer.Option("--model-call-capture-dir", help="NeMo Gym's model_call_capture_dir (observability on): /verify waits until the verified model call is captured. NeMo Gym's launcher starts the server through its own entry, which passes the directory its configuration names.")] = None,
) -> None:
    """Serve an environment over HTTP with NeMo Gym's resources-server protocol (docs/nemo-rl.md)."""
    try:
        from officegym.server.config import ServeConfig
        from officegym.server.serve import ServeError, build_environment, check_bind, run_server
    except ImportError as exc:
        fail(f"serving needs the server extra ({exc}): pip install 'officegym[server]'")
    try:
        warning = check_bind(host, secret)  # before the world loads: a public bind needs a secret
    except ServeError as exc:
        fail(str(exc))

    try:
        with_world = registry.takes_world(env)
    except registry.UnknownEnvironmentError as exc:
        fail(str(exc))
    if with_world:
        w = load_world(world, env)  # without --world: its default world, as for the other commands
        where = f" ({w.path})"
    elif world is not None:
        fail(f"{env} takes no world: its sessions are seeded from the task rows")
    else:
        w, where = None, ""
    console.print(f"officegym: serving {env}{where} on http://{host}:{port}; Ctrl-C stops", markup=False)
    if warning:
        console.print(warning, markup=False, soft_wrap=True)
    try:
        config = ServeConfig(
            host=host, port=port, log_level=log_level, mode=mode, max_sessions=max_sessions,
            idle_ttl_s=idle_ttl or None, evict_idle_s=evict_idle or None, max_body_bytes=max_body_bytes,
            max_session_writes=max_session_writes or None, max_session_write_bytes=max_session_write_bytes or None,
            max_session_bytes=max_session_bytes or None, max_store_bytes=max_store_bytes or None,
            max_verify_calls=max_verify_calls, secret_key=secret, max_steps=max_steps,
            model_server_url=model_base_url, model=model, model_api=model_api,
            model_call_capture_dir=str(model_call_capture_dir) if model_call_capture_dir else None)
        run_server(build_environment(env, w, mode, reference_compat), config)
    except ServeError as exc:
        fail(str(exc))
