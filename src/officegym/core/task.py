"""Task: one NeMo Gym JSONL row, typed, and written back without losing anything."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from officegym.core.files import write_jsonl_rows
from officegym.core.toolcalls import ToolCallParseError, parse_tool_call
from officegym.core.types import ToolCall

# Top-level keys the Task models itself; every other key is metadata kept verbatim.
_OWN_KEYS = ("id", "responses_create_params", "ground_truth", "category", "environment_name")


class TaskFormatError(ValueError):
    """A row that cannot be a task (says which row and why)."""


@dataclass
class Task:
    """A task row: the prompt (system + user messages), tools offered, ground-truth calls, metadata.

    `params` holds `responses_create_params` apart from `input` and `tools` (temperature,
    parallel_tool_calls, ...). `metadata` holds every other top-level key (category-like fields,
    judges, `_ng_*` stamps, ...). `ground_truth_raw` is set when the row's ground truth was not a list
    (the reference accepts a string, which replays as no calls) so that it round-trips.
    """

    id: Any
    input: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    ground_truth: list[ToolCall] = field(default_factory=list)
    environment_name: str = "workplace_assistant"
    category: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    ground_truth_raw: Any = None
    _key_order: tuple[str, ...] = field(default=(), repr=False, compare=False)
    _params_order: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name") or t.get("function", {}).get("name", "") for t in self.tools]

    @property
    def user_prompt(self) -> str:
        for message in reversed(self.input):
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                return message["content"]
        return ""

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Task:
        """The task of a row, read without copying it: rows are read-only data. The Task's own
        containers (`input`, `tools`, `params`, `metadata`) are new, so replacing one of their
        items leaves the row alone; the items themselves (messages, tool schemas, metadata values,
        ground-truth arguments given as objects) are the row's, and nothing changes them in place.
        A deep copy here was most of `officegym verify`'s time per rollout (27 tool schemas a row)."""
        if not isinstance(row, dict):
            raise TaskFormatError(f"a task row must be a JSON object, got {type(row).__name__}")
        rcp = row.get("responses_create_params") or {}
        if not isinstance(rcp, dict):
            raise TaskFormatError("responses_create_params must be an object")
        raw_input = rcp.get("input", [])
        if isinstance(raw_input, str):
            messages = [{"role": "user", "content": raw_input}]
        elif isinstance(raw_input, list):
            messages = list(raw_input)
        else:
            raise TaskFormatError(f"task {row.get('id')!r}: responses_create_params.input must be a string or a list")
        tools = rcp.get("tools") or []
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            raise TaskFormatError(f"task {row.get('id')!r}: responses_create_params.tools must be a list of objects")
        gt = row.get("ground_truth", [])
        if "ground_truth" not in row and isinstance(row.get("verifier_metadata"), dict):
            # NeMo Gym's prepare.py nests the ground truth; accept both layouts.
            gt = row["verifier_metadata"].get("ground_truth", [])
        calls: list[ToolCall] = []
        gt_raw = None
        if isinstance(gt, list):
            try:
                calls = [parse_tool_call(item) for item in gt]
            except ToolCallParseError as exc:
                raise TaskFormatError(f"task {row.get('id')!r}: bad ground truth: {exc}") from exc
        else:
            gt_raw = gt
        return cls(
            id=row.get("id"),
            input=messages,
            tools=list(tools),
            ground_truth=calls,
            environment_name=row.get("environment_name", "workplace_assistant"),
            category=row.get("category"),
            params={k: v for k, v in rcp.items() if k not in ("input", "tools")},
            metadata={k: v for k, v in row.items() if k not in _OWN_KEYS},
            ground_truth_raw=gt_raw,
            _key_order=tuple(row.keys()),
            _params_order=tuple(rcp.keys()),
        )

    def to_row(self) -> dict[str, Any]:
        """The NeMo Gym row. A task read from a row gives that row back: keys keep their order and
        defaults it did not have are not added."""
        from_row = bool(self._key_order)
        rcp_values: dict[str, Any] = {"input": self.input, **self.params}
        if self.tools or not from_row or "tools" in self._params_order:
            rcp_values["tools"] = self.tools
        rcp = _ordered(rcp_values, self._params_order or ("input", "tools", "parallel_tool_calls", "temperature"))
        own: dict[str, Any] = {"id": self.id, "responses_create_params": rcp}
        gt_nested = from_row and "ground_truth" not in self._key_order and "verifier_metadata" in self.metadata
        if not gt_nested:
            own["ground_truth"] = (
                self.ground_truth_raw if self.ground_truth_raw is not None else [c.to_nemo() for c in self.ground_truth]
            )
        if self.category is not None or "category" in self._key_order:
            own["category"] = self.category
        if not from_row or "environment_name" in self._key_order or self.environment_name != "workplace_assistant":
            own["environment_name"] = self.environment_name
        return copy.deepcopy(_ordered({**self.metadata, **own}, self._key_order or _OWN_KEYS))


def _ordered(values: dict[str, Any], order: Iterable[str]) -> dict[str, Any]:
    out = {k: values[k] for k in order if k in values}
    out.update({k: v for k, v in values.items() if k not in out})
    return out


def read_tasks(path: str | os.PathLike[str]) -> list[Task]:
    """Read a JSONL file of task rows; a bad line raises TaskFormatError naming the line."""
    return list(iter_tasks(path))


def iter_tasks(path: str | os.PathLike[str]) -> Iterator[Task]:
    for lineno, row in iter_jsonl(path):
        try:
            yield Task.from_row(row)
        except TaskFormatError as exc:
            raise TaskFormatError(f"{path}:{lineno}: {exc}") from None


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFormatError(f"{path}:{lineno}: not valid JSON: {exc.msg} (column {exc.colno})") from None


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> int:
    """Write rows (Tasks or dicts) as JSONL atomically (core.files rules); returns the number of rows."""
    return write_jsonl_rows(path, (row.to_row() if isinstance(row, Task) else row for row in rows))
