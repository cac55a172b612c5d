"""The 27 workplace tools, one toolkit class per domain, as NeMo Gym names them.

Class and method names match the reference's so that Python's own messages for bad keyword
arguments read exactly as the reference's ("EmailTool.send_email() got an unexpected keyword
argument 'x'").
"""

from officegym.envs.workplace.tools.analytics import AnalyticsTool
from officegym.envs.workplace.tools.calendar import CalendarTool
from officegym.envs.workplace.tools.crm import CustomerRelationshipManagerTool
from officegym.envs.workplace.tools.directory import CompanyDirectoryTool
from officegym.envs.workplace.tools.email import EmailTool
from officegym.envs.workplace.tools.project_management import ProjectManagementTool

# Tool name -> (toolkit class, method name), in the reference's order (SPEC 4.1).
TOOLS: dict[str, tuple[type, str]] = {
    "company_directory_find_email_address": (CompanyDirectoryTool, "find_email_address"),
    "email_get_email_information_by_id": (EmailTool, "get_email_information_by_id"),
    "email_search_emails": (EmailTool, "search_emails"),
    "email_send_email": (EmailTool, "send_email"),
    "email_delete_email": (EmailTool, "delete_email"),
    "email_forward_email": (EmailTool, "forward_email"),
    "email_reply_email": (EmailTool, "reply_email"),
    "calendar_get_event_information_by_id": (CalendarTool, "get_event_information_by_id"),
    "calendar_search_events": (CalendarTool, "search_events"),
    "calendar_create_event": (CalendarTool, "create_event"),
    "calendar_delete_event": (CalendarTool, "delete_event"),
    "calendar_update_event": (CalendarTool, "update_event"),
    "analytics_get_visitor_information_by_id": (AnalyticsTool, "get_visitor_information_by_id"),
    "analytics_create_plot": (AnalyticsTool, "create_plot"),
    "analytics_total_visits_count": (AnalyticsTool, "total_visits_count"),
    "analytics_engaged_users_count": (AnalyticsTool, "engaged_users_count"),
    "analytics_traffic_source_count": (AnalyticsTool, "traffic_source_count"),
    "analytics_get_average_session_duration": (AnalyticsTool, "get_average_session_duration"),
    "project_management_get_task_information_by_id": (ProjectManagementTool, "get_task_information_by_id"),
    "project_management_search_tasks": (ProjectManagementTool, "search_tasks"),
    "project_management_create_task": (ProjectManagementTool, "create_task"),
    "project_management_delete_task": (ProjectManagementTool, "delete_task"),
    "project_management_update_task": (ProjectManagementTool, "update_task"),
    "customer_relationship_manager_search_customers": (CustomerRelationshipManagerTool, "search_customers"),
    "customer_relationship_manager_update_customer": (CustomerRelationshipManagerTool, "update_customer"),
    "customer_relationship_manager_add_customer": (CustomerRelationshipManagerTool, "add_customer"),
    "customer_relationship_manager_delete_customer": (CustomerRelationshipManagerTool, "delete_customer"),
}

# Tools that can change the compared state (WorkBench's side-effect tools).
WRITE_TOOLS = frozenset(
    {
        "email_send_email", "email_delete_email", "email_forward_email", "email_reply_email",
        "calendar_create_event", "calendar_delete_event", "calendar_update_event",
        "analytics_create_plot",
        "project_management_create_task", "project_management_delete_task", "project_management_update_task",
        "customer_relationship_manager_update_customer", "customer_relationship_manager_add_customer",
        "customer_relationship_manager_delete_customer",
    }
)

DOMAINS = ("company_directory", "email", "calendar", "analytics", "project_management", "customer_relationship_manager")


def domain_of(tool_name: str) -> str:
    for d in DOMAINS:
        if tool_name.startswith(d + "_"):
            return d
    return ""
