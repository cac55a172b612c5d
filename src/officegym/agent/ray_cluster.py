"""Joining a Ray cluster, or starting one on this machine that listens on the loopback only.

A local Ray cluster takes the machine's outward address as its node address, and its processes
(GCS, raylet, workers, agents) then listen on every interface: anyone who can reach the machine
could submit work to it. Asked for 127.0.0.1, `ray.init` still swaps in the outward address unless
Ray's multi-machine support is switched off for the process (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`,
the switch Ray itself uses on laptops), so `connect()` sets it before it starts a local cluster;
every Ray process then listens on 127.0.0.1 (tests/dist checks the sockets). A cluster given by
address is used as its operators set it up.

`connect` returns a `Cluster` whose `close()` shuts down only what this process started or joined;
a caller that initialised Ray itself keeps its connection.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from typing import Any

LOCAL = "local"
_LOCAL_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class RayUnavailableError(RuntimeError):
    """Ray cannot be used here (not installed, or the cluster cannot be reached)."""


def require_ray() -> Any:
    """The ray module, or RayUnavailableError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(f"Ray is not installed ({exc}): pip install 'officegym[ray]'") from None
    return ray


@dataclass
class Cluster:
    """The Ray cluster this process uses: `address` as given (None: a local one), `owned` whether
    this process connected (and so disconnects, stopping a local cluster it started)."""

    address: str | None
    owned: bool

    @property
    def resources(self) -> dict[str, float]:
        return dict(require_ray().cluster_resources())

    @property
    def free_resources(self) -> dict[str, float]:
        return dict(require_ray().available_resources())

    def close(self) -> None:
        ray = require_ray()
        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False


def connect(address: str | None = None, num_cpus: int | None = None, object_store_memory: int | None = None) -> Cluster:
    """Join the cluster at `address` ("auto": the one this machine belongs to; HOST:PORT; or
    ray://HOST:PORT for Ray Client), or with None / "local" start a local cluster bound to
    127.0.0.1 with `num_cpus` CPUs (default: all) and `object_store_memory` bytes (default: Ray's).
    A process already connected to Ray keeps that connection (and `close()` leaves it alone)."""
    ray = require_ray()
    if ray.is_initialized():
        return Cluster(address, owned=False)
    local = address in (None, LOCAL)
    try:
        if local:
            loopback_only(ray)
            ray.init(address=LOCAL, num_cpus=num_cpus, object_store_memory=object_store_memory,
                     _node_ip_address="127.0.0.1", include_dashboard=False, logging_level=logging.WARNING)
        elif address.startswith("ray://"):  # Ray Client takes no logging options
            ray.init(address=address)
        else:
            if address != "auto":
                host = _reachable(address)
                if host in ("127.0.0.1", "localhost", "::1"):
                    loopback_only(ray)  # else Ray swaps the loopback for this machine's outward address
            ray.init(address=address, logging_level=logging.WARNING)
    except RayUnavailableError:
        raise
    except Exception as exc:  # Ray raises plain Exception when its processes do not come up in time
        what = "start a local Ray cluster" if local else f"join the Ray cluster at {address}"
        raise RayUnavailableError(f"cannot {what}: {exc}") from None
    return Cluster(None if local else address, owned=True)


def _reachable(address: str, timeout: float = 10.0) -> str:
    """The host of HOST:PORT once something answers there; RayUnavailableError else (Ray itself
    would retry for minutes before saying so)."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        raise RayUnavailableError(f"a Ray address is auto, HOST:PORT or ray://HOST:PORT, not {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise RayUnavailableError(f"no Ray cluster answers at {address} ({exc})") from None
    return host


def loopback_only(ray: Any) -> None:
    """Make the Ray processes this process starts take 127.0.0.1 as their node address (and listen
    there only). The variable is read by Ray's processes at start and by this process's ray module
    when it was imported; set both (the module's copy is a plain constant)."""
    os.environ[_LOCAL_ONLY] = "0"
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    if constants is not None and hasattr(constants, "ENABLE_RAY_CLUSTER"):
        constants.ENABLE_RAY_CLUSTER = False
