"""Which prompts a GRPO step draws: uniformly, or where a group is expected to teach something.

A group whose rollouts all score the same has advantage 0 everywhere: its generation is spent and
it adds nothing to the update. After SFT a small model solves some templates nearly always and
others nearly never, and within a template some tasks nearly always and others nearly never, so
most uniformly drawn groups are such dead groups.

`VarianceCurriculum` draws a task's kind (its template, by default) with probability proportional to
the estimated share of its groups whose rewards vary: a Beta(1, 1) prior updated with every group of
that kind, the kind's old evidence decaying by `decay` at each of its new groups so the estimate
follows the policy as it learns, while a kind not drawn keeps what was learned of it (why not the
pass rate's p (1 - p), nor a decay at every group: docs/DESIGN-NOTES.md, "Groups that can teach").
A floor keeps every kind in play, so a kind the policy starts to solve is found again. Within a
kind, tasks come in a seeded shuffled order, epoch after epoch, as with TaskStream. The state
(counts, positions, the generator) is saved in checkpoints, so a resumed run draws what the
uninterrupted one would have.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from officegym.train.data import DataError, template_of


class VarianceCurriculum:
    def __init__(self, tasks: Sequence[Any], seed: int, key: Callable[[Any], str] = template_of, floor: float = 0.05,
                 decay: float = 0.95, eps: float = 1e-6):
        if not tasks:
            raise DataError("nothing to train on (no tasks)")
        if not 0 < floor <= 0.25:
            raise ValueError(f"floor must lie in (0, 0.25], got {floor}")
        if not 0 < decay <= 1:
            raise ValueError(f"decay must lie in (0, 1], got {decay}")
        self.tasks = list(tasks)
        self.seed = seed
        self.key = key
        self.floor = floor
        self.decay = decay
        self.eps = eps
        self.kinds: dict[str, list[int]] = {}
        for i, task in enumerate(self.tasks):
            self.kinds.setdefault(key(task), []).append(i)
        self.names = sorted(self.kinds)
        self.passed = dict.fromkeys(self.names, 0.0)  # rollouts that passed, of `seen` (decayed counts)
        self.seen = dict.fromkeys(self.names, 0.0)
        self.mixed = dict.fromkeys(self.names, 0.0)  # groups whose rewards varied, of `groups`
        self.groups = dict.fromkeys(self.names, 0.0)
        self.position = dict.fromkeys(self.names, 0)
        self.epoch = dict.fromkeys(self.names, 0)
        self.rng = random.Random(f"curriculum:{seed}")
        self._orders = {k: self._order(k, 0) for k in self.names}

    def _order(self, kind: str, epoch: int) -> list[int]:
        order = list(self.kinds[kind])
        random.Random(f"curriculum:{self.seed}:{kind}:{epoch}").shuffle(order)
        return order

    def pass_rate(self, kind: str) -> float:
        return (self.passed[kind] + 1.0) / (self.seen[kind] + 2.0)

    def signal_rate(self, kind: str) -> float:
        """The estimated share of the kind's groups whose rewards vary (posterior mean)."""
        return (self.mixed[kind] + 1.0) / (self.groups[kind] + 2.0)

    def weights(self) -> dict[str, float]:
        return {k: max(self.floor, self.signal_rate(k)) for k in self.names}

    def take(self, n: int) -> list[Any]:
        weights = self.weights()
        out = []
        for _ in range(n):
            kind = self.rng.choices(self.names, weights=[weights[k] for k in self.names])[0]
            if self.position[kind] >= len(self._orders[kind]):
                self.epoch[kind] += 1
                self.position[kind] = 0
                self._orders[kind] = self._order(kind, self.epoch[kind])
            out.append(self.tasks[self._orders[kind][self.position[kind]]])
            self.position[kind] += 1
        return out

    def observe(self, task: Any, rewards: Sequence[float]) -> None:
        """A group of `task` was rolled out with these rewards (>= 1 counts as a pass; rewards that
        differ by more than `eps` make a group with signal)."""
        kind = self.key(task)
        if kind not in self.seen or not rewards:
            return
        for counts in (self.passed, self.seen, self.mixed, self.groups):
            counts[kind] *= self.decay
        self.passed[kind] += sum(1.0 for r in rewards if r >= 1.0)
        self.seen[kind] += len(rewards)
        self.mixed[kind] += 1.0 if max(rewards) - min(rewards) > self.eps else 0.0
        self.groups[kind] += 1.0

    def metrics(self) -> dict[str, float]:
        """Per kind: its draw probability, and the pass rate and share of varying groups it rests on."""
        weights = self.weights()
        total = sum(weights.values())
        out = {f"curriculum/p_draw/{k}": w / total for k, w in weights.items()}
        out.update({f"curriculum/pass_rate/{k}": self.pass_rate(k) for k in self.names})
        out.update({f"curriculum/signal_rate/{k}": self.signal_rate(k) for k in self.names})
        return out

    def state_dict(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        return {"kind": "variance", "n_tasks": len(self.tasks), "passed": self.passed, "seen": self.seen,
                "mixed": self.mixed, "groups": self.groups, "position": self.position, "epoch": self.epoch,
                "rng": [version, list(internal), gauss]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "variance" or int(state.get("n_tasks", -1)) != len(self.tasks):
            raise DataError(f"the checkpoint's task stream ({state.get('kind', 'uniform')}, {state.get('n_tasks')} tasks) "
                            f"does not fit this run (variance curriculum, {len(self.tasks)} tasks)")
        self.passed = {k: float(state["passed"][k]) for k in self.names}
        self.seen = {k: float(state["seen"][k]) for k in self.names}
        # checkpoints from before the signal counts start those from the prior
        self.mixed = {k: float((state.get("mixed") or {}).get(k, 0.0)) for k in self.names}
        self.groups = {k: float((state.get("groups") or {}).get(k, 0.0)) for k in self.names}
        self.position = {k: int(state["position"][k]) for k in self.names}
        self.epoch = {k: int(state["epoch"][k]) for k in self.names}
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self._orders = {k: self._order(k, self.epoch[k]) for k in self.names}
