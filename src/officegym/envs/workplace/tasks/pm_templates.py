"""Project-management task templates."""

from __future__ import annotations

import random
from datetime import date, timedelta

from officegym.envs.workplace.tasks.base import Plan, call, find, need, pick, template
from officegym.envs.workplace.tasks.dates import day_phrase
from officegym.envs.workplace.tasks.reads import plain, search_tasks, task_hits
from officegym.envs.workplace.tasks.text import LISTS, TASK_OBJECTS, TASK_VERBS
from officegym.envs.workplace.tasks.view import ProjectTask, WorldView


def update(task: ProjectTask, field: str, value: str):
    return call("project_management_update_task", task_id=task.id, field=field, new_value=value)


def overdue(w: WorldView, address: str) -> list[ProjectTask] | None:
    """The person's overdue tasks (due before today, not completed); None when a task due today
    and not completed makes "overdue" a matter of opinion."""
    mine = [t for t in w.tasks_by_assignee.get(address, ()) if t.list_name != "Completed"]
    if any(t.due == w.today.isoformat() for t in mine):
        return None
    return [t for t in mine if t.due < w.today.isoformat()]


def unique_task(w: WorldView, r: random.Random, tasks=None) -> ProjectTask:
    """A task whose name identifies it (searching the name finds it alone)."""
    ok = {t.id for t in w.nameable_tasks}
    pool = tasks if tasks is not None else w.tasks
    return pick(r, [t for t in pool if t.id in ok and plain(t.name)])


def new_task_name(w: WorldView, r: random.Random) -> str:
    name = f"{r.choice(TASK_VERBS)} {r.choice(TASK_OBJECTS)}"
    need(w.task_name_counts.get(name.lower(), 0) == 0)
    return name


def _engineer(w: WorldView, r: random.Random, but: str | None = None) -> str:
    return pick(r, [a for a in w.engineers if a != but])


@template("project_management.move_list", "project_management", (
    "Move all of {first}'s tasks that are in {src} to {dst}",
    "Please move every {src} task assigned to {first} to {dst}.",
    "{first}'s {src} tasks should all go to {dst} now.",
), can_do_nothing=True)
def move_list(w: WorldView, r: random.Random) -> Plan:
    """When the person has no task in that list, nothing moves: the right answer changes nothing."""
    address = _engineer(w, r)
    src, dst = r.sample(LISTS, 2)
    targets = task_hits(w, assignee=address, list_name=src)
    need(len(targets) <= 6)
    others = [t for t in w.tasks_by_assignee[address] if t.list_name not in (src, dst)]
    tempting = [] if targets else [update(pick(r, others), "list_name", dst)] if others else []
    need(targets or tempting)

    def trigger(probe) -> bool:
        out = probe("project_management_search_tasks", {"assigned_to_email": address, "list_name": src})
        return isinstance(out, list) and bool(out)

    return Plan({"first": w.first(address), "src": src.lower() if r.random() < 0.5 else src, "dst": dst}, [
        find(w.first(address)), search_tasks(w, assignee=address, list_name=src)]
        + [update(t, "list_name", dst) for t in targets],
        conditions=1, trigger=trigger, trigger_expected=bool(targets), tempting=tempting)


@template("project_management.reassign_task", "project_management", (
    "Reassign the task '{task}' to {first}",
    "Please give '{task}' to {first} instead.",
    "{first} is taking over '{task}'; update the assignee.",
))
def reassign_task(w: WorldView, r: random.Random) -> Plan:
    task = unique_task(w, r)
    address = _engineer(w, r, task.assignee)
    return Plan({"task": task.name, "first": w.first(address)}, [
        search_tasks(w, task_name=task.name), find(w.first(address)), update(task, "assigned_to_email", address)])


@template("project_management.create_task", "project_management", (
    "Create a task '{name}' for {first} on the {board} board in {list}, due {day}",
    "Add '{name}' to the {board} board, assigned to {first}, list {list}, due {day}.",
    "New task for {first}: '{name}', {board} board, {list}, due {day}.",
))
def create_task(w: WorldView, r: random.Random) -> Plan:
    address = _engineer(w, r)
    board = w.board_of[address]
    d = w.today + timedelta(days=r.randint(1, 30))
    phrase, rel = day_phrase(d, w.today, r)
    phrase = phrase.removeprefix("on ")
    list_name = r.choice(("Backlog", "Backlog", "In Progress"))
    name = new_task_name(w, r)
    return Plan({"name": name, "first": w.first(address), "board": board, "list": list_name, "day": phrase}, [
        find(w.first(address)),
        call("project_management_create_task", task_name=name, assigned_to_email=address, list_name=list_name,
             due_date=d.isoformat(), board=board)], date_steps=int(rel))


@template("project_management.cond_overdue_review", "project_management", (
    "If {first} has any overdue tasks, move them to In Review. Otherwise don't change anything.",
    "Check {first}'s tasks: anything past its due date and not completed should go to In Review. If there is none, do nothing.",
    "Move {first}'s overdue tasks, if there are any, to the In Review list.",
), can_do_nothing=True)
def cond_overdue_review(w: WorldView, r: random.Random) -> Plan:
    address = _engineer(w, r)
    late = overdue(w, address)
    need(late is not None and len(late) <= 5)
    late = [t for t in late if t.list_name != "In Review"]
    mine = [t for t in w.tasks_by_assignee[address] if t.list_name not in ("Completed", "In Review")]
    fired = bool(late)
    tempting = [] if fired else [update(pick(r, mine), "list_name", "In Review")] if mine else []
    need(fired or tempting)

    def trigger(probe) -> bool:
        out = probe("project_management_search_tasks", {"assigned_to_email": address})
        return isinstance(out, list) and any(
            t["list_name"] not in ("Completed", "In Review") and t["due_date"] < w.today.isoformat() for t in out)

    return Plan({"first": w.first(address)}, [
        find(w.first(address)), search_tasks(w, assignee=address)] + [update(t, "list_name", "In Review") for t in late],
        conditions=1, date_steps=1, trigger=trigger, trigger_expected=fired, tempting=tempting)


@template("project_management.push_due", "project_management", (
    "Push the due date of '{task}' to {day}",
    "'{task}' is now due {day}; please update it.",
    "Change the deadline of the task '{task}' to {day}.",
))
def push_due(w: WorldView, r: random.Random) -> Plan:
    task = unique_task(w, r, [t for t in w.tasks if t.list_name != "Completed"])
    d = date.fromisoformat(task.due) + timedelta(days=r.randint(1, 14))
    phrase, rel = day_phrase(d, w.today, r)
    phrase = phrase.removeprefix("on ")
    return Plan({"task": task.name, "day": phrase}, [
        search_tasks(w, task_name=task.name), update(task, "due_date", d.isoformat())], date_steps=int(rel))


@template("project_management.delete_task", "project_management", (
    "Delete the task '{task}' from the {board} board",
    "Please remove '{task}' from the {board} board.",
    "We dropped '{task}' ({board} board); delete it.",
))
def delete_task(w: WorldView, r: random.Random) -> Plan:
    task = unique_task(w, r)
    return Plan({"task": task.name, "board": task.board}, [
        search_tasks(w, task_name=task.name, board=task.board),
        call("project_management_delete_task", task_id=task.id)])


@template("project_management.complete_due_on", "project_management", (
    "Mark all of {first}'s tasks due {day} as completed",
    "{first} finished everything that was due {day}; move those tasks to Completed.",
    "Set {first}'s tasks with a due date of {day_short} to Completed.",
))
def complete_due_on(w: WorldView, r: random.Random) -> Plan:
    address = _engineer(w, r)
    mine = w.tasks_by_assignee[address]
    d = pick(r, sorted({t.due for t in mine if t.list_name != "Completed"}))
    targets = [t for t in mine if t.due == d and t.list_name != "Completed"]
    need(len(targets) <= 5)
    day = date.fromisoformat(d)
    phrase, rel = day_phrase(day, w.today, r)
    return Plan({"first": w.first(address), "day": phrase, "day_short": d}, [
        find(w.first(address)), search_tasks(w, assignee=address, due=d)]
        + [update(t, "list_name", "Completed") for t in targets], date_steps=int(rel))


@template("project_management.move_board_due_before", "project_management", (
    "Move every task on the {board} board that is in {src} and due before {day} to {dst}",
    "On the {board} board, take all {src} tasks due before {day} and put them in {dst}.",
    "All {board} tasks in {src} with a due date earlier than {day} should move to {dst}.",
))
def move_board_due_before(w: WorldView, r: random.Random) -> Plan:
    board = pick(r, w.boards)
    src, dst = r.sample(LISTS, 2)
    pool = task_hits(w, list_name=src, board=board)
    cut = pick(r, sorted({t.due for t in pool}))
    targets = [t for t in pool if t.due < cut]
    need(1 <= len(targets) <= 6)
    day = date.fromisoformat(cut)
    phrase, rel = day_phrase(day, w.today, r)
    return Plan({"board": board, "src": src, "dst": dst, "day": phrase.removeprefix("on ")}, [
        search_tasks(w, list_name=src, board=board)] + [update(t, "list_name", dst) for t in targets],
        date_steps=int(rel) + 1)


@template("project_management.reassign_list", "project_management", (
    "Reassign all of {first}'s {src} tasks to {second}",
    "{second} will take over {first}'s tasks in {src}; please reassign them.",
    "Hand every {src} task of {first} over to {second}.",
), can_do_nothing=True)
def reassign_list(w: WorldView, r: random.Random) -> Plan:
    """When the person has no task in that list, nobody is reassigned: the right answer changes nothing."""
    address = _engineer(w, r)
    other = _engineer(w, r, address)
    src = r.choice(("Backlog", "In Progress", "In Review"))
    targets = task_hits(w, assignee=address, list_name=src)
    need(len(targets) <= 6)
    others = [t for t in w.tasks_by_assignee[address] if t.list_name != src]
    tempting = [] if targets else [update(pick(r, others), "assigned_to_email", other)] if others else []
    need(targets or tempting)

    def trigger(probe) -> bool:
        out = probe("project_management_search_tasks", {"assigned_to_email": address, "list_name": src})
        return isinstance(out, list) and bool(out)

    return Plan({"first": w.first(address), "second": w.first(other), "src": src}, [
        find(w.first(address)), find(w.first(other)), search_tasks(w, assignee=address, list_name=src)]
        + [update(t, "assigned_to_email", other) for t in targets],
        conditions=1, trigger=trigger, trigger_expected=bool(targets), tempting=tempting)
