"""Project-management tools (SPEC 1.5)."""

from __future__ import annotations

import re

from officegym.envs.workplace.frame_ops import array_contains, contains_mask, eq_mask, lowered
from officegym.envs.workplace.results import Rejected
from officegym.envs.workplace.tools.base import Toolkit, records, select
from officegym.envs.workplace.world import TASK_COLUMNS

LISTS = ["Backlog", "In Progress", "In Review", "Completed"]
BOARDS = ["Back end", "Front end", "Design"]
_BAD_LIST = "List not valid. Please choose from: 'Backlog', 'In Progress', 'In Review', 'Completed'."
_BAD_BOARD = "Board not valid. Please choose from: 'Back end', 'Front end', 'Design'."
_BAD_ASSIGNEE = "Assignee email not valid. Please choose from the list of team members."
_EMAIL_RE = re.compile(r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$")
_COL = {c: i for i, c in enumerate(TASK_COLUMNS)}


class ProjectManagementTool(Toolkit):
    __slots__ = ()

    def _assignees(self) -> list:
        return [lowered(r[2]) for r in self.s.project_tasks.rows]

    def _is_assignee(self, email) -> bool:
        return array_contains(self._assignees(), email, self.s.project_tasks.is_str(2))

    def get_task_information_by_id(self, task_id=None, field=None):
        if not task_id:
            return Rejected("Task ID not provided.")
        if not field:
            return Rejected("Field not provided.")
        table = self.s.project_tasks
        hits = table.id_positions(task_id)
        if hits:
            task = dict(zip(TASK_COLUMNS, table.rows[hits[0]]))
            if field in task:
                return {field: task[field]}
            return Rejected("Field not found.")
        return Rejected("Task not found.")

    def search_tasks(self, task_name=None, assigned_to_email=None, list_name=None, due_date=None, board=None):
        if not any([task_name, assigned_to_email, list_name, due_date, board]):
            return Rejected("No search parameters provided.")
        if assigned_to_email and not re.match(_EMAIL_RE, assigned_to_email):
            return Rejected("Invalid email format for assigned_to_email.")
        table = self.s.project_tasks
        rows = list(table.rows)
        if task_name:
            rows = select(rows, contains_mask([r[1] for r in rows], task_name, str_dtype=table.is_str(1)))
        if assigned_to_email:
            wanted = assigned_to_email.lower()
            rows = select(rows, eq_mask([lowered(r[2]) for r in rows], wanted, table.is_str(2)))
        for ci, pattern in ((3, list_name), (4, due_date), (5, board)):
            if pattern:
                rows = select(rows, contains_mask([r[ci] for r in rows], pattern, str_dtype=table.is_str(ci)))
        return records(TASK_COLUMNS, rows)

    def create_task(self, task_name=None, assigned_to_email=None, list_name=None, due_date=None, board=None):
        if not all([task_name, assigned_to_email, list_name, due_date, board]):
            return Rejected("Missing task details.")
        assigned_to_email = assigned_to_email.lower()
        if not self._is_assignee(assigned_to_email):
            return Rejected(_BAD_ASSIGNEE)
        if list_name not in LISTS:
            return Rejected(_BAD_LIST)
        if board not in BOARDS:
            return Rejected(_BAD_BOARD)
        table = self.s.project_tasks
        task_id = str(int(table.max_id()) + 1).zfill(8)
        table.append((task_id, task_name, assigned_to_email, list_name, due_date, board))
        return task_id

    def delete_task(self, task_id=None):
        if not task_id:
            return Rejected("Task ID not provided.")
        table = self.s.project_tasks
        if table.has_id(task_id):
            table.delete_id(task_id)
            return "Task deleted successfully."
        return Rejected("Task not found.")

    def update_task(self, task_id=None, field=None, new_value=None):
        if not task_id or not field or not new_value:
            return Rejected("Task ID, field, or new value not provided.")
        if field == "assigned_to_email":
            new_value = new_value.lower()
        if field == "board" and new_value not in BOARDS:
            return Rejected(_BAD_BOARD)
        if field == "list_name" and new_value not in LISTS:
            return Rejected(_BAD_LIST)
        if field == "assigned_to_email" and not self._is_assignee(new_value):
            return Rejected(_BAD_ASSIGNEE)
        table = self.s.project_tasks
        if table.has_id(task_id):
            if field in _COL:
                table.set_where_id(task_id, _COL[field], new_value)
                return "Task updated successfully."
            return Rejected("Field not valid.")
        return Rejected("Task not found.")
