"""The pipeline's evaluations: a model (or a scripted policy) on the eval split, with the config's
BFCL subset and NeMo Gym's reference examples where they apply (eval_base, eval_sft, eval_grpo,
the review rounds' evaluations), and the baselines stage: each scripted baseline on the same tasks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from officegym.core import registry
from officegym.core.files import atomic_write
from officegym.pipeline.config import PipelineError
from officegym.pipeline.context import RunContext
from officegym.pipeline.resume import EVALUATIONS, record_start


def evaluate(ctx: RunContext, name: str, model: str, out: Path | None = None, tasks: list[Any] | None = None,
             max_steps: int | None = None, k: int | None = None) -> dict[str, Any]:
    """Evaluate `model` (a model or a policy spec) on `tasks` (default: the eval split) into `out`
    (default: RUN/`name`): run.json, rollouts, the config's BFCL subset, metrics.json and a report;
    returns the metrics. `max_steps` and `k` override the evaluation's turns per episode and
    samples per task."""
    from officegym.agent.policies import PolicySpec, make_policy, preflight
    from officegym.core.policy import PolicyUnusable
    from officegym.core.rollout_row import error_source, officegym_of
    from officegym.eval.defaults import EVAL_DEFAULTS
    from officegym.eval.evaluate import EvalSettings
    from officegym.eval.evaluate import evaluate as run_evaluation
    from officegym.eval.metrics import compute_metrics
    from officegym.eval.report import headline, write_report
    from officegym.eval.subsets import subset_metrics

    e = ctx.cfg.eval
    tasks = tasks if tasks is not None else ctx.eval_tasks(name)
    spec = policy_spec(model, ctx.backend(e.backend))
    parsed = PolicySpec(spec)
    if parsed.kind == "vllm":
        options: dict[str, Any] = dict(e.vllm)
    elif parsed.kind == "hf":
        options = {"batch_size": e.batch_size, "threads": e.threads, "dtype": e.dtype, "cuda_graphs": e.cuda_graphs}
    else:
        options = {}
    base_template = ctx.base_template()
    if model == ctx.cfg.model and base_template is not None and parsed.loads_model:
        options["chat_template"] = base_template  # the base model sees the prompts training will give it
    policy = make_policy(spec, environment=ctx.env_name, **options)
    # A model that cannot load (a package missing, a wrong path) stops the stage here: its
    # rollouts would all fail, and their 0% would read as the model's score.
    problem = preflight(policy)
    if problem:
        raise PipelineError(f"{name}: {spec} cannot run: {problem}")
    steps, k = max_steps or e.max_steps, k or e.k
    settings = EvalSettings(k=k, max_steps=steps, temperature=e.temperature, max_new_tokens=e.max_new_tokens,
                            max_tool_output_chars=e.max_tool_output_chars, seed=EVAL_DEFAULTS.seed)
    env = ctx.environment()
    out = out or ctx.out / name
    out.mkdir(parents=True, exist_ok=True)
    if out == ctx.out / name and name in EVALUATIONS:
        record_start(ctx, name, out)
    elif out.parent == ctx.out / "baselines":
        record_start(ctx, "baselines", out)
    atomic_write(out / "run.json", json.dumps({
        "policy": spec, "env": ctx.env_name, "tasks": len(tasks), "k": k, "max_steps": steps,
        "temperature": e.temperature, "max_new_tokens": e.max_new_tokens}, indent=1) + "\n")
    ctx.say(f"{name}: {len(tasks) * k} rollouts of {spec}" + (
        " (the vLLM engine starts, or takes these weights, first)" if parsed.kind == "vllm" else ""))
    try:
        result = run_evaluation(env, tasks, policy, out, settings, console=ctx.console, label=name)
    except PolicyUnusable as exc:  # a server that refuses tool calls, say: no rollout can run
        raise PipelineError(f"{name}: {exc}") from None
    failed = result.failed  # the model backend's: a rerun retries them
    broken = result.broken
    if broken:  # deterministic: kept as error rows (not scored), not retried; the stage goes on
        from rich.markup import escape

        ctx.say(f"[yellow]{name}: {len(broken)} of {len(result.rows)} rollouts ended in an error of the "
                f"{error_source(broken[0])}, not the model backend (kept, not retried; fix it and delete "
                f"{escape(str(out / 'rollouts.jsonl'))} to rerun): "
                f"{escape(str(officegym_of(broken[0]).get('error')))}[/]")
    reference = None
    if not failed:  # before metrics.json, which marks the stage done: an interrupted BFCL run resumes with it
        bfcl(ctx, name, policy, spec)
        reference = evaluate_reference_set(ctx, name, out, policy, settings.loop_config())
    policy.close()
    if failed:  # no metrics.json: the stage is not done, and a rerun retries only these rollouts
        raise PipelineError(f"{name}: {len(failed)} of {len(result.rows)} rollouts failed in the model backend "
                            f"(rerun the pipeline to retry them): {officegym_of(failed[0]).get('error')}")
    metrics = compute_metrics(result.rows, tasks, env.write_tools)
    metrics["subsets"] = subset_metrics(result.rows, tasks, env.write_tools)
    if reference is not None:
        metrics["subsets"]["reference"] = reference
    title = f"officegym pipeline, {name}: {spec}" + ("" if ctx.env_name == registry.DEFAULT_ENVIRONMENT
                                                      else f" on {ctx.env_name}")
    try:
        write_report(out, metrics, result.rows, title=title)
    except Exception as exc:  # the stage's own report is a nicety; its metrics are what the pipeline needs
        ctx.say(f"[yellow]{name}: no report ({type(exc).__name__}: {exc})[/]")
    atomic_write(out / "metrics.json", json.dumps(metrics, indent=2, default=str))
    ctx.say(f"{name}: {headline(metrics)}")
    return metrics


def evaluate_reference_set(ctx: RunContext, name: str, out: Path, policy: Any, config: Any) -> dict[str, Any] | None:
    """A model evaluation's run on NeMo Gym's example tasks (eval.reference), into OUT/reference."""
    if name not in EVALUATIONS or out != ctx.out / name or not ctx.takes_world:
        return None  # a reference set comes with the world it was written in
    from officegym.pipeline.reference_set import evaluate_reference, find_reference

    try:
        found = find_reference(ctx.cfg.eval.reference, ctx.env_name)
    except ValueError as exc:
        raise PipelineError(str(exc)) from None
    if found is None:
        if ctx.cfg.eval.reference == "auto":
            ctx.say(f"{name}: no reference examples found (set OFFICEGYM_REFERENCE to NeMo Gym's "
                    "resources_servers/workplace_assistant folder to add them)")
        return None
    metrics = evaluate_reference(ctx.env_name, found, policy, config, out / "reference")
    ctx.say(f"{name}: reference examples {metrics.get('accuracy', 0) or 0:.0%} of {metrics.get('tasks', 0)}")
    return metrics


def baselines(ctx: RunContext) -> None:
    """The baselines stage: each baseline policy on the same tasks as the models' evaluations
    (RUN/baselines/NAME)."""
    for spec in ctx.baseline_specs():
        if (ctx.baseline_dir(spec) / "metrics.json").exists():
            continue
        evaluate(ctx, f"baseline {spec}", spec, out=ctx.baseline_dir(spec))


def bfcl(ctx: RunContext, stage: str, policy: Any, label: str) -> None:
    """The config's BFCL subset for the model this stage evaluates, into RUN/bfcl_<stage>."""
    section = ctx.cfg.bfcl
    if section is None or stage not in section.stages:
        return
    from officegym.bench import bfcl_lib
    from officegym.bench.bfcl_pipeline import run_stage
    from officegym.progress import heartbeat, policy_activity, progress

    try:
        bfcl_lib.version()
    except bfcl_lib.BfclUnavailable as exc:
        raise PipelineError(f"{stage}: the bfcl section needs bfcl-eval: {exc}") from None
    ctx.say(f"{stage}: BFCL {', '.join(section.categories)}, {section.limit or 'all'} per category")
    with progress(ctx.console) as bar:
        job = bar.add_task(f"bfcl_{stage}", total=None, info="")
        with heartbeat(bar, job, lambda: policy_activity(policy)):
            scores = run_stage(policy, ctx.out / f"bfcl_{stage}", section, label, progress=lambda n: bar.advance(job, n))
    pooled = scores.get("pooled") or {}
    if pooled.get("accuracy") is not None:
        low, high = pooled["ci95"]
        ctx.say(f"{stage}: BFCL {pooled['accuracy']:.1%} [{low:.1%}, {high:.1%}] of {pooled['n']} entries")


def policy_spec(model: str, backend: str) -> str:
    """The policy spec that evaluates `model` (a path, smollm2-135m or a spec) on `backend`."""
    from officegym.agent.policies import PolicySpec

    if ":" in model or PolicySpec(model).scripted:
        return model
    return f"{backend}:{model}"
