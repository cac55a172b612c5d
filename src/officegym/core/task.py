"""Task: one NeMo Gym JSONL row, typed, and written back without losing anything."""

from __future__ import annotations

import copy
import json
import os
import secrets
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

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
        rcp, raw_input, tools = task_parts(row)
        messages = [{"role": "user", "content": raw_input}] if isinstance(raw_input, str) else list(raw_input)
        calls, gt_raw = ground_truth_of(row)
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
    """(line number, value) of every non-blank line; the rows share their repeated tool lists
    (RowDecoder). A line that is not JSON raises TaskFormatError naming it."""
    decoder = RowDecoder()
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.isspace():  # (not strip(): that copies every 19 KB line)
                continue
            try:
                value = decoder.loads(line)
            except (ValueError, RecursionError) as exc:
                raise TaskFormatError(f"{path}:{lineno}: {json_problem(exc)}") from None
            yield lineno, value


def json_problem(exc: ValueError | RecursionError) -> str:
    """Why a line's JSON could not be read, in words (json's own error, or a limit of Python's)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply to read (arrays and objects within each other)"
    if "digits" in str(exc):  # Python's limit on converting long integer strings
        return f"JSON holds an integer longer than Python reads ({sys.get_int_max_str_digits()} digits at most)"
    return f"not valid JSON: {exc}"


class RowDecoder:
    """`json.loads` for the rows of one file, decoding a tool list that repeats from row to row once.

    Most of a NeMo Gym row is its tool schemas (a workplace row offering the 27 tools: ~15 KB of
    ~19 KB), the same text in every row of a file, and decoding them was ~95% of decoding the row.
    So the text of the last few `responses_create_params.tools` decoded is kept with its value; a line
    holding one of those texts is decoded with a placeholder string in its place and, when the
    placeholder comes back as the row's tool list, gets the value decoded before: the rows share one
    list (rows are read-only data). Anything else is decoded whole, so the result is always what
    `json.loads(line)` gives.

    Why the shortcut is exact: the line before the known text T is the same in both versions, so
    the JSON decoder is in the same state where T (or the placeholder) starts. The placeholder is a
    plain string holding a random token that the rest of the line does not hold; decoding it as the
    row's tool list means a value starts there, and T, the text of a whole JSON value, then ends
    exactly where the placeholder ends. The rest of the line decodes alike: the row is
    json.loads(line).
    """

    KEEP = 8  # tool lists remembered (a file offering each task its domains' tools has a handful)
    MIN_CHARS = 512  # shorter lists cost less to decode than to look for
    GIVE_UP = 16  # stop learning after this many tool lists in a row whose text was not found

    def __init__(self) -> None:
        self._token = "officegym-shared-tools-" + secrets.token_hex(16)
        self._placeholder = json.dumps(self._token)
        self._known: list[tuple[str, Any]] = []  # (text, value), most recently used first
        self._misses = 0

    def loads(self, line: str) -> Any:
        if self._misses >= self.GIVE_UP:  # this file's rows do not fit the shortcut
            return loads(line)
        for i, (text, value) in enumerate(self._known):
            at = _find(line, text)
            if at < 0:
                continue
            row = self._with_known(line, at, text, value)
            if row is not None:
                self._known.insert(0, self._known.pop(i))
                self._misses = 0
                return row
            break  # the text stands elsewhere in this row (or the line is damaged): decode it whole
        row = loads(line)
        self._learn(line, row)
        return row

    def _with_known(self, line: str, at: int, text: str, value: Any) -> Any:
        """The row with `value` as its tool list when `text` at `at` is that list, else None."""
        short = line[:at] + self._placeholder + line[at + len(text):]
        if short.count(self._token) != 1:  # the rest of the line holds the token too
            return None
        try:
            row = loads(short)
        except (ValueError, RecursionError):
            return None
        rcp = row.get("responses_create_params") if isinstance(row, dict) else None
        if not isinstance(rcp, dict) or rcp.get("tools") != self._token:
            return None
        rcp["tools"] = value
        return row

    def _learn(self, line: str, row: Any) -> None:
        rcp = row.get("responses_create_params") if isinstance(row, dict) else None
        tools = rcp.get("tools") if isinstance(rcp, dict) else None
        if not isinstance(tools, list) or not tools or not isinstance(tools[0], dict):
            return
        try:  # the writers we know: json.dumps with its default separators, ASCII or not
            texts = {json.dumps(tools, ensure_ascii=False), json.dumps(tools)}
        except (ValueError, RecursionError):  # nested deeper than json.dumps goes
            return
        for text in texts:
            if len(text) >= self.MIN_CHARS and text in line:
                if all(text != known for known, _ in self._known):
                    self._known.insert(0, (text, tools))
                    del self._known[self.KEEP:]
                    self._misses = 0
                return
        self._misses += 1


_msgspec_decode = msgspec.json.Decoder().decode
_MsgspecError = msgspec.DecodeError


def task_parts(row: Any) -> tuple[dict[str, Any], Any, list[Any]]:
    """A task row's responses_create_params, its input (a string or a list) and its tools, checked:
    TaskFormatError says what is wrong."""
    if not isinstance(row, dict):
        raise TaskFormatError(f"a task row must be a JSON object, got {type(row).__name__}")
    rcp = row.get("responses_create_params") or {}
    if not isinstance(rcp, dict):
        raise TaskFormatError("responses_create_params must be an object")
    raw_input = rcp.get("input", [])
    if not isinstance(raw_input, str | list):
        raise TaskFormatError(f"task {row.get('id')!r}: responses_create_params.input must be a string or a list")
    tools = rcp.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise TaskFormatError(f"task {row.get('id')!r}: responses_create_params.tools must be a list of objects")
    return rcp, raw_input, tools


def ground_truth_of(row: dict[str, Any]) -> tuple[list[ToolCall], Any]:
    """A task row's ground-truth calls, and the raw value when it is not a list (then no calls).
    NeMo Gym's prepare.py nests it under verifier_metadata; both layouts are read."""
    gt = row.get("ground_truth", [])
    if "ground_truth" not in row and isinstance(row.get("verifier_metadata"), dict):
        gt = row["verifier_metadata"].get("ground_truth", [])
    if not isinstance(gt, list):
        return [], gt
    try:
        return [parse_tool_call(item) for item in gt], None
    except ToolCallParseError as exc:
        raise TaskFormatError(f"task {row.get('id')!r}: bad ground truth: {exc}") from exc


def loads(text: str) -> Any:
    """`json.loads(text)`, by msgspec's decoder where it can (1.5-2.5x faster on a row). Where msgspec
    refuses what json accepts (NaN, Infinity, numbers past the float range, lone surrogates), json
    decodes it, so the value, or the JSONDecodeError, is always json's."""
    try:
        return _msgspec_decode(text)
    except _MsgspecError:
        return json.loads(text)


def _find(line: str, text: str) -> int:
    """line.find(text) for a long text: look for its start, then compare (3x faster for a 15 KB list)."""
    head = text[:64]
    at = line.find(head)
    while at >= 0 and not line.startswith(text, at):
        at = line.find(head, at + 1)
    return at


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> int:
    """Write rows (Tasks or dicts) as JSONL atomically (core.files rules); returns the number of rows."""
    return write_jsonl_rows(path, (row.to_row() if isinstance(row, Task) else row for row in rows))
