"""`officegym generate world|tasks`: synthetic worlds and verified tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from officegym.cli.common import console, default_world, fail, parse_difficulty
from officegym.cli.ray_options import RayAddressOpt, RayOpt, RayWorkerCpusOpt, RayWorkersOpt, ray_options
from officegym.core import registry
from officegym.core.environment import EnvironmentSetupError
from officegym.core.inputs import input_dir, output_dir

generate_app = typer.Typer(no_args_is_help=True, help="Generate synthetic data: worlds and verified tasks.")


@generate_app.command("world")
def generate_world_command(
    seed: Annotated[int, typer.Option("--seed", help="Seed; the same seed writes byte-identical files.")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write: processed/*.csv, raw/email_addresses.csv, world.json.")],
    size: Annotated[str, typer.Option("--size", help="small | reference | large (x0.1, x1, x10 the reference's rows).")] = "reference",
    now: Annotated[str | None, typer.Option("--now", help="The world's clock 'YYYY-MM-DD[ HH:MM:SS]'; default: a seed-dependent weekday at 23:59:00.")] = None,
    company: Annotated[str | None, typer.Option("--company", help="Company name (the domain is derived from it); default: seed-dependent.")] = None,
    user: Annotated[str | None, typer.Option("--user", help="First name of the mailbox owner; default: seed-dependent.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace --out if it is not empty.")] = False,
) -> None:
    """Generate a company world from a seed and write it in NeMo Gym's csv_data layout."""
    output_dir(out, "--out")
    if not overwrite and out.is_dir() and any(out.iterdir()):
        fail(f"--out {out} is not empty: pass --overwrite to replace it with the new world")
    try:  # the environment's generator validates the options before it writes anything
        path = registry.environment_class(registry.DEFAULT_ENVIRONMENT).generate_world(
            out, seed=seed, size=size, now=now, company=company, user=user)
        made = json.loads((Path(path) / "world.json").read_text(encoding="utf-8"))
    except (ValueError, FileExistsError, OSError) as exc:  # WorldCheckError is a ValueError
        fail(str(exc))
    counts = ", ".join(f"{name} {n}" for name, n in made.get("counts", {}).items())
    console.print(f"{made['company']} ({made['domain']}), user {made['user']}, now {made['now']}: {counts}", markup=False)
    typer.echo(str(path))


@generate_app.command("tasks")
def generate_tasks_command(
    out: Annotated[Path, typer.Option("--out", help="Folder for train/validation/test JSONL, README.md (card), generation.json.")],
    n: Annotated[int, typer.Option("--n", help="How many validated, unique tasks to generate.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed; the same seed and worlds give the same tasks.")] = 0,
    world: Annotated[list[Path] | None, typer.Option("--world", help="World folder (repeat for several; default: the generated world of seed 0).")] = None,
    holdout_templates: Annotated[int, typer.Option("--holdout-templates", help="Put all tasks of K randomly chosen templates in test only.")] = 0,
    holdout_worlds: Annotated[int, typer.Option("--holdout-worlds", help="Put all tasks of K of the worlds in test only.")] = 0,
    tools: Annotated[str, typer.Option("--tools", help="Tools offered per task: all (the 27), domain (the task's domains plus the directory), or mixed (all 27 for a share --all-tools-share of the tasks, domain for the rest).")] = "all",
    all_tools_share: Annotated[float, typer.Option("--all-tools-share", min=0.0, max=1.0, help="With --tools mixed: the share of tasks offered all 27 tools.")] = 0.5,
    wordings: Annotated[str, typer.Option("--wordings", help="composed: phrasings said many ways (sentence frames, verb synonyms, quotes, name case, typos); base: each template's phrasings as written.")] = "composed",
    holdout_wordings: Annotated[int, typer.Option("--holdout-wordings", min=0, help="Hold out K surface features (e.g. frame:could_you, typo:yes): their tasks go to test only, as the held-out-wording subset.")] = 0,
    env: Annotated[str, typer.Option("--env", help="Environment: workplace_assistant (or its short name workplace), or another registered generator such as roles/cost.")] = "workplace_assistant",
    teacher: Annotated[str | None, typer.Option("--teacher", help="OpenAI-compatible base URL of an LLM that paraphrases queries and writes reasoning trajectories (kept only if they replay to the computed state).")] = None,
    teacher_model: Annotated[str, typer.Option("--teacher-model", help="Model name to ask the teacher for.")] = "teacher",
    teacher_key: Annotated[str | None, typer.Option("--teacher-key", envvar="OFFICEGYM_TEACHER_KEY", help="API key for the teacher.")] = None,
    difficulty: Annotated[str | None, typer.Option("--difficulty", help="Role environments: levels LO-HI (or one level N), integers 1-10; default 1-10.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Write into --out even if it is not empty (files of the same name are replaced).")] = False,
    hf: Annotated[Path | None, typer.Option("--hf", help="Also write the splits as a Hugging Face DatasetDict (save_to_disk) with the card into this folder; datasets.load_from_disk reads it.")] = None,
    hf_push: Annotated[str | None, typer.Option("--hf-push", help="Also push the DatasetDict and its card to this Hugging Face Hub dataset repo (private; needs network and a token).")] = None,
    ray: RayOpt = False,
    ray_address: RayAddressOpt = None,
    ray_workers: RayWorkersOpt = 2,
    ray_worker_cpus: RayWorkerCpusOpt = 1.0,
) -> None:
    """Generate verified tasks (ground truth computed and replayed) and write them as NeMo Gym JSONL with a card.
    With --teacher and --ray, the teacher's episodes run on Ray actors."""
    from officegym.progress import progress

    levels = parse_difficulty(difficulty) if difficulty is not None else None
    output_dir(out, "--out", overwrite=overwrite)
    if (ray or ray_address) and not teacher:
        fail("--ray runs the teacher's episodes on Ray: it needs --teacher")
    try:
        own_generator, sdg_worlds = registry.has_task_generator(env), registry.environment_class(env).sdg_templates
    except registry.UnknownEnvironmentError as exc:
        fail(str(exc))
    if own_generator:
        in_world = world if world and registry.takes_world(env) else None
        if in_world and len(in_world) > 1:
            fail(f"{env} generates its tasks in one world: pass one --world")
        _generate_env_tasks(env, out, n, seed, levels, in_world[0] if in_world else None)
        _export_hf(out, hf, hf_push)
        typer.echo(str(out))
        return
    if not sdg_worlds:
        fail(f"environment {env!r} has no task generator")
    if levels is not None:
        fail("--difficulty applies to the role environments (roles/*); workplace tasks get their level from the template")
    from officegym.sdg.dataset import build_dataset, write_dataset

    worlds = [input_dir(w, "world folder") for w in world] if world else [default_world(env)]
    with progress(console, with_info=False) as bar:
        job = bar.add_task("generating tasks", total=n)
        try:
            ds = build_dataset(worlds, n, seed, holdout_templates, holdout_worlds, tools,
                               on_accept=lambda _a: bar.advance(job), wordings=wordings,
                               holdout_wordings=holdout_wordings, all_tools_share=all_tools_share)
        except (ValueError, OSError) as exc:  # a WorldFormatError is a ValueError
            fail(str(exc))
    if ds.total < n:
        console.print(f"[yellow]only {ds.total} unique tasks exist in these worlds for the templates (asked for {n}); "
                      "add worlds (--world) for more[/]")
    if teacher:
        from officegym.sdg.teacher import TeacherError, apply_teacher

        on_ray = ray_options(ray, ray_address, ray_workers, ray_worker_cpus, 0, 0.0, f"openai:{teacher_model}", 64,
                             env_vars=())  # the teacher passes its own key variable
        try:
            stats = apply_teacher(ds, teacher, model=teacher_model, api_key=teacher_key, out=out, console=console,
                                  ray=on_ray)
        except TeacherError as exc:
            fail(str(exc))
        console.print(f"teacher: {stats}", markup=False)
    paths = write_dataset(ds, out)
    counts = ", ".join(f"{k} {len(v)}" for k, v in ds.rows.items())
    rejected = ", ".join(f"{r} {c}" for r, c in ds.report.rejected.most_common()) or "none"
    console.print(f"{ds.total} tasks ({counts}) in {ds.report.seconds:.1f} s; rejected: {rejected}", markup=False)
    _say_why_splits_are_empty(ds.rows)
    _export_hf(out, hf, hf_push)
    typer.echo(str(paths["card"].parent))


def _export_hf(task_dir: Path, hf: Path | None, repo: str | None) -> None:
    """The task folder as a Hugging Face DatasetDict (--hf) and on the Hub (--hf-push)."""
    if hf is None and repo is None:
        return
    from officegym.sdg.hf_export import HFExportError, push_to_hub, write_hf_dataset

    try:
        if hf is not None:
            write_hf_dataset(task_dir, hf)
            console.print(f"Hugging Face dataset: {hf} (datasets.load_from_disk)", markup=False)
    except (HFExportError, OSError) as exc:
        fail(str(exc))
    if repo is not None:
        try:
            push_to_hub(task_dir, repo)
        except HFExportError as exc:
            fail(str(exc))
        except Exception as exc:  # the Hub client's own errors (network, token, repo name): the tasks stay written
            fail(f"could not push to the Hugging Face Hub ({type(exc).__name__}: {exc}); the tasks are in {task_dir}")
        console.print(f"pushed to the Hugging Face Hub: {repo}", markup=False)


def _say_why_splits_are_empty(rows: dict[str, list], templates: bool = True) -> None:
    """An empty validation or test file is written all the same (a pipeline expects the three);
    say why it is empty and how to fill it, rather than leave an evaluation to find it."""
    total = sum(len(v) for v in rows.values())
    empty = [s for s in ("validation", "test") if total and not rows.get(s)]
    if not empty:
        return
    hint = ", or hold out templates for test (--holdout-templates K)" if templates and "test" in empty else ""
    console.print(f"[yellow]{' and '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty: about one task in ten "
                  f"goes to each (drawn per task), and {total} tasks drew none; ask for more (--n 100 gives about "
                  f"10 each){hint}[/]", soft_wrap=True)


def _generate_env_tasks(env: str, out: Path, n: int, seed: int, difficulty: tuple[int, int] | None = None,
                        world: Path | None = None) -> None:
    """Tasks of an environment with its own generator (sdg.env_tasks), split by task id; `world` for
    one that takes a world (its default world without one)."""
    from officegym.sdg.env_tasks import generate_env_tasks, write_env_tasks

    if n < 1:
        fail("--n must be at least 1")
    try:
        made = registry.make(env, world=input_dir(world, "world folder") if world is not None else None)
    except EnvironmentSetupError as exc:
        fail(str(exc))
    if not made.has_task_generator:
        fail(f"environment {env!r} has no task generator")
    try:
        task_set = generate_env_tasks(made, n, seed, difficulty, name=registry.canonical_name(env))
    except (ValueError, TypeError) as exc:
        fail(f"{env}: {exc}")
    write_env_tasks(task_set, out)
    console.print(f"{task_set.total} {env} tasks in {task_set.seconds:.2f} s: "
                  + ", ".join(f"{k} {len(v)}" for k, v in task_set.rows.items()))
    _say_why_splits_are_empty(task_set.rows, templates=False)
