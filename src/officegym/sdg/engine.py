"""The generation loop: propose from every (world, template) in turn, validate, dedup, keep.

Deterministic for a seed: each (world, template) has its own random stream and the visiting order
of every round comes from the seed, so asking for more tasks only appends to the list.
"""

from __future__ import annotations

import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from officegym.sdg.dedup import Deduper
from officegym.sdg.difficulty import difficulty
from officegym.sdg.validate import Candidate, Sandbox, validate


class TemplateError(Exception):
    """A template raised something other than "nothing to ask here" (a bug in the template)."""


class Source(Protocol):
    """Proposes candidates for one world."""

    world_id: str
    sandbox: Sandbox

    def template_ids(self) -> list[str]: ...

    def weight(self, template_id: str) -> int:
        """How many draws per round the template gets (conditional templates get more, so that
        enough do-nothing tasks come out)."""
        ...

    def can_do_nothing(self, template_id: str) -> bool:
        """Whether the template may ask to change nothing (its "change nothing" tasks have a cap
        of their own)."""
        ...

    def propose(self, template_id: str, rng: random.Random) -> Candidate | None:
        """A candidate, or None when the world offers nothing for this draw; raises TemplateError."""
        ...


@dataclass
class Accepted:
    candidate: Candidate
    reads: int
    writes: int
    difficulty: int

    @property
    def do_nothing(self) -> bool:
        """A "change nothing" task: no write because a condition fails or nothing matches. A request
        no tool serves (answered in words) is not one: it has its own template and share."""
        return self.writes == 0 and self.candidate.reply is None


@dataclass
class GenerationReport:
    accepted: list[Accepted] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)       # reason -> count
    rejected_by_template: Counter = field(default_factory=Counter)  # (template, reason) -> count
    empty_draws: Counter = field(default_factory=Counter)    # template -> draws with nothing to ask
    examples: dict[str, str] = field(default_factory=dict)   # reason -> one detail, for the card
    do_nothing: int = 0
    attempts: int = 0
    seconds: float = 0.0
    exhausted: list[str] = field(default_factory=list)       # world/template pairs that stopped yielding


def generate(sources: Sequence[Source], n: int, seed: int, patience: int = 40,
             do_nothing_max: float = 0.2, on_accept: Callable[[Accepted], None] | None = None,
             per_template_max: int | None = None, do_nothing_per_template_max: int | None = None) -> GenerationReport:
    """Up to `n` validated, unique tasks. A (world, template) pair retires after `patience` draws
    in a row that give nothing new, or once it has `per_template_max` tasks that write and, for a
    template that can ask to change nothing, `do_nothing_per_template_max` (default: as many) that
    change nothing (so that templates with many possible fills do not crowd out the rest); generation ends early when every pair has
    retired. Tasks whose right answer is to do nothing are kept to at most `do_nothing_max`."""
    report = GenerationReport()
    start = time.perf_counter()
    dedup = Deduper()
    slots = [(s, t) for s in sources for t in s.template_ids() for _ in range(max(1, s.weight(t)))]
    rngs = {(s.world_id, t): random.Random(f"{seed}/{s.world_id}/{t}") for s, t in slots}
    misses: Counter = Counter()
    kept_per: Counter = Counter()           # ((world, template), changes nothing) -> tasks kept
    full: dict[tuple[str, str], set[bool]] = defaultdict(set)
    live = list(range(len(slots)))
    retired: set[tuple[str, str]] = set()
    round_no = 0
    while live and len(report.accepted) < n:
        order = list(live)
        random.Random(f"{seed}/round/{round_no}").shuffle(order)
        round_no += 1
        for i in order:
            if len(report.accepted) >= n:
                break
            source, tid = slots[i]
            key = (source.world_id, tid)
            if key in retired:
                continue
            report.attempts += 1
            kept = _attempt(source, tid, rngs[key], dedup, report, do_nothing_max, full.get(key, ()))
            if kept is None:
                misses[key] += 1
                if misses[key] >= patience:
                    retired.add(key)
                    live = [j for j in live if (slots[j][0].world_id, slots[j][1]) not in retired]
                    report.exhausted.append(f"{source.world_id}/{tid}")
            else:
                misses[key] = 0
                kept_per[key, kept.do_nothing] += 1
                cap = (do_nothing_per_template_max or per_template_max) if kept.do_nothing else per_template_max
                if cap is not None and kept_per[key, kept.do_nothing] >= cap:
                    full[key].add(kept.do_nothing)
                    # a template that can ask to change nothing retires when both kinds are full
                    kinds = {False, True} if source.can_do_nothing(tid) else {False}
                    if full[key] >= kinds:
                        retired.add(key)
                        live = [j for j in live if (slots[j][0].world_id, slots[j][1]) not in retired]
                if on_accept:
                    on_accept(kept)
    report.seconds = time.perf_counter() - start
    return report


def _attempt(source: Source, tid: str, rng: random.Random, dedup: Deduper, report: GenerationReport,
             do_nothing_max: float, full: Collection[bool] = ()) -> Accepted | None:
    def reject(reason: str, detail: str) -> None:
        report.rejected[reason] += 1
        report.rejected_by_template[(tid, reason)] += 1
        report.examples.setdefault(reason, f"{tid}: {detail}")

    try:
        cand = source.propose(tid, rng)
    except TemplateError as exc:
        reject("template_error", str(exc))
        return None
    if cand is None:
        report.empty_draws[tid] += 1
        return None
    dup = dedup.reason(cand.template, cand.query, cand.calls)
    if dup:
        reject(dup, cand.query)
        return None
    writes = sum(source.sandbox.is_write(c.name) for c in cand.calls)
    nothing = writes == 0 and cand.reply is None  # what Accepted.do_nothing will say
    if nothing in full:
        return None  # this template has its share of tasks of this kind (per_template_max)
    if nothing and report.accepted and report.do_nothing / len(report.accepted) >= do_nothing_max:
        return None  # enough do-nothing tasks for now; not a defect, so not counted as a rejection
    problem = validate(cand, source.sandbox)
    if problem:
        reject(problem.reason, problem.detail)
        return None
    dedup.add(cand.template, cand.query, cand.calls)
    reads = len(cand.calls) - writes
    kept = Accepted(cand, reads, writes, difficulty(reads, writes, len(cand.domains), cand.conditions, cand.date_steps))
    report.accepted.append(kept)
    report.do_nothing += kept.do_nothing
    return kept
