"""Task templates for the Workplace Assistant, with ground truth computed from the world.

Importing this package registers every template in `TEMPLATES` (id -> Template). Generation,
validation and writing live in `officegym.sdg`; these modules only know the world.
"""

from officegym.envs.workplace.tasks import (  # noqa: F401  (registers the templates)
    analytics_templates,
    calendar_templates,
    crm_templates,
    email_templates,
    multi_templates,
    out_of_scope,
    pm_templates,
)
from officegym.envs.workplace.tasks.base import TEMPLATES, NoTask, Plan, Template, template
from officegym.envs.workplace.tasks.view import WorldView

__all__ = ["TEMPLATES", "NoTask", "Plan", "Template", "WorldView", "template"]
