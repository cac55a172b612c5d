"""The pipeline's training stages: SFT (on the oracle's rollouts or the tasks' ground truth) and
GRPO (from the SFT model, or the base model when the run has no SFT stage), each with its plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from officegym.pipeline.context import RunContext
from officegym.pipeline.evaluation import evaluate
from officegym.train.config_files import build_config, merge_sections


def sft(ctx: RunContext) -> None:
    """SFT from the config's model into RUN/sft."""
    from officegym.train.config import SFTRunConfig
    from officegym.train.sft import train_sft

    forced: dict[str, Any] = {"out_dir": str(ctx.out / "sft"), "data": train_data(ctx, section=ctx.cfg.sft)}
    if ctx.cfg.tasks.demonstrated is not None:  # SFT imitates these templates only
        forced["data"]["templates"] = list(ctx.cfg.tasks.demonstrated)
    if ctx.sft_source() == "oracle":
        forced["sft"] = {"source": "rollouts", "rollouts": [str(oracle_data(ctx))]}
    data = merge_sections(ctx.cfg.sft, forced)
    data.setdefault("model", {}).setdefault("name", ctx.cfg.model)
    cfg = build_config(SFTRunConfig, data)
    result = train_sft(cfg, ctx.console)
    if result.stopped:
        raise KeyboardInterrupt
    plot(ctx, ctx.out / "sft")


def grpo(ctx: RunContext) -> None:
    """GRPO into RUN/grpo, from the SFT stage's model when the run has one."""
    start = ctx.model_after("sft") if "sft" in ctx.cfg.stages else ctx.cfg.model
    train_grpo(ctx, start, ctx.out / "grpo", ctx.cfg.grpo)


def train_grpo(ctx: RunContext, start: str, out_dir: Path, sections: dict[str, Any], tasks: Path | None = None) -> None:
    """GRPO from model `start` into `out_dir` (its model lands in out_dir/model)."""
    from officegym.train.config import GRPORunConfig
    from officegym.train.grpo import train_grpo as run_grpo

    forced: dict[str, Any] = {"out_dir": str(out_dir), "data": train_data(ctx, tasks, sections)}
    if ctx.cfg.tasks.demonstrated is not None:  # rollouts of every template, ground truth of these only
        forced["grpo"] = {"sft_mix": {"templates": list(ctx.cfg.tasks.demonstrated)}}
    data = merge_sections(sections, forced)
    data.setdefault("model", {})["name"] = start
    # validate under the evaluation's episode limits: with fewer turns, a policy that never stops
    # looked fine in validation (46%) and failed the evaluation (5%)
    val = data.setdefault("validation", {})
    val.setdefault("max_steps", ctx.cfg.eval.max_steps)
    val.setdefault("max_new_tokens_per_turn", ctx.cfg.eval.max_new_tokens)
    if data.get("backend") == "vllm":
        data["backend"] = ctx.backend("vllm")
    cfg = build_config(GRPORunConfig, data)
    result = run_grpo(cfg, ctx.console)
    if result.stopped:
        raise KeyboardInterrupt
    plot(ctx, out_dir)


def train_data(ctx: RunContext, tasks: Path | None = None, section: dict[str, Any] | None = None) -> dict[str, Any]:
    """The data section a training stage is given. Mixed rows already carry the tools each task
    offers and keep them, unless the stage's own section asks for `data.tools: domain` (every
    prompt cut to the task's domains: an SFT step on this CPU took 32.8 s instead of 55.9 s)."""
    tools = "all" if ctx.cfg.tasks.tools == "mixed" else ctx.cfg.tasks.tools
    if ctx.cfg.tasks.tools == "mixed" and ((section or {}).get("data") or {}).get("tools") == "domain":
        tools = "domain"
    return {"tasks": str(tasks or ctx.tasks_dir / "train.jsonl"), "val_tasks": str(ctx.tasks_dir / "validation.jsonl"),
            "env": ctx.env_name, "world": str(ctx.world_dir) if ctx.takes_world else None, "tools": tools}


def oracle_data(ctx: RunContext) -> Path:
    """The oracle's rollouts on the train split (RUN/sft_data/rollouts.jsonl; resumable): each task
    played turn by turn as it plans (`oracle_turns`), then a closing message, so SFT sees every
    lookup's output before the answer that uses it. Rollouts below the full reward are left to
    SFT's min_reward, which drops them (counted in its log)."""
    from officegym.agent.scripted import plan_turns
    from officegym.train.data import of_templates

    tasks = of_templates(ctx.split_tasks("train", "sft"), ctx.cfg.tasks.demonstrated, "tasks.demonstrated")
    turns = max(len(plan_turns(len(t.ground_truth), t.metadata.get("oracle_turns"))) for t in tasks)
    metrics = evaluate(ctx, "sft_data", "oracle", out=ctx.out / "sft_data", tasks=tasks, max_steps=turns + 1, k=1)
    accuracy = metrics["accuracy"] or 0.0  # None: no rollout ran
    if accuracy < 1.0:
        ctx.say(f"[yellow]sft_data: the oracle is fully right on {accuracy:.1%} of the train tasks; "
                "SFT keeps only the rollouts that reach sft.min_reward[/]")
    return ctx.out / "sft_data" / "rollouts.jsonl"


def plot(ctx: RunContext, run_dir: Path) -> None:
    """The training run's plots; a failure is said, not raised."""
    try:
        from officegym.train.plot import plot_run

        plot_run(run_dir)
    except Exception as exc:  # plots are a nicety: a missing matplotlib must not fail training
        ctx.say(f"[yellow]no plots for {run_dir}: {exc}[/]")
