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


def apply_teacher(ds, base_url: str, model: str = "teacher", api_key: str | None = None, out: Path | None = None,
                  console=None, paraphrase: bool = True, trajectories: bool = True, limit: int | None = None,
                  max_steps: int = 8) -> dict[str, int]:
    """Paraphrase the dataset's queries in place and (with `out`) write kept trajectories to
    `out/teacher_trajectories.jsonl`. Returns counts of what was kept and rejected."""
    from officegym.agent.openai_compat import OpenAIPolicy

    if api_key:
        os.environ["OFFICEGYM_TEACHER_KEY"] = api_key
    policy = OpenAIPolicy(model, base_url=base_url, api_key_env="OFFICEGYM_TEACHER_KEY", max_retries=2)
    stats: Counter = Counter()
    rows = [r for split in ds.rows.values() for r in split][: limit or None]
    cand_of = {task_id(a.candidate): a.candidate for a in ds.report.accepted}

    async def main() -> list[dict] | None:
        try:  # one event loop for every request: the HTTP client belongs to it
            problem = await policy.preflight()
            if problem:
                raise TeacherError(f"teacher: {problem}")
            if paraphrase:
                await _paraphrase(policy, rows, cand_of, stats)
            if trajectories and out is not None:
                return await _trajectories(policy, ds, rows, stats, max_steps)
            return None
        finally:
            await policy.aclose()

    kept = asyncio.run(main())
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


async def _trajectories(policy, ds, rows: list[dict], stats: Counter, max_steps: int) -> list[dict]:
    from officegym.agent.loop import LoopConfig, run_rollouts
    from officegym.envs.workplace.env import WorkplaceEnvironment

    envs = {s.world_id: WorkplaceEnvironment(s.world) for s in ds.sources}
    kept: list[dict] = []
    for world_id, env in envs.items():
        tasks = []
        for row in rows:
            if row.get("world_id") != world_id:
                continue
            task = Task.from_row(row)
            task.input[0] = {**task.input[0], "content": task.input[0]["content"] + REASONING_HINT}
            tasks.append(task)
        if not tasks:
            continue
        config = LoopConfig(max_steps=max_steps, params=SamplingParams(temperature=0.3, max_new_tokens=1024))
        trajs = await run_rollouts(env, [(t, 0) for t in tasks], policy, config)
        for task, traj in zip(tasks, trajs):
            errors = [e for t in traj.turns for e in t.executions if e.status != "ok"]
            verdict = env.verify(task, traj.calls, mode="outcome")
            if traj.error or errors or verdict.reward != 1.0:
                stats["trajectory_rejected"] += 1
                continue
            stats["trajectory_kept"] += 1
            kept.append({"task_id": task.id, "world_id": world_id, "messages": traj.messages,
                         "calls": [c.to_nemo() for c in traj.calls], "teacher": policy.model})
    return kept
