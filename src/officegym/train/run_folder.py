"""A training run's folder: the inputs its config names are checked, a rerun resumes only under a
config that keeps its checkpoints meaningful (what may change: COMPUTE_ONLY and RESUMABLE; each
change goes to config_changes.jsonl), the config is saved, and the settings that matter are shown.
Both trainers start here (train/distributed.py)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from officegym.core import registry
from officegym.core.inputs import InputError, input_dir, input_file, output_dir, read_text
from officegym.train.checkpoint import find_checkpoints
from officegym.train.config import RunConfig
from officegym.train.config_files import config_changes, config_dict, save_config

log = logging.getLogger(__name__)


def prepare_run_dir(cfg: RunConfig, console: Any, kind: str) -> Path:
    """Check the files the config names and, on a resume, the config against the run's saved one
    (refusing changes that would make it another run; nothing is written then); then create the
    run folder, save the config (config.yaml) and print what matters for the stage."""
    run_dir = output_dir(cfg.out_dir, "out_dir")
    check_run_inputs(cfg)
    changes, step = check_resume(cfg, run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if changes:
        shown = "; ".join(f"{k}: {_show(old)} -> {_show(new)}" for k, (old, new) in changes.items())
        with open(run_dir / CONFIG_CHANGES, "a", encoding="utf-8") as fh:  # config.yaml keeps only the latest
            fh.write(json.dumps({"resumed_at_step": step, "changes": {k: list(v) for k, v in changes.items()}},
                                default=str) + "\n")
    save_config(cfg, run_dir / "config.yaml")
    if console is not None:
        console.print(run_table(cfg, kind, run_dir))
        if changes:
            console.print(f"resuming at step {step} with changed settings: {shown}", markup=False)
    return run_dir


CONFIG_CHANGES = "config_changes.jsonl"


def check_run_inputs(cfg: RunConfig) -> None:
    """The files and folders the config names exist and are readable, and the reward builds: a
    mistake is found before a model loads, as one InputError naming the key."""
    for key, path in (("data.tasks", cfg.data.tasks), ("data.val_tasks", cfg.data.val_tasks)):
        if path:
            input_file(path, f"task file ({key})")
    if cfg.data.world:
        input_dir(cfg.data.world, "world folder (data.world)")
    sft = getattr(cfg, "sft", None)
    if sft is not None and sft.source == "rollouts":
        for path in sft.rollouts:
            input_file(path, "rollouts file (sft.rollouts)")
    grpo = getattr(cfg, "grpo", None)
    if grpo is not None:
        from officegym.rewards import make_reward

        try:
            make_reward(grpo.reward)
        except (KeyError, ValueError, TypeError) as exc:
            raise InputError(f"grpo.reward: {exc}") from None


class ResumeError(InputError):
    """A rerun whose config would change what the run's checkpoints mean."""


# How a run computes, not what: the same updates, faster or elsewhere (the pipeline's resume check,
# pipeline/resume.py, leaves these out of what a finished stage ran with too).
COMPUTE_ONLY = ("logging", "checkpoint.resume", "model.device", "model.threads", "model.cuda_graphs",
                "model.gradient_checkpointing", "backend", "vllm", "rollout.concurrency", "rollout.batch_size",
                "rollout.backend", "rollout.ray", "validation.overlap", "grpo.micro_batch_size",
                "grpo.micro_batch_tokens", "grpo.share_prefix", "grpo.skip_zero_advantage", "grpo.merge_duplicates",
                "grpo.trunk_cache_mb", "sft.micro_batch_size", "sft.micro_batch_tokens", "sft.share_prefix")
# What a resumed run may change: how long it runs and how it logs, validates, checkpoints and
# computes (the same updates, faster or elsewhere), and which checkpoint it exports at the end (a run
# finished under `export: best` re-exports its last step). Any other change would be mixed into weights,
# optimizer moments, schedule and data position made under the saved values; a new optim.lr would
# not even apply, since the optimizer and scheduler state restored from the checkpoint sets it.
RESUMABLE = ("grpo.max_steps", "sft.max_steps", "sft.epochs", "validation", "checkpoint.every", "checkpoint.keep_top_k",
             "checkpoint.export", "model.precision", *COMPUTE_ONLY)
PATH_KEYS = ("model.name", "data.tasks", "data.val_tasks", "data.world")


def _resumable(key: str) -> bool:
    return any(key == k or key.startswith(k + ".") for k in RESUMABLE)


def check_resume(cfg: RunConfig, run_dir: Path) -> tuple[dict[str, tuple[Any, Any]], int]:
    """On a resume: the keys whose value differs from the run's saved config.yaml (all of them
    resumable) and the step it resumes at; ResumeError when another change would make it another
    run. ({}, 0) when nothing is resumed."""
    found = find_checkpoints(run_dir) if cfg.checkpoint.resume else []
    saved_path = run_dir / "config.yaml"
    if not found or not saved_path.is_file():
        return {}, 0
    try:
        import yaml

        saved = yaml.safe_load(read_text(saved_path, "saved config"))
    except Exception as exc:  # an unreadable record must not block the run: it is rewritten below
        log.warning("cannot compare with the run's saved config (%s); it is replaced", exc)
        return {}, found[-1].step
    new = config_dict(cfg)
    if not isinstance(saved, dict):
        return {}, found[-1].step
    for kind in ("grpo", "sft"):
        if (kind in saved) != (kind in new):
            other = "a GRPO" if "grpo" in saved else "an SFT"
            raise ResumeError(f"{run_dir} holds the checkpoints of {other} run: use another out_dir")
    changes = config_changes(saved, new, config_dict(type(cfg)()))
    changes = {k: v for k, v in changes.items() if k != "out_dir" and not (k in PATH_KEYS and _same_path(*v))}
    refused = {k: v for k, v in changes.items() if not _resumable(k)}
    if refused:
        listed = "; ".join(f"{k}: {_show(old)} -> {_show(new)}" for k, (old, new) in refused.items())
        raise ResumeError(f"cannot resume {run_dir} (step {found[-1].step}) with this config: {listed}. Its checkpoints "
                          f"were trained with the saved values ({saved_path}); put them back or use another out_dir")
    return changes, found[-1].step


def _same_path(old: Any, new: Any) -> bool:
    """Two spellings of one existing file or folder (relative and absolute, say)."""
    try:
        return isinstance(old, str) and isinstance(new, str) and os.path.samefile(old, new)
    except OSError:
        return False


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def run_table(cfg: RunConfig, kind: str, run_dir: Path) -> Any:
    """One short table: the settings that matter for the stage, then every other key that applies
    to it and differs from its default. The full config is in run_dir/config.yaml."""
    from rich.markup import escape
    from rich.table import Table

    rows = _summary(cfg, kind)
    shown = [k for _, _, keys in rows for k in keys]
    changed = config_changes(config_dict(type(cfg)()), config_dict(cfg), config_dict(type(cfg)()))
    extra = [(k, new) for k, (_, new) in changed.items()
             if k != "out_dir" and not any(k == s or k.startswith(s + ".") for s in shown) and _applies(k, cfg, kind)]
    # cells are markup to rich: paths and values such as runs/[/x] are escaped to stay text
    table = Table(title=escape(f"officegym train {kind}: {run_dir}"), caption=escape(f"full config: {run_dir / 'config.yaml'}"),
                  show_header=False, title_justify="left", caption_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for label, text, _ in rows:
        table.add_row(label, escape(text))
    if extra:
        table.add_section()
        for key, value in extra:
            table.add_row(key, escape(_show(value)))
    return table


def _summary(cfg: RunConfig, kind: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(label, text, the keys it shows) for the stage's key settings."""
    m, lo, o, d = cfg.model, cfg.lora, cfg.optim, cfg.data
    model = m.name + (f" + LoRA r={lo.r}, alpha={lo.alpha:g}" if lo.enabled else " (all weights)")
    rows = [("model", model, ("model.name", "lora"))]
    sft = getattr(cfg, "sft", None)
    if sft is not None and sft.source == "rollouts":
        rows_in = sum(_count_rows(p) for p in sft.rollouts)
        data = f"{_n(len(sft.rollouts), 'rollout file')} ({rows_in} rows, reward >= {sft.min_reward:g})"
    else:
        data = f"{d.tasks} ({_count_rows(d.tasks)} tasks)" if d.tasks else "no task file"
    data += (f"; validation {d.val_tasks} ({_count_rows(d.val_tasks)} tasks)" if d.val_tasks
             else f"; {d.val_fraction:.0%} held out for validation")
    rows.append(("data", data + ("" if registry.canonical_name(d.env) == registry.DEFAULT_ENVIRONMENT else f"; env {d.env}"),
                 ("data.tasks", "data.val_tasks", "data.val_fraction", "data.env", "sft.rollouts", "sft.min_reward")))
    lr = f"AdamW lr {o.lr:g}, {o.schedule}" + ("" if o.schedule == "constant" else f" to {o.min_lr:g}")
    rows.append(("optimizer", lr + (f", warm-up {o.warmup_steps}" if o.warmup_steps else ""),
                 ("optim.lr", "optim.min_lr", "optim.schedule", "optim.warmup_steps")))
    if sft is not None:
        steps = _n(sft.max_steps, "step") if sft.max_steps else _n(sft.epochs, "epoch")
        rows.append(("steps", f"{steps} of {sft.batch_size} conversations (micro-batches of {sft.micro_batch_size})",
                     ("sft.max_steps", "sft.epochs", "sft.batch_size", "sft.micro_batch_size")))
        rows.append(("examples", f"{sft.source}, max length {sft.max_length}"
                     + (f", calls per turn: {sft.calls_per_turn}" if sft.source == "ground_truth" else ""),
                     ("sft.source", "sft.max_length", "sft.calls_per_turn")))
    grpo = getattr(cfg, "grpo", None)
    if grpo is not None:
        r, loss = cfg.rollout, grpo.loss
        rows += [
            ("steps", f"{_n(grpo.max_steps, 'step')} of {grpo.num_prompts_per_step} prompts x "
                      f"{grpo.num_generations_per_prompt} generations",
             ("grpo.max_steps", "grpo.num_prompts_per_step", "grpo.num_generations_per_prompt")),
            ("reward", _show(grpo.reward), ("grpo.reward",)),
            ("rollouts", f"{cfg.backend}: up to {_n(r.max_steps, 'turn')} of {r.max_new_tokens_per_turn} tokens, "
                         f"temperature {r.temperature:g}",
             ("backend", "rollout.max_steps", "rollout.max_new_tokens_per_turn", "rollout.temperature")),
            ("loss", f"clip {loss.eps_low:g}/{loss.eps_high:g}, {loss.aggregation}"
                     + (f", KL {loss.kl_beta:g}" if loss.kl_beta else ""),
             ("grpo.loss.eps_low", "grpo.loss.eps_high", "grpo.loss.aggregation", "grpo.loss.kl_beta")),
        ]
    v, c = cfg.validation, cfg.checkpoint
    rows.append(("validation", f"every {_n(v.every, 'step')}" if v.every else "at the end", ("validation.every",)))
    rows.append(("checkpoints", f"every {_n(c.every, 'step')}; the latest and the best {c.keep_top_k} by {c.metric} kept",
                 ("checkpoint.every", "checkpoint.keep_top_k", "checkpoint.metric")))
    return rows


def _n(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _applies(key: str, cfg: RunConfig, kind: str) -> bool:
    """Whether a key does anything in this stage (vLLM settings without vLLM, LoRA's without LoRA,
    rollout limits in an SFT run that rolls nothing out do not)."""
    if key.startswith("vllm.") and cfg.backend != "vllm":
        return False
    if key.startswith("lora.") and not cfg.lora.enabled:
        return False
    return not (kind == "sft" and key.startswith("rollout.") and not cfg.validation.accuracy)


def _count_rows(path: str | None) -> int:
    """Non-blank lines of a JSONL file (0 when unreadable: the trainer reports that itself)."""
    try:
        with open(path or "", "rb") as fh:
            return sum(1 for line in fh if line.strip())
    except OSError:
        return 0
