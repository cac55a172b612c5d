"""Serve officegym's Workplace Assistant where NeMo Gym's launcher says.

NeMo Gym's launcher (`gym env start`, `ng_run`) resolves the whole configuration, gives every
server instance a host and a port, and starts each server's entrypoint in the server's folder with
two environment variables: NEMO_GYM_CONFIG_DICT, the resolved configuration as YAML, and
NEMO_GYM_CONFIG_PATH, the top-level name of the instance to serve. The instance's settings sit
three levels down, `<name>: {resources_servers: {<server folder>: {entrypoint, domain, host, port,
...}}}`. The launcher counts a server as up once `GET http://host:port/` connects; a resources
server registers nowhere. Its agents find it by the same configuration.

officegym's settings share that block (all optional):

    env: workplace           the registered environment to serve
    world: reference         reference: NeMo Gym's own resources_servers/workplace_assistant/csv_data;
                             generated: officegym's default generated world; else a world folder
    mode: nemo_gym           verification mode (nemo_gym: the reference's rewards, quirks included)
    reference_compat: pandas2 the workplace's reference as on pandas 2.3.2 (NeMo Gym's uv.lock; the
                             default) or pandas3 (3.1, what a pip install resolves): envs/workplace/compat.py
    max_sessions, idle_ttl_s, evict_idle_s, max_body_bytes, max_session_writes, max_session_write_bytes,
    max_session_bytes, max_store_bytes,
    max_verify_calls, evidence, cookie_name, secret_key, log_level   (server/config.py)

With NeMo Gym's global `observability_enabled: true`, its `model_call_capture_dir` is passed to the
server as its capture directory (server/capture.py), read here with the rest of the configuration.

The session cookie is named and signed as NeMo Gym names and signs its own servers' cookies,
`WorkbenchResourcesServer___<instance name>`, unless `cookie_name`/`secret_key` (or
OFFICEGYM_SERVER_SECRET) say otherwise. With the global `dry_run: true` (what `gym env prefetch`
sets) the server is built, which checks the settings and loads the world, and not served.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from officegym.server.capture import capture_dir_of
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

CONFIG_DICT_ENV = "NEMO_GYM_CONFIG_DICT"
CONFIG_PATH_ENV = "NEMO_GYM_CONFIG_PATH"
EXTRA_ROOTS_ENV = "NEMO_GYM_EXTRA_ROOTS"
SECRET_ENV = "OFFICEGYM_SERVER_SECRET"
SERVER_TYPE = "resources_servers"
# NeMo Gym's reference server class: its servers name (and sign) their cookie `<class>___<instance>`.
REFERENCE_CLASS = "WorkbenchResourcesServer"
REFERENCE_WORLD = Path("resources_servers", "workplace_assistant", "csv_data")
# NeMo Gym's global settings the entry reads.
TOP_LEVEL_KEYS = ("dry_run", "uvicorn_logging_show_200_ok", "observability_enabled", "model_call_capture_dir")
# Keys of a resources-server block that NeMo Gym itself reads or documents; officegym ignores them quietly.
NEMO_GYM_KEYS = frozenset({
    "entrypoint", "domain", "verified", "verified_url", "description", "value", "datasets", "license", "name",
    "host", "port", "num_workers", "allowed_agents", "allowed_model_types",
})


class LaunchError(ValueError):
    """The launcher's configuration cannot be served (the message says what and where)."""


class ServerSettings(BaseModel):
    """The instance's block as officegym reads it; keys it does not know are left to NeMo Gym."""

    model_config = ConfigDict(extra="ignore")

    host: str = Field(min_length=1)
    port: int = Field(ge=1, le=65535)
    num_workers: int | None = None
    expose_tools_over_mcp: bool = False
    env: str = "workplace"
    world: str | None = None
    mode: str = "nemo_gym"
    reference_compat: str | None = None  # the workplace's pandas2 or pandas3; None: its default (the server checks it)
    max_sessions: int = Field(DEFAULT_MAX_SESSIONS, ge=1)
    idle_ttl_s: float | None = Field(DEFAULT_IDLE_TTL_S, ge=0)  # 0 or null: sessions never expire
    evict_idle_s: float | None = Field(DEFAULT_EVICT_IDLE_S, ge=0)  # 0 or null: a full store never evicts
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, ge=1024)
    max_session_writes: int | None = Field(None, ge=0)  # 0 or null (the default): any number
    max_session_write_bytes: int | None = Field(None, ge=0)  # 0 or null (the default): any size
    max_session_bytes: int | None = Field(DEFAULT_MAX_SESSION_BYTES, ge=0)  # 0 or null: unbounded
    max_store_bytes: int | None = Field(DEFAULT_MAX_STORE_BYTES, ge=0)  # 0 or null: unbounded
    max_verify_calls: int = Field(DEFAULT_MAX_VERIFY_CALLS, ge=1)
    evidence: bool = True
    cookie_name: str | None = None
    secret_key: str | None = None
    log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = "warning"  # uvicorn's


@dataclass(frozen=True)
class Launch:
    """What to serve: the instance, its settings, and the world folder they resolve to."""

    name: str  # the top-level instance name (NEMO_GYM_CONFIG_PATH)
    server: str  # the server folder under resources_servers/
    settings: ServerSettings
    world: Path | None  # None: the environment's own default (or it takes no world)
    cookie_name: str | None
    secret_key: str | None
    dry_run: bool = False
    access_log: bool = False
    ignored: tuple[str, ...] = ()  # keys of the block that neither officegym nor NeMo Gym uses
    capture_dir: Path | None = None  # NeMo Gym's model_call_capture_dir when its observability is on


# -- reading the launcher's configuration

def instance_block(config_yaml: str, name: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(server folder, the instance's settings, the global keys officegym reads) from the YAML the
    launcher passes. Interpolations (`${...}`) are resolved with omegaconf, which NeMo Gym's venvs
    have; without it a block that holds one is refused rather than served half-read."""
    try:
        from omegaconf import OmegaConf
    except ImportError:
        OmegaConf = None
    if OmegaConf is not None:
        from omegaconf.errors import OmegaConfBaseException

        try:
            root = OmegaConf.create(config_yaml)
            if not isinstance(root, Mapping) or name not in root:
                raise LaunchError(f"the configuration has no server instance {name!r} ({CONFIG_PATH_ENV})")
            entry = OmegaConf.to_container(root[name], resolve=True)
            top = {k: OmegaConf.select(root, k) for k in TOP_LEVEL_KEYS}
        except OmegaConfBaseException as exc:
            raise LaunchError(f"cannot read {CONFIG_DICT_ENV}: {exc}") from None
    else:
        import yaml

        try:
            root = yaml.safe_load(config_yaml)
        except yaml.YAMLError as exc:
            raise LaunchError(f"{CONFIG_DICT_ENV} is not YAML: {exc}") from None
        if not isinstance(root, dict) or name not in root:
            raise LaunchError(f"the configuration has no server instance {name!r} ({CONFIG_PATH_ENV})")
        entry = root[name]
        if "${" in json.dumps(entry, default=str):
            raise LaunchError(f"{name!r} holds ${{...}} interpolations; resolving them needs omegaconf (pip install omegaconf)")
        top = {k: root.get(k) for k in TOP_LEVEL_KEYS}
    if not isinstance(entry, dict) or len(entry) != 1 or SERVER_TYPE not in entry:
        raise LaunchError(f"{name!r} is not a resources server: expected {{{SERVER_TYPE}: {{<server>: {{...}}}}}}")
    servers = entry[SERVER_TYPE]
    if not isinstance(servers, dict) or len(servers) != 1:
        raise LaunchError(f"{name}.{SERVER_TYPE} must hold exactly one server")
    (server, block), = servers.items()
    if not isinstance(block, dict):
        raise LaunchError(f"{name}.{SERVER_TYPE}.{server} is not a mapping")
    return server, block, top


def search_roots(environ: Mapping[str, str]) -> list[Path]:
    """Where a relative path is looked up, in NeMo Gym's order: its extra roots, the working
    directory, then NeMo Gym's install root (where its built-in servers and their data live)."""
    roots = [Path(p).expanduser() for p in environ.get(EXTRA_ROOTS_ENV, "").split(os.pathsep) if p]
    roots.append(Path.cwd())
    spec = importlib.util.find_spec("nemo_gym")  # finds the package without running its __init__
    if spec is not None:
        where = spec.origin or next(iter(spec.submodule_search_locations or ()), None)
        if where:
            package = Path(where).resolve()
            roots.append((package.parent if package.name == "__init__.py" else package).parent)
    return roots


def resolve_world(value: str | None, environ: Mapping[str, str], takes_world: bool = True) -> Path | None:
    """The world folder `value` names; None for officegym's default generated world."""
    if not takes_world:
        if value not in (None, "generated"):
            raise LaunchError(f"world: {value!r} given, but this environment takes no world")
        return None
    if value == "generated":
        return None
    roots = search_roots(environ)
    if value in (None, "reference"):
        candidates = [root / REFERENCE_WORLD for root in roots]
        for candidate in candidates:
            if (candidate / "processed").is_dir():
                return candidate
        looked = "\n".join(f"  {c}" for c in candidates)
        raise LaunchError("world: reference needs NeMo Gym's resources_servers/workplace_assistant/csv_data "
                          "(nemo-gym installs it; NeMo Gym's launcher installs nemo-gym in every server venv). "
                          f"Looked in:\n{looked}\nGive `world: <folder>` or `world: generated` instead.")
    path = Path(value).expanduser()
    candidates = [path] if path.is_absolute() else [root / path for root in roots]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    looked = "\n".join(f"  {c}" for c in candidates)
    raise LaunchError(f"world: {value!r} is not a folder. Looked in:\n{looked}")


def load_launch(environ: Mapping[str, str] | None = None) -> Launch:
    """The Launch the launcher's environment variables describe (LaunchError if it cannot be served)."""
    environ = os.environ if environ is None else environ
    name = environ.get(CONFIG_PATH_ENV)
    config_yaml = environ.get(CONFIG_DICT_ENV)
    if not name or not config_yaml:
        raise LaunchError(f"{CONFIG_DICT_ENV} and {CONFIG_PATH_ENV} are not set: this entrypoint is started by "
                          "NeMo Gym's launcher (gym env start / ng_run); to serve by hand use `officegym serve`")
    server, block, top = instance_block(config_yaml, name)
    try:
        settings = ServerSettings.model_validate(block)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise LaunchError(f"{name}.{SERVER_TYPE}.{server}: {problems}") from None
    if settings.num_workers not in (None, 1):
        raise LaunchError(f"num_workers: {settings.num_workers}: officegym keeps sessions in one process's memory; "
                          "serve more instances on more ports instead")
    if settings.expose_tools_over_mcp:
        raise LaunchError("expose_tools_over_mcp: officegym's server does not serve its tools over MCP")

    from officegym.core.environment import EnvironmentSetupError
    from officegym.core.registry import DEFAULT_ENVIRONMENT, canonical_name, takes_world

    try:
        env = canonical_name(settings.env)
        world = resolve_world(settings.world, environ, takes_world(env))
    except EnvironmentSetupError as exc:
        raise LaunchError(str(exc)) from None
    cookie = settings.cookie_name or (f"{REFERENCE_CLASS}___{name}" if env == DEFAULT_ENVIRONMENT else None)
    secret = settings.secret_key or environ.get(SECRET_ENV) or cookie
    known = set(ServerSettings.model_fields) | NEMO_GYM_KEYS
    return Launch(
        name=name, server=server, settings=settings, world=world, cookie_name=cookie, secret_key=secret,
        dry_run=bool(top.get("dry_run")), access_log=bool(top.get("uvicorn_logging_show_200_ok")),
        ignored=tuple(sorted(k for k in block if k not in known)), capture_dir=capture_dir_of(top),
    )


# -- serving

def _serve_config(launch: Launch) -> ServeConfig:
    s = launch.settings
    return ServeConfig(
        host=s.host, port=s.port, log_level=s.log_level, access_log=launch.access_log,
        mode=s.mode, max_sessions=s.max_sessions, idle_ttl_s=s.idle_ttl_s or None, max_body_bytes=s.max_body_bytes,
        evict_idle_s=s.evict_idle_s or None,
        max_session_writes=s.max_session_writes or None, max_session_write_bytes=s.max_session_write_bytes or None,
        max_session_bytes=s.max_session_bytes or None, max_store_bytes=s.max_store_bytes or None,
        max_verify_calls=s.max_verify_calls, evidence=s.evidence, cookie_name=launch.cookie_name,
        secret_key=launch.secret_key,
        model_call_capture_dir=str(launch.capture_dir) if launch.capture_dir else None,
    )


def _exit_with_parent() -> None:
    """Linux: have the kernel send SIGTERM when the launcher's shell dies, so that a launcher killed
    without shutting its servers down leaves no server holding the port."""
    if sys.platform != "linux":
        return
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def serve(launch: Launch) -> None:
    """Serve the launch on its host and port until interrupted (build and return on a dry run)."""
    from officegym.server.serve import build_environment, make_app, run_server

    s = launch.settings
    config = _serve_config(launch)
    if launch.dry_run:
        make_app(build_environment(s.env, launch.world, s.mode, s.reference_compat), config)
        print(f"officegym: dry run, {launch.name} ({s.env}, mode {s.mode}) is ready to serve", flush=True)
        return
    where = f" on world {launch.world}" if launch.world else ""
    from officegym.server.serve import is_local

    if not is_local(s.host) and launch.secret_key == launch.cookie_name:
        # NeMo Gym's own servers sign with this public string too, so this stays a drop-in; say so anyway
        print(f"officegym: warning: {launch.name} listens on {s.host} with session cookies signed by the public "
              "default secret (anyone who reaches the port could forge one): set secret_key (or "
              "OFFICEGYM_SERVER_SECRET)", file=sys.stderr, flush=True)
    print(f"officegym: serving {s.env}{where} as NeMo Gym's {launch.name!r} on http://{s.host}:{s.port} "
          f"(mode {s.mode})", flush=True)
    _exit_with_parent()
    run_server(build_environment(s.env, launch.world, s.mode, s.reference_compat), config)


def main(environ: Mapping[str, str] | None = None) -> int:
    """The entrypoint's body: 0 after a clean stop, 2 for a configuration it cannot serve."""
    from officegym.server.serve import ServeError

    try:
        launch = load_launch(environ)
        if launch.ignored:
            print(f"officegym: {launch.name}: ignoring settings officegym does not know: {', '.join(launch.ignored)}",
                  file=sys.stderr, flush=True)
        serve(launch)
    except (LaunchError, ServeError) as exc:
        print(f"officegym (NeMo Gym entrypoint): {exc}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:  # the launcher stops its servers with SIGINT; uvicorn re-raises it once shut down
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
