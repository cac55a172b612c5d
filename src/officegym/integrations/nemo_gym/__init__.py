"""officegym's Workplace Assistant as a NeMo Gym resources server.

NeMo Gym's launcher starts a server named `resources_servers/<name>` from a folder of that name
under one of its search roots (`--search-dir` / `NEMO_GYM_EXTRA_ROOTS`, the working directory,
its install root); the folder holds the `entrypoint` script, a requirements.txt for the venv the
launcher builds, and `configs/<name>.yaml`. officegym ships such a root as package data:

    root()/resources_servers/officegym_workplace_assistant/
        app.py           the entrypoint: loads officegym from the tree it ships in, calls launch.main()
        requirements.txt officegym's server dependencies (the launcher adds nemo-gym itself)
        configs/officegym_workplace_assistant.yaml

`launch.py` reads the configuration the launcher hands its servers and serves `officegym.server`'s
app on the host and port NeMo Gym chose. See docs/nemo-rl.md for the commands.
"""

from __future__ import annotations

from pathlib import Path

SERVER_NAME = "officegym_workplace_assistant"  # the folder name: `gym env start --resources-server <this>`
INSTANCE_NAME = "workplace_assistant"  # the config's server instance, named as NeMo Gym's own
AGENT_INSTANCE_NAME = "workplace_assistant_simple_agent"


def root() -> Path:
    """The folder to give NeMo Gym as an extra search root (it holds `resources_servers/`)."""
    return Path(__file__).resolve().parent / "root"


def server_dir() -> Path:
    return root() / "resources_servers" / SERVER_NAME


def config_relpath() -> str:
    """The config's path relative to the root: what `+config_paths=[...]` names."""
    return f"resources_servers/{SERVER_NAME}/configs/{SERVER_NAME}.yaml"


def config_path() -> Path:
    return root() / config_relpath()


__all__ = ["AGENT_INSTANCE_NAME", "INSTANCE_NAME", "SERVER_NAME", "config_path", "config_relpath", "root", "server_dir"]
