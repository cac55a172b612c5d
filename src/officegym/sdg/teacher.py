"""An optional LLM teacher (any OpenAI-compatible server): it paraphrases queries and writes
reasoning-rich trajectories. It never decides the truth: a paraphrase is kept only if every fact of
the query (names, numbers, dates, quoted text) survives, and a trajectory only if its calls replay
without a tool error and reach exactly the state of the code-computed ground truth."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path
from typing import Any

from officegym.core.policy import PolicyRequest, SamplingParams
from officegym.core.task import Task, write_jsonl
from officegym.sdg.workplace import task_id

PARAPHRASE_PROMPT = (
    "Rewrite the following request to an office assistant in different words. Keep its meaning, and keep every "
    "name, number, date, time and quoted text exactly as written. Answer with the rewritten request only.\n\n"
    "Request: {query}"
)
REASONING_HINT = " Before each tool call, briefly explain what you are going to do and why."


class TeacherError(RuntimeError):
    """The teacher cannot be used (unreachable server, wrong model name)."""


def facts(slots: dict[str, Any]) -> list[str]:
    """The slot values a paraphrase must keep verbatim."""
    return [str(v) for v in slots.values() if isinstance(v, (str, int)) and str(v).strip()]


def keeps_facts(text: str, required: list[str]) -> bool:
    low = text.lower()
    return bool(text.strip()) and all(f.lower() in low for f in required)


KEY_VARIABLE = "OFFICEGYM_TEACHER_KEY"


def apply_teacher(ds, base_url: str, model: str = "teacher", api_key: str | None = None, out: Path | None = None,
                  console=None, paraphrase: bool = True, trajectories: bool = True, limit: int | None = None,
                  max_steps: int = 8, ray: Any = None) -> dict[str, int]:
    """Paraphrase the dataset's queries in place and (with `out`) write kept trajectories to
    `out/teacher_trajectories.jsonl`. Returns counts of what was kept and rejected. With `ray`
    (agent.ray_rollouts.RayOptions) the trajectories' episodes run on Ray actors, each with its own
    client of the teacher and the worlds' environments."""
    from officegym.agent.openai_compat import OpenAIPolicy

    if api_key:
        os.environ[KEY_VARIABLE] = api_key
    options = {"base_url": base_url, "api_key_env": KEY_VARIABLE, "max_retries": 2}
    policy = OpenAIPolicy(model, **options)
    stats: Counter = Counter()
    rows = [r for split in ds.rows.values() for r in split][: limit or None]
    cand_of = {task_id(a.candidate): a.candidate for a in ds.report.accepted}
    on_ray = ray is not None and trajectories and out is not None

    async def main() -> list[dict] | None:
        try:  # one event loop for every request: the HTTP client belongs to it
            problem = await policy.preflight()
            if problem:
                raise TeacherError(f"teacher: {problem}")
            if paraphrase:
                await _paraphrase(policy, rows, cand_of, stats)
            if trajectories and out is not None and not on_ray:
                return await _trajectories(policy, ds, rows, stats, max_steps)
            return None
        finally:
            await policy.aclose()

    kept = asyncio.run(main())
    if on_ray:
        kept = _trajectories_on_ray(f"openai:{model}", options, ray, ds, rows, stats, max_steps)
    if kept is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        write_jsonl(Path(out) / "teacher_trajectories.jsonl", kept)
    return dict(stats)


async def _paraphrase(policy, rows: list[dict], cand_of: dict, stats: Counter) -> None:
    requests = []
    for row in rows:
        query = row["responses_create_params"]["input"][-1]["content"]
        requests.append(PolicyRequest(messages=[{"role": "user", "content": PARAPHRASE_PROMPT.format(query=query)}], tools=[]))
    completions = await policy.complete(requests, SamplingParams(temperature=0.7, max_new_tokens=256))
    for row, comp in zip(rows, completions):
        cand = cand_of.get(row["id"])
        text = (comp.text or "").strip().strip('"')
        if comp.error or cand is None or not keeps_facts(text, facts(cand.slots)):
            stats["paraphrase_rejected"] += 1
            continue
        row["original_query"] = row["responses_create_params"]["input"][-1]["content"]
        row["responses_create_params"]["input"][-1]["content"] = text
        row["paraphrased_by"] = policy.model
        stats["paraphrase_kept"] += 1


def _teacher_tasks(ds, rows: list[dict]) -> list[tuple[Any, list[Task]]]:
    """(source, its tasks with the reasoning hint) per world that has rows."""
    out = []
    for source in ds.sources:
        tasks = []
        for row in rows:
            if row.get("world_id") != source.world_id:
                continue
            task = Task.from_row(row)
            task.input[0] = {**task.input[0], "content": task.input[0]["content"] + REASONING_HINT}
            tasks.append(task)
        if tasks:
            out.append((source, tasks))
    return out


def _teacher_config(max_steps: int) -> Any:
    from officegym.agent.loop import LoopConfig

    return LoopConfig(max_steps=max_steps, params=SamplingParams(temperature=0.3, max_new_tokens=1024))


def _keep(source, tasks: list[Task], trajs: list, stats: Counter, teacher: str) -> list[dict]:
    """The trajectories that called no tool in error and reach exactly the computed state."""
    from officegym.envs.workplace.env import WorkplaceEnvironment

    env = WorkplaceEnvironment(source.world)
    kept = []
    for task, traj in zip(tasks, trajs):
        errors = [e for t in traj.turns for e in t.executions if e.status != "ok"]
        verdict = env.verify(task, traj.calls, mode="outcome")
        if traj.error or errors or verdict.reward != 1.0:
            stats["trajectory_rejected"] += 1
            continue
        stats["trajectory_kept"] += 1
        kept.append({"task_id": task.id, "world_id": source.world_id, "messages": traj.messages,
                     "calls": [c.to_nemo() for c in traj.calls], "teacher": teacher})
    return kept


async def _trajectories(policy, ds, rows: list[dict], stats: Counter, max_steps: int) -> list[dict]:
    from officegym.agent.loop import run_rollouts
    from officegym.envs.workplace.env import WorkplaceEnvironment

    kept: list[dict] = []
    for source, tasks in _teacher_tasks(ds, rows):
        env = WorkplaceEnvironment(source.world)
        trajs = await run_rollouts(env, [(t, 0) for t in tasks], policy, _teacher_config(max_steps))
        kept += _keep(source, tasks, trajs, stats, policy.model)
    return kept


def _trajectories_on_ray(spec: str, options: dict[str, Any], ray: Any, ds, rows: list[dict], stats: Counter,
                         max_steps: int) -> list[dict]:
    """`_trajectories` with the episodes on Ray actors: each worker holds a client of the teacher and
    builds each world's environment from the world itself (shipped once per world with the run)."""
    from dataclasses import replace

    from officegym.agent.ray_rollouts import FleetSetupError, RayUnavailableError, RolloutFleet
    from officegym.agent.ray_workers import EnvSpec, PolicySpec, RunSetup

    if os.environ.get(KEY_VARIABLE):
        ray = replace(ray, env_vars={**ray.env_vars, KEY_VARIABLE: os.environ[KEY_VARIABLE]})
    try:
        fleet = RolloutFleet.start(PolicySpec(spec, options), ray)
    except (FleetSetupError, RayUnavailableError) as exc:
        raise TeacherError(f"teacher on Ray: {exc}") from None
    kept: list[dict] = []
    try:
        for source, tasks in _teacher_tasks(ds, rows):
            setup = RunSetup(EnvSpec("workplace", world=source.world), _teacher_config(max_steps))
            trajs = fleet.run([(t, 0) for t in tasks], setup)
            kept += _keep(source, tasks, trajs, stats, spec.partition(":")[2])
    finally:
        fleet.close()
    return kept
