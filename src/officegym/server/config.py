"""The server's settings and their defaults."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from officegym.server.protocol import REFERENCE_COOKIE

DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_IDLE_TTL_S = 3600.0
# A full store pushes out its least recently used session once it has been idle this long: longer
# than a model's turn takes in practice, short enough that the sessions of crashed rollouts make room.
DEFAULT_EVICT_IDLE_S = 60.0
# NeMo Gym's own servers set no body limit, and its agent posts whole episodes to /verify (every
# model output and tool answer of up to 32k-token contexts): tens of MiB must get through.
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
# What sessions may hold (limits.py weighs each after its writes, an upper bound of its memory):
# the whole store, and one session. A write task on the reference world holds 40-60 KiB, on a
# --size large world under 1 MiB; what is left bounds a policy that writes without end.
DEFAULT_MAX_STORE_BYTES = 1024 * 1024 * 1024
DEFAULT_MAX_SESSION_BYTES = 16 * 1024 * 1024
# Write calls per session and the bytes of their requests: no bound unless asked for. The reference
# never refuses a write, and what a write costs is weighed in the bytes the session then holds (the
# bounds above), which is what protects memory.
DEFAULT_MAX_SESSION_WRITES: int | None = None
DEFAULT_MAX_SESSION_WRITE_BYTES: int | None = None
# Calls one /verify replays: a 6-turn episode makes tens; 7,000 took 2-3 s of CPU.
DEFAULT_MAX_VERIFY_CALLS = 1000
DEFAULT_RETRY_AFTER_S = 1
MAX_RUN_STEPS = 100


@dataclass
class ServerConfig:
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S
    evict_idle_s: float | None = DEFAULT_EVICT_IDLE_S  # a full store evicts sessions idle this long; None: never
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_session_writes: int | None = DEFAULT_MAX_SESSION_WRITES  # successful write calls per session; None: any
    max_session_write_bytes: int | None = DEFAULT_MAX_SESSION_WRITE_BYTES  # their request bodies, summed; None: any
    max_session_bytes: int | None = DEFAULT_MAX_SESSION_BYTES  # what one session may hold; None: unbounded
    max_store_bytes: int | None = DEFAULT_MAX_STORE_BYTES  # what all sessions may hold; None: unbounded
    max_verify_calls: int = DEFAULT_MAX_VERIFY_CALLS  # predicted calls one /verify replays
    retry_after_s: int = DEFAULT_RETRY_AFTER_S  # Retry-After of the 503 when the store is full
    cookie_name: str = REFERENCE_COOKIE
    secret_key: str = REFERENCE_COOKIE
    mode: str | None = None  # verification mode; None: the environment's default
    evidence: bool = True  # add the verdict's evidence to /verify and /run answers under "officegym"
    max_steps: int = 6  # /run: model turns per episode (the reference config's max_steps)
    model_server_url: str | None = None  # /run: default OpenAI-compatible base URL (.../v1)
    model: str | None = None  # /run: default model name
    model_api: str = "chat"  # /run: "chat" (Chat Completions) or "responses" (Responses API)
    policy_options: dict[str, Any] | None = None  # /run: OpenAIPolicy options (timeout, max_retries, ...)
    sweep_interval_s: float = 30.0
    capture_dir: Path | None = None  # NeMo Gym's model_call_capture_dir: /verify waits for the call's record
    capture_wait_s: float = 2.0


@dataclass
class ServeConfig:
    """What `run_server(env, config)` serves an environment with: where it listens, uvicorn's
    logging, and the app's settings (`app_options()`: create_app's keywords, which resolves them
    into a ServerConfig). Defaults are `officegym serve`'s; None for a limit: no bound."""

    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "warning"
    access_log: bool = False
    mode: str | None = None  # verification mode; None: the environment's
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S
    evict_idle_s: float | None = DEFAULT_EVICT_IDLE_S
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_session_writes: int | None = DEFAULT_MAX_SESSION_WRITES
    max_session_write_bytes: int | None = DEFAULT_MAX_SESSION_WRITE_BYTES
    max_session_bytes: int | None = DEFAULT_MAX_SESSION_BYTES
    max_store_bytes: int | None = DEFAULT_MAX_STORE_BYTES
    max_verify_calls: int = DEFAULT_MAX_VERIFY_CALLS
    secret_key: str | None = None  # None: the cookie's name, as the reference signs
    cookie_name: str | None = None  # None: the environment's (BaseEnvironment.cookie_name)
    max_steps: int = 6
    model_server_url: str | None = None
    model: str | None = None
    model_api: str = "chat"
    evidence: bool = True
    model_call_capture_dir: str | None = None  # NeMo Gym's, passed by its entry (integrations/nemo_gym/launch.py)

    def app_options(self) -> dict[str, Any]:
        """The settings create_app takes, as its keywords."""
        options = asdict(self)
        for key in ("host", "port", "log_level", "access_log"):
            del options[key]
        return options
