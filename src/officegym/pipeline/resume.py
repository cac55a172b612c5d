"""Resuming a run folder: a stage already done there must have run with the settings asked for now.

The pipeline skips a stage whose output exists. Had the stage run with other settings (an older
recipe of the same config file, a changed override), skipping it would report its results as the new
config's. So each stage records what its output depends on (`stage_inputs`: its own settings and
those of the stages it builds on, as the pipeline resolved them) in its folder, an evaluation once it
can run (it resumes row by row) and every stage when it finishes, and a rerun compares those records
with the settings resolved now (`stale`). Settings that change how a stage runs but not what it
computes (device, threads, engine, micro-batches, logging) are left out, and so are the paths the
pipeline fills in itself; a key only one side has (a setting added or removed since) is not compared.
A stage done by a version that kept no records is compared with what the run folder's config.yaml
says, when that run had the stage, and that is recorded before the file is rewritten.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from officegym.core.files import atomic_write
from officegym.pipeline.config import PipelineError
from officegym.train.run_folder import COMPUTE_ONLY, PATH_KEYS

RECORD = "pipeline_inputs.json"

EVALUATIONS = ("eval_base", "eval_sft", "eval_grpo")
# dotted keys under sft or grpo left out: how training computes (the trainer's own list), the paths
# and data the pipeline fills in itself, and the templates tasks.demonstrated decides
_PIPELINE_SET = ("out_dir", *PATH_KEYS, "data.env", "data.tools")
_IGNORED = {"sft": (*COMPUTE_ONLY, *_PIPELINE_SET, "data.templates", "sft.source", "sft.rollouts"),
            "grpo": (*COMPUTE_ONLY, *_PIPELINE_SET, "grpo.sft_mix.templates")}
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

    from officegym.train.config import GRPORunConfig, SFTRunConfig
    from officegym.train.config_files import ConfigError, build_config, merge_sections

    try:
        cls = SFTRunConfig if section == "sft" else GRPORunConfig
        value = build_config(cls, merge_sections(value, {"out_dir": "-"})).model_dump(mode="json")
    except (ConfigError, ValidationError, ValueError, TypeError, RecursionError):
        pass  # the stage itself will say what is wrong; compare the section as written
    ignored = _IGNORED[section]
    return {k: v for k, v in _flat(value, section).items()
            if not any(k == f"{section}.{h}" or k.startswith(f"{section}.{h}.") for h in ignored)}


def _evaluation(p: Any, stage: str) -> dict[str, Any]:
    ev = p.cfg.eval
    out = {f"eval.{k}": getattr(ev, k) for k in _EVAL_KEYS}
    cap = ev.max_tasks
    if stage == "eval_base" and ev.base_max_tasks is not None:  # as Pipeline._eval_tasks takes them
        cap = min(cap or ev.base_max_tasks, ev.base_max_tasks)
    out["eval.max_tasks"] = cap
    bfcl = p.cfg.bfcl
    out["bfcl"] = bfcl.model_dump(mode="json") if bfcl is not None and stage in bfcl.stages else None
    return out


def _own(p: Any, stage: str) -> dict[str, Any]:
    cfg = p.cfg
    if stage == "world":
        world = cfg.world.model_dump(mode="json")
        if world["path"]:  # one folder however it is spelt
            with contextlib.suppress(OSError, RuntimeError):  # a symlink loop: the world stage will say
                world["path"] = str(Path(world["path"]).resolve())
        return {"env": p.env_name, **_flat(world, "world")}
    if stage == "tasks":
        tasks = cfg.tasks.model_dump(mode="json")
        tasks.pop("demonstrated")  # a filter on what SFT and the SFT term imitate, not on the tasks written
        return _flat(tasks, "tasks")
    if stage == "eval_base":
        return {"model": cfg.model, "chat_template": p.base_template(), **_evaluation(p, stage)}
    if stage in ("eval_sft", "eval_grpo"):
        return _evaluation(p, stage)
    if stage == "baselines":
        return {k: v for k, v in _evaluation(p, stage).items() if k != "bfcl"}
    demonstrated = {"tasks.demonstrated": cfg.tasks.demonstrated}
    if stage == "sft":
        source = p.sft_source()
        oracle = {"eval.max_tool_output_chars": cfg.eval.max_tool_output_chars} if source == "oracle" else {}
        return {"model": cfg.model, "sft_data": source, **demonstrated, **oracle, **_training("sft", cfg.sft)}
    if stage == "grpo":
        start = "the sft stage's model" if "sft" in cfg.stages else cfg.model
        # GRPO validates under the evaluation's limits unless its own section sets them (run.py)
        own = cfg.grpo.get("validation") if isinstance(cfg.grpo.get("validation"), dict) else {}
        limits = {f"eval.{k}": getattr(cfg.eval, k) for k, v in (("max_steps", "max_steps"),
                                                                  ("max_new_tokens", "max_new_tokens_per_turn"))
                  if own.get(v) is None}
        return {"start": start, **demonstrated, **limits, **_training("grpo", cfg.grpo)}
    return {}


def _builds_on(p: Any, stage: str) -> tuple[str, ...]:
    if stage == "grpo":
        return ("sft",) if "sft" in p.cfg.stages else ("tasks",)
    if stage == "tasks":
        return ("world",) if p.takes_world else ()
    return {"baselines": ("tasks",), "eval_base": ("tasks",), "sft": ("tasks",), "eval_sft": ("sft",),
            "eval_grpo": ("grpo",)}.get(stage, ())


def stage_inputs(p: Any, stage: str) -> dict[str, Any]:
    """What `stage`'s output depends on under the pipeline `p`'s config: dotted key -> JSON value."""
    out: dict[str, Any] = {}
    for before in _builds_on(p, stage):
        out.update(stage_inputs(p, before))
    out.update(_own(p, stage))
    return json.loads(json.dumps(out, default=str))


def record_paths(p: Any, stage: str) -> list[tuple[str, Path]]:
    """(label, file) where `stage` records its inputs: its own folder in the run folder, one per
    baseline; none for a world the user named (the pipeline writes nothing there)."""
    if stage == "world":
        return [] if p.cfg.world.path else [(stage, p.world_dir / RECORD)]
    if stage == "baselines":
        return [(f"baselines/{d.name}", d / RECORD) for d in (p.baseline_dir(s) for s in p.baseline_specs())]
    if stage in ("tasks", "sft", "grpo", *EVALUATIONS):
        return [(stage, p.out / stage / RECORD)]
    return []


def _write(path: Path, inputs: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(inputs, indent=1, sort_keys=True) + "\n")


def record(p: Any, stage: str) -> None:
    """Write what the stage finished with into its folder (baselines record each folder as its
    evaluation starts: `record_start`)."""
    if stage == "baselines":
        return
    inputs = stage_inputs(p, stage)
    for _label, path in record_paths(p, stage):
        if path.parent.is_dir():
            _write(path, inputs)


def record_start(p: Any, stage: str, folder: Path) -> None:
    """An evaluation (or a baseline) resumes row by row: once it can run, it says in its folder what
    it runs with, so that a rerun under other settings does not finish it."""
    _write(folder / RECORD, stage_inputs(p, stage))


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None  # missing or unreadable: as if there were none
    return value if isinstance(value, dict) else None


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


def _from_config(saved: Any, stage: str, path: Path) -> dict[str, Any] | None:
    """What the saved config says `stage` ran with into `path`; None unless that run had the stage
    and wrote there (a config.yaml left by a run of other stages says nothing of this one)."""
    if saved is None or stage not in saved.cfg.stages:
        return None
    try:
        if path not in [q for _label, q in record_paths(saved, stage)]:
            return None
        return stage_inputs(saved, stage)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, OSError):
        return None  # another version's config: nothing to compare with


def stale(p: Any, check: list[str], done: list[str]) -> tuple[list[tuple[str, list[tuple[str, Any, Any]]]],
                                                             dict[Path, dict[str, Any]]]:
    """(label, [(key, recorded, now)]) for each stage in `check` whose record differs from now, and
    the records to write for stages in `done` that have none (what the folder's config.yaml says
    they ran with), for the caller to write once the check has passed and before that file changes.
    `done` names stages whose output exists; `check` those the run would skip or resume."""
    found: list[tuple[str, list[tuple[str, Any, Any]]]] = []
    backfill: dict[Path, dict[str, Any]] = {}
    saved: Any = False  # read on first need
    for stage in dict.fromkeys([*done, *check, "baselines"]):
        now = stage_inputs(p, stage) if stage in check else {}
        for label, path in record_paths(p, stage):
            # a baseline is one folder per policy: finished when its own metrics are there
            finished = (path.parent / "metrics.json").is_file() if stage == "baselines" else stage in done
            before = _read(path)
            if before is None and finished:
                if saved is False:
                    saved = _saved(p)
                before = _from_config(saved, stage, path)
                if before is not None:
                    backfill[path] = before
            if before is None or stage not in check:
                continue
            changed = [(k, before[k], now[k]) for k in sorted(before.keys() & now.keys()) if before[k] != now[k]]
            if changed:
                found.append((label, changed))
    return found, backfill


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
            + f"\nChoose another out_dir, or remove those stages' folders in {out} (and the later stages', with "
            "sft_data, bfcl_* and baselines where they exist: they resume by task id) to run them again with "
            "these settings.")


def check(p: Any, done: list[str]) -> None:
    """Before the pipeline `p` writes anything: refuse (PipelineError) when a stage it would skip
    (`done`, its output there) or resume (an evaluation with rows) ran with other settings; else
    record, for stages done by a version that kept no records, what the folder's config.yaml says."""
    def resumed(stage: str) -> bool:
        rows = p.out / stage / "rollouts.jsonl"
        return (p.out / stage / RECORD).is_file() and rows.is_file() and rows.stat().st_size > 0

    checked = [s for s in p.cfg.stages if s in done or s == "baselines" or (s in EVALUATIONS and resumed(s))]
    found, backfill = stale(p, checked, done)
    if found:
        raise PipelineError(describe(p.out, found))
    for path, inputs in backfill.items():
        _write(path, inputs)
