"""The officegym cache folder, defined once: `$OFFICEGYM_CACHE` (with `~` expanded), else
`~/.cache/officegym`. Models, the default world, NeMo Gym's reference and bfcl-eval's project
root live under it."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The officegym cache: `$OFFICEGYM_CACHE`, else `~/.cache/officegym`."""
    env = os.environ.get("OFFICEGYM_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "officegym"
