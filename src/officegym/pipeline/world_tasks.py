"""The stages that make a run's inputs: its world (for an environment that takes one) and its tasks."""

from __future__ import annotations

from officegym.core import registry
from officegym.pipeline.config import PipelineError
from officegym.pipeline.context import RunContext


def world(ctx: RunContext) -> None:
    """Load the config's world (world.path), or generate one into RUN/world."""
    declared = registry.environment_class(ctx.env_name)
    if ctx.cfg.world.path:
        try:
            ctx.built_environment = registry.make(ctx.env_name, world=declared.load_world(ctx.world_dir))
        except ValueError as exc:
            raise PipelineError(f"world: {ctx.world_dir} is no world of {ctx.env_name}: {exc}") from None
        return
    declared.generate_world(ctx.world_dir, seed=ctx.cfg.world.seed, size=ctx.cfg.world.size)


def tasks(ctx: RunContext) -> None:
    """The train/validation/test splits into RUN/tasks: sdg's templates over the world, or the
    environment's own generator (check_setup made sure there is one)."""
    t = ctx.cfg.tasks
    if not ctx.sdg_templates:
        from officegym.sdg.env_tasks import generate_env_tasks, write_env_tasks

        task_set = generate_env_tasks(ctx.environment(), t.n, t.seed, t.difficulty, name=ctx.env_name,
                                      fractions=t.fractions)
        write_env_tasks(task_set, ctx.tasks_dir)
        rows = task_set.rows
    else:
        from officegym.sdg.dataset import build_dataset, write_dataset

        ds = build_dataset([ctx.world_dir], t.n, t.seed, t.holdout_templates, 0, t.tools, templates=t.templates,
                           fractions=t.fractions, wordings=t.wordings, holdout_wordings=t.holdout_wordings,
                           all_tools_share=t.all_tools_share, do_nothing_weight=t.do_nothing_weight,
                           do_nothing_max=t.do_nothing_max, per_template_max=t.per_template_max,
                           do_nothing_per_template_max=t.do_nothing_per_template_max)
        write_dataset(ds, ctx.tasks_dir)
        rows = ds.rows
    ctx.say(f"{sum(len(v) for v in rows.values())} tasks: " + ", ".join(f"{k} {len(v)}" for k, v in rows.items()))
    if t.hf:
        from officegym.sdg.hf_export import HFExportError, write_hf_dataset

        try:
            ctx.say(f"Hugging Face dataset: {write_hf_dataset(ctx.tasks_dir, ctx.tasks_dir / 'hf')}")
        except HFExportError as exc:
            raise PipelineError(f"tasks: {exc}") from None
