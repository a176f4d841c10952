from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CalendarsAppConfig(AppConfig):
    name = "calendars_app"
    verbose_name = _("Calendars")

    def ready(self) -> None:
        # An assistant's appointment types are a field of the assistant (core) whose
        # meaning is this app's: their shape and the calendars they name.
        from calendars_app import appointment_types
        from console.assistants import references

        references.register_field_cleaner(references.APPOINTMENT_TYPES, clean=appointment_types.types_clean)
        # The calendar's built-in tools (console.assistants.builtin_tools).
        from calendars_app.builtin_tools import TOOLS
        from console.assistants.builtin_tools import register_builtin_tool

        for tool in TOOLS:
            register_builtin_tool(tool)
        # The tenant's cap of calendars (console.quotas, TENANT_MAX_CALENDARS) counts them.
        from calendars_app.models import Calendar
        from console.quotas import register_usage

        register_usage("calendars", lambda tenant: Calendar.objects.for_tenant(tenant).count())
