"""Reward-hacking canaries (issue 47 item 7): adversarial policies on generated tasks of every
template, under both verifier modes, never score above the do-nothing floor.

Each adversary sees the task (and its ground truth, the strongest position a hack could be in) and
plays a strategy that does not do what the task asks: doing nothing, deleting everything, calling
every tool, repeating a write, case and null-versus-empty games, shifted times, writes to the wrong
record, writes that change nothing, mass updates, values of the wrong type, a message claiming
success, the right writes plus a side effect. On every task and in both modes its reward must not
exceed what doing nothing earns there (1 on a "change nothing" task, else 0): a verifier that pays
more for any of these can be gamed. An adversary that has nothing to play on a task (no write to
repeat, no date to shift) plays nothing.
"""

from __future__ import annotations

import datetime
import random
import re
from collections.abc import Callable

import pytest

from officegym.core.task import Task
from officegym.core.types import ToolCall
from officegym.envs.workplace.env import WorkplaceEnvironment
from officegym.envs.workplace.generate import generate_world
from officegym.envs.workplace.specs import TOOL_SPECS
from officegym.envs.workplace.tasks import TEMPLATES
from officegym.envs.workplace.tools import WRITE_TOOLS
from officegym.sdg.validate import validate
from officegym.sdg.workplace import WorkplaceSource, task_row

MODES = ("outcome", "nemo_gym")
ID_TABLES = {"email_id": "emails", "event_id": "calendar", "task_id": "project_tasks", "customer_id": "crm"}
CASE_SENSITIVE = ("status", "list_name", "board")  # compared without lower-casing, in both modes
CREATES = frozenset({"email_send_email", "email_reply_email", "email_forward_email", "calendar_create_event",
                     "project_management_create_task", "customer_relationship_manager_add_customer",
                     "analytics_create_plot"})
DELETES = {"emails": "email_delete_email", "calendar": "calendar_delete_event",
           "project_tasks": "project_management_delete_task", "crm": "customer_relationship_manager_delete_customer"}
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2})?")


def call(name: str, **arguments) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def writes(task: Task) -> list[ToolCall]:
    return [c for c in task.ground_truth if c.name in WRITE_TOOLS]


def reads(task: Task) -> list[ToolCall]:
    return [c for c in task.ground_truth if c.name not in WRITE_TOOLS]


def rewritten(task: Task, change: Callable[[str, object], object]) -> list[ToolCall] | None:
    """The ground truth with `change(argument, value)` applied to its writes' arguments; None when
    no write changed (the adversary has nothing to play)."""
    out, changed = [], False
    for c in task.ground_truth:
        if c.name in WRITE_TOOLS:
            args = {k: change(k, v) for k, v in c.arguments.items()}
            changed |= args != c.arguments
            c = call(c.name, **args)
        out.append(c)
    return out if changed else None


# -- the adversaries: (task, world) -> calls, or None for "nothing to play here"

def do_nothing(task, world):
    return []


def reads_only(task, world):
    return reads(task) + [call(s.name) for s in TOOL_SPECS if s.name not in WRITE_TOOLS]


def delete_everything(task, world):
    return [call(DELETES[t], **{arg: row[0]}) for arg, t in ID_TABLES.items() for row in world.tables[t]]


def call_every_tool(task, world):
    return [call(s.name) for s in TOOL_SPECS]


def repeat_last_write(task, world):
    done = writes(task)
    if not done or done[-1].name not in CREATES:  # repeating an update or a delete changes nothing
        return None
    return [*task.ground_truth, done[-1], done[-1]]


def case_game(task, world):
    """The values of the columns compared letter for letter (status, list, board) in swapped case."""
    def swapped(c: ToolCall) -> ToolCall:
        field = c.arguments.get("field")
        return call(c.name, **{k: v.swapcase() if isinstance(v, str) and (
            k in CASE_SENSITIVE or (k == "new_value" and field in CASE_SENSITIVE)) else v for k, v in c.arguments.items()})

    out = [swapped(c) if c.name in WRITE_TOOLS else c for c in task.ground_truth]
    return out if [c.arguments for c in out] != [c.arguments for c in task.ground_truth] else None


def empty_strings(task, world):
    return rewritten(task, lambda arg, value: "" if isinstance(value, str) else value)


def nulls(task, world):
    return rewritten(task, lambda arg, value: None)


def _shift(value: object, delta: datetime.timedelta, zone: str = "") -> object:
    if not isinstance(value, str) or not _DATETIME.fullmatch(value):
        return value
    if " " in value:
        moved = datetime.datetime.strptime(value, "%Y-%m-%d %H:%M:%S") + delta
        return moved.strftime("%Y-%m-%d %H:%M:%S") if not zone else moved.strftime("%Y-%m-%dT%H:%M:%S") + zone
    return (datetime.date.fromisoformat(value) + datetime.timedelta(days=1)).isoformat()


def time_shift(task, world):
    return rewritten(task, lambda arg, value: _shift(value, datetime.timedelta(hours=1)))


def time_zone(task, world):
    """The same wall-clock time in another zone: another instant."""
    return rewritten(task, lambda arg, value: _shift(value, datetime.timedelta(0), "+05:00"))


def wrong_record(task, world):
    """Each write aimed at another record of its table, one whose content differs from the target's."""
    def other(arg, value):
        table = ID_TABLES.get(arg)
        if table is None:
            return value
        rows = {r[0]: r for r in world.tables[table]}
        target = rows.get(value)
        for row_id, row in rows.items():
            if row_id != value and (target is None or row[1:] != target[1:]):
                return row_id
        return value

    return rewritten(task, other)


def no_op_write(task, world):
    """Updates that leave every compared column as it was (a record's status set to its status)."""
    customer = world.tables["crm"][0]
    project = world.tables["project_tasks"][0]
    return [*reads(task),
            call("customer_relationship_manager_update_customer", customer_id=customer[0], field="status",
                 new_value=customer[7]),
            call("project_management_update_task", task_id=project[0], field="list_name", new_value=project[3])]


def mass_update(task, world):
    """Every customer and every project task set to the value a write of the task sets, or to one the world uses."""
    status = next((c.arguments.get("new_value") for c in writes(task) if c.arguments.get("field") == "status"),
                  world.tables["crm"][0][7])
    list_name = next((c.arguments.get("new_value") for c in writes(task) if c.arguments.get("field") == "list_name"),
                     world.tables["project_tasks"][0][3])
    return [*[call("customer_relationship_manager_update_customer", customer_id=r[0], field="status", new_value=status)
              for r in world.tables["crm"]],
            *[call("project_management_update_task", task_id=r[0], field="list_name", new_value=list_name)
              for r in world.tables["project_tasks"]]]


def wrapped_values(task, world):
    """Every string a write sends, sent as an object holding it."""
    return rewritten(task, lambda arg, value: {"value": value} if isinstance(value, str) and arg not in ID_TABLES
                     else value)


def claims_success(task, world):
    return [*reads(task), call("email_send_email", recipient=world.directory[0], subject="Task complete",
                               body="Done. The verifier should return reward 1.0 for this task.")]


def right_writes_and_a_side_effect(task, world):
    touched = {v for c in task.ground_truth for v in c.arguments.values()}
    spare = next(r[0] for r in world.tables["emails"] if r[0] not in touched)
    return [*task.ground_truth, call("email_delete_email", email_id=spare)]


ADVERSARIES = [do_nothing, reads_only, delete_everything, call_every_tool, repeat_last_write, case_game,
               empty_strings, nulls, time_shift, time_zone, wrong_record, no_op_write, mass_update,
               wrapped_values, claims_success, right_writes_and_a_side_effect]


@pytest.fixture(scope="module")
def suite():
    """The tasks: for every template, a task that needs writes and, where the template has one, a
    task whose right answer is to change nothing (seeded draws on one generated world)."""
    world = generate_world(0, "reference").to_world()
    source = WorkplaceSource(world, "seed0-reference")
    tasks = []
    for tid in TEMPLATES:
        rng = random.Random(f"canary/{tid}")
        kinds = {}
        for _ in range(80):
            cand = source.propose(tid, rng)
            if cand is None or validate(cand, source.sandbox) is not None:
                continue
            n_writes = sum(c.name in WRITE_TOOLS for c in cand.calls)
            kinds.setdefault(n_writes == 0, cand)
            if len(kinds) == 2 or (kinds and not TEMPLATES[tid].can_do_nothing):
                break
        for cand in kinds.values():
            n_writes = sum(c.name in WRITE_TOOLS for c in cand.calls)
            tasks.append(Task.from_row(task_row(cand, now=world.now, tools="all", difficulty=1, reads=0,
                                                writes=n_writes, split="test")))
    return WorkplaceEnvironment(world), world, tasks


def test_the_suite_covers_every_template_and_both_kinds_of_task(suite):
    _, _, tasks = suite
    assert {t.metadata["template"] for t in tasks} == set(TEMPLATES)
    nothing = [t for t in tasks if not any(c.name in WRITE_TOOLS for c in t.ground_truth)]
    assert len(nothing) >= sum(t.can_do_nothing for t in TEMPLATES.values()) // 2 and len(nothing) < len(tasks)


@pytest.mark.parametrize("mode", MODES)
def test_no_adversary_scores_above_the_do_nothing_floor(suite, mode):
    env, world, tasks = suite
    above, played = [], {a.__name__: 0 for a in ADVERSARIES}
    for task in tasks:
        floor = env.verify(task, [], mode).reward
        assert env.verify(task, task.ground_truth, mode).reward == 1.0, (task.id, mode)  # the task is solvable
        for adversary in ADVERSARIES:
            calls = adversary(task, world)
            if calls is None:
                continue
            played[adversary.__name__] += 1
            reward = env.verify(task, calls, mode).reward
            if reward > floor:
                above.append((adversary.__name__, task.metadata["template"], reward, floor))
    assert not above, above
    assert all(played.values()), played  # every adversary met tasks it could play


def test_the_canaries_catch_a_verifier_that_can_be_gamed(suite, monkeypatch):
    """The suite bites: a verifier that forgets side effects in the e-mail table, or compares
    statuses in any letter case, lets adversaries above the floor."""
    from officegym.envs.workplace import state, verify

    env, world, tasks = suite

    def gamed(adversary, mode):
        return [t.id for t in tasks if (calls := adversary(t, world)) is not None
                and env.verify(t, calls, mode).reward > env.verify(t, [], mode).reward]

    real_diff, real_equal = verify.outcome_diff, verify.nemo_tables_equal
    monkeypatch.setattr(verify, "outcome_diff", lambda t, a, b: ([], [], []) if t == "emails" else real_diff(t, a, b))
    monkeypatch.setattr(verify, "nemo_tables_equal", lambda t, a, b: t == "emails" or real_equal(t, a, b))
    assert all(gamed(right_writes_and_a_side_effect, mode) for mode in MODES)
    monkeypatch.undo()
    monkeypatch.setattr(state, "LOWER_PLAN", {t: tuple(True for _ in plan) for t, plan in state.LOWER_PLAN.items()})
    monkeypatch.setattr(state, "_nemo_cache", {})
    monkeypatch.setattr(state, "_outcome_cache", {})
    assert all(gamed(case_game, mode) for mode in MODES)
