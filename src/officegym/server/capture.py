"""Waiting for NeMo Gym's model-call capture before answering /verify.

With `observability_enabled`, NeMo Gym's model server appends each model call to
`<model_call_capture_dir>/<rollout id>.capture.jsonl`, and its collector reads that file once the
agent's /run returns. In nemo-gym 0.7.0 the model server's answer can reach the agent before the
call is written (its capture middleware holds back only the last, empty body message that an inner
`@app.middleware("http")` sends), so the episode's last call may be missing from the row, flagged
`trajectory_capture_mismatch` by NeMo Gym's health check. The reference's /verify takes tens of ms,
which hides the race; officegym's takes a few. So /verify, when it knows the capture directory,
first waits (bounded) until the verified response's id is in the rollout's capture file. The
directory is a server setting (`--model-call-capture-dir`); the NeMo Gym entry
(integrations/nemo_gym/launch.py) reads it from its launcher's configuration (`capture_dir_of`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CONFIG_DICT_ENV = "NEMO_GYM_CONFIG_DICT"
# Set in the ASGI scope by RolloutPrefixMiddleware: the <id> of /ng-rollout/<id>/<route>.
ROLLOUT_ID = "officegym.rollout_id"
DEFAULT_CAPTURE_WAIT_S = 2.0
# After this many waits in a row that saw nothing, the capture is not where we look: stop waiting.
GIVE_UP_AFTER = 3
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]+$")  # NeMo Gym's rollout-id characters


def capture_dir_of(top: Mapping[str, Any]) -> Path | None:
    """The capture directory that NeMo Gym's top-level settings (`observability_enabled`,
    `model_call_capture_dir`) name, if observability is on and the directory is absolute."""
    enabled, where = top.get("observability_enabled"), top.get("model_call_capture_dir")
    if str(enabled).lower() not in ("true", "1") or not isinstance(where, str) or not os.path.isabs(where):
        return None
    return Path(where)


def capture_dir_from_environ(environ: Mapping[str, str] | None = None) -> Path | None:
    """`capture_dir_of` the configuration NeMo Gym's launcher passes in NEMO_GYM_CONFIG_DICT (for a
    caller that has only the environment; the server itself takes the directory as a setting)."""
    text = (os.environ if environ is None else environ).get(CONFIG_DICT_ENV)
    if not text:
        return None
    try:
        top = _top_level(text)
    except Exception:
        return None
    return capture_dir_of(top)


def _top_level(text: str) -> dict[str, Any]:
    try:
        from omegaconf import OmegaConf
    except ImportError:
        import yaml

        loaded = yaml.safe_load(text)
        return loaded if isinstance(loaded, dict) else {}
    root = OmegaConf.create(text)
    return {k: OmegaConf.select(root, k) for k in ("observability_enabled", "model_call_capture_dir")}


class CaptureBarrier:
    """Waits until a response id is in a rollout's capture file (or `timeout_s` passes)."""

    def __init__(self, directory: Path | str, timeout_s: float = DEFAULT_CAPTURE_WAIT_S):
        self.directory = Path(directory)
        self.timeout_s = timeout_s
        self.waited = 0  # verifies that found the call missing at first
        self.timed_out = 0
        self._misses_in_a_row = 0

    @property
    def active(self) -> bool:
        return self._misses_in_a_row < GIVE_UP_AFTER

    async def wait(self, rollout_id: Any, response_id: Any) -> None:
        if not (self.active and isinstance(rollout_id, str) and _SAFE_ID.match(rollout_id)
                and isinstance(response_id, str) and response_id):
            return
        path = self.directory / f"{rollout_id}.capture.jsonl"
        needle = json.dumps(response_id, ensure_ascii=False)[1:-1].encode()  # as the file spells it
        if self._holds(path, needle):
            self._misses_in_a_row = 0
            return
        self.waited += 1
        deadline = time.monotonic() + self.timeout_s
        pause = 0.002
        while time.monotonic() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)
            if self._holds(path, needle):
                self._misses_in_a_row = 0
                return
        self.timed_out += 1
        self._misses_in_a_row += 1
        log.warning("model call %s of rollout %s was not in %s after %.1f s%s", response_id, rollout_id, path,
                    self.timeout_s, "" if self.active else "; no longer waiting for NeMo Gym's capture")

    @staticmethod
    def _holds(path: Path, needle: bytes) -> bool:
        try:
            return needle in path.read_bytes()
        except OSError:
            return False

    def stats(self) -> dict[str, Any]:
        return {"dir": str(self.directory), "active": self.active, "waited": self.waited, "timed_out": self.timed_out}
