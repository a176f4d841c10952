from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentAppConfig(AppConfig):
    name = "agent_app"
    verbose_name = _("Voice agent")
