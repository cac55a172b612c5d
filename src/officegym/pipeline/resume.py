"""Resuming a run folder: the stages already done there must have run with the config asked for now.

The pipeline skips a stage whose output exists. Were the folder's stages run with another config (an
older recipe of the same file, a changed override), skipping them would report their results as the
new config's, so `stale_stages` compares what each done stage depends on in the folder's saved
config.yaml with the config now resolved. Settings that change how a stage runs but not what it
computes (device, threads, engine, micro-batches, logging) are not compared.
"""

from __future__ import annotations

from typing import Any

# what each stage's output depends on, by its own sections and the stages it builds on
_OWN = {
    "world": ("env", "world"),
    "tasks": ("tasks",),
    "baselines": ("eval",),
    "eval_base": ("model", "eval", "bfcl"),
    "sft": ("model", "sft", "sft_data"),
    "eval_sft": ("eval", "bfcl"),
    "grpo": ("model", "grpo"),
    "eval_grpo": ("eval", "bfcl"),
}
_BUILDS_ON = {
    "tasks": ("world",),
    "baselines": ("tasks",),
    "eval_base": ("tasks",),
    "sft": ("tasks",),
    "eval_sft": ("sft",),
    "grpo": ("sft",),
    "eval_grpo": ("grpo",),
}
# dotted keys (under their section) that say how a stage runs, not what it computes
_HOW = {
    # eval.baselines: each baseline has its own folder, so one added is simply not done yet
    "eval": ("batch_size", "threads", "dtype", "cuda_graphs", "backend", "vllm", "baselines"),
    "sft": ("out_dir", "backend", "logging", "vllm", "model.device", "model.threads", "model.cuda_graphs",
            "model.gradient_checkpointing", "sft.micro_batch_size", "sft.micro_batch_tokens", "rollout.backend",
            "rollout.ray", "rollout.concurrency", "rollout.batch_size"),
    "grpo": ("out_dir", "backend", "logging", "vllm", "model.device", "model.threads", "model.cuda_graphs",
             "model.gradient_checkpointing", "grpo.micro_batch_size", "grpo.micro_batch_tokens", "grpo.trunk_cache_mb",
             "rollout.backend", "rollout.ray", "rollout.concurrency", "rollout.batch_size", "checkpoint.resume"),
}


def depends_on(stage: str) -> tuple[str, ...]:
    """The config's top-level sections a stage's output depends on (its own and its inputs')."""
    keys = list(_OWN.get(stage, ()))
    for before in _BUILDS_ON.get(stage, ()):
        keys += [k for k in depends_on(before) if k not in keys]
    return tuple(keys)


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): value}


def _resolved(section: str, value: Any) -> dict[str, Any] | None:
    """A section as dotted key -> value with its defaults filled in (None when it does not validate:
    a config saved by another version cannot be compared)."""
    from pydantic import ValidationError

    if section in ("sft", "grpo"):
        from officegym.train.config import (
            ConfigError,
            GRPORunConfig,
            SFTRunConfig,
            build_config,
            merge_sections,
        )

        if not isinstance(value, dict):
            return None
        try:
            cls = SFTRunConfig if section == "sft" else GRPORunConfig
            value = build_config(cls, merge_sections(value, {"out_dir": "-"})).model_dump(mode="json")
        except (ConfigError, ValidationError, ValueError, TypeError):
            return None
    flat = _flat(value)
    how = _HOW.get(section, ())
    return {k: v for k, v in flat.items() if not any(k == h or k.startswith(f"{h}.") for h in how)}


def _changes(saved: dict[str, Any], now: dict[str, Any], section: str) -> list[str] | None:
    before, after = _resolved(section, saved.get(section)), _resolved(section, now.get(section))
    if before is None or after is None:
        return None
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    return [f"{section}.{k}" if k else section for k in changed]


def stale_stages(saved: dict[str, Any], now: dict[str, Any], done: list[str]) -> list[tuple[str, list[str]]]:
    """(stage, the dotted keys that differ) for each done stage whose inputs differ between the
    folder's saved config and the one resolved now; both are full dumps of PipelineConfig."""
    stale = []
    for stage in done:
        keys: list[str] = []
        for section in depends_on(stage):
            changed = _changes(saved, now, section)
            keys += changed or []
        if keys:
            stale.append((stage, keys))
    return stale


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(out: Any, stale: list[tuple[str, list[str]]], saved: dict[str, Any], now: dict[str, Any]) -> str:
    """The refusal: which stages, which keys (a few, with their values), and what to do."""
    def value(cfg: dict[str, Any], key: str) -> Any:
        section, _, rest = key.partition(".")
        flat = _resolved(section, cfg.get(section)) or {}
        return flat.get(rest) if rest else cfg.get(section)

    lines = []
    for stage, keys in stale:
        shown = ", ".join(f"{k}: {_short(value(saved, k))} -> {_short(value(now, k))}" for k in keys[:3])
        more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
        lines.append(f"  {stage}: {shown}{more}")
    return (f"{out} holds stages run with another config; resuming would report their results as this one's:\n"
            + "\n".join(lines)
            + f"\nChoose another out_dir, or remove those stages' folders in {out} (and the later stages') to run "
            "them again with this config.")
