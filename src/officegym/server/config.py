"""The server's settings and their defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from officegym.server.protocol import REFERENCE_COOKIE

DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_IDLE_TTL_S = 3600.0
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_RUN_STEPS = 100


@dataclass
class ServerConfig:
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
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
