"""What every role environment shares: scenarios, the session, task rows and the verdict.

A role environment is a seeded scenario generator plus read tools plus one final-answer tool (or
`escalate`). The optimum or the labels are computed when the scenario is generated, so `verify`
only recomputes the answer's own figures and compares. Where a role has a calculator tool, the
ground truth calls it on the chosen plan before answering and claims exactly what it returned. Tasks carry the scenario's seed and
difficulty in their metadata; `verify` and `session` rebuild the scenario from them (cached).
"""

from __future__ import annotations

import hashlib
import json
import marshal
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from officegym.core.environment import BaseEnvironment
from officegym.core.policy import Completion, PolicyRequest
from officegym.core.session import BaseSession
from officegym.core.task import Task
from officegym.core.types import InvalidCall, ToolCall, ToolResult, ToolSpec, Verdict
from officegym.envs.roles.prose import (
    SUBSETS,
    TRAINED,
    CalculatorError,
    calculate,
    read_document,
    subset_of_id,
)
from officegym.envs.roles.scenario_utils import INFEASIBLE_SHARE, scenario_seed
from officegym.envs.roles.schema import schema_error

GENERATOR_VERSION = 1
MODE = "exact"
ESCALATE = "escalate"
# A claimed figure matches the recomputed one within 0.5 % (or half a unit for small values).
CLAIM_RELATIVE = 0.005
CLAIM_ABSOLUTE = 0.5
# The scripted baselines every role plays (policy specs greedy, role-random[:SEED], rule): baselines.py.
BASELINES = ("greedy", "role-random", "rule")


class ScenarioError(ValueError):
    """A task whose metadata does not name a scenario of this environment."""


class ToolRefusal(Exception):
    """A read tool's own refusal (unknown id, ...): the model sees the message."""


def read_tool(s: Scenario, a: dict[str, Any], of: str = "brief") -> str:
    """What read_document answers: the document's text, or a refusal naming the ones there are."""
    text = read_document(s.public["documents"], a["doc_id"])
    if text is None:
        known = ", ".join(s.public["documents"]) or "none"
        raise ToolRefusal(f"no document {str(a['doc_id'])[:60]!r}; documents of this {of}: {known}")
    return text


def calculate_tool(s: Scenario, a: dict[str, Any]) -> Any:
    """What calculate answers: the expression's value, or the calculator's refusal."""
    try:
        return calculate(a["expression"])
    except CalculatorError as exc:
        raise ToolRefusal(str(exc)) from None


@dataclass(frozen=True)
class Scenario:
    """One generated instance. `public` is what the agent may see (inline or through tools);
    `private` holds the optimum, labels and the reason an infeasible scenario is infeasible."""

    role: str
    seed: int
    difficulty: int
    infeasible: bool
    inline: bool
    public: dict[str, Any]
    private: dict[str, Any]
    brief: str
    lookups: tuple[ToolCall, ...]
    answer: ToolCall
    template: str = ""
    content: dict[str, Any] | None = None  # what the dedup hash covers when it is more than `public`
    # Calculator calls on the answer's own plan, made after the lookups: the answer claims exactly the
    # figures they return, so the oracle's trajectory shows where every claimed figure comes from
    # (a model imitating it copies a number instead of doing the arithmetic itself).
    checks: tuple[ToolCall, ...] = ()
    # A worded role's brief: the pool its forms came from (trained or heldout_wording) and the
    # surface features drawn ("budget:3", "latency_style:seconds"); empty for the structured roles.
    subset: str = ""
    wording: tuple[str, ...] = ()

    @property
    def ground_truth(self) -> list[ToolCall]:
        return [*self.lookups, *self.checks, self.answer]


@dataclass
class Grade:
    """A judged answer: the reward, whether it is fully right, a failure label, components, and
    sentences a human reads to see why."""

    reward: float
    matched: bool
    label: str
    components: dict[str, float] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)


def claim_matches(claimed: float, actual: float, absolute: float = CLAIM_ABSOLUTE) -> bool:
    """Whether a figure the answer claims agrees with the recomputed one (0.5 % or `absolute`)."""
    return abs(claimed - actual) <= max(absolute, CLAIM_RELATIVE * abs(actual))


def tidy(x: float) -> float | int:
    """A whole float as an int (ground-truth claims read as the figures a person would write)."""
    return int(x) if isinstance(x, float) and x.is_integer() else x


def canonical_hash(public: dict[str, Any]) -> str:
    """Dedup key of the public facts. The generators build them in a fixed order, so equal facts give
    equal bytes; marshal (format 2, whose bytes do not depend on object sharing) is several times
    faster than sorted JSON."""
    return hashlib.sha1(marshal.dumps(public, 2)).hexdigest()[:16]  # version 2: no back-references


def tool(name: str, description: str, properties: dict[str, Any] | None = None,
         required: Sequence[str] = ()) -> ToolSpec:
    return ToolSpec(name, description, {
        "type": "object", "properties": properties or {}, "required": list(required), "additionalProperties": False,
    })


ESCALATE_SPEC = tool(
    ESCALATE,
    "Escalate to a human instead of answering: use it only when no answer can satisfy every hard requirement. "
    "This ends the episode.",
    {"reason": {"type": "string", "description": "Which requirement cannot be met, and why."}},
    ["reason"],
)


def escalation_grade(scenario: Scenario, answer: ToolCall) -> Grade | None:
    """The grade when escalation decides the case (escalated, or should have); None otherwise."""
    why = scenario.private.get("why_infeasible", "")
    if answer.name == ESCALATE:
        if scenario.infeasible:
            return Grade(1.0, True, "correct_escalation", {"escalation_correct": 1.0}, [f"correctly escalated: {why}"])
        best = scenario.private.get("optimum_note", "a feasible answer exists")
        return Grade(0.0, False, "wrong_escalation", {"escalation_correct": 0.0},
                     [f"escalated, but the scenario is feasible: {best}"])
    if scenario.infeasible:
        return Grade(0.0, False, "missed_escalation", {"escalation_correct": 0.0},
                     [f"answered, but no answer satisfies every requirement ({why}): the right answer was to escalate"])
    return None


def optimality_reward(feasible: bool, ratio: float, optimal: bool) -> float:
    """The shared scalar of section 3.2: feasible x (0.5 [optimal] + 0.5 ratio)."""
    return (0.5 * optimal + 0.5 * max(0.0, min(1.0, ratio))) if feasible else 0.0


class RoleSession(BaseSession):
    """One episode over a scenario. Read tools answer from the scenario; the first valid answer
    call is final and later ones are refused. Never raises on model input."""

    def __init__(self, env: RoleEnvironment, scenario: Scenario | None, specs: Sequence[ToolSpec],
                 problem: str | None = None):
        self.env = env
        self.scenario = scenario
        self.specs = {s.name: s for s in specs}
        self.problem = problem
        self.answer: ToolCall | None = None
        self.extra_answers = 0

    def execute(self, name: Any, arguments: Any = None) -> ToolResult:
        if self.scenario is None:
            return ToolResult(self.problem or "this session has no scenario: open it with a task", "error")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError) as exc:
                return ToolResult(f"arguments are not valid JSON: {exc}", "error")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return ToolResult("arguments must be a JSON object", "error")
        spec = self.specs.get(name) if isinstance(name, str) else None
        if spec is None:
            return ToolResult(f"unknown tool {str(name)!r}; available: {', '.join(self.specs)}", "error")
        error = schema_error(arguments, spec.parameters)
        if error:
            return ToolResult(f"{name}: {error}", "error")
        if name in self.env.answer_tools:
            if self.answer is not None:
                self.extra_answers += 1
                return ToolResult("an answer was already submitted; the first answer is final", "rejected")
            self.answer = ToolCall(name, arguments)
            return ToolResult("Answer recorded. The episode is over: reply without calling a tool.")
        reader = self.env.readers().get(name)
        if reader is None:
            return ToolResult(f"tool {name!r} is not available here", "error")
        try:
            return ToolResult(reader(self.scenario, arguments))
        except ToolRefusal as exc:
            return ToolResult(str(exc), "rejected")

    def call(self, name: str, arguments: Any = None) -> str:
        return self.execute(name, arguments).text

    def replay(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        out = []
        for c in calls:
            if c.parse_error is not None:
                out.append(ToolResult(c.parse_error, "error"))
            else:
                out.append(self.execute(c.name, c.arguments))
        return out


class RoleEnvironment(BaseEnvironment):
    """The Environment protocol for one role; subclasses supply the generator, tools and grader."""

    role: ClassVar[str] = ""
    name: ClassVar[str] = ""
    answer_tools: ClassVar[tuple[str, ...]] = ()
    modes: ClassVar[tuple[str, ...]] = (MODE,)
    mode = MODE
    # A session is built from the task row (the HTTP server's seed_session passes it on).
    session_from_row: ClassVar[bool] = True
    # Whether the brief is prose drawn from surface forms, some held out (prose.py): the generator
    # then takes the wording subset as a third argument, and task rows carry `subset`.
    worded: ClassVar[bool] = False
    baselines: ClassVar[tuple[str, ...]] = BASELINES

    def __init__(self, mode: str | None = None) -> None:
        """Scenarios come from the task rows: a role environment takes no world."""
        if mode is not None and mode not in self.modes:
            raise ValueError(f"unknown verification mode {mode!r} for {self.name}; choose from {', '.join(self.modes)}")
        self._spec_cache: dict[int, tuple[list[dict[str, Any]], list[ToolSpec]]] = {}
        self._schemas: dict[int, list[dict[str, Any]]] = {}

    # -- what a role supplies: its module's generator, tools, readers, prompt and grader
    generator: ClassVar[Callable[[int, int], Scenario]]
    # Bumped by a role whose generator changes what a (seed, difficulty) builds: task files of the old
    # version are refused instead of being graded against a different scenario.
    generator_version: ClassVar[int] = GENERATOR_VERSION
    specs: ClassVar[tuple[ToolSpec, ...]] = ()
    reader_table: ClassVar[dict[str, Callable[[Scenario, dict[str, Any]], Any]]] = {}
    system_template: ClassVar[str] = ""  # may use {submit} and {escalate}: the two answer tools
    grader: ClassVar[Callable[[Scenario, ToolCall], Grade]]

    def build(self, seed: int, difficulty: int, subset: str = TRAINED) -> Scenario:
        """The scenario of (seed, difficulty) in the wording pool `subset`; deterministic and
        cached by the role module."""
        if self.worded:
            return self.generator(seed, difficulty, subset)  # type: ignore[call-arg]
        return self.generator(seed, difficulty)

    def tool_specs(self, difficulty: int | None = None) -> list[ToolSpec]:
        """The tools offered at a difficulty level (None: every tool of the role)."""
        return list(self.specs)

    def readers(self) -> dict[str, Callable[[Scenario, dict[str, Any]], Any]]:
        return self.reader_table

    def system_prompt(self, scenario: Scenario) -> str:
        submit, escalate = self.answer_tools
        return self.system_template.format(submit=submit, escalate=escalate)

    def grade(self, scenario: Scenario, answer: ToolCall) -> Grade:
        return self.grader(scenario, answer)

    def oracle_turns(self, scenario: Scenario) -> list[int]:
        """How many ground-truth calls go in each turn when replayed turn by turn: the lookups, the
        calculator checks on the chosen plan, then the answer (so that every lookup's output is seen
        before the plan is chosen, and every check's output before the answer copies its figures)."""
        return [len(part) for part in (scenario.lookups, scenario.checks) if part] + [1]

    def make_session(self, scenario: Scenario | None, specs: Sequence[ToolSpec], problem: str | None = None) -> RoleSession:
        """The session class; a role whose tools keep state (the council) returns its own."""
        return RoleSession(self, scenario, specs, problem)

    def grade_session(self, session: RoleSession) -> Grade:
        """Judge a finished session: by default its first valid answer alone."""
        assert session.scenario is not None and session.answer is not None
        return self.grade(session.scenario, session.answer)

    def baseline_turn(self, kind: str, request: PolicyRequest, seed: int = 0) -> Completion:
        """The next turn of the baseline `kind` (greedy, role-random, rule): baselines.py."""
        from officegym.envs.roles.baselines import baseline_turn  # it imports the role modules

        return baseline_turn(self, kind, request, seed)

    def review_findings(self, task: Task, verdict: dict[str, Any], calls: Sequence[tuple[ToolCall, str | None]],
                        bands: Mapping[str, tuple[float, float]], acts: Sequence[Any] | None = None) -> list[tuple[str, str]]:
        """Escalations, low margins and an answer without reads (review_rules.py)."""
        from officegym.envs.roles import review_rules  # it imports this module

        return review_rules.rollout_findings(task, verdict, calls, self.graded_answers, bands)

    def decision_key(self, calls: Sequence[tuple[ToolCall, str | None]]) -> str | None:
        """The judged answer's decision, free text and claimed figures left out (review_rules.py)."""
        from officegym.envs.roles import review_rules

        return review_rules.decision_key(calls, self.graded_answers)

    # -- shared behaviour

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The answer tools: the only calls that change the outcome (for the shaped reward); a class
        # attribute, so callers can ask the registry without building the environment.
        cls.write_tools = cls.graded_answers = frozenset(cls.answer_tools)

    def generate_tasks(self, n: int, seed: int, *, difficulty: tuple[int, int] | None = None) -> list[Task]:
        """`n` tasks from `seed`; each draws a difficulty in `difficulty` (default 1-10) and a
        scenario seed. The same arguments give the same tasks, and a shorter list is a prefix. A
        worded role writes a task in held-out forms when its id hashes into the tail that the
        split assignment sends to test (prose.HELDOUT_SHARE)."""
        lo, hi = difficulty if difficulty is not None else (1, 10)
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi)) or not (1 <= lo <= hi <= 10):
            raise ValueError(f"difficulty must be a range within 1..10, got {difficulty!r}")
        rng = random.Random(seed)
        phase = rng.random()
        tasks = []
        for i in range(n):
            level = rng.randint(lo, hi)
            # evenly spread: task i is infeasible when (i + phase) x share crosses an integer
            infeasible = math.floor((i + 1) * INFEASIBLE_SHARE + phase) > math.floor(i * INFEASIBLE_SHARE + phase)
            task_id = f"{self.role}-{seed}-{i:05d}"
            subset = subset_of_id(task_id) if self.worded else TRAINED
            scenario = self.build(scenario_seed(rng, infeasible), level, subset)
            tasks.append(self.task_from_scenario(scenario, task_id))
        return tasks

    def task_from_scenario(self, scenario: Scenario, task_id: Any) -> Task:
        gt = scenario.ground_truth
        task = Task(
            id=task_id,
            input=[{"role": "system", "content": self.system_prompt(scenario)},
                   {"role": "user", "content": scenario.brief}],
            tools=self._schema_list(scenario.difficulty),
            ground_truth=gt,
            environment_name=self.name,
            category=f"roles_{self.role}",
            params={"parallel_tool_calls": True, "temperature": 1.0},
            metadata={
                "role": self.role,
                "difficulty": scenario.difficulty,
                "template": scenario.template,
                "infeasible": scenario.infeasible,
                "optimal_steps": len(gt),
                "oracle_turns": self.oracle_turns(scenario),
                "scenario": {"seed": scenario.seed, "difficulty": scenario.difficulty, "version": self.generator_version},
                "scenario_hash": canonical_hash(scenario.content if scenario.content is not None else scenario.public),
            },
        )
        if self.worded:
            task.metadata["scenario"]["subset"] = scenario.subset
            task.metadata["subset"] = scenario.subset  # what eval's subsets read
            task.metadata["wording_features"] = list(scenario.wording)
        return task

    def _schema_list(self, difficulty: int) -> list[dict[str, Any]]:
        # One shared list per level: rows stay cheap and tools(task) can cache by identity.
        cached = self._schemas.get(difficulty)
        if cached is None:
            cached = self._schemas[difficulty] = [s.to_schema() for s in self.tool_specs(difficulty)]
        return cached

    def scenario(self, task: Task) -> Scenario:
        meta = task.metadata.get("scenario")
        if not isinstance(meta, dict):
            raise ScenarioError(f"task {task.id!r} has no scenario metadata (seed, difficulty) for {self.name}")
        seed, level, version = meta.get("seed"), meta.get("difficulty"), meta.get("version", self.generator_version)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ScenarioError(f"task {task.id!r}: scenario seed must be a non-negative integer, got {seed!r}")
        if not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= 10:
            raise ScenarioError(f"task {task.id!r}: scenario difficulty must be 1..10, got {level!r}")
        if task.metadata.get("role", self.role) != self.role:
            raise ScenarioError(f"task {task.id!r} is a {task.metadata.get('role')!r} task, not {self.role!r}")
        if version != self.generator_version:
            raise ScenarioError(f"task {task.id!r} was generated by version {version!r} of the {self.name} generator; "
                                f"this is version {self.generator_version}: regenerate the tasks")
        subset = meta.get("subset", TRAINED)
        if subset not in SUBSETS:
            raise ScenarioError(f"task {task.id!r}: scenario subset must be one of {', '.join(SUBSETS)}, got {subset!r}")
        return self.build(seed, level, subset)

    def tools(self, task: Task | None = None) -> list[ToolSpec]:
        if task is not None and task.tools:
            cached = self._spec_cache.get(id(task.tools))
            if cached is None or cached[0] is not task.tools:
                if len(self._spec_cache) > 4096:
                    self._spec_cache.clear()
                cached = (task.tools, [ToolSpec.from_schema(t) for t in task.tools])
                self._spec_cache[id(task.tools)] = cached
            return list(cached[1])
        return self.tool_specs(None)

    def session(self, task: Task | None = None) -> RoleSession:
        if task is None:
            return self.make_session(None, self.tool_specs(None), f"{self.name} sessions need the task row")
        try:
            scenario = self.scenario(task)
        except ScenarioError as exc:
            return self.make_session(None, self.tools(task), str(exc))
        return self.make_session(scenario, self.tools(task))

    def verify(self, task: Task, calls: Sequence[ToolCall], mode: str | None = None) -> Verdict:
        """Judge the first valid answer call; `mode` is accepted and ignored (one exact verifier)."""
        try:
            scenario = self.scenario(task)
        except ScenarioError as exc:
            return Verdict(0.0, False, MODE, details={"role": self.role, "label": "bad_task", "error": str(exc)})
        session = self.make_session(scenario, self.tools(task))
        results = session.replay(calls)
        invalid = [InvalidCall(i, c.name, str(r.value)) for i, (c, r) in enumerate(zip(calls, results)) if not r.ok]
        if session.answer is None:
            tried = any(c.name in self.answer_tools for c in calls)
            label = "format" if tried else "no_answer"
            why = "every answer call was malformed or refused" if tried else "no answer was submitted"
            grade = Grade(0.0, False, label, {}, [why])
        else:
            grade = self.grade_session(session)
        grade.components.setdefault("reward", grade.reward)
        return Verdict(
            reward=round(grade.reward, 12), matched=grade.matched, mode=MODE, invalid_calls=invalid,
            details={
                "role": self.role, "label": grade.label, "graded": True, "difficulty": scenario.difficulty,
                "infeasible_scenario": scenario.infeasible, "answer_tool": session.answer.name if session.answer else None,
                "extra_answers": session.extra_answers, "components": grade.components, "evidence": grade.evidence,
            },
        )
