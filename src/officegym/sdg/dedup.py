"""Duplicate detection: by normalised query and by (template, ground truth)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from officegym.core.types import ToolCall

_PUNCT = re.compile(r"[^\w\s]")
_SPACE = re.compile(r"\s+")


def normalise_query(text: str) -> str:
    """Lower case, punctuation dropped, whitespace collapsed: "Delete my last email!" == "delete my last email"."""
    return _SPACE.sub(" ", _PUNCT.sub(" ", text.lower())).strip()


def calls_key(calls: Sequence[ToolCall]) -> str:
    return json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True, ensure_ascii=False)


class Deduper:
    """Remembers what was accepted; `reason(template, query, calls)` says why a new one is a duplicate."""

    def __init__(self) -> None:
        self.queries: set[str] = set()
        self.truths: set[tuple[str, str]] = set()

    def reason(self, template: str, query: str, calls: Sequence[ToolCall]) -> str | None:
        if normalise_query(query) in self.queries:
            return "duplicate_query"
        # an empty ground truth (a request answered in words) says nothing about the task: only
        # its query can repeat
        if calls and (template, calls_key(calls)) in self.truths:
            return "duplicate_ground_truth"
        return None

    def add(self, template: str, query: str, calls: Sequence[ToolCall]) -> None:
        self.queries.add(normalise_query(query))
        self.truths.add((template, calls_key(calls)))
