"""`officegym serve`: build an environment and serve it with uvicorn.

One process, one event loop: sessions live in that process's memory, so the server must not be
forked into several workers (a cookie would reach a worker that never saw its session). Run more
servers on more ports to scale out; a tool call costs tens of microseconds, so one process serves
thousands of calls per second.

    python -m officegym.server.serve --world path/to/csv_data --port 8000
    python -m officegym.server.serve --env roles/cost --port 8001
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.server.config import (
    DEFAULT_EVICT_IDLE_S,
    DEFAULT_IDLE_TTL_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_SESSION_BYTES,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_STORE_BYTES,
    DEFAULT_MAX_VERIFY_CALLS,
    ServeConfig,
)


class ServeError(ValueError):
    """A setting the server cannot start with (the message says which and why)."""


def is_local(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine (a loopback address or localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name (or 0.0.0.0-like text): other machines may reach it


def check_bind(host: str, secret_key: str | None) -> str | None:
    """Refuse (ServeError) a bind other machines can reach with the reference's public cookie secret:
    anyone there could forge a session cookie for any id. With a secret, the warning to print."""
    if is_local(host):
        return None
    if not secret_key:
        raise ServeError(f"--host {host} lets other machines reach the server, and its session cookies would be "
                         "signed with the reference's public secret (anyone could forge one): pass --secret (or "
                         "set OFFICEGYM_SERVER_SECRET), or keep --host 127.0.0.1")
    return (f"warning: serving on {host}: anyone who reaches the port can seed sessions and call tools, and POST /run "
            "calls whatever model server URL a request names; keep it behind a firewall")


def build_environment(env: str = "workplace", world: Any = None, mode: str | None = None,
                      reference_compat: str | None = None) -> BaseEnvironment:
    """The environment registered as `env`: the workplace loaded from `world` (a folder or a loaded
    World); any other from its name alone (a role environment's episodes come from the task rows).
    `reference_compat` (the workplace's only: which pandas its reference runs on, envs/workplace/
    compat.py); None: the environment's default."""
    from officegym.core.environment import EnvironmentSetupError
    from officegym.core.registry import make

    try:
        built = make(env, world=world, mode=mode)
    except EnvironmentSetupError as exc:  # unknown name, a world it cannot load or does not take, a bad mode
        raise ServeError(str(exc)) from None
    if reference_compat is None:
        return built
    from officegym.envs.workplace.compat import DEFAULT_REFERENCE_COMPAT
    from officegym.envs.workplace.env import WorkplaceEnvironment

    if not isinstance(built, WorkplaceEnvironment):
        if reference_compat == DEFAULT_REFERENCE_COMPAT:  # what every other environment is anyway
            return built
        raise ServeError(f"--reference-compat applies to the workplace environment (NeMo Gym's reference), not {env}")
    try:
        return WorkplaceEnvironment(built.world, built.mode, reference_compat=reference_compat)
    except ValueError as exc:  # an unknown setting, or pandas3 without pyarrow
        raise ServeError(str(exc)) from None


def make_app(env: BaseEnvironment, config: ServeConfig):
    """The app serving `env` with `config`'s settings (ServeError for a bad one)."""
    from officegym.server.app import create_app

    try:
        return create_app(env, **config.app_options())
    except ValueError as exc:
        raise ServeError(str(exc)) from None


def run_server(env: BaseEnvironment, config: ServeConfig) -> None:
    """Serve `env` on config.host:config.port until interrupted. Raises ServeError for a bad setting.

    `config.model_call_capture_dir`: NeMo Gym's, with its observability on (capture.py); the NeMo Gym
    entry (integrations/nemo_gym/launch.py) passes the one its launcher's configuration names."""
    import uvicorn
    from uvicorn.config import LOG_LEVELS

    if config.log_level not in LOG_LEVELS:
        raise ServeError(f"log level {config.log_level!r}: choose from {', '.join(LOG_LEVELS)}")

    app = make_app(env, config)
    # Keep-alive longer than clients keep idle connections (EnvClient: 2 s), so that a request
    # never races the server closing its connection.
    server = uvicorn.Config(app, host=config.host, port=config.port, log_level=config.log_level,
                            access_log=config.access_log, timeout_keep_alive=30, lifespan="on")
    uvicorn.Server(server).run()


def main(argv: list[str] | None = None) -> int:
    from officegym.envs.workplace.compat import REFERENCE_COMPATS

    p = argparse.ArgumentParser(prog="python -m officegym.server.serve", description=__doc__.splitlines()[0])
    p.add_argument("--env", default="workplace")
    p.add_argument("--world", default=None, help="world folder (the workplace environment only)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--mode", default=None)
    p.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS)
    p.add_argument("--idle-ttl", type=float, default=DEFAULT_IDLE_TTL_S, help="seconds; 0 disables")
    p.add_argument("--evict-idle", type=float, default=DEFAULT_EVICT_IDLE_S,
                   help="a full store evicts its least recently used session idle this many seconds; 0: never")
    p.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES)
    p.add_argument("--max-session-writes", type=int, default=0,
                   help="successful write calls one session may make; 0 (default): any number")
    p.add_argument("--max-session-write-bytes", type=int, default=0,
                   help="bytes of write-call bodies one session may send; 0 (default): any")
    p.add_argument("--max-session-bytes", type=int, default=DEFAULT_MAX_SESSION_BYTES,
                   help="bytes of data one session may hold; 0: unbounded")
    p.add_argument("--max-store-bytes", type=int, default=DEFAULT_MAX_STORE_BYTES,
                   help="bytes of data all sessions may hold together; 0: unbounded")
    p.add_argument("--max-verify-calls", type=int, default=DEFAULT_MAX_VERIFY_CALLS,
                   help="predicted calls one /verify replays (more: scored 0)")
    p.add_argument("--secret", default=None, help="cookie signing secret (default: the reference's)")
    p.add_argument("--log-level", default="warning")
    p.add_argument("--model-call-capture-dir", default=None,
                   help="NeMo Gym's model_call_capture_dir (observability on): /verify waits for the call's record")
    p.add_argument("--reference-compat", default=None, choices=REFERENCE_COMPATS,
                   help="the workplace's: reproduce NeMo Gym's reference on pandas 2.3.2 (pandas2, the default, "
                        "what its uv.lock pins) or pandas 3.1 (pandas3, what a pip install resolves)")
    a = p.parse_args(argv)
    from officegym.core.environment import EnvironmentSetupError
    from officegym.core.registry import takes_world

    try:
        if a.world is None and takes_world(a.env):
            p.error(f"--world is required for {a.env}")
    except EnvironmentSetupError as exc:
        p.error(str(exc))
    try:
        warning = check_bind(a.host, a.secret)
        if warning:
            print(warning, file=sys.stderr, flush=True)
        config = ServeConfig(
            host=a.host, port=a.port, log_level=a.log_level, mode=a.mode, max_sessions=a.max_sessions,
            idle_ttl_s=a.idle_ttl or None, max_body_bytes=a.max_body_bytes, evict_idle_s=a.evict_idle or None,
            max_session_writes=a.max_session_writes or None, max_session_write_bytes=a.max_session_write_bytes or None,
            max_session_bytes=a.max_session_bytes or None, max_store_bytes=a.max_store_bytes or None,
            max_verify_calls=a.max_verify_calls, secret_key=a.secret, model_call_capture_dir=a.model_call_capture_dir)
        run_server(build_environment(a.env, a.world, a.mode, a.reference_compat), config)
    except ServeError as exc:
        p.error(str(exc))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
