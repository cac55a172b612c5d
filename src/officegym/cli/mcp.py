"""`officegym mcp`: one task's session served over MCP (stdio, or streamable HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from officegym.cli.common import console, fail, read_task_file
from officegym.cli.worlds import MISMATCH_FLAG, environment_for_tasks


def mcp(
    tasks: Annotated[Path, typer.Option("--tasks", help="Task rows (NeMo Gym JSONL).")],
    index: Annotated[int | None, typer.Option("--index", min=0, help="The task at this line (0-based; default 0).")] = None,
    task_id: Annotated[str | None, typer.Option("--id", help="The task with this id.")] = None,
    world: Annotated[Path | None, typer.Option("--world", help="World folder (default: the world the task was made "
                                               "in, else the generated world of seed 0).")] = None,
    env: Annotated[str | None, typer.Option("--env", help="Environment (default: the one the task row names).")] = None,
    mode: Annotated[str | None, typer.Option("--mode", help="Verification mode of `submit` (workplace: outcome or nemo_gym).")] = None,
    http: Annotated[int | None, typer.Option("--http", min=1, max=65535, help="Serve streamable HTTP at "
                                             "http://127.0.0.1:PORT/mcp instead of stdio.")] = None,
    allow_world_mismatch: Annotated[bool, typer.Option(MISMATCH_FLAG, help="Use --world even when the row says it was "
                                                       "made in another world.")] = False,
) -> None:
    """Serve one task over MCP: its tools, the task as a prompt and a resource, and `submit`, which
    verifies the session and returns the reward with the verifier's evidence."""
    from officegym.integrations.mcp_server import build_server, serve_http, serve_stdio, submit_name
    from officegym.integrations.task_session import TaskSession, pick_task

    try:
        task = pick_task(read_task_file(tasks), index, task_id)
    except ValueError as exc:
        fail(str(exc))
    env_name, environment, mode = environment_for_tasks(env, world, mode, [task], allow_world_mismatch)
    session = TaskSession(environment, task, mode)
    server = build_server(session, name=f"officegym-{env_name}")
    # stdout is the protocol's channel under stdio: everything said to the user goes to stderr
    where = f"http://127.0.0.1:{http}/mcp" if http else "stdio"
    console.print(f"mcp: task {task.id} ({len(session.specs)} tools + {submit_name(session)}) on {where}",
                  markup=False, soft_wrap=True)
    try:
        if http:
            serve_http(server, http)
        else:
            asyncio.run(serve_stdio(server))
    except KeyboardInterrupt:
        pass
