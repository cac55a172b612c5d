"""The HTTP resources server speaking NeMo Gym's protocol, and its client.

`create_app(env, ...)` builds the FastAPI app (app.py), `run_server(env, config)` serves it with uvicorn
(serve.py), `EnvClient` / `RemoteEnvironment` use it from Python (client.py). FastAPI, uvicorn and
httpx come with the `server` extra; importing this package does not import them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EnvClient", "RemoteEnvironment", "RemoteError", "SessionStore", "create_app", "run_server"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from officegym.server.app import create_app

        return create_app
    if name == "run_server":
        from officegym.server.serve import run_server

        return run_server
    if name in ("EnvClient", "RemoteEnvironment", "RemoteError"):
        from officegym.server import client

        return getattr(client, name)
    if name == "SessionStore":
        from officegym.server.sessions import SessionStore

        return SessionStore
    raise AttributeError(f"module 'officegym.server' has no attribute {name!r}")
