"""Config files: YAML read into a pydantic model, overridden with dotted keys, merged, written back,
and two dumped configs compared.

    cfg = load_config(GRPORunConfig, "configs/grpo_smollm2.yaml", ["grpo.num_generations_per_prompt=8"])

An override is `dotted.key=value`; the value is read as YAML (`8`, `true`, `[a, b]`, `null`,
`{shaped: 0.5}`), never evaluated as code. Unknown keys are errors that name the key and list the
known ones, so a typo cannot silently fall back to a default. `save_config` writes the resolved
config (every default filled in) atomically as YAML.

Generic over any pydantic model: the trainers' (train/config.py) and the pipeline's.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from officegym.core.files import atomic_write
from officegym.core.inputs import InputError, read_text

M = TypeVar("M", bound=BaseModel)


class ConfigError(ValueError):
    """A config file or override that cannot be used; the message says which key and why."""


def _yaml() -> Any:
    try:
        import yaml
    except ImportError:  # pragma: no cover - pyyaml comes with transformers
        raise ConfigError("reading YAML configs needs pyyaml: pip install pyyaml") from None
    return yaml


def parse_value(text: str) -> Any:
    """A command-line value read as YAML (numbers, booleans, null, lists, mappings); plain text
    stays text. Never evaluated."""
    try:
        return _yaml().safe_load(text) if text.strip() else ""
    except Exception:  # not YAML (e.g. an unbalanced bracket): keep the text as it was typed
        return text


def apply_overrides(data: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Return a copy of `data` with each `a.b.c=value` set (intermediate mappings are created)."""
    out = copy.deepcopy(data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"override {item!r} must look like dotted.key=value")
        parts = key.split(".")
        if any(not p for p in parts):
            raise ConfigError(f"override {item!r}: empty part in the key {key!r}")
        node = out
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"override {item!r}: {'.'.join(parts[: depth + 1])} is a value, not a section")
            node = child
        node[parts[-1]] = parse_value(raw)
    return out


def _explain(exc: ValidationError, model: type[BaseModel]) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown key{_known_hint(model, err['loc'])}")
        else:
            lines.append(f"{where}: {err['msg']}")
    return "; ".join(lines)


def _known_hint(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    node: Any = model
    for part in loc[:-1]:
        fields = getattr(node, "model_fields", None)
        if not fields or part not in fields:
            return ""
        node = fields[part].annotation
    fields = getattr(node, "model_fields", None)
    return f" (known: {', '.join(fields)})" if fields else ""


def build_config(model: type[M], data: dict[str, Any] | None = None, overrides: list[str] | tuple[str, ...] = ()) -> M:
    """Validate `data` with `overrides` applied into a `model`."""
    merged = apply_overrides(data or {}, overrides)
    try:
        return model.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, model)) from None


def merge_sections(base: dict[str, Any], forced: dict[str, Any]) -> dict[str, Any]:
    """`base` with `forced` written over it, key by key at every depth (a copy; `base` is left
    alone): forcing grpo.sft_mix.templates keeps the rest of grpo.sft_mix. Lists are replaced."""
    out = copy.deepcopy(base)
    for key, value in forced.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_sections(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _read_mapping(p: Path, chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The file's sections; `extends: OTHER.yaml` (relative to the file) starts from OTHER's and
    merges this file's over them at every depth."""
    try:
        text = read_text(p, "config file")
    except InputError as exc:  # missing, a folder, not UTF-8: one message naming the file
        raise ConfigError(str(exc)) from None
    try:
        data = _yaml().safe_load(text) or {}
    except Exception as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of sections")
    if "extends" not in data:
        return data
    base = data.pop("extends")
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{p}: extends must name one config file, got {base!r}")
    target = Path(base) if Path(base).is_absolute() else p.parent / base
    chain = (*chain, p.resolve())
    if target.resolve() in chain:
        raise ConfigError(f"{p}: extends {base} makes a cycle: " + " -> ".join(str(c) for c in (*chain, target)))
    return merge_sections(_read_mapping(target, chain), data)


def load_config(model: type[M], path: str | os.PathLike[str] | None = None, overrides: list[str] | tuple[str, ...] = ()) -> M:
    """Read a YAML file (or nothing: all defaults; `extends:` in it: another file's sections under
    it), apply `overrides`, validate."""
    data = _read_mapping(Path(path)) if path is not None else {}
    return build_config(model, data, overrides)


def config_dict(cfg: BaseModel) -> dict[str, Any]:
    return cfg.model_dump(mode="json")


def dump_yaml(cfg: BaseModel) -> str:
    return _yaml().safe_dump(config_dict(cfg), sort_keys=False, allow_unicode=True)


def save_config(cfg: BaseModel, path: str | os.PathLike[str]) -> Path:
    """Write the resolved config as YAML, atomically."""
    target = Path(path)
    atomic_write_text(target, dump_yaml(cfg))
    return target


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, text)


def flat_config(data: dict[str, Any], shape: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted key -> value, descending only into the sections `shape` (a dumped default config) has:
    a free-form value such as a reward mapping stays one value."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        sub = shape.get(key)
        if isinstance(sub, dict) and sub and isinstance(value, dict):
            out.update(flat_config(value, sub, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


NOT_SET = "(not set)"


def config_changes(saved: dict[str, Any], new: dict[str, Any], defaults: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{dotted key: (saved value, new value)} for every key the two dumped configs disagree on. A key
    the saved config lacks (added to the code since) counts only when the new value is not its
    default; a key only the saved config has (no longer read) is left out."""
    old, cur, base = flat_config(saved, defaults), flat_config(new, defaults), flat_config(defaults, defaults)
    out = {}
    for key, value in cur.items():
        if key in old:
            if old[key] != value:
                out[key] = (old[key], value)
        elif key not in base or base[key] != value:
            out[key] = (NOT_SET, value)
    return out
