"""One task played outside officegym's own agent loop (an MCP client, TRL's environment_factory):
its tools, a live session, the calls made in it, and the verifier's verdict on them.

The session answers each call exactly as officegym's loop would (the same `execute`, the same
text), and `submit` verifies the calls made, in order, with the environment's own verifier: the
same reward an `officegym eval` rollout making those calls gets. After `submit` the session is
closed: further calls are refused with a message, and submitting again returns the same verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from officegym.core.environment import BaseEnvironment
from officegym.core.task import Task
from officegym.core.types import ToolCall, ToolResult, ToolSpec, Verdict

SUBMITTED = "This task was already submitted; start a new session to play it again."


class TaskSession:
    """A task's live session in `env` (built by `registry.make`, in the world the task was made in)."""

    def __init__(self, env: BaseEnvironment, task: Task, mode: str | None = None):
        self.env, self.task, self.mode = env, task, mode
        self.session = env.session(task)
        self.specs: list[ToolSpec] = env.tools(task)
        self.calls: list[ToolCall] = []
        self.results: list[ToolResult] = []
        self.verdict: Verdict | None = None

    @property
    def tool_names(self) -> list[str]:
        return [s.name for s in self.specs]

    @property
    def submitted(self) -> bool:
        return self.verdict is not None

    def execute(self, name: str, arguments: Any = None) -> ToolResult:
        """Run one call (recorded for the verdict). Never raises on bad input: an unknown tool or bad
        arguments come back as an "error" result with the text the model would see."""
        if self.submitted:
            return ToolResult(SUBMITTED, "error", body=SUBMITTED)
        if arguments is None:
            arguments = {}
        call = ToolCall(str(name), arguments)
        result = self.session.execute(call.name, arguments)
        self.calls.append(call)
        self.results.append(result)
        return result

    def submit(self) -> Verdict:
        """The verdict on the calls made so far (computed once; the session is closed after it)."""
        if self.verdict is None:
            self.verdict = self.env.verify(self.task, list(self.calls), self.mode)
        return self.verdict

    def summary(self) -> dict[str, Any]:
        """The verdict as a JSON-able dict: the reward, whether it matched, and the evidence."""
        verdict = self.submit()
        return {"task_id": self.task.id, "calls": len(self.calls), **verdict.to_dict()}


def pick_task(tasks: Sequence[Task], index: int | None = None, task_id: str | None = None) -> Task:
    """The task at `index` or with id `task_id` (the first task when neither is given); a clear
    ValueError when there is none."""
    if index is not None and task_id is not None:
        raise ValueError("give an index or an id, not both")
    if not tasks:
        raise ValueError("the task file holds no tasks")
    if task_id is not None:
        for task in tasks:
            if str(task.id) == task_id:
                return task
        raise ValueError(f"no task with id {task_id!r} among the {len(tasks)} tasks")
    i = 0 if index is None else index
    if not 0 <= i < len(tasks):
        raise ValueError(f"index {i} is out of range: the file holds {len(tasks)} tasks (0..{len(tasks) - 1})")
    return tasks[i]
