"""Resuming a run folder: a stage already done there must have run with the settings asked for now.

The pipeline skips a stage whose output exists. Had the stage run with other settings (an older
recipe of the same config file, a changed override), skipping it would report its results as the new
config's. So each stage, when it finishes, records what its output depends on (`stage_inputs`: its
own settings and those of the stages it builds on, as the pipeline resolved them) in its folder, and
a rerun compares that record with the settings resolved now (`stale`). Settings that change how a
stage runs but not what it computes (device, threads, engine, micro-batches, logging) are left out,
and so are the paths the pipeline fills in itself. A stage done without a record (an older version,
a folder copied without it) is not compared: nothing says what it ran with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write

RECORD = "pipeline_inputs.json"

# dotted keys (under sft or grpo) that say how training runs, or that the pipeline sets itself
_TRAIN_IGNORED = ("out_dir", "backend", "logging", "vllm", "model.name", "model.device", "model.threads",
                  "model.cuda_graphs", "model.gradient_checkpointing", "data.tasks", "data.val_tasks", "data.env",
                  "data.world", "data.tools", "rollout.backend", "rollout.ray", "rollout.concurrency",
                  "rollout.batch_size", "checkpoint.resume", "validation.overlap")
_IGNORED = {
    "sft": (*_TRAIN_IGNORED, "data.templates", "sft.source", "sft.rollouts", "sft.micro_batch_size",
            "sft.micro_batch_tokens", "sft.share_prefix"),
    "grpo": (*_TRAIN_IGNORED, "grpo.micro_batch_size", "grpo.micro_batch_tokens", "grpo.trunk_cache_mb",
             "grpo.share_prefix", "grpo.merge_duplicates", "grpo.sft_mix.templates"),
}
# what an evaluation computes: the tasks it takes and the episodes it plays
_EVAL_KEYS = ("split", "k", "max_steps", "max_new_tokens", "temperature", "max_tool_output_chars")


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}"))
        return out
    return {prefix: value}


def _training(section: str, value: dict[str, Any]) -> dict[str, Any]:
    """The sft or grpo section with its defaults filled in, as dotted keys, less what is ignored."""
    from pydantic import ValidationError

    from officegym.train.config import ConfigError, GRPORunConfig, SFTRunConfig, build_config, merge_sections

    try:
        cls = SFTRunConfig if section == "sft" else GRPORunConfig
        value = build_config(cls, merge_sections(value, {"out_dir": "-"})).model_dump(mode="json")
    except (ConfigError, ValidationError, ValueError, TypeError):
        pass  # the stage itself will say what is wrong; compare the section as written
    ignored = _IGNORED[section]
    return {k: v for k, v in _flat(value, section).items()
            if not any(k == f"{section}.{h}" or k.startswith(f"{section}.{h}.") for h in ignored)}


def _evaluation(p: Any, stage: str) -> dict[str, Any]:
    ev = p.cfg.eval
    out = {f"eval.{k}": getattr(ev, k) for k in _EVAL_KEYS}
    out["eval.max_tasks"] = (ev.base_max_tasks or ev.max_tasks) if stage == "eval_base" else ev.max_tasks
    bfcl = p.cfg.bfcl
    out["bfcl"] = bfcl.model_dump(mode="json") if bfcl is not None and stage in bfcl.stages else None
    return out


def _own(p: Any, stage: str) -> dict[str, Any]:
    cfg = p.cfg
    if stage == "world":
        return {"env": p.env_name, **_flat(cfg.world.model_dump(mode="json"), "world")}
    if stage == "tasks":
        tasks = cfg.tasks.model_dump(mode="json")
        tasks.pop("demonstrated")  # a filter on what SFT and the SFT term imitate, not on the tasks written
        return _flat(tasks, "tasks")
    if stage == "eval_base":
        return {"model": cfg.model, "chat_template": p.base_template(), **_evaluation(p, stage)}
    if stage in ("eval_sft", "eval_grpo"):
        return _evaluation(p, stage)
    demonstrated = {"tasks.demonstrated": cfg.tasks.demonstrated}
    if stage == "sft":
        source = p.sft_source()
        oracle = {"eval.max_tool_output_chars": cfg.eval.max_tool_output_chars} if source == "oracle" else {}
        return {"model": cfg.model, "sft_data": source, **demonstrated, **oracle, **_training("sft", cfg.sft)}
    if stage == "grpo":
        start = "the sft stage's model" if "sft" in cfg.stages else cfg.model
        # GRPO validates under the evaluation's limits unless its own section sets them (run.py)
        limits = {"eval.max_steps": cfg.eval.max_steps, "eval.max_new_tokens": cfg.eval.max_new_tokens}
        return {"start": start, **demonstrated, **limits, **_training("grpo", cfg.grpo)}
    return {}


def _builds_on(p: Any, stage: str) -> tuple[str, ...]:
    if stage == "grpo":
        return ("sft",) if "sft" in p.cfg.stages else ("tasks",)
    return {"tasks": ("world",), "eval_base": ("tasks",), "sft": ("tasks",), "eval_sft": ("sft",),
            "eval_grpo": ("grpo",)}.get(stage, ())


def stage_inputs(p: Any, stage: str) -> dict[str, Any]:
    """What `stage`'s output depends on under the pipeline `p`'s config: dotted key -> JSON value."""
    out: dict[str, Any] = {}
    for before in _builds_on(p, stage):
        out.update(stage_inputs(p, before))
    out.update(_own(p, stage))
    return json.loads(json.dumps(out, default=str))


def record_path(p: Any, stage: str) -> Path | None:
    """Where `stage` records its inputs: its own folder in the run folder (None for a world the user
    named: the pipeline writes nothing there, and for stages with no single folder)."""
    if stage == "world":
        return None if p.cfg.world.path else p.world_dir / RECORD
    if stage in ("tasks", "eval_base", "sft", "eval_sft", "grpo", "eval_grpo"):
        return p.out / stage / RECORD
    return None


def record(p: Any, stage: str) -> None:
    """Write what the stage just finished with into its folder."""
    path = record_path(p, stage)
    if path is not None and path.parent.is_dir():
        atomic_write(path, json.dumps(stage_inputs(p, stage), indent=1, sort_keys=True) + "\n")


def _saved(p: Any) -> Any:
    """The pipeline as the run folder's config.yaml describes it (None when it cannot be read): what
    a stage done before stages kept records ran with, as far as the folder says."""
    import yaml

    from officegym.pipeline.config import PipelineConfig

    try:
        cfg = PipelineConfig.model_validate(yaml.safe_load((p.out / "config.yaml").read_text()))
        return type(p)(cfg)
    except (OSError, ValueError, TypeError, yaml.YAMLError, RecursionError):
        return None


def stale(p: Any, done: list[str]) -> tuple[list[tuple[str, list[tuple[str, Any, Any]]]], list[str]]:
    """(stage, [(key, recorded, now)]) for each done stage whose record differs from now, and the
    done stages without a record that were compared with the run folder's config.yaml instead."""
    out, from_config = [], []
    saved: Any = False  # read on first need
    for stage in done:
        path = record_path(p, stage)
        if path is None:
            continue
        if path.is_file():
            try:
                before = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # an unreadable record says nothing
        else:  # done by a version that kept no records: the folder's config.yaml is the best evidence
            if saved is False:
                saved = _saved(p)
            if saved is None:
                continue
            try:
                before = stage_inputs(saved, stage)
            except (ValueError, TypeError, KeyError, AttributeError):  # another version's config: nothing to compare
                continue
            from_config.append(stage)
        if not isinstance(before, dict):
            continue
        now = stage_inputs(p, stage)
        changed = [(k, before.get(k), now.get(k)) for k in sorted(before.keys() | now.keys())
                   if before.get(k) != now.get(k)]
        if changed:
            out.append((stage, changed))
    return out, from_config


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(out: Any, found: list[tuple[str, list[tuple[str, Any, Any]]]]) -> str:
    """The refusal: which stages, which settings (a few, with their values), and what to do."""
    lines = []
    for stage, changed in found:
        shown = ", ".join(f"{k}: {_short(a)} -> {_short(b)}" for k, a, b in changed[:3])
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        lines.append(f"  {stage}: {shown}{more}")
    return (f"{out} holds stages run with other settings; resuming would report their results as this config's:\n"
            + "\n".join(lines)
            + f"\nChoose another out_dir, or remove those stages' folders in {out} (and the later stages') to run "
            "them again with these settings.")
