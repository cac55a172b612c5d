"""Task templates: a query with several phrasings and a function that computes the ground truth.

A template function gets a WorldView and a seeded Random and returns a Plan (the phrasing slots,
the ground-truth calls: the reads that reveal every id, then the writes) or None when this world
offers nothing to ask about. It never guesses: every id and value comes from the view.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from officegym.core.types import ToolCall
from officegym.envs.workplace.tasks.view import WorldView

DOMAINS = ("email", "calendar", "analytics", "project_management", "customer_relationship_manager")

# A trigger re-decides a conditional task's condition from tool outputs alone: `probe(name, args)`
# runs a read tool in a fresh session and returns its parsed output.
Probe = Callable[[str, dict[str, Any]], Any]
Trigger = Callable[[Probe], bool]


class NoTask(Exception):
    """This world has nothing for the template to ask about (raised by helpers, caught by the engine)."""


@dataclass
class Plan:
    slots: dict[str, Any]
    calls: list[ToolCall]
    conditions: int = 0          # how many conditions the agent must evaluate
    date_steps: int = 0          # date arithmetic the agent must do ("next Tuesday", "two weeks ago")
    trigger: Trigger | None = None   # for conditional tasks: the condition, decided through tools
    trigger_expected: bool | None = None  # what the trigger must say in this world
    tempting: list[ToolCall] = field(default_factory=list)  # the write a do-nothing task must NOT do
    phrasing: int | None = None  # force a phrasing (e.g. one that fits the date form chosen)
    reply: str | None = None  # a request no tool serves: answer with this text and call nothing


@dataclass(frozen=True)
class Template:
    id: str
    category: str  # one of DOMAINS or "multi_domain"
    domains: tuple[str, ...]
    phrasings: tuple[str, ...]
    build: Callable[[WorldView, random.Random], Plan | None]
    can_do_nothing: bool = False  # has a branch whose right answer is to change nothing

    def __post_init__(self):
        if len(self.phrasings) < 3:
            raise ValueError(f"template {self.id}: at least three phrasings are needed")


TEMPLATES: dict[str, Template] = {}


def template(tid: str, domains: str | tuple[str, ...], phrasings: tuple[str, ...], can_do_nothing: bool = False):
    """Register a template function under `tid` (e.g. "email.reply_last_from")."""
    doms = (domains,) if isinstance(domains, str) else tuple(domains)

    def wrap(fn):
        if tid in TEMPLATES:
            raise ValueError(f"duplicate template id {tid}")
        category = doms[0] if len(doms) == 1 else "multi_domain"
        TEMPLATES[tid] = Template(tid, category, doms, tuple(phrasings), fn, can_do_nothing)
        return fn

    return wrap


# -- ground-truth call builders ----------------------------------------------------------------

def call(tool: str, /, **arguments: Any) -> ToolCall:
    arguments = {k: v for k, v in arguments.items() if v is not None}
    return ToolCall(name=tool, arguments=arguments, raw_arguments=json.dumps(arguments))


def find(first: str) -> ToolCall:
    return call("company_directory_find_email_address", name=first)


def pick(r: random.Random, items, k: int | None = None):
    items = list(items)
    if not items:
        raise NoTask
    if k is None:
        return r.choice(items)
    if len(items) < k:
        raise NoTask
    return r.sample(items, k)


def need(condition: bool) -> None:
    if not condition:
        raise NoTask
