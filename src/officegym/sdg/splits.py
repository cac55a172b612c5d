"""Train/validation/test splits, optionally holding out whole templates, worlds or wording features."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class SplitPlan:
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
    held_templates: frozenset[str] = frozenset()
    held_worlds: frozenset[str] = frozenset()
    held_wordings: frozenset[str] = frozenset()  # surface features ("frame:could_you", "typo:yes")

    def subset(self, template: str, world: str, features: Sequence[str] = ()) -> str:
        """What a task measures: "heldout_template" (its template, or world, is never trained on),
        "heldout_wording" (a surface feature of its query is never trained on) or "trained"."""
        if template in self.held_templates or world in self.held_worlds:
            return "heldout_template"
        if self.held_wordings.intersection(features):
            return "heldout_wording"
        return "trained"

    def assign(self, key: str, template: str, world: str, features: Sequence[str] = ()) -> str:
        """The split of one task. Held-out templates, worlds and wordings go to test whole; the rest
        is split by a hash of the task key, so a task keeps its split however many are generated."""
        if self.subset(template, world, features) != "trained":
            return "test"
        u = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") / 2**64
        train, validation, _ = self.fractions
        if u < train:
            return "train"
        return "validation" if u < train + validation else "test"


def make_plan(templates: Sequence[str], worlds: Sequence[str], seed: int, holdout_templates: int = 0,
              holdout_worlds: int = 0, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
              holdout_wordings: int | Sequence[str] = 0, features: Sequence[str] = ()) -> SplitPlan:
    """Held-out wordings: K features drawn from `features`, or the features named."""
    if any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"split fractions must be >= 0 and sum to 1, got {fractions}")
    if not 0 <= holdout_templates < len(templates):
        raise ValueError(f"--holdout-templates must be between 0 and {len(templates) - 1}")
    if holdout_worlds and not 0 < holdout_worlds < len(worlds):
        raise ValueError(f"--holdout-worlds needs more worlds than held out (got {len(worlds)} world(s))")
    r = random.Random(f"splits/{seed}")
    held_t = frozenset(r.sample(sorted(templates), holdout_templates))
    held_w = frozenset(r.sample(sorted(worlds), holdout_worlds)) if holdout_worlds else frozenset()
    if isinstance(holdout_wordings, int):
        if not 0 <= holdout_wordings < max(len(features), 1):
            raise ValueError(f"holdout_wordings must be between 0 and {max(len(features) - 1, 0)}")
        held_f = frozenset(r.sample(sorted(features), holdout_wordings)) if holdout_wordings else frozenset()
    else:
        unknown = sorted(set(holdout_wordings) - set(features))
        if unknown:
            raise ValueError(f"unknown wording feature(s): {', '.join(unknown)} (known: {', '.join(features)})")
        held_f = frozenset(holdout_wordings)
    return SplitPlan(fractions, held_t, held_w, held_f)
