"""Locate, fetch and drive NeMo Gym's reference `workplace_assistant` code (for parity checks only).

The reference ships in the `nemo-gym` wheel. `ensure_reference(download=True)` fetches the pinned wheel
with pip into a cache and unpacks only `resources_servers/workplace_assistant/**`; `load_reference()`
imports it from there. Nothing of the reference is part of officegym: it is run side by side with it.
pandas is imported lazily, inside functions, so importing this module stays cheap.
"""

from __future__ import annotations

import importlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any

from officegym.core.cache import cache_root
from officegym.core.files import replace_dir

NEMO_GYM_VERSION = "0.7.0"
WHEEL_NAME = f"nemo_gym-{NEMO_GYM_VERSION}-py3-none-any.whl"
# The wheel requires Python >= 3.12; asking pip for that version lets it download on 3.11 too.
PIP_PYTHON_VERSION = "3.13.14"
PACKAGE_PREFIX = "resources_servers/workplace_assistant/"
MODULE = "resources_servers.workplace_assistant.utils"
TOOLKITS = ("email", "calendar", "analytics", "project_management", "customer_relationship_manager")

# Where each compared table lives in the reference: (toolkit container, DataFrame attribute).
REFERENCE_FRAMES = {
    "emails": ("email", "_emails"),
    "calendar": ("calendar", "_calendar_events"),
    "plots": ("analytics", "_plots_data"),
    "project_tasks": ("project_management", "_project_tasks"),
    "crm": ("customer_relationship_manager", "_crm_data"),
}


def reference_root() -> Path:
    """The folder that goes on sys.path: it holds `resources_servers/workplace_assistant/`."""
    return cache_root() / "ref" / "unpacked"


def _present(root: Path) -> bool:
    pkg = root / PACKAGE_PREFIX
    return (pkg / "utils.py").is_file() and (pkg / "csv_data" / "processed").is_dir()


def _download_wheel(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / WHEEL_NAME
    if wheel.is_file():
        return wheel
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        f"nemo-gym=={NEMO_GYM_VERSION}",
        "--python-version",
        PIP_PYTHON_VERSION,
        "--only-binary=:all:",
        "-d",
        str(dest),
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    if not wheel.is_file():
        raise FileNotFoundError(f"pip did not produce {wheel}")
    return wheel


def _unpack(wheel: Path, root: Path) -> None:
    """Extract only the workplace_assistant folder, into a temp dir renamed into place."""
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=root.parent))
    try:
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                name = info.filename
                if not name.startswith(PACKAGE_PREFIX) or name.endswith("/"):
                    continue
                target = (tmp / name).resolve()
                if tmp.resolve() not in target.parents:  # never write outside the temp dir
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        replace_dir(tmp, root)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def ensure_reference(download: bool = False) -> Path | None:
    """The reference root (for sys.path), fetching and unpacking the wheel first if `download`.

    Returns None when the code is absent and not downloaded. A download failure raises.
    """
    root = reference_root()
    if _present(root):
        return root
    wheel = cache_root() / "ref" / WHEEL_NAME
    if not wheel.is_file():
        if not download:
            return None
        wheel = _download_wheel(wheel.parent)
    _unpack(wheel, root)
    return root if _present(root) else None


def load_reference(download: bool = False) -> Any | None:
    """The reference `utils` module (`get_tools`, `is_correct`), or None without pandas or the code."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        return None
    root = ensure_reference(download)
    if root is None:
        return None
    path = str(root)
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module(MODULE)


# ---------------------------------------------------------------------------------------------
# Driving the reference the way NeMo Gym's server does.


def to_native(value: Any) -> tuple[Any, bool]:
    """A JSON-ready copy of a tool result and whether it held numpy scalars.

    NaN becomes None (pydantic writes null). numpy scalars become Python numbers; the real route could
    not serialise them (a FastAPI 500), so the flag lets a harness report that separately.
    """
    found = False

    def conv(v: Any) -> Any:
        nonlocal found
        if isinstance(v, float):
            return None if math.isnan(v) else v
        if isinstance(v, str | int | bool) or v is None:
            return v
        if isinstance(v, dict):
            return {conv_key(k): conv(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [conv(x) for x in v]
        item = getattr(v, "item", None)
        if callable(item) and type(v).__module__ == "numpy":
            found = True
            return conv(item())
        return v

    def conv_key(k: Any) -> Any:
        nonlocal found
        if type(k).__module__ == "numpy" and callable(getattr(k, "item", None)):
            found = True
            return k.item()
        return k

    return conv(value), found


_RESPONSE_MODEL: Any = None


def _response_model() -> Any:
    """A pydantic model like the route's response model (extra fields allowed), made on first use."""
    global _RESPONSE_MODEL
    if _RESPONSE_MODEL is None:
        from pydantic import BaseModel, ConfigDict

        class WorkplaceResponse(BaseModel):
            model_config = ConfigDict(extra="allow")

        _RESPONSE_MODEL = WorkplaceResponse
    return _RESPONSE_MODEL


def render_body(value: Any) -> str:
    """The HTTP body text `{"output": ...}` as the FastAPI route sends it.

    Current FastAPI serialises the pydantic response model with pydantic-core: compact, UTF-8, NaN as
    null, and pydantic's float format (`1e-7`, `0.00001`, where Python's json writes `1e-07`, `1e-05`).
    A value pydantic cannot serialise makes the real server answer 500 "Internal Server Error".
    """
    try:
        model = _response_model()
    except ImportError:  # no pydantic: the classic json.dumps rendering
        return json.dumps({"output": value}, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        return model(output=value).model_dump_json()
    except Exception:
        return "Internal Server Error"


def validation_error_body(body: Any) -> str:
    """FastAPI's 422 body for a request body that is not a JSON object (the route's model needs one)."""
    detail = [
        {
            "type": "model_attributes_type",
            "loc": ["body"],
            "msg": "Input should be a valid dictionary or object to extract fields from",
            "input": body,
        }
    ]
    return json.dumps({"detail": detail}, ensure_ascii=False, separators=(",", ":"))


class ReferenceSession:
    """One reference environment (`get_tools` of all five toolkits) behind the live route's logic."""

    def __init__(self, ref: Any):
        self.env = ref.get_tools(list(TOOLKITS))
        self.numpy_seen = False  # whether the last result held numpy scalars

    def raw(self, name: str, arguments: dict[str, Any]) -> Any:
        """The route: drop nulls, call, turn any exception into the error text."""
        args = {k: v for k, v in arguments.items() if v is not None}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas' SettingWithCopyWarning from the analytics tools
            try:
                return self.env["functions"][name](**args)
            except Exception as e:
                return f"Error executing tool '{name}': {e!s}"

    def call(self, name: str, arguments: Any) -> str:
        """The body text the model sees. A JSON body that is not an object never reaches the tool:
        FastAPI answers 422 with pydantic's validation error."""
        if not isinstance(arguments, dict):
            self.numpy_seen = False
            return validation_error_body(arguments)
        value, self.numpy_seen = to_native(self.raw(name, arguments))
        return render_body(value)

    def frame(self, table: str) -> Any:
        container, attr = REFERENCE_FRAMES[table]
        return getattr(self.env["containers"][container], attr)
