"""Types and protocols shared by every layer; imports nothing else of officegym."""

from officegym.core.environment import BaseEnvironment, EnvironmentSetupError, EnvironmentWrapper
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.protocols import Environment, Session
from officegym.core.registry import make, names, register
from officegym.core.session import BaseSession
from officegym.core.task import Task, TaskFormatError, read_tasks, write_jsonl
from officegym.core.toolcalls import (
    function_calls_from_output,
    parse_tool_call,
    parse_tool_calls,
    parse_workbench_call,
)
from officegym.core.trajectory import TemplateMismatchError, ToolExecution, Trajectory, Turn
from officegym.core.types import InvalidCall, TableDiff, ToolCall, ToolSpec, Verdict

__all__ = [
    "BaseEnvironment",
    "BaseSession",
    "Completion",
    "Environment",
    "EnvironmentSetupError",
    "EnvironmentWrapper",
    "InvalidCall",
    "Policy",
    "PolicyRequest",
    "SamplingParams",
    "Session",
    "TableDiff",
    "Task",
    "TaskFormatError",
    "TemplateMismatchError",
    "ToolCall",
    "ToolExecution",
    "ToolSpec",
    "Trajectory",
    "Turn",
    "Verdict",
    "function_calls_from_output",
    "make",
    "names",
    "parse_tool_call",
    "parse_tool_calls",
    "parse_workbench_call",
    "read_tasks",
    "register",
    "write_jsonl",
]
