"""Search patterns read as pandas' `str.contains(pattern, case=False)` reads them, at a bounded cost.

The reference compiles a model's argument as a case-insensitive `re` pattern, and `re` can take
exponential time (`^(.|.)*!` held a server's event loop for tens of seconds). Here:

- every pattern is first compiled by `re`, so a pattern the reference refuses is refused with the
  same error text;
- a pattern without repetition or alternation (none of `* + ? |` or a `{m,n}` count; what models
  send: names, words, dates) is matched by `re` itself: its cost is at most the pattern's length
  times the text's, and its answers are the reference's by construction;
- any other pattern is matched by the `regex` package (its `re`-compatible V0 mode), which guards
  against most catastrophic backtracking and takes a timeout: past `MATCH_BUDGET_S` of matching in
  one search, the tool call fails with `PatternTooSlow` (the model reads why; read-only tools, so no
  state depends on it). Braces that are no count and brackets inside a set are escaped first: `re`
  reads them as literals, `regex` as fuzzy matching (`{e<=1}`, which can also take seconds and
  hundreds of MB) and POSIX classes (`[[:alpha:]]`). What still differs: the Turkish dotted and
  dotless i under case folding, and `\\B` against an empty cell.
"""

from __future__ import annotations

import re
import time
import warnings
from functools import lru_cache
from typing import Any

import regex

# Matching time one search may spend (a column of the large world takes well under 10 ms).
MATCH_BUDGET_S = 0.25
# Longer patterns are refused before compiling: 1 MB of pattern takes `re` 1.5 s to compile.
MAX_PATTERN_CHARS = 10_000
_REPEATS_OR_ALTERNATES = re.compile(r"[*+?|]|\{\d*,?\d*\}")
_COUNT = re.compile(r"\{(?:\d+|\d*,\d*)\}")  # what re reads as a count after an item; `{}` is a literal


class PatternTooSlow(Exception):
    """A search pattern that could not be matched within its budget."""


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> tuple[Any, bool]:
    """(the compiled pattern, whether it is `regex`'s and so needs a deadline)."""
    with warnings.catch_warnings():  # a model's pattern is no warning for the server's log
        warnings.simplefilter("ignore")
        exact = re.compile(pattern, flags=re.IGNORECASE)  # the reference's errors for bad patterns
    if _REPEATS_OR_ALTERNATES.search(pattern) is None:
        return exact, False
    return regex.compile(literal_braces_and_brackets(pattern), flags=regex.IGNORECASE | regex.V0), True


def literal_braces_and_brackets(pattern: str) -> str:
    """`pattern` with every `{` that is no count, and every `[` inside a set, escaped: literals to
    `re`, which `regex` would otherwise read as fuzzy constraints or POSIX classes."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_set = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            end = i + 2
            if pattern.startswith("N{", i + 1):  # \N{NAME}: its braces are the escape's own
                close = pattern.find("}", i)
                end = n if close < 0 else close + 1
            out.append(pattern[i:end])
            i = end
            continue
        i += 1
        if in_set:
            if ch == "]":
                in_set = False
            out.append("\\[" if ch == "[" else ch)
        elif ch == "[":
            in_set = True
            out.append(ch)
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):  # a first `]` is a member, not the end
                out.append("\\]")
                i += 1
        elif ch == "{" and (count := _COUNT.match(pattern, i - 1)) is not None:
            out.append(count.group())
            i = count.end()
        else:
            out.append("\\{" if ch == "{" else ch)
    return "".join(out)


def check_pattern_length(pattern: str) -> None:
    """Refuse a pattern too long to compile quickly (PatternTooSlow), whichever engine matches it."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternTooSlow(f"the search pattern has {len(pattern)} characters; at most "
                             f"{MAX_PATTERN_CHARS} are searched")


class SearchPattern:
    """One search's pattern: `matches(text)` for each cell, all within one time budget."""

    __slots__ = ("_bounded", "_budget_s", "_deadline", "_pattern", "_rx")

    def __init__(self, pattern: str, budget_s: float | None = None):
        check_pattern_length(pattern)
        self._pattern = pattern
        self._rx, self._bounded = _compiled(pattern)
        self._budget_s = MATCH_BUDGET_S if budget_s is None else budget_s
        self._deadline = time.monotonic() + self._budget_s

    def matches(self, text: str) -> bool:
        if not self._bounded:
            return self._rx.search(text) is not None
        left = self._deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return self._rx.search(text, timeout=left) is not None
        except TimeoutError:
            shown = self._pattern if len(self._pattern) <= 80 else self._pattern[:77] + "..."
            raise PatternTooSlow(f"the search pattern {shown!r} took longer than {self._budget_s} s to "
                                 "match; search with plain text or a simpler pattern") from None


def search_pattern(pattern: Any) -> SearchPattern:
    """The pattern `str.contains(pattern, case=False)` compiles; a bad pattern raises `re.error`,
    one that is not a string raises TypeError, as pandas does."""
    if not isinstance(pattern, str):
        re.compile(pattern, flags=re.IGNORECASE)  # raises TypeError with re's message
        raise TypeError(f"first argument must be string or compiled pattern, not {type(pattern).__name__}")
    return SearchPattern(pattern)
