"""A BFCL multi-turn entry's executable functions as a session: a model's call runs in bfcl-eval's
own backends (the entry's `involved_classes`, loaded with its `initial_config`, made once and alive
for the whole episode) only when it passes officegym's rules.

Calls are never evaluated as model text. bfcl-eval's executor runs call strings with `eval`, so
`render_call` builds each string from a decoded call only: the function must be one the entry
documents (bfcl-eval's executor runs any method of the entry's classes, so a function miss_func
holds back runs if called early, as in BFCL), every argument name a Python identifier, every value a JSON value
(dicts with string keys, lists, strings, finite numbers, booleans, null), written with `repr()`;
the finished string is parsed back with `ast` and must be a plain call of literals. A call that
fails these rules is answered with an error and not executed. Two arguments whose cost grows
without bound with their value (MathAPI's power exponent and its precisions) are capped.
"""

from __future__ import annotations

import ast
import keyword
import math
from typing import Any

from officegym.bench import bfcl_lib
from officegym.bench.bfcl_data import BfclCase
from officegym.core.session import BaseSession
from officegym.core.types import ToolResult

# (function, argument) -> the largest magnitude executed. BFCL's data uses precisions up to 10 and
# exponents below 10; a model asking for 10**9 digits would stall the run.
COSTLY_ARGUMENTS = {("power", "exponent"): 10_000, ("square_root", "precision"): 10_000,
                    ("logarithm", "precision"): 10_000}


class CallRefused(ValueError):
    """A decoded call that is not executed (unknown function, argument that is not a JSON value...)."""


def _check_value(value: Any, where: str) -> None:
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CallRefused(f"{where} is not a finite number")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CallRefused(f"{where} has a key that is not a string")
            _check_value(item, f"{where}[{key!r}]")
        return
    raise CallRefused(f"{where} is a {type(value).__name__}, not a JSON value")


def render_call(name: str, arguments: Any, offered: set[str]) -> str:
    """The call string bfcl-eval's executor runs, built only from a validated, decoded call."""
    try:
        return _render(name, arguments, offered)
    except RecursionError:
        raise CallRefused(f"{name}: the arguments are nested too deeply") from None


def _render(name: str, arguments: Any, offered: set[str]) -> str:
    if name not in offered or not name.isidentifier():
        raise CallRefused(f"function {name!r} is not available")
    if not isinstance(arguments, dict):
        raise CallRefused(f"the arguments of {name} are not a JSON object")
    parts = []
    for key, value in arguments.items():
        if not isinstance(key, str) or not key.isidentifier() or keyword.iskeyword(key):
            raise CallRefused(f"{name}: argument name {key!r} is not a Python identifier")
        _check_value(value, f"{name}: argument {key!r}")
        cap = COSTLY_ARGUMENTS.get((name, key))
        if cap is not None and isinstance(value, int | float) and abs(value) > cap:
            raise CallRefused(f"{name}: {key}={value!r} is over officegym's limit of {cap} for this argument")
        try:
            parts.append(f"{key}={value!r}")
        except ValueError as exc:  # an integer too long to write out
            raise CallRefused(f"{name}: argument {key!r}: {exc}") from None
    text = f"{name}({', '.join(parts)})"
    _assert_plain_call(text, name)
    return text


def _assert_plain_call(text: str, name: str) -> None:
    """Belt and braces: the string must read back as `name(k=<literal>, ...)`."""
    try:
        node = ast.parse(text, mode="eval").body
        ok = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
              and not node.args and all(k.arg is not None for k in node.keywords))
        if ok:
            for k in node.keywords:
                ast.literal_eval(k.value)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        ok = False
    if not ok:
        raise CallRefused(f"{name}: the call does not render as a plain call of literal values")


class BfclSession(BaseSession):
    """One episode's backends. `execute` answers with the backend's text (bfcl-eval's "Error during
    execution: ..." when the method raises, or officegym's when a call is refused) and keeps the
    call string of each call it ran in `executed`, the checker's input."""

    __slots__ = ("backends", "callable", "executed", "names")

    def __init__(self, case: BfclCase):
        spec = case.multi_turn
        assert spec is not None, f"{case.id} is not a multi-turn entry"
        # Every function the entry documents, the held-back ones included, as bfcl-eval's executor
        # knows every method of the entry's classes (miss_func_49's ground truth calls `tail` a
        # turn before it is shown).
        self.callable = {f["name"] for f in case.functions} | {f["name"] for docs, _ in spec.added.values()
                                                              for f in docs}
        self.names = case.names
        self.executed: list[str] = []
        self.backends = bfcl_lib.Backends(spec.entry, case.category)

    def execute(self, name: str, arguments: Any = None) -> ToolResult:
        try:
            text = render_call(self.names.original(name) or name, arguments, self.callable)
        except CallRefused as exc:
            out = f"Error during execution: {exc}"
            return ToolResult(out, "rejected", body=out)
        (out,) = self.backends.execute([text])
        self.executed.append(text)
        return ToolResult(out, "error" if out.startswith("Error during execution:") else "ok", body=out)

    def close(self) -> None:
        self.backends.close()

    async def aclose(self) -> None:
        self.close()

    def drain(self) -> list[str]:
        """The call strings run since the last drain."""
        out, self.executed = self.executed, []
        return out
