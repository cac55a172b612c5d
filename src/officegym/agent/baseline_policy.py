"""The scripted baselines an environment plays, as a Policy: `greedy`, `rule` and
`role-random[:SEED]` (the role environments', envs/roles/baselines.py). Each turn asks the
environment the task names for the baseline's next turn (`BaseEnvironment.baseline_turn`), so what a
baseline knows of an environment stays in that environment's package.
"""

from __future__ import annotations

from officegym.agent.loop import error_text
from officegym.core import registry
from officegym.core.environment import BaseEnvironment, EnvironmentSetupError
from officegym.core.policy import Completion, Policy, PolicyRequest, SamplingParams
from officegym.core.task import Task


class BaselinePolicy(Policy):
    """The baseline `kind` of whichever environment a request's task names; `seed` seeds a random one."""

    def __init__(self, kind: str, seed: int = 0):
        self.name = kind
        self.kind = kind
        self.seed = seed
        self._envs: dict[str, BaseEnvironment | None] = {}

    async def complete(self, requests: list[PolicyRequest], params: SamplingParams) -> list[Completion]:
        return [self._one(r) for r in requests]

    def _env(self, name: str) -> BaseEnvironment | None:
        """The environment `name`, built once, or None when it plays no such baseline (asked of its
        class, so a world-backed environment loads no world to say no)."""
        if name not in self._envs:
            try:
                plays = self.kind in registry.environment_class(name).baselines
                self._envs[name] = registry.make(name) if plays else None
            except EnvironmentSetupError:
                self._envs[name] = None
        return self._envs[name]

    def _one(self, r: PolicyRequest) -> Completion:
        """One request's turn. A bug met on one scenario (in the baseline or the scoring code it calls)
        fails that rollout alone, as the policy's error: deterministic, so a resumed eval keeps it."""
        if r.task is None:
            return Completion(text="No task.")
        try:
            env = self._env(r.task.environment_name)
            if env is None:
                return Completion(text=not_played(self.kind, r.task))
            return env.baseline_turn(self.kind, r, self.seed)
        except Exception as exc:
            return Completion(finish_reason="error", error=error_text(exc), error_source="policy")


def not_played(kind: str, task: Task) -> str:
    """What a baseline says on a task of an environment that does not play it (the words it used
    when the baselines were the role environments' alone, kept so that runs read the same)."""
    if kind == "rule":
        return f"No fixed rule for role {task.metadata.get('role')!r}."
    return f"Cannot play this task: {task.environment_name!r} is not a role environment"


def make_baseline_policy(spec: str) -> Policy:
    """`greedy`, `rule` or `role-random[:SEED]`."""
    from officegym.agent.policies import PolicySpec

    kind, arg = PolicySpec(spec).kind, PolicySpec(spec).arg
    if kind in ("greedy", "rule") and not arg:
        return BaselinePolicy(kind)
    if kind == "role-random":
        try:
            return BaselinePolicy(kind, int(arg) if arg else 0)
        except ValueError:
            raise ValueError(f"role-random:SEED needs an integer seed, got {arg!r}") from None
    raise ValueError(f"unknown baseline policy {spec!r}: use greedy, rule or role-random[:SEED]")
